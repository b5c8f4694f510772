"""
A whole run in one process and one SparkSession, without spark-submit.

The same step functions the operators and the jobs run (:data:`lakefs_gc.steps.STEP_FUNCTIONS`),
for the tests and the benches (which never import the test tree).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from lakefs_gc.config import SparkSettings
from lakefs_gc.contract import (
    SPARK_STEPS as SPARK_STEP_IDS,
    STEP_INPUTS,
    STEPS,
    RunContext,
    StepInputs,
    skip_result,
    skipped,
)
from lakefs_gc.spark import shell
from lakefs_gc.spark.runtime import storage_ref
from lakefs_gc.steps import STEP_FUNCTIONS, run_in_task, run_on_spark

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakefs_gc.lakefs.client import LakeFSClient

# each Spark step as ``fn(spark, inputs, environ)``: on the session's executors (run_on_spark)
SPARK_STEPS: dict[str, Callable[..., Any]] = {step: partial(run_on_spark, step) for step in SPARK_STEP_IDS}


def run_steps(
    spark: SparkSession | None,
    ctx: RunContext,
    client: LakeFSClient,
    environ: Mapping[str, str],
    until: str = "save_report",
    between: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """
    Run every step after ``prepare_run`` up to ``until``; return the results by task id.

    ``environ`` holds the secrets a job would read from its environment. ``between(step)`` is
    called before each step (what happens in the repository between two tasks). ``spark`` None:
    the Spark steps in this process without Spark, as a small repository's tasks run them
    (:func:`lakefs_gc.steps.run_in_task`, up to ``spark.in_process_max_keys``; more fails).
    """
    results: dict[str, Any] = {}
    for step in STEPS[1:]:
        if between is not None:
            between(step)
        if skipped(step, ctx.mode):
            results[step] = skip_result(step, ctx.mode)
        elif step == "mark_uncommitted":
            results[step] = STEP_FUNCTIONS[step](client, ctx, storage_ref(ctx, environ).open())
        elif step == "save_report":
            inputs = StepInputs(ctx, {k: results.get(k) for k in STEP_INPUTS[step]})
            results[step] = STEP_FUNCTIONS[step](storage_ref(ctx, environ).open(), inputs)
        else:
            inputs = StepInputs(ctx, {k: results.get(k) for k in STEP_INPUTS[step]})
            if spark is None:
                results[step] = run_in_task(step, inputs, environ, SparkSettings.in_process_max_keys)
                if results[step] is None:
                    raise RuntimeError(
                        f"{step}: its input is larger than spark.in_process_max_keys; give a SparkSession"
                    )
            else:
                results[step] = SPARK_STEPS[step](spark, inputs, environ)
            shell.check(step, results[step])
        if step == until:
            break
    return results


def local_session(app: str = "lakefs-gc in-process", cores: int = 2, java_options: str | None = None) -> SparkSession:
    """
    Return a local SparkSession for in-process runs (workers use this Python; no UI; few shuffle partitions).

    ``java_options``: the driver JVM's (the tests' and the benches' pass a job's:
    lakefs_gc.spark.jvm). ``getOrCreate``: one session per process, shared.
    """
    import os
    import sys

    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.showConsoleProgress", "false")
    )
    if java_options:
        builder = builder.config("spark.driver.extraJavaOptions", java_options)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
