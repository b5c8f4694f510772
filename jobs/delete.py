"""Spark entry point for the GC step `delete` (:mod:`lakefs_gc.spark.delete`).

    spark-submit --py-files build/lakefs_gc.zip jobs/delete.py --input INPUT.json --result RESULT.json
"""

import sys

from lakefs_gc.spark import delete, shell

if __name__ == "__main__":
    sys.exit(shell.run("delete", delete.run))
