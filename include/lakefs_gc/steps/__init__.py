"""
One module per DAG task, named by its task id, and their functions (the tasks themselves:
:data:`lakefs_gc.contract.STEP_TABLE`).

:data:`STEP_FUNCTIONS` maps every task id to the function that does the task's work, with two
signatures:

- the Python steps, run in the Airflow task itself: ``prepare_run(client, repository, settings,
  ...) -> RunContext``, ``mark_uncommitted(client, ctx, storage) -> UncommittedResult``,
  ``save_report(storage, inputs) -> ReportResult``;
- the Spark steps (:data:`lakefs_gc.contract.SPARK_STEPS`), run by a spark-submit job
  (:mod:`lakefs_gc.spark.jobs`) or in one process: ``run(spark, inputs, environ) -> result``.

The Airflow operators and the Spark jobs' entry points look the functions up here, and so does
the test suite's in-process runner: a task has one implementation wherever it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lakefs_gc.contract import SPARK_STEPS, STEPS
from lakefs_gc.steps import (
                             compute_candidates,
                             delete,
                             list_committed,
                             list_slices,
                             mark_uncommitted,
                             prepare_run,
                             save_report,
)

_MODULES = {m.__name__.rsplit(".", 1)[1]: m for m in (prepare_run, mark_uncommitted, list_committed, list_slices,
                                                      compute_candidates, delete, save_report)}
assert set(_MODULES) == set(STEPS), "one module per task id"

# a Python step's function is named by its task id, a Spark step's is ``run``
STEP_FUNCTIONS: dict[str, Callable[..., Any]] = {
    step: _MODULES[step].run if step in SPARK_STEPS else getattr(_MODULES[step], step) for step in STEPS}

# the Spark steps as their Airflow task runs them itself, without Spark, for a small input
# (``spark.in_process_max_keys``): ``run_here(inputs, environ, max_keys) -> result``, or None when the
# input is larger (nothing written: spark-submit runs the step)
HERE_FUNCTIONS: dict[str, Callable[..., Any]] = {step: _MODULES[step].run_here for step in SPARK_STEPS}
