"""The JVM options of every Spark driver the tests start (spark-submit jobs, Airflow's Spark
tasks, the in-process session): the product's fast start (:mod:`lakefs_gc.spark.jvm`: C1 only,
Spark's classes from a class-data-sharing archive), with the archive the set-up made
(``LAKEFS_GC_JVM_CACHE_DIR``, fixed for the whole session by tests/conftest.py, so the Airflow
tasks' own fast start finds the same archive). Behaviour never depends on it."""

from __future__ import annotations

import sys
from pathlib import Path

from lakefs_gc.spark import jvm

C1_ONLY = jvm.C1_ONLY

_options: str | None = None


def java_options() -> str:
    """``spark.driver.extraJavaOptions`` for a test's Spark driver (the archive made on first use)."""
    global _options
    if _options is None:
        _options = jvm.driver_java_options(str(Path(sys.executable).parent / "spark-submit"), sys.executable)
    return _options
