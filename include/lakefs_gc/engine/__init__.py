"""
Where a Spark step runs, decided here alone: the engines and their one interface.

A Spark step (``list_slices``, ``compute_candidates``, ...) is written once, against :class:`Engine`:
the decision's relational operations (:class:`lakefs_gc.gc.decision.Relations`), reading and
writing address parts, reading ranges, listing, the staged check's matching, and mapping a
function over work items. Whether the work runs in the Airflow task's own process, on a Spark
job's driver or on Spark's executors is decided by the engine, from one
:class:`lakefs_gc.placement.Placement` record; no step asks which engine it holds.

- :func:`on_spark`: a Spark job's engine (:class:`lakefs_gc.engine.spark.SparkEngine`): DataFrames and
  Spark tasks; it decides a small input on its driver (:meth:`Engine.placed`), handing over to the
  executors when the driver cannot (:class:`NeedsSpark`).
- :func:`in_task`: the Airflow task's own engine (:class:`lakefs_gc.engine.local.LocalEngine`,
  no Spark): Python rows and threads; an input past its bounds raises :class:`NeedsSpark` before
  anything is written, and spark-submit runs the step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from lakefs_gc import placement
from lakefs_gc.engine.local import LocalEngine
from lakefs_gc.engine.protocol import Engine
from lakefs_gc.engine.spark import SparkEngine
from lakefs_gc.spark.addresses import NeedsSpark

if TYPE_CHECKING:
    from typing import Any

    from pyspark.sql import DataFrame, SparkSession

    from lakefs_gc.contract import RunContext

__all__ = ["Engine", "NeedsSpark", "in_task", "on_spark"]


def on_spark(spark: SparkSession, ctx: RunContext, environ: Mapping[str, str] | None) -> Engine[DataFrame, DataFrame]:
    """Return a Spark job's engine for the run ``ctx``: its storage, parallelism and placement (the session's conf)."""
    return SparkEngine.for_run(spark, ctx, environ, placement.Placement.from_conf(spark.conf.get))


def in_task(
    ctx: RunContext, environ: Mapping[str, str] | None, max_keys: int
) -> Engine[list[tuple[Any, ...]], Collection[str]]:
    """Return the engine of a step its Airflow task runs itself, for inputs of at most ``max_keys`` keys."""
    return LocalEngine.in_task(ctx, environ, dataclasses.replace(placement.DEFAULT, in_task_max_keys=max_keys))
