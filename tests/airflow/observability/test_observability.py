"""The run's figures (``run_figures``), their metric names, and which Asset events a run emits."""

from __future__ import annotations

from lakefs_gc.report.figures import FIGURES, run_figures
from lakefs_gc.report.run_summary import RunSummary
from lakefs_gc_airflow.observability import emit_asset_events, events_alias, marked_asset, metric_name, swept_asset

SUMMARY = {
    "run_id": "m1",
    "mode": "mark_and_sweep",
    "dry_run": False,
    "listed_objects": 10,
    "candidates": 4,
    "deleted": 3,
    "already_gone": 1,
    "held_back": 0,
    "delete_failed": 0,
    "reclaimed_bytes": 300,
    "list_slices_seconds": 1.5,
    "space_file": "x/space.json",
    "space_head_bytes": 700,
}


class Events:
    def __init__(self):
        self.added = []

    def add(self, asset, extra=None):
        self.added.append((asset.name, extra))


class OutletEvents(dict):
    def __missing__(self, key):
        self[key] = Events()
        return self[key]


def test_figures_by_name():
    f = run_figures(RunSummary.from_doc(SUMMARY))
    assert {k: f[k] for k in FIGURES} == {
        "objects_listed": 10,
        "candidates": 4,
        "deleted": 3,
        "already_gone": 1,
        "held_back": 0,
        "dead_letters": 0,
        "bytes_reclaimed": 300,
    }
    assert f["seconds.list_slices"] == 1.5
    assert f["space_bytes.head"] == 700
    assert f["space_bytes.young"] == 0
    assert "space_bytes.head" not in run_figures(RunSummary.from_doc({**SUMMARY, "space_file": None}))
    assert metric_name("my-repo", "deleted") == "lakefs_gc.my-repo.deleted"


def test_a_sweep_emits_marked_and_swept_with_the_counts():
    ctx = {"outlet_events": OutletEvents()}
    summary = RunSummary.from_doc(SUMMARY)
    names = emit_asset_events(ctx, "my-repo", summary, run_figures(summary))
    assert names == [marked_asset("my-repo").name, swept_asset("my-repo").name]
    [(_, extra), _] = ctx["outlet_events"][events_alias("my-repo")].added
    assert extra["deleted"] == 3
    assert extra["objects_listed"] == 10
    assert "seconds.list_slices" not in extra


def test_mark_only_and_dry_runs_emit_no_sweep():
    for summary in (
        RunSummary.from_doc({**SUMMARY, "mode": "mark_only"}),
        RunSummary.from_doc({**SUMMARY, "dry_run": True}),
    ):
        ctx = {"outlet_events": OutletEvents()}
        assert emit_asset_events(ctx, "r", summary, run_figures(summary)) == [marked_asset("r").name]
    ctx = {"outlet_events": OutletEvents()}
    assert emit_asset_events(ctx, "r", RunSummary.from_doc({**SUMMARY, "mode": "sweep_only"}), {}) == [
        swept_asset("r").name
    ]
