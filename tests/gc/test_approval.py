"""A person's approval of a sweep (``sweep.confirm: approval`` / ``sweep.approval_above``), below Airflow.

The delete step in its task's own process on a local namespace, a mark written by hand: what it
sweeps for each answer of ``approve_sweep`` (asserted on what is left in storage), the question a
person is shown, the answer across the Spark job's input file, and the report's line. The Airflow
task itself, under a real scheduler: ``tests/airflow/e2e/test_backfill.py``.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from lakefs_gc import contract
from lakefs_gc.contract import Approval, ApprovalRule, StepInputs
from lakefs_gc.errors import SweepRefused
from lakefs_gc.gc.approval import question, sweep_size
from lakefs_gc.gc.guards import approval_reason
from lakefs_gc.placement import DEFAULT
from lakefs_gc.steps import run_in_task
from lakefs_gc.storage import LocalStorage
from tests.steps.test_delete import MARK, _inputs, _mark

GUARD = ApprovalRule(above_guard=True)


def _world(tmp_path, rule: ApprovalRule, approval: Approval | None, listed: int = 40, **settings):
    """30 garbage keys in 2 parts of a mark, 5 live keys; the step's inputs with ``rule`` and ``approval``."""
    st = LocalStorage(tmp_path / "repo")
    garbage = [f"data/s{i % 3}/c{i:03d}" for i in range(30)]
    live = [f"data/s0/live{i}" for i in range(5)]
    for k in garbage + live:
        st.put(k, b"x")
    _mark(st, garbage, parts=2)
    inputs = _inputs("local://repo", tmp_path / "w", listed, local_root=str(tmp_path), **settings)
    ctx = replace(inputs.context, approval=rule, settings=replace(inputs.context.settings, max_delete_share=0.5))
    return st, garbage, live, StepInputs(ctx, {**inputs.results, contract.APPROVAL_TASK: approval})


def _sweep(inputs: StepInputs):
    return run_in_task("delete", inputs, {}, DEFAULT.in_task_max_keys)


def test_an_approved_mark_is_swept_beyond_the_guard_exactly(tmp_path):
    approval = Approval("approved", MARK, 30, 40, by="alice", at="2026-11-29T12:00:00+00:00")
    st, garbage, live, inputs = _world(tmp_path, GUARD, approval)
    result = _sweep(inputs)  # 30 of 40 listed: 75%, above max_delete_share 0.5, but a person approved it
    assert result.counts.deleted == 30
    assert not any(st.exists(k) for k in garbage)
    assert all(st.exists(k) for k in live)
    assert result.approval == approval


@pytest.mark.parametrize(
    ("approval", "match"),
    [
        (None, r"wait for a person's approval \(sweep.approval_above: guard\) and the run has no answer"),
        (Approval("approved", MARK, 29, 40, by="alice"), r"the answer of approve_sweep is for mark .* of 29 objects"),
        (Approval("approved", "another-mark", 30, 40, by="alice"), r"is for mark another-mark of 30 objects"),
        (Approval("not_needed", MARK, 30, 40), r"recorded that no approval was needed, but 30 objects to delete"),
        (Approval("timed_out", MARK, 30, 40), r"the sweep was timed_out"),
    ],
)
def test_no_answer_a_wrong_one_or_a_false_not_needed_deletes_nothing(tmp_path, approval, match):
    st, garbage, live, inputs = _world(tmp_path, GUARD, approval)
    with pytest.raises(SweepRefused, match=match) as e:
        _sweep(inputs)
    assert "Nothing was deleted" in str(e.value)
    assert all(st.exists(k) for k in garbage + live)


def test_a_rejected_sweep_deletes_nothing_and_says_who(tmp_path):
    approval = Approval("rejected", MARK, 30, 40, by="bob", at="2026-11-29T12:00:00+00:00", reason="r")
    st, garbage, live, inputs = _world(tmp_path, GUARD, approval)
    result = _sweep(inputs)
    assert result.skipped == "rejected"
    assert result.approval.by == "bob"
    assert all(st.exists(k) for k in garbage + live)
    from lakefs_gc.report.render import step_line

    assert "no sweep: rejected by bob at 2026-11-29T12:00:00Z (r)" in step_line("delete", result)


def test_not_needed_under_the_threshold_keeps_the_blast_radius(tmp_path):
    rule = ApprovalRule(above_count=100)
    approval = Approval("not_needed", MARK, 30, 40, reason="under")
    st, garbage, _, inputs = _world(tmp_path, rule, approval)
    with pytest.raises(SweepRefused, match=r"75.0% of 40 listed objects, above max_delete_share=0.5"):
        _sweep(inputs)  # not asked (30 <= 100), so the guard decides, and refuses
    assert all(st.exists(k) for k in garbage)
    st, garbage, live, inputs = _world(tmp_path / "b", rule, approval, listed=100)
    assert _sweep(inputs).counts.deleted == 30  # 30% of 100: inside the guard
    assert not any(st.exists(k) for k in garbage)
    assert all(st.exists(k) for k in live)


def test_without_a_rule_the_guard_alone_decides(tmp_path):
    st, garbage, _, inputs = _world(tmp_path, ApprovalRule(), None)
    with pytest.raises(SweepRefused, match=r"above max_delete_share=0.5"):
        _sweep(inputs)
    assert all(st.exists(k) for k in garbage)


@pytest.mark.parametrize(
    ("rule", "to_delete", "listed", "asks"),
    [
        (ApprovalRule(always=True), 1, 1000, "every sweep of this repository waits"),
        (ApprovalRule(always=True), 0, 1000, None),  # nothing to delete: nothing to approve
        (ApprovalRule(above_share=0.2), 200, 1000, None),
        (ApprovalRule(above_share=0.2), 201, 1000, "above sweep.approval_above: 0.2"),
        (ApprovalRule(above_count=500), 500, 10_000, None),
        (ApprovalRule(above_count=500), 501, 10_000, "above sweep.approval_above: 500"),
        (GUARD, 500, 1000, None),  # 50%: the guard (0.5) lets it through
        (GUARD, 501, 1000, "the blast-radius guard would refuse it"),
    ],
)
def test_when_a_sweep_asks(rule, to_delete, listed, asks):
    s = contract.RunSettings(max_delete_share=0.5)
    reason = approval_reason(rule, "m", to_delete, listed, s)
    assert (reason is None) if asks is None else (asks in (reason or "")), reason
    assert approval_reason(rule, "m", to_delete, listed, replace(s, dry_run=True)) is None
    assert approval_reason(rule, "m", to_delete, listed, replace(s, mode="mark_only")) is None


def test_the_question_shows_the_mark_its_share_and_its_largest_prefixes(tmp_path):
    st, _, _, inputs = _world(tmp_path, GUARD, None)
    assert sweep_size(st, MARK)[1] == 30
    q = question(inputs, st, None, "http://airflow/dags/d/plugin/gc-dag")
    assert q.reason is not None
    assert q.subject == "Sweep 30 objects from " + inputs.context.repository + "?"
    assert "**30 objects** would be deleted" in q.body
    assert "75.0% of 40 listed objects" in q.body
    assert "- `data/s0/`: 10 objects" in q.body
    assert "(http://airflow/dags/d/plugin/gc-dag)" in q.body
    _, _, _, small = _world(tmp_path / "b", GUARD, None, listed=100)
    under = question(small, LocalStorage(tmp_path / "b" / "repo"), None)
    assert under.reason is None
    assert under.not_needed("why").decision == "not_needed"


def test_the_answer_crosses_the_spark_jobs_input_file(tmp_path):
    approval = Approval("approved", MARK, 30, 40, by="alice", at="t")
    *_, inputs = _world(tmp_path, GUARD, approval)
    back = contract.inputs_from_wire(contract.inputs_to_wire(inputs))
    assert back.results[contract.APPROVAL_TASK] == approval
    assert back.context.approval == GUARD
