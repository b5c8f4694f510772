"""The flow decision (lakefs_gc.gc.flow.choose_flow): clean or incremental, on which base, and why."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lakefs_gc.errors import Refusal
from lakefs_gc.gc.flow import CleanRunEvery, choose_flow, rules_fingerprint
from lakefs_gc.report.run_summary import STATE_FORMAT, RunSummary
from lakefs_gc.timestamps import iso

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
NS = "s3://bucket/repo"
RULES = rules_fingerprint(7, {"main": 21})
EVERY = CleanRunEvery(runs=7, days=7)


def state(**over):
    s = {
        "format": STATE_FORMAT,
        "namespace": NS,
        "gc_rules": RULES,
        "clean_run_id": "clean1",
        "clean_start_time": iso(NOW - timedelta(days=1)),
        "runs_in_chain": 1,
        "last_slice": "s",
        "uncommitted_dir": {"dir": "u/", "parts": 1},
        "committed_dirs": [{"dir": "c/", "parts": 1}],
        "identity_dirs": [{"dir": "i/", "parts": 1}],
        "read_file": "r.json",
    }
    s.update(over)
    return s


def mark(mark_id, hours_ago, success=True, mode="mark_and_sweep", **st):
    summary = {"run_id": mark_id, "success": success, "mode": mode, "start_time": iso(NOW - timedelta(hours=hours_ago))}
    if st.get("state", True) is not None:
        summary["incremental_state"] = state(**{k: v for k, v in st.items() if k != "state"})
    return mark_id, RunSummary.from_doc(summary), None


def choose(requested, marks, **kw):
    return choose_flow(
        requested,
        marks,
        namespace=kw.get("namespace", NS),
        rules=kw.get("rules", RULES),
        now=NOW,
        every=kw.get("every", EVERY),
    )


def test_clean_when_asked_and_when_there_is_no_earlier_run():
    assert choose("clean", [mark("a", 1)]).flow == "clean"
    c = choose("auto", [])
    assert (c.flow, c.reason) == ("clean", "auto: no earlier successful run")


def test_auto_builds_on_the_newest_successful_run_whatever_came_after_it():
    marks = [
        mark("old", 5),
        mark("new", 2),
        mark("failed", 1, success=False),
        mark("sweep", 0.5, mode="sweep_only"),
        ("broken", None, "summary.json is not JSON"),
        mark("future", -1),
    ]
    c = choose("auto", marks)
    assert (c.flow, c.base) == ("incremental", "new")
    assert c.base_summary.to_doc()["incremental_state"]["clean_run_id"] == "clean1"
    assert c.reason.startswith("auto: builds on run new")
    assert choose("incremental", marks).reason.startswith("requested (flow=incremental): builds on run new")


@pytest.mark.parametrize(
    ("summary_state", "kw", "why"),
    [
        ({"state": None}, {}, "saved no state"),
        ({"format": STATE_FORMAT + 1}, {}, f"format {STATE_FORMAT + 1}"),
        ({}, {"namespace": "s3://bucket/other"}, "storage namespace 's3://bucket/repo'"),
        ({"clean_start_time": "yesterday"}, {}, "not a time"),
    ],
)
def test_auto_runs_clean_and_says_why_when_the_newest_run_cannot_be_a_base(summary_state, kw, why):
    marks = [mark("base", 30, **{"format": STATE_FORMAT}), mark("newest", 1, **summary_state)]
    c = choose("auto", marks, **kw)
    assert c.flow == "clean"
    assert "the newest successful run newest cannot serve as a base" in c.reason
    assert why in c.reason
    with pytest.raises(Refusal, match="flow=incremental needs an earlier successful run.*Run with flow=clean"):
        choose("incremental", marks, **kw)


def test_clean_run_every_runs_or_days():
    chain_of_3 = [mark("m", 1, runs_in_chain=3)]
    assert choose("auto", chain_of_3, every=CleanRunEvery(runs=3)).reason == (
        "auto: clean_run_every: 3 runs (the last clean run and 2 incremental run(s) since)"
    )
    assert choose("auto", chain_of_3, every=CleanRunEvery(runs=4)).flow == "incremental"
    old_clean = [mark("m", 1, clean_start_time=iso(NOW - timedelta(days=8)))]
    c = choose("auto", old_clean, every=CleanRunEvery(days=7))
    assert c.flow == "clean"
    assert c.reason.startswith("auto: clean_run_every: 7 days")
    assert choose("auto", old_clean, every=CleanRunEvery(days=9)).flow == "incremental"
    forced = choose("incremental", old_clean, every=CleanRunEvery(days=7))  # asked for: runs, and says so
    assert forced.flow == "incremental"
    assert "note: clean_run_every: 7 days" in forced.reason


def test_changed_gc_rules_make_auto_clean_and_incremental_say_so():
    marks = [mark("m", 1)]
    other = rules_fingerprint(3, {})
    c = choose("auto", marks, rules=other)
    assert (c.flow, c.reason) == ("clean", "auto: the repository's GC rules changed since run m")
    forced = choose("incremental", marks, rules=other)
    assert forced.flow == "incremental"
    assert forced.reason.endswith("note: the repository's GC rules changed since run m")


def test_an_unknown_flow_is_refused():
    with pytest.raises(Refusal, match="Param 'flow' must be one of auto, clean, incremental, got 'fast'"):
        choose("fast", [])
