"""
Spark entry point for the GC step `list_slices` (:mod:`lakefs_gc.steps.list_slices`).

    spark-submit --py-files build/lakefs_gc.zip include/lakefs_gc/jobs/list_slices.py \
        --input INPUT.json --result RESULT.json

(installed: ``lakefs_gc.spark.bundle.job_path('list_slices')``; the operator finds it by itself)
"""
from __future__ import annotations

import sys
from functools import partial

from lakefs_gc.spark import shell
from lakefs_gc.steps import run_on_spark

if __name__ == "__main__":
    sys.exit(shell.run("list_slices", partial(run_on_spark, "list_slices")))
