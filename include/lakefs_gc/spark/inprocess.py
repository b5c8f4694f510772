"""A whole run in one process and one SparkSession: the same step functions the jobs run, without
spark-submit (tests of the decision at scale, the differential bench, an operator's dry check)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakefs_gc.contract import STEP_INPUTS, STEPS, RunContext, StepInputs, skip_result, skipped
from lakefs_gc.gc.prepare import mark_uncommitted
from lakefs_gc.report.summary import build_summary, summary_location, write_summary
from lakefs_gc.spark import compute_candidates, delete, list_committed, list_slices, shell
from lakefs_gc.spark.runtime import storage_ref

SPARK_STEPS = {"list_committed": list_committed.run, "list_slices": list_slices.run,
               "compute_candidates": compute_candidates.run, "delete": delete.run}


def run_steps(spark, ctx: RunContext, client, environ: Mapping[str, str], until: str = "save_report") -> dict[str, Any]:
    """Run every step after ``prepare_run`` up to ``until``; returns the results by task id.
    ``environ`` holds the secrets a job would read from its environment."""
    results: dict[str, Any] = {}
    for step in STEPS[1:]:
        if skipped(step, ctx.mode):
            results[step] = skip_result(step, ctx.mode)
        elif step == "mark_uncommitted":
            results[step] = mark_uncommitted(client, ctx, storage_ref(ctx, environ).open())
        elif step == "save_report":
            inputs = StepInputs(ctx, {k: results.get(k) for k in STEP_INPUTS[step]})
            write_summary(storage_ref(ctx, environ).open(), summary_location(inputs), build_summary(inputs))
        else:
            inputs = StepInputs(ctx, {k: results.get(k) for k in STEP_INPUTS[step]})
            results[step] = SPARK_STEPS[step](spark, inputs, environ)
            shell.check(step, results[step])
        if step == until:
            break
    return results


def local_session(app: str = "lakefs-gc in-process", cores: int = 2):
    """A local SparkSession for in-process runs (workers use this Python; no UI; few shuffle
    partitions). ``getOrCreate``: one session per process, shared."""
    import os
    import sys

    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    spark = (SparkSession.builder.master(f"local[{cores}]").appName(app)
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
             .config("spark.driver.host", "127.0.0.1").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark
