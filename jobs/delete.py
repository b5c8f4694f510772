"""Spark entry point for the GC step `delete` (see lakefs_gc.spark_steps.delete_step).

    spark-submit --py-files build/lakefs_gc.zip jobs/delete.py --meta META.json --result RESULT.json
"""

import sys

from lakefs_gc import sparkjob
from lakefs_gc.spark_steps import delete_step

if __name__ == "__main__":
    sys.exit(sparkjob.run("delete", delete_step))
