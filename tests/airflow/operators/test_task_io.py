"""lakefs_gc_airflow.task_io: a failure's reason in the task log, readable without scrolling sideways; inputs pulled in the task's group."""

from __future__ import annotations

import logging

import pytest

from lakefs_gc_airflow.task_io import REASON_WIDTH, log_reason, reason_lines

LONG = (
    "repository 'sample-repo' has namespace 's3://a-bucket/sample-repo', but the storage connection "
    "'aws_default' is not defined: define it (an aws connection: keys, role or profile, extra endpoint_url "
    "for S3-compatible stores) or fix storage_conn_id in the GC config. Nothing was deleted"
)


def test_a_long_reason_becomes_short_lines_and_keeps_every_word():
    lines = reason_lines(LONG)
    assert len(lines) > 2
    assert all(len(ln) <= REASON_WIDTH for ln in lines)
    assert " ".join(lines) == LONG


def test_a_uri_longer_than_a_line_stays_whole():
    uri = "s3://bucket/" + "x" * 150
    assert reason_lines(f"cannot read {uri} now") == ["cannot read", uri, "now"]


def test_the_log_gets_the_headline_then_the_indented_lines(caplog):
    log = logging.getLogger("lakefs_gc_airflow.test")
    with caplog.at_level(logging.ERROR, logger=log.name):
        log_reason(log, "prepare_run refused (no retry)", LONG + "\nsecond paragraph")
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0] == "prepare_run refused (no retry):"
    assert all(m.startswith("    ") and len(m) <= REASON_WIDTH + 4 for m in messages[1:])
    assert messages[-1] == "    second paragraph"


def test_the_approval_task_pulls_its_inputs_in_its_own_group_as_the_steps_do():
    """approve_sweep is not a step but reads like one (task_io.pulled_inputs): in a task group, the
    group's tasks; a missing run context fails the task without retry, naming it."""
    from airflow.sdk.exceptions import AirflowFailException

    from lakefs_gc import contract
    from lakefs_gc_airflow.approval import SweepApprovalOperator
    from lakefs_gc_airflow.task_io import pulled_inputs
    from tests.airflow.helpers import FakeTI, fake_results
    from tests.support.contract import make_context

    ctx = make_context("s3://bucket/repos/r", repository="r", work_dir="/w", airflow_run_id="manual__1")
    ti = FakeTI({"gc.prepare_run": contract.to_wire(ctx), **{f"gc.{k}": v for k, v in fake_results().items()}})
    ti.task_id = "gc.approve_sweep"
    inputs = pulled_inputs(contract.APPROVAL_TASK, {"ti": ti}, ("compute_candidates", "attribute_space"))
    assert ti.pulled == [["gc.prepare_run", "gc.compute_candidates", "gc.attribute_space"]]
    assert inputs.context == ctx
    assert inputs.results["compute_candidates"] == contract.read_result(
        "compute_candidates", fake_results()["compute_candidates"]
    )

    op = SweepApprovalOperator(task_id="approve_sweep", storage_conn_id=None)
    with pytest.raises(
        AirflowFailException, match=r"^approve_sweep: the run context \(XCom of task 'prepare_run'\) is missing$"
    ):
        op.execute({"ti": FakeTI({})})


@pytest.mark.parametrize("asks", [True, False])
def test_the_sweep_pulls_a_persons_answer_with_its_inputs_when_the_run_asks_for_one(asks):
    """delete's inputs in one pull, in its group; the answer of approve_sweep among its results only
    when the run's rule asks a person (the guard reads it then)."""
    from dataclasses import replace

    from lakefs_gc import contract
    from lakefs_gc_airflow.task_io import step_inputs
    from tests.airflow.helpers import FakeTI, fake_results
    from tests.airflow.operators.support import UNCOMMITTED
    from tests.support.contract import make_context

    ctx = make_context("s3://bucket/repos/r", repository="r", work_dir="/w", airflow_run_id="m__1")
    ctx = replace(ctx, approval=contract.ApprovalRule(always=asks))
    answer = contract.Approval(decision="approved", mark_id="m", to_delete=3, listed=7, by="ann")
    xcoms = {"gc.prepare_run": contract.to_wire(ctx), **{f"gc.{k}": v for k, v in fake_results().items()}}
    xcoms["gc.mark_uncommitted"] = contract.to_wire(UNCOMMITTED)
    ti = FakeTI({**xcoms, **({"gc.approve_sweep": contract.to_wire(answer)} if asks else {})})
    ti.task_id = "gc.delete"
    inputs = step_inputs("delete", {"ti": ti})
    reads = ["gc.prepare_run", *(f"gc.{k}" for k in contract.STEP_INPUTS["delete"]), "gc.approve_sweep"]
    assert ti.pulled == [reads]
    assert inputs.results.get(contract.APPROVAL_TASK) == (answer if asks else None)
    assert (contract.APPROVAL_TASK in inputs.results) is asks
