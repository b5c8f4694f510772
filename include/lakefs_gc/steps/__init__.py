"""One module per DAG task, named by its task id, and the one table of their functions.

:data:`STEP_FUNCTIONS` maps every task id to the function that does the task's work, with two
signatures:

- the Python steps, run in the Airflow task itself: ``prepare_run(client, repository, settings,
  ...) -> RunContext``, ``mark_uncommitted(client, ctx, storage) -> UncommittedResult``,
  ``save_report(storage, inputs) -> ReportResult``;
- the Spark steps (:data:`SPARK_STEPS`), run by a spark-submit job
  (:mod:`lakefs_gc.spark.jobs`) or in one process: ``run(spark, inputs, environ) -> result``.

The Airflow operators and the Spark jobs' entry points look the functions up here, and so does
the test suite's in-process runner: a task has one implementation wherever it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lakefs_gc.steps import (compute_candidates, delete, list_committed, list_slices, mark_uncommitted, prepare_run,
                             save_report)

SPARK_STEPS = ("list_committed", "list_slices", "compute_candidates", "delete")

STEP_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "prepare_run": prepare_run.prepare_run,
    "mark_uncommitted": mark_uncommitted.mark_uncommitted,
    "list_committed": list_committed.run,
    "list_slices": list_slices.run,
    "compute_candidates": compute_candidates.run,
    "delete": delete.run,
    "save_report": save_report.save_report,
}

# the Spark steps as their Airflow task runs them itself, without Spark, for a small input
# (``spark.in_process_max_keys``): ``run_here(inputs, environ, max_keys) -> result``, or None when the
# input is larger (nothing written: spark-submit runs the step)
HERE_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "list_slices": list_slices.run_here,
    "list_committed": list_committed.run_here,
    "compute_candidates": compute_candidates.run_here,
    "delete": delete.run_here,
}
