"""
One module per DAG task, named by its task id, and their functions.

The tasks themselves: :data:`lakefs_gc.contract.STEP_TABLE`. :data:`STEP_FUNCTIONS` maps every
task id to the function that does the task's work, with two signatures:

- the Python steps, run in the Airflow task itself: ``prepare_run(client, repository, settings,
  ...) -> RunContext``, ``mark_uncommitted(client, ctx, storage) -> UncommittedResult``,
  ``save_report(storage, inputs) -> ReportResult``;
- the Spark steps (:data:`lakefs_gc.contract.SPARK_STEPS`): ``run(engine, inputs, environ) ->
  result``, one function on any engine (:mod:`lakefs_gc.engine`, which decides where its work
  runs): a Spark job's (:func:`run_on_spark`: a spark-submit job, :mod:`lakefs_gc.jobs`, or one
  process's session), or the Airflow task's own process for a small input (:func:`run_in_task`).

The Airflow operators and the Spark jobs' entry points look the functions up here, and so does
the test suite's in-process runner: a task has one implementation wherever it runs.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from lakefs_gc import engine
from lakefs_gc.contract import SPARK_STEPS, STEPS, StepInputs
from lakefs_gc.engine import NeedsSpark
from lakefs_gc.storage import requests

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

# one module per task id, found from the step table
_MODULES = {step: importlib.import_module(f"{__name__}.{step}") for step in STEPS}

# a Python step's function is named by its task id, a Spark step's is ``run``
STEP_FUNCTIONS: dict[str, Callable[..., Any]] = {
    step: _MODULES[step].run if step in SPARK_STEPS else getattr(_MODULES[step], step) for step in STEPS
}


def counted(fn: Callable[[Any], Any], eng: Any) -> Any:
    """
    Return ``fn(eng)``, a step's result, with the storage requests it sent (``requests``, issue 54).

    What this process's storages sent while it ran, and what those of ``eng``'s storage counted
    elsewhere (a Spark job's executors, :meth:`lakefs_gc.engine.base.EngineBase.requests_sent`).
    """
    with requests.counting() as here:
        result = fn(eng)
    if result is None or not hasattr(result, "requests"):
        return result
    here.add(eng.requests_sent())
    return dataclasses.replace(result, requests=here.counts())


def run_on_spark(step: str, spark: SparkSession, inputs: StepInputs, environ: Mapping[str, str] | None = None) -> Any:
    """Run the Spark step ``step`` on ``spark``'s executors; return its result."""
    return counted(lambda e: STEP_FUNCTIONS[step](e, inputs, environ), engine.on_spark(spark, inputs.context, environ))


def run_in_task(step: str, inputs: StepInputs, environ: Mapping[str, str] | None, max_keys: int) -> Any | None:
    """
    Run the Spark step ``step`` in this process, without Spark, when its input is small.

    Return its result; or None when its input holds more than ``max_keys`` keys, or parts only Spark
    can read: nothing was written, and spark-submit runs the step (``spark.in_process_max_keys``).
    """
    if max_keys <= 0:
        return None
    try:
        return counted(
            lambda e: STEP_FUNCTIONS[step](e, inputs, environ), engine.in_task(inputs.context, environ, max_keys)
        )
    except NeedsSpark as e:
        log.info("%s needs Spark: %s", step, e)
        return None
