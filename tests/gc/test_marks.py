"""Refusals before a sweep (no Spark): a sweep-only mark that is missing, failed or too old; the
blast-radius guard. Each asserts the message names the cause and the Param, and nothing is deleted."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from lakefs_gc.errors import SweepRefused
from lakefs_gc.gc.confirmation import confirming_mark
from lakefs_gc.gc.guards import blast_radius, check_mark
from lakefs_gc.report.marks import candidate_parts, iter_marks
from lakefs_gc.storage import LocalStorage
from lakefs_gc.timestamps import iso

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def _mark(st, mark_id, success=True, age=timedelta(hours=1), mode="mark_only", parts=("candidates", "deleted")):
    st.put(
        f"_lakefs/retention/gc/unified/{mark_id}/summary.json",
        json.dumps(
            {"run_id": mark_id, "success": success, "start_time": iso(NOW - age), "mode": mode, "listed_objects": 10}
        ).encode(),
    )
    for sub in parts:
        st.put(f"_lakefs/retention/gc/unified/{mark_id}/{sub}/part-00000.parquet", b"PAR1")


@pytest.fixture
def st(tmp_path):
    s = LocalStorage(tmp_path)
    s.put("data/s/live", b"x")
    return s


@pytest.mark.parametrize(
    ("mark_id", "setup", "match"),
    [
        ("", None, r"mode sweep_only needs the Param mark_id"),
        (
            "nosuchmark",
            None,
            r"mark 'nosuchmark' does not exist \(no summary.json at local://.*\); check the Param mark_id",
        ),
        ("failedmark", dict(success=False), r"mark 'failedmark' did not complete \(summary.json has success: False"),
        (
            "oldmark",
            dict(age=timedelta(days=8)),
            r"older than mark_max_age_seconds=604800 \(Param mark_max_age_seconds\)",
        ),
    ],
)
def test_sweep_only_refuses_bad_marks(st, mark_id, setup, match):
    if setup is not None:
        _mark(st, mark_id, **setup)
    before = sorted(o.key for o in st.list("", recursive=True))
    with pytest.raises(SweepRefused, match=match) as e:
        check_mark(st, mark_id, NOW, 7 * 86400)
    assert "nothing was deleted" in str(e.value).lower() or mark_id == ""
    assert sorted(o.key for o in st.list("", recursive=True)) == before


def test_a_good_mark_is_accepted(st):
    _mark(st, "goodmark")
    assert check_mark(st, "goodmark", NOW, 7 * 86400).listed_objects == 10


def test_blast_radius_guard_names_the_numbers_and_the_param():
    with pytest.raises(
        SweepRefused,
        match=r"600 objects to delete are 60.0% of 1,000 listed objects, above "
        r"max_delete_share=0.5.*Param max_delete_share >= 0.600",
    ):
        blast_radius("m1", 600, 1000, 0.5, None)
    with pytest.raises(
        SweepRefused,
        match=r"1,200 objects to delete exceed max_delete_count=1,000.*"
        r"Param max_delete_count >= 1200",
    ):
        blast_radius("m1", 1200, 10_000, 0.5, 1000)
    with pytest.raises(SweepRefused, match="0 listed objects"):
        blast_radius("m1", 1, 0, 0.5, None)
    blast_radius("m1", 500, 1000, 0.5, 1000)  # at the limits: allowed
    blast_radius("m1", 0, 0, 0.5, 0)


def latest_mark_before(st, before):
    found, unreadable = confirming_mark(iter_marks(st), before)
    return found


def test_latest_mark_before_picks_the_newest_old_enough_successful_mark(st):
    _mark(st, "m_old", age=timedelta(days=3))
    _mark(st, "m_mid", age=timedelta(days=2))
    _mark(st, "m_failed", age=timedelta(days=1, hours=12), success=False)
    _mark(st, "m_new", age=timedelta(hours=2))
    _mark(st, "m_sweep", age=timedelta(days=1, hours=6), mode="sweep_only")
    found = latest_mark_before(st, NOW - timedelta(days=1))
    assert found
    assert found[0] == "m_mid"
    assert latest_mark_before(st, NOW - timedelta(days=5)) is None
    assert candidate_parts(st, "m_mid") == ["_lakefs/retention/gc/unified/m_mid/candidates/part-00000.parquet"]
    _mark(st, "m_legacy", parts=("deleted",))
    assert candidate_parts(st, "m_legacy") == ["_lakefs/retention/gc/unified/m_legacy/deleted/part-00000.parquet"]


def test_unreadable_earlier_marks_are_reported_not_skipped_silently(st):
    """A summary that is not JSON, has no start time, or is missing: never used to confirm a
    deletion, and each is named with its reason (the run's report lists them)."""
    _mark(st, "m_good", age=timedelta(days=2))
    st.put("_lakefs/retention/gc/unified/m_garbled/summary.json", b"{not json")
    st.put("_lakefs/retention/gc/unified/m_notime/summary.json", json.dumps({"success": True}).encode())
    st.put("_lakefs/retention/gc/unified/m_nosummary/candidates/part-00000.parquet", b"PAR1")
    found, unreadable = confirming_mark(iter_marks(st), NOW - timedelta(days=1))
    assert found
    assert found[0] == "m_good"
    assert sorted(u.split(":")[0] for u in unreadable) == ["m_garbled", "m_nosummary", "m_notime"]
    assert any("not valid JSON" in u for u in unreadable)
    assert any("no valid start_time" in u for u in unreadable)
