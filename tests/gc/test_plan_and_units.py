"""Pure pieces: the run clock, xids, commits.csv parsing, the deletable rule, the report."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lakefs_gc.contract import CandidatesResult, DeleteCounts, DeleteResult, SlicesResult, UncommittedResult
from lakefs_gc.errors import LakeFSGCError
from lakefs_gc.gc.clock import PlanError, make_run_clock
from lakefs_gc.gc.decision import is_deletable
from lakefs_gc.lakefs import xid
from lakefs_gc.listing import committed
from lakefs_gc.report.summary import build_summary
from lakefs_gc.timestamps import parse_iso
from tests.support.contract import inputs, make_context

NOW = datetime(2026, 11, 22, 12, 0, 0, 123456, tzinfo=UTC)


def test_cutoff_is_start_minus_the_larger_of_min_age_and_grace():
    p = make_run_clock(NOW, 2 * 86400, 86400)
    assert parse_iso(p.start_time) == NOW
    assert parse_iso(p.cutoff_time) == NOW - timedelta(days=2)
    assert p.effective_min_age_seconds == 2 * 86400


def test_min_age_below_grace_is_refused_naming_the_override():
    with pytest.raises(PlanError, match="unsafe_min_age_override"):
        make_run_clock(NOW, 3600, 86400)


def test_unsafe_override_is_honoured_and_recorded():
    p = make_run_clock(NOW, 0, 86400, unsafe_override=True)
    assert parse_iso(p.cutoff_time) == NOW
    assert p.effective_min_age_seconds == 0


@pytest.mark.parametrize("bad", [-1, 1.5, "86400", True])
def test_invalid_min_age_is_refused(bad):
    with pytest.raises(PlanError, match="min_age_seconds"):
        make_run_clock(NOW, bad, 86400)


def test_naive_clock_is_refused():
    with pytest.raises(PlanError):
        make_run_clock(NOW.replace(tzinfo=None), 86400, 86400)


def test_xid_times_match_the_reference_examples():
    assert datetime.fromtimestamp(xid.descending_time("g4uk6erfnfus73frbnqg"), UTC).date().isoformat() == "2025-11-10"
    assert datetime.fromtimestamp(xid.descending_time("gqv3epl4fd2o8m3men70"), UTC).date().isoformat() == "2022-12-07"
    assert (
        datetime.fromtimestamp(xid.ascending_time("ce8co454fd2o8m3menag"), UTC).isoformat()
        == "2022-12-07T17:23:28+00:00"
    )
    assert xid.encode(xid.decode("ce8co454fd2o8m3menag")) == "ce8co454fd2o8m3menag"
    assert not xid.is_xid("!ab")
    assert not xid.is_xid("b0c968736d8f42a2b1c6284835f08226")


def test_commits_csv():
    data = b"commit_id,expired,metarange_id\nc1,false,m1\nc2,false,\nc3,true,m3\n"
    assert committed.parse_commits_csv(data, "x") == [("c1", "m1"), ("c2", ""), ("c3", "m3")]
    with pytest.raises(LakeFSGCError, match="lists no active commit"):
        committed.parse_commits_csv(b"commit_id,expired,metarange_id\n", "x")
    with pytest.raises(LakeFSGCError, match="unexpected commits.csv header"):
        committed.parse_commits_csv(b"id,meta\nc1,m1\n", "x")
    with pytest.raises(LakeFSGCError, match="line 2"):
        committed.parse_commits_csv(b"commit_id,expired,metarange_id\nc1,false\n", "x")
    with pytest.raises(LakeFSGCError, match="empty"):
        committed.parse_commits_csv(b"", "x")


def test_metadata_locations():
    ns = "s3://bucket/repo"
    assert committed.relative_key(ns, "_lakefs/abc") == "_lakefs/abc"
    assert committed.relative_key(ns + "/", "s3://bucket/repo/_lakefs/abc") == "_lakefs/abc"
    with pytest.raises(LakeFSGCError, match="outside the storage namespace"):
        committed.relative_key(ns, "s3://bucket/repo2/_lakefs/abc")


@pytest.mark.parametrize(
    ("address", "ok"),
    [
        ("data/gqv3epl4fd2o8m3men70/ce8co454fd2o8m3menag", True),
        ("b0c968736d8f42a2b1c6284835f08226", True),
        ("data/!ab/c/slice/obj", True),
        ("dummy", False),
        ("_lakefs/dummy", False),
        ("_lakefs/abc", False),
        ("data/", False),
        ("", False),
        ("data/../_lakefs/x", False),
        ("other/prefix/x", False),
        ("/data/x", False),
    ],
)
def test_deletable_rule(address, ok):
    assert is_deletable(address) is ok


def test_summary_keeps_lakefs_fields_first_and_adds_ours():
    ctx = make_context(start=NOW, airflow_run_id="x")
    results = dict(
        mark_uncommitted=UncommittedResult(run_id="r", locations=(), pages=1),
        list_slices=SlicesResult(
            listed_dir="l", first_slice="s", slices_listed=1, slices_skipped=0, listed_objects=10, listed_bytes=100
        ),
        compute_candidates=CandidatesResult(
            report_dir="d",
            uncommitted_files=0,
            candidates=5,
            candidate_bytes=50,
            to_delete=5,
            to_delete_bytes=50,
            held_back=0,
            confirm_after_seconds=0,
        ),
        delete=DeleteResult(counts=DeleteCounts(keys=5, deleted=5, parts=1)),
    )
    s = build_summary(inputs(ctx, **results), True).to_doc()
    assert list(s)[:6] == ["run_id", "success", "first_slice", "start_time", "cutoff_time", "num_deleted_objects"]
    assert s["run_id"] == "r"
    assert s["first_slice"] == "s"
    assert s["num_deleted_objects"] == 5
    assert s["reclaimed_bytes"] == 50
    assert s["airflow_run_id"] == "x"
    assert s["unsafe_min_age_override"] is False
    assert s["listed_objects"] == 10
    mark_only = build_summary(
        inputs(make_context(start=NOW, mode="mark_only"), **{**results, "delete": DeleteResult(skipped="mark_only")}),
        True,
    ).to_doc()
    assert mark_only["reclaimed_bytes"] == 0
    assert mark_only["deleted"] == 0
    assert mark_only["num_deleted_objects"] == 5
    dry = build_summary(
        inputs(
            make_context(start=NOW, dry_run=True),
            **{**results, "delete": DeleteResult(counts=DeleteCounts(keys=5, deleted=5), dry_run=True)},
        )
    ).to_doc()
    assert dry["deleted"] == 0
    assert dry["would_delete"] == 5
    assert dry["reclaimed_bytes"] == 0
