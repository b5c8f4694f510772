"""
Spark entry point for the GC step `attribute_space` (:mod:`lakefs_gc.steps.attribute_space`).

    spark-submit --py-files build/lakefs_gc.zip include/lakefs_gc/jobs/attribute_space.py \
        --input INPUT.json --result RESULT.json

(installed: ``lakefs_gc.spark.bundle.job_path('attribute_space')``; the operator finds it by itself)
"""
from __future__ import annotations

import sys
from functools import partial

from lakefs_gc.spark import shell
from lakefs_gc.steps import run_on_spark

if __name__ == "__main__":
    sys.exit(shell.run("attribute_space", partial(run_on_spark, "attribute_space")))
