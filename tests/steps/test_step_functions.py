"""The one table of step functions: a function for every task of the run contract."""

from __future__ import annotations

from lakefs_gc import contract
from lakefs_gc.spark import bundle
from lakefs_gc.steps import SPARK_STEPS, STEP_FUNCTIONS


def test_every_task_has_one_step_function():
    assert tuple(STEP_FUNCTIONS) == contract.STEPS
    assert all(callable(f) for f in STEP_FUNCTIONS.values())


def test_every_spark_step_has_a_job_entry_point():
    assert SPARK_STEPS == bundle.STEPS
    assert bundle.job_path().is_file()
    for step in SPARK_STEPS:
        assert bundle.job_args(step) == [step]
        assert STEP_FUNCTIONS[step].__module__ == f"lakefs_gc.steps.{step}"
