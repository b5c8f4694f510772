"""The run summary a person reads (``lakefs_gc.report.summary``): the rows of the DAG-run summary
and of ``lakefs-gc report``, when held-back objects can go, and the URLs the task's extra links
open. Pure functions over typed results and summaries: no Spark, no Airflow."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lakefs_gc.contract import (
    CandidatesResult,
    CommittedResult,
    DeleteCounts,
    DeleteResult,
    MarkRef,
    PartsDir,
    SlicesResult,
    StorageLocation,
    UncommittedResult,
)
from lakefs_gc.report.run_summary import RunSummary
from lakefs_gc.report.summary import (
    build_summary,
    held_back_until,
    human_bytes,
    lakefs_ui_url,
    report_url,
    step_line,
    summary_rows,
    summary_text,
)
from tests.support.contract import inputs, make_context

NOW = datetime(2026, 11, 23, 17, 0, tzinfo=UTC)
SLICES = SlicesResult(
    listed_dir="l",
    first_slice="s",
    slices_listed=2,
    slices_skipped=0,
    listed_objects=1200,
    listed_bytes=3 * 1024 * 1024,
)


def _candidates(candidates: int, to_delete: int, confirm: int = 0, **kw) -> CandidatesResult:
    return CandidatesResult(
        report_dir="d",
        uncommitted_files=1,
        candidates=candidates,
        candidate_bytes=candidates * 10,
        to_delete=to_delete,
        to_delete_bytes=to_delete * 10,
        held_back=candidates - to_delete,
        confirm_after_seconds=confirm,
        **kw,
    )


COUNTS = DeleteCounts(keys=40, deleted=38, already_gone=2, parts=1)


def _summary(mode="mark_and_sweep", cand=None, counts=COUNTS, dry_run=False, **delete_kw):
    ctx = make_context(start=NOW, mode=mode, dry_run=dry_run, airflow_run_id="scheduled__2026-11-23T17:00:00+00:00")
    dele = (
        DeleteResult(skipped=mode) if mode == "mark_only" else DeleteResult(counts=counts, dry_run=dry_run, **delete_kw)
    )
    return build_summary(
        inputs(
            ctx,
            mark_uncommitted=UncommittedResult(run_id="mark1", locations=(), pages=1),
            list_slices=SLICES,
            compute_candidates=cand or _candidates(40, 40),
            delete=dele,
        )
    )


def test_a_sweep_reads_as_listed_candidates_marked_deleted_already_gone_dead_letters_reclaimed():
    s = _summary()
    # lakeFS's num_deleted_objects: the addresses marked; "deleted": what this sweep removed
    assert (s.num_deleted_objects, s.deleted, s.already_gone, s.delete_failed) == (40, 38, 2, 0)
    assert "delete_missing" not in s.to_doc()
    rows = dict(summary_rows(s, "s3://b/repo/_lakefs/retention/gc/unified/mark1/summary.json"))
    assert rows == {
        "repository": "repo  (local://ns/repo)",
        "run": "scheduled__2026-11-23T17:00:00+00:00  mark mark1",
        "mode": "mark_and_sweep",
        "flow": "clean",
        "result": "success",
        "started": "2026-11-23T17:00:00Z",
        "cutoff": "2026-11-22T17:00:00Z  (objects written at or after it are kept)",
        "listed": "1,200 objects, 3.0 MiB",
        "candidates": "40  (older than the cutoff, referenced by no kept commit and not staged)",
        "marked": "40  (the mark's deleted/ list)",
        "held back": "0",
        "deleted": "38",
        "already gone": "2",
        "dead letters": "0",
        "reclaimed": "400 B",
        "report": "s3://b/repo/_lakefs/retention/gc/unified/mark1/summary.json",
    }
    text = summary_text(s, "s3://b/r/summary.json")
    assert text.splitlines()[2:4] == ["mode: mark_and_sweep", "flow: clean"]
    assert text.endswith("report: s3://b/r/summary.json")


def test_slices_skipped_as_too_young_and_the_unsafe_override_are_said():
    s = RunSummary.from_doc(
        {
            **_summary().to_doc(),
            "listed_objects": 0,
            "listed_bytes": 0,
            "slices_skipped": 1,
            "unsafe_min_age_override": True,
            "effective_min_age_seconds": 45,
            "grace_period_seconds": 21600,
        }
    )
    rows = dict(summary_rows(s))
    assert rows["listed"] == "0 objects, 0 B; 1 slice created after the cutoff skipped, not listed (too young)"
    assert rows["cutoff"] == (
        "2026-11-22T17:00:00Z  (objects written at or after it are kept); minimum age 45s, "
        "below lakeFS's grace period (21,600s), by the Param unsafe_min_age_override"
    )


def test_held_back_objects_say_when_they_can_go():
    s = _summary(
        cand=_candidates(
            10,
            4,
            confirm=86400,
            held_back_reason="not yet a candidate in mark m0 (started 2026-11-22T16:00:00.000000Z)",
            confirmed_by_mark="m0",
        ),
        counts=DeleteCounts(keys=4, deleted=4, parts=1),
    )
    assert s.held_back == 6
    assert s.held_back_until == "2026-11-24T17:00:00.000000Z"
    assert dict(summary_rows(s))["held back"] == (
        "6; deletable by the first run that starts after 2026-11-24T17:00:00Z if still unreferenced; "
        "not yet a candidate in mark m0 (started 2026-11-22T16:00:00.000000Z)"
    )
    assert held_back_until("2026-11-23T17:00:00.500000Z", 3600) == "2026-11-23T18:00:00.500000Z"
    assert "held_back_until" not in _summary().to_doc()  # nothing held back: no time


def test_dead_letters_name_where_they_are_and_nothing_counts_as_reclaimed():
    s = _summary(
        counts=DeleteCounts(keys=40, deleted=37, failed=3, parts=1),
        dead_letters="s3://b/r/_lakefs/retention/gc/unified/mark1/sweeps/x/dead_letters/",
    )
    rows = dict(summary_rows(s))
    assert rows["dead letters"] == "3  (s3://b/r/_lakefs/retention/gc/unified/mark1/sweeps/x/dead_letters/)"
    assert rows["reclaimed"] == "0 B"


def test_mark_only_dry_run_and_sweep_only_say_what_did_not_happen():
    mark_only = dict(summary_rows(_summary(mode="mark_only")))
    assert mark_only["deleted"] == "0  (no sweep in mark_only)"
    assert "already gone" not in mark_only
    assert mark_only["marked"].startswith("40 ")
    dry = _summary(dry_run=True, counts=DeleteCounts(keys=40, deleted=40, parts=1))
    assert (dry.deleted, dry.already_gone, dry.would_delete) == (0, 0, 40)
    assert dict(summary_rows(dry))["deleted"] == "0  (dry run: would delete 40)"
    assert dict(summary_rows(dry))["mode"] == "mark_and_sweep (dry run)"
    ctx = make_context(
        start=NOW,
        mode="sweep_only",
        mark_id="mark1",
        sweep_mark=MarkRef("mark1", "2026-11-22T17:00:00.000000Z", "2026-11-21T17:00:00.000000Z", 100, 7),
    )
    s = build_summary(inputs(ctx, delete=DeleteResult(counts=DeleteCounts(keys=7, deleted=5, already_gone=2))))
    assert (s.num_deleted_objects, s.deleted, s.already_gone) == (7, 5, 2)
    rows = dict(summary_rows(s))
    assert rows["mode"] == "sweep_only of mark mark1"
    assert "flow" not in rows
    assert rows["cutoff"].startswith("2026-11-21T17:00:00Z")  # the mark's cutoff, not the sweep's clock


def test_a_failed_or_older_report_still_reads():
    rows = dict(
        summary_rows(
            RunSummary.from_doc(
                {
                    "run_id": "m",
                    "success": False,
                    "start_time": "2026-11-23T17:00:00.000000Z",
                    "cutoff_time": "x",
                    "num_deleted_objects": 0,
                    "note": "mark in progress or failed",
                }
            )
        )
    )
    assert rows["result"] == "NOT COMPLETE (success: false)"
    assert rows["marked"].startswith("0 ")
    # a report of version 0.1 counted already-gone keys as delete_missing
    old = dict(
        summary_rows(
            RunSummary.from_doc({"mode": "mark_and_sweep", "deleted": 5, "delete_missing": 1, "delete_failed": 0})
        )
    )
    assert (old["deleted"], old["already gone"]) == ("5", "1")


@pytest.mark.parametrize(("n", "text"), [(0, "0 B"), (1023, "1023 B"), (1536, "1.5 KiB"), (5 * 1024**3, "5.0 GiB")])
def test_human_bytes(n, text):
    assert human_bytes(n) == text


def test_links_open_the_report_and_the_repository_without_credentials():
    key = "_lakefs/retention/gc/unified/mark 1/summary.json"
    aws = StorageLocation("s3://bucket/repo", "s3", None, "eu-west-1")
    assert report_url(f"s3://bucket/repo/{key}", aws) == (
        "https://s3.console.aws.amazon.com/s3/object/bucket?region=eu-west-1"
        "&prefix=repo%2F_lakefs%2Fretention%2Fgc%2Funified%2Fmark%201%2Fsummary.json"
    )
    minio = StorageLocation("s3://bucket/repo", "s3", "http://user:pw@127.0.0.1:9000/", "us-east-1")
    assert report_url(f"s3://bucket/repo/{key}", minio) == (
        "http://127.0.0.1:9000/bucket/repo/_lakefs/retention/gc/unified/mark%201/summary.json"
    )
    assert report_url(f"local://repo/{key}", StorageLocation("local://repo", "local", local_root="/x")) is None
    assert lakefs_ui_url("http://lakefs:8000/api/v1", "sample-repo") == "http://lakefs:8000/repositories/sample-repo"
    assert lakefs_ui_url("https://lakefs.example.com/api/v1/", "r") == "https://lakefs.example.com/repositories/r"
    assert lakefs_ui_url("lakefs:8000", "r") is None


def test_each_step_result_is_one_readable_line():
    committed = CommittedResult(
        committed_dir=PartsDir("c/", 1),
        commits_csv="x",
        active_commits=3,
        metaranges=3,
        ranges=5,
        committed_addresses=1234,
        commits_lakefs_lacked=1,
        seconds=2.04,
    )
    assert step_line("list_committed", committed) == (
        "list_committed: 1,234 committed addresses from 3 commits to keep (1 lakeFS's list lacked), "
        "3 metaranges, 5 ranges; 2.0 s"
    )
    assert step_line("list_slices", SLICES) == "list_slices: 1,200 objects (3.0 MiB) in 2 slices, 0 skipped"
    assert step_line(
        "compute_candidates", _candidates(10, 4, held_back_reason="no successful mark started at or before T")
    ) == (
        "compute_candidates: 10 candidates (100 B), 4 marked for deletion (40 B), 6 held back "
        "(no successful mark started at or before T)"
    )
    assert step_line(
        "delete",
        DeleteResult(
            counts=DeleteCounts(
                keys=40, deleted=37, already_gone=2, failed=1, parts=2, resumed_parts=1, requests=3, retried=4
            )
        ),
    ) == ("delete: deleted 37, already gone 2, dead letters 1 of 40 keys in 2 parts (1 resumed), 3 requests, 4 retried")
    assert step_line("delete", DeleteResult(skipped="mark_only")) == "delete: no sweep in mark_only"
    throttled = DeleteResult(
        counts=DeleteCounts(keys=900, deleted=900, parts=3, requests=12, retried=200, throttled=3),
        rate_cuts=1,
        rate_lowest=1500.0,
        rate_final=3000.0,
    )
    assert step_line("delete", throttled) == (
        "delete: deleted 900, already gone 0, dead letters 0 of 900 keys in 3 parts (0 resumed), 12 requests, "
        "200 retried; 3 throttled requests, the shared rate halved 1 time (lowest 1,500 keys/s, last 3,000)"
    )
    assert step_line("delete", DeleteResult(counts=DeleteCounts(keys=2, deleted=2), dry_run=True)).startswith(
        "delete: would delete 2, already gone 0"
    )
    assert "\n" not in step_line("list_slices", SLICES)


def test_a_run_from_an_inventory_says_which_how_old_what_it_read_and_what_it_topped_up():
    """An inventory run's listing fields reach summary.json, the rows and the step's line; a run that listed
    as always has none of them (the golden summaries hold it to the same bytes)."""
    import dataclasses

    listed = dataclasses.replace(
        SLICES,
        listing_source="inventory",
        inventory_id="s3://inv/reports/lakefs-data/gc-daily/2026-11-22T01-00Z/manifest.json",
        inventory_time="2026-11-22T01:00:00.000000Z",
        inventory_age_seconds=40 * 3600,
        inventory_rows=1_500_000,
        inventory_files=3,
        slices_topped_up=2,
    )
    ctx = make_context(start=NOW)
    s = build_summary(inputs(ctx, mark_uncommitted=UncommittedResult("m", (), 1), list_slices=listed))
    doc = s.to_doc()
    assert (doc["listing_source"], doc["inventory_rows"], doc["slices_topped_up"]) == ("inventory", 1_500_000, 2)
    assert "listing_fallback" not in doc
    assert RunSummary.from_doc(doc) == s
    assert dict(summary_rows(s))["listing"] == (
        "from the inventory s3://inv/reports/lakefs-data/gc-daily/2026-11-22T01-00Z/manifest.json, taken "
        "2026-11-22T01:00:00Z (1.7 days before the run): 1,500,000 rows read in 3 data files; 2 slices created "
        "after it listed by LIST; objects written after it are left for a later run"
    )
    assert step_line("list_slices", listed) == (
        "list_slices: 1,200 objects (3.0 MiB) in 2 slices, 0 skipped, from the inventory taken "
        "2026-11-22T01:00:00Z (1,500,000 rows read, 2 slices topped up by LIST)"
    )
    fallback = dataclasses.replace(SLICES, listing_fallback="no usable S3 Inventory for s3://lakefs-data/repo1 ...")
    s = build_summary(inputs(ctx, mark_uncommitted=UncommittedResult("m", (), 1), list_slices=fallback))
    assert (s.listing_source, s.listing_fallback, s.inventory_id) == ("list", fallback.listing_fallback, None)
    assert dict(summary_rows(s))["listing"] == (
        "by LIST (the inventory was not used: no usable S3 Inventory for s3://lakefs-data/repo1 ...)"
    )
    plain = build_summary(inputs(ctx, mark_uncommitted=UncommittedResult("m", (), 1), list_slices=SLICES))
    assert not {k for k in plain.to_doc() if k.startswith(("listing_", "inventory_"))}
    assert "listing" not in dict(summary_rows(plain))


def test_an_inventory_runs_rows_not_older_than_the_cutoff_reach_the_report_as_deferred():
    """inventory_deferred: in summary.json, the listing row and the step's line; a summary written before the count
    (none recorded) keeps its old words."""
    import dataclasses

    listed = dataclasses.replace(
        SLICES,
        listing_source="inventory",
        inventory_id="s3://inv/reports/lakefs-data/gc-daily/2026-11-22T01-00Z/manifest.json",
        inventory_time="2026-11-22T01:00:00.000000Z",
        inventory_age_seconds=3600,
        inventory_rows=10,
        inventory_files=1,
        slices_topped_up=1,
        inventory_deferred=7,
    )
    ctx = make_context(start=NOW)
    s = build_summary(inputs(ctx, mark_uncommitted=UncommittedResult("m", (), 1), list_slices=listed))
    assert s.to_doc()["inventory_deferred"] == 7
    assert RunSummary.from_doc(s.to_doc()) == s
    assert dict(summary_rows(s))["listing"].endswith(
        "1 slice created after it listed by LIST; 7 objects in it not older than the cutoff, and objects written "
        "after it, are left for a later run"
    )
    assert step_line("list_slices", listed).endswith(
        "(10 rows read, 1 slice topped up by LIST, 7 not older than the cutoff)"
    )
    older = RunSummary.from_doc({k: v for k, v in s.to_doc().items() if k != "inventory_deferred"})
    assert dict(summary_rows(older))["listing"].endswith("; objects written after it are left for a later run")
