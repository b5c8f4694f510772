"""Spark entry point for the GC step `list_committed` (:mod:`lakefs_gc.spark.list_committed`).

    spark-submit --py-files build/lakefs_gc.zip jobs/list_committed.py --input INPUT.json --result RESULT.json
"""

import sys

from lakefs_gc.spark import list_committed, shell

if __name__ == "__main__":
    sys.exit(shell.run("list_committed", list_committed.run))
