"""The provider's public surface is documented as Airflow's own providers document theirs: every argument
of a hook, an operator, the notifier and the task group has its ``:param name:`` line, and the
provider's metadata names the notifier."""

from __future__ import annotations

import inspect

import pytest

import lakefs_gc_airflow
from lakefs_gc_airflow import hooks, notifiers, operators, spark_submit, task_group, triggers

CLASSES = [
    hooks.LakeFSHook,
    operators.PrepareRunOperator,
    operators.MarkUncommittedOperator,
    operators.SaveReportOperator,
    operators.RestoreOperator,
    operators.DiscoverRepositoriesOperator,
    spark_submit.GCSparkSubmitOperator,
    triggers.LakeFSPrepareCommitsTrigger,
    notifiers.GCRunNotifier,
]
FUNCTIONS = [task_group.lakefs_gc_task_group, task_group.gc_tasks]


def _arguments(fn) -> list[str]:
    return [
        p.name
        for p in inspect.signature(fn).parameters.values()
        if p.name != "self" and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_argument_of_a_public_class_is_documented(cls):
    doc = cls.__doc__ or ""
    missing = [a for a in _arguments(cls.__init__) if f":param {a}:" not in doc]
    assert missing == [], f"{cls.__name__}'s docstring lacks :param lines for {missing}"


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_every_argument_of_a_public_function_is_documented(fn):
    doc = fn.__doc__ or ""
    missing = [a for a in _arguments(fn) if f":param {a}:" not in doc]
    assert missing == [], f"{fn.__name__}'s docstring lacks :param lines for {missing}"


def test_the_provider_metadata_names_the_notifier():
    assert lakefs_gc_airflow.get_provider_info()["notifications"] == ["lakefs_gc_airflow.notifiers.GCRunNotifier"]
