"""Spark entry point for the GC step `list_slices` (see lakefs_gc.spark_steps.list_slices).

    spark-submit --py-files build/lakefs_gc.zip jobs/list_slices.py --meta META.json --result RESULT.json
"""

import sys

from lakefs_gc import sparkjob
from lakefs_gc.spark_steps import list_slices

if __name__ == "__main__":
    sys.exit(sparkjob.run("list_slices", list_slices))
