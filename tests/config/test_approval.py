"""The repositories file's approval of sweeps: ``sweep.confirm: approval``, ``sweep.approval_above``, and the DAG it builds."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from lakefs_gc.config import ConfigError, parse_entry
from lakefs_gc.contract import ApprovalRule


@pytest.mark.parametrize(
    ("sweep", "rule"),
    [
        ({}, ApprovalRule()),
        ({"confirm": "approval"}, ApprovalRule(always=True)),
        ({"approval_above": "guard"}, ApprovalRule(above_guard=True)),
        ({"approval_above": 0.2}, ApprovalRule(above_share=0.2)),
        (
            {"approval_above": 50000, "approval_timeout_hours": 0.5},
            ApprovalRule(above_count=50000, timeout_seconds=1800),
        ),
    ],
)
def test_the_rule_read_from_the_file(sweep, rule):
    assert parse_entry({"repository": "repo-a", "sweep": sweep}, "t").sweep.approval_rule() == rule


@pytest.mark.parametrize(
    ("sweep", "message"),
    [
        ({"approval_above": 1.5}, "field 'sweep.approval_above': must be guard"),
        ({"approval_above": True}, "field 'sweep.approval_above': must be guard"),
        ({"approval_above": "half"}, "a whole count of objects >= 1 (e.g. 50000), got 'half'"),
        ({"confirm": "yes"}, "field 'sweep.confirm': must be automatic or approval, got 'yes'"),
        ({"confirm": "approval", "approval_above": 10}, "already asks for every sweep: keep one of the two"),
        ({"approval_timeout_hours": 0}, "field 'sweep.approval_timeout_hours': must be a number of hours > 0"),
    ],
)
def test_a_bad_approval_setting_is_named(sweep, message):
    with pytest.raises(ConfigError) as e:
        parse_entry({"repository": "repo-a", "sweep": sweep}, "t")
    assert message in str(e.value)


def test_the_approval_task_is_in_the_dag_only_when_asked_for():
    from airflow.sdk import DAG

    from lakefs_gc_airflow.task_group import gc_tasks

    def dag(sweep):
        with DAG("d", schedule=None, start_date=datetime(2026, 1, 1)) as d:
            gc_tasks(parse_entry({"repository": "repo-a", "sweep": sweep}, "t"))
        return d

    plain = dag({})
    assert "approve_sweep" not in plain.task_dict
    assert plain.task_dict["prepare_run"].approval is None
    asked = dag({"approval_above": "guard", "approval_timeout_hours": 2})
    ask = asked.task_dict["approve_sweep"]
    assert ask.upstream_task_ids == {"attribute_space"}
    assert "approve_sweep" in asked.task_dict["delete"].upstream_task_ids
    assert ask.response_timeout == timedelta(hours=2)
    assert ask.retries == 0
    assert asked.task_dict["prepare_run"].approval == {
        "always": False,
        "above_share": None,
        "above_count": None,
        "above_guard": True,
        "timeout_seconds": 7200,
    }
