"""Spark entry point for the GC step `compute_candidates` (see lakefs_gc.spark_steps.compute_candidates_step).

    spark-submit --py-files build/lakefs_gc.zip jobs/compute_candidates.py --meta META.json --result RESULT.json
"""

import sys

from lakefs_gc import sparkjob
from lakefs_gc.spark_steps import compute_candidates_step

if __name__ == "__main__":
    sys.exit(sparkjob.run("compute_candidates", compute_candidates_step))
