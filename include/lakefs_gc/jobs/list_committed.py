"""
Spark entry point for the GC step `list_committed` (:mod:`lakefs_gc.steps.list_committed`).

    spark-submit --py-files build/lakefs_gc.zip include/lakefs_gc/jobs/list_committed.py \
        --input INPUT.json --result RESULT.json

(installed: ``lakefs_gc.spark.bundle.job_path('list_committed')``; the operator finds it by itself)
"""
from __future__ import annotations

import sys
from functools import partial

from lakefs_gc.spark import shell
from lakefs_gc.steps import run_on_spark

if __name__ == "__main__":
    sys.exit(shell.run("list_committed", partial(run_on_spark, "list_committed")))
