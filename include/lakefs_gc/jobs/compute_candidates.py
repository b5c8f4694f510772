"""
Spark entry point for the GC step `compute_candidates` (:mod:`lakefs_gc.steps.compute_candidates`).

    spark-submit --py-files build/lakefs_gc.zip include/lakefs_gc/jobs/compute_candidates.py \
        --input INPUT.json --result RESULT.json

(installed: ``lakefs_gc.spark.bundle.job_path('compute_candidates')``; the operator finds it by itself)
"""
from __future__ import annotations

import sys
from functools import partial

from lakefs_gc.spark import shell
from lakefs_gc.steps import run_on_spark

if __name__ == "__main__":
    sys.exit(shell.run("compute_candidates", partial(run_on_spark, "compute_candidates")))
