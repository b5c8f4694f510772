"""
The Spark entry point of every GC step, shipped inside the package.

    spark-submit --py-files build/lakefs_gc.zip include/lakefs_gc/jobs/gc_step.py STEP \
        --input INPUT.json --result RESULT.json

``STEP``: one of :data:`lakefs_gc.contract.SPARK_STEPS` (installed: ``lakefs_gc.spark.bundle.job_path()``;
the operator finds it by itself): :func:`lakefs_gc.jobs.main`.
"""

from __future__ import annotations

import sys

from lakefs_gc.jobs import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
