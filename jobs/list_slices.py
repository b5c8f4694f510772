"""Spark entry point for the GC step `list_slices` (:mod:`lakefs_gc.spark.list_slices`).

    spark-submit --py-files build/lakefs_gc.zip jobs/list_slices.py --input INPUT.json --result RESULT.json
"""

import sys

from lakefs_gc.spark import list_slices, shell

if __name__ == "__main__":
    sys.exit(shell.run("list_slices", list_slices.run))
