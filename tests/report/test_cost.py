"""A run's cost in its summary (issue 54, ``lakefs_gc.report.cost``): every step's requests summed by
store and kind, priced by the run's table; the monthly saving of the bytes freed now; the summary's
fields on the wire, the report's ``cost`` row and the metrics. Pure functions over typed results."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from lakefs_gc.contract import (
    GB,
    CandidatesResult,
    DeleteCounts,
    DeleteResult,
    Prices,
    RequestCount,
    SlicesResult,
    UncommittedResult,
)
from lakefs_gc.contract.cost import AZURE_HOT_LRS, S3_STANDARD
from lakefs_gc.report.figures import run_figures
from lakefs_gc.report.run_summary import RunSummary
from lakefs_gc.report.summary import build_summary, summary_text
from tests.support.contract import inputs, make_context

NOW = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
FREED = 40 * GB  # what the sweep deleted: 40 GiB


def _results(**delete_kw):
    return dict(
        mark_uncommitted=UncommittedResult(
            run_id="mark1",
            locations=(),
            pages=1,
            requests=(RequestCount("s3", "LIST", 2), RequestCount("s3", "GET", 3)),
        ),
        list_slices=SlicesResult(
            listed_dir="l",
            first_slice="s",
            slices_listed=1,
            slices_skipped=0,
            listed_objects=5000,
            listed_bytes=FREED * 2,
            requests=(RequestCount("s3", "LIST", 4000), RequestCount("s3", "PUT", 10)),
        ),
        compute_candidates=CandidatesResult(
            report_dir="d",
            uncommitted_files=1,
            candidates=2000,
            candidate_bytes=FREED,
            to_delete=2000,
            to_delete_bytes=FREED,
            held_back=0,
            confirm_after_seconds=0,
            requests=(RequestCount("s3", "HEAD", 1000), RequestCount("s3", "INVENTORY", 100)),
        ),
        delete=DeleteResult(
            counts=DeleteCounts(keys=2000, deleted=2000, requests=2, parts=1),
            requests=(RequestCount("s3", "DELETE", 2), RequestCount("s3", "GET", 1)),
            **delete_kw,
        ),
    )


def _summary(namespace="s3://bucket/repo", prices=None, **delete_kw) -> RunSummary:
    ctx = make_context(namespace, start=NOW)
    if prices is not None:
        ctx = replace(ctx, prices=prices)
    return build_summary(inputs(ctx, **_results(**delete_kw)))


def test_the_runs_requests_are_summed_by_store_and_kind_and_priced():
    s = _summary()
    assert s.requests == (
        RequestCount("s3", "LIST", 4002),
        RequestCount("s3", "HEAD", 1000),
        RequestCount("s3", "GET", 4),
        RequestCount("s3", "PUT", 10),
        RequestCount("s3", "DELETE", 2),
        RequestCount("s3", "INVENTORY", 100),
    )
    # S3 Standard: LIST and PUT $0.005, GET, HEAD and an inventory's GETs $0.0004 per 1,000; DELETE free
    cost = (4002 + 10) * 0.005 / 1000 + (1000 + 4 + 100) * 0.0004 / 1000
    assert s.request_cost_usd == pytest.approx(cost)
    # 40 GiB freed now (no word of the store's: the run's reclaimed bytes) at $0.023 per GB-month
    assert (s.saving_bytes, s.reclaimed_bytes) == (FREED, FREED)
    assert s.monthly_saving_usd == pytest.approx(0.92)
    assert s.prices_as_of == "2026-11-29"
    back = RunSummary.from_doc(s.to_doc())  # summary.json keeps them
    assert (back.requests, back.request_cost_usd, back.monthly_saving_usd) == (
        s.requests,
        s.request_cost_usd,
        s.monthly_saving_usd,
    )


def test_the_saving_counts_only_what_the_sweep_freed_now():
    """A versioned bucket keeps what the sweep deleted: the delete step's freed-now bytes, not the
    reclaimed ones, save money this month (none here)."""
    s = _summary(freed_now_bytes=0, still_billed_bytes=FREED)
    assert (s.saving_bytes, s.monthly_saving_usd, s.reclaimed_bytes) == (0, 0, FREED)
    s = _summary(freed_now_bytes=FREED // 2)
    assert s.monthly_saving_usd == pytest.approx(0.46)


def test_the_price_of_the_namespaces_store_and_the_configs_table():
    s = _summary("https://acct.blob.core.windows.net/c/repo")  # the counts are s3's: priced as s3's
    assert s.monthly_saving_usd == pytest.approx(40 * AZURE_HOT_LRS.storage_gb_month)
    mine = replace(
        Prices(), s3=replace(S3_STANDARD, list=0.0, put=0.0, head=0.0, get=0.0, inventory=0.0), as_of="config"
    )
    s = _summary(prices=mine)
    assert s.request_cost_usd == 0
    assert s.prices_as_of == "config"
    assert s.monthly_saving_usd == pytest.approx(0.92)
    s = _summary("local://ns/repo")  # the local disk: free
    assert s.monthly_saving_usd == 0


def test_the_report_and_the_metrics_show_the_cost():
    s = _summary()
    [line] = [x for x in summary_text(s).splitlines() if x.startswith("cost: ")]
    assert line == (
        "cost: 5,118 storage requests (LIST 4,002, HEAD 1,000, GET 4, PUT 10, DELETE 2, INVENTORY 100): $0.021 at "
        "list prices of 2026-11-29; the 40.0 GiB freed now save $0.92 a month"
    )
    figures = run_figures(s)
    assert (figures["requests.list"], figures["requests.delete"], figures["requests.inventory"]) == (4002, 2, 100)
    assert figures["request_cost_usd"] == pytest.approx(s.request_cost_usd)
    assert figures["monthly_saving_usd"] == pytest.approx(0.92)


def test_a_summary_without_counted_requests_has_no_cost():
    """A mark in progress, or a run of a version that did not count: no cost row, no cost metrics."""
    ctx = make_context("s3://bucket/repo", start=NOW)
    s = build_summary(inputs(ctx, mark_uncommitted=UncommittedResult(run_id="m", locations=(), pages=1)))
    assert s.requests is None
    assert s.request_cost_usd is None
    assert s.monthly_saving_usd is None
    assert "cost" not in s.to_doc()
    assert not any(x.startswith("cost: ") for x in summary_text(s).splitlines())
    assert not any(k.startswith("requests.") or k.endswith("_usd") for k in run_figures(s))
