"""Spark entry point for the GC step `list_committed` (see lakefs_gc.spark_steps.list_committed).

    spark-submit --py-files build/lakefs_gc.zip jobs/list_committed.py --meta META.json --result RESULT.json
"""

import sys

from lakefs_gc import sparkjob
from lakefs_gc.spark_steps import list_committed

if __name__ == "__main__":
    sys.exit(sparkjob.run("list_committed", list_committed))
