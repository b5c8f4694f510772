"""The GC page's data (``lakefs_gc_airflow.gc_page.runs``), without Airflow: reports in a namespace
read into runs, merged with the DAG's runs; and the built bundle is the build of its sources.

The page itself, in a real browser over real runs: ``tests/airflow/gc_page/run_page.py`` (called by the
``s3://`` cluster end-to-end test).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from lakefs_gc.report import layout
from lakefs_gc.report.run_summary import RunSummary
from lakefs_gc.report.summary import write_summary
from lakefs_gc.storage import open_storage
from lakefs_gc_airflow.gc_page import runs

WWW = Path(runs.__file__).parent / "www"


def _summary(run_id: str, start: str, **kw) -> RunSummary:
    base = {
        "run_id": run_id,
        "success": True,
        "start_time": start,
        "cutoff_time": start,
        "mode": "mark_and_sweep",
        "repository": "repo",
        "storage_namespace": "local://repo",
        "airflow_run_id": f"manual__{start}",
        "num_deleted_objects": 0,
        "listed_objects": 10,
        "candidates": 4,
        "to_delete": 4,
        "held_back": 0,
        "deleted": 4,
        "already_gone": 0,
        "delete_failed": 0,
        "reclaimed_bytes": 400,
        "dry_run": False,
        "mark_uncommitted_seconds": 1.0,
        "list_committed_seconds": 2.0,
        "list_slices_seconds": 3.0,
        "compute_candidates_seconds": 4.0,
        "delete_seconds": 0.5,
        "max_delete_share": 0.5,
    }
    return RunSummary.from_doc({**base, **kw})


def test_the_reports_of_a_namespace_are_its_runs_newest_first_and_none_is_left_out(tmp_path):
    (tmp_path / "repo").mkdir()
    st = open_storage("local://repo", None, tmp_path)
    write_summary(
        st,
        layout.summary_key("m1"),
        _summary(
            "m1",
            "2026-11-01T00:00:00+00:00",
            held_back=4,
            deleted=0,
            to_delete=0,
            reclaimed_bytes=0,
            held_back_until="2026-11-02T00:00:00+00:00",
        ),
    )
    write_summary(
        st, layout.summary_key("m2"), _summary("m2", "2026-11-02T00:00:00+00:00", unsafe_min_age_override=True)
    )
    st.put(layout.summary_key("m3"), b"{not json")
    got = runs.repository_runs(st)
    assert [r["mark_id"] for r in got[:2]] == ["m2", "m1"]
    m2, m1 = got[0], got[1]
    assert (m2["deleted"], m2["reclaimed_bytes"], m2["unsafe_min_age_override"]) == (4, 400, True)
    assert m2["seconds"] == {
        "mark_uncommitted": 1.0,
        "list_committed": 2.0,
        "list_slices": 3.0,
        "compute_candidates": 4.0,
        "delete": 0.5,
    }
    assert ["deleted", "4"] in m2["rows"]
    assert any(label == "cutoff" and "unsafe_min_age_override" in value for label, value in m2["rows"])
    assert (m1["held_back"], m1["deleted"], m1["held_back_until"]) == (4, 0, "2026-11-02T00:00:00+00:00")
    [bad] = [r for r in got if r["mark_id"] == "m3"]  # never skipped: shown with what is wrong
    assert bad["problem"]
    assert "summary.json" in bad["report"]
    assert bad["rows"] == []


def test_a_dag_run_without_a_report_is_a_run_of_its_own():
    records = [runs.run_record("m1", _summary("m1", "2026-11-01T00:00:00+00:00"), None, "local://repo/x")]
    dag_runs = [
        {
            "run_id": "manual__2026-11-01T00:00:00+00:00",
            "state": "success",
            "start_date": "2026-11-01T00:00:00+00:00",
            "failed_tasks": [],
        },
        {
            "run_id": "manual__refused",
            "state": "failed",
            "start_date": "2026-11-03T00:00:00+00:00",
            "failed_tasks": ["prepare_run"],
        },
    ]
    merged = runs.merge(records, dag_runs)
    assert [r["airflow_run_id"] for r in merged] == ["manual__refused", "manual__2026-11-01T00:00:00+00:00"]
    refused, swept = merged
    assert refused["report"] is None
    assert refused["dag_run"]["failed_tasks"] == ["prepare_run"]
    assert swept["dag_run"]["state"] == "success"
    assert swept["deleted"] == 4


def test_a_run_from_an_inventory_says_which_one_and_a_run_that_listed_as_always_says_nothing(tmp_path):
    (tmp_path / "repo").mkdir()
    st = open_storage("local://repo", None, tmp_path)
    inventory = {
        "listing_source": "inventory",
        "inventory_id": "s3://inv/reports/lakefs-data/gc-daily/2026-11-01T00-00Z/manifest.json",
        "inventory_time": "2026-11-01T00:00:00.000000Z",
        "inventory_age_seconds": 86400,
        "inventory_rows": 1500,
        "inventory_files": 3,
        "slices_topped_up": 2,
        "inventory_deferred": 7,
    }
    write_summary(st, layout.summary_key("m1"), _summary("m1", "2026-11-02T00:00:00+00:00", **inventory))
    write_summary(st, layout.summary_key("m2"), _summary("m2", "2026-11-03T00:00:00+00:00"))
    fallback = "no usable S3 Inventory for s3://lakefs-data/repo ..."
    write_summary(
        st,
        layout.summary_key("m3"),
        _summary("m3", "2026-11-04T00:00:00+00:00", listing_source="list", listing_fallback=fallback),
    )
    older = {k: v for k, v in inventory.items() if k != "inventory_deferred"}  # a report written before that count
    write_summary(st, layout.summary_key("m4"), _summary("m4", "2026-11-01T00:00:00+00:00", **older))
    by = {r["mark_id"]: r for r in runs.repository_runs(st)}
    assert by["m1"]["listing"] == {
        "source": "inventory",
        "inventory_id": inventory["inventory_id"],
        "inventory_time": "2026-11-01T00:00:00.000000Z",
        "inventory_age_seconds": 86400,
        "inventory_rows": 1500,
        "inventory_files": 3,
        "slices_topped_up": 2,
        "inventory_deferred": 7,
        "fallback": None,
    }
    assert any(label == "listing" and "7 objects in it not older than the cutoff" in v for label, v in by["m1"]["rows"])
    assert by["m2"]["listing"] is None
    assert (by["m3"]["listing"]["source"], by["m3"]["listing"]["fallback"]) == ("list", fallback)
    assert by["m4"]["listing"]["inventory_deferred"] is None
    assert by["m4"]["listing"]["inventory_rows"] == 1500


def test_the_committed_bundle_is_the_build_of_its_sources():
    """``www/dist`` is committed (as Airflow's edge3 provider commits its own): the page needs no Node
    on the machines that install us. Its stamp is the hash of the sources it was built from
    (``www/stamp.mjs``); after a change to them, rebuild with ``make ui``."""
    h = hashlib.sha256()
    sources = sorted(p.relative_to(WWW).as_posix() for p in (WWW / "src").rglob("*") if p.is_file())
    assert "src/main.tsx" in sources
    for f in ("package.json", "package-lock.json", "tsconfig.json", "vite.config.ts", *sources):
        h.update(f.encode() + b"\0")
        h.update((WWW / f).read_bytes())
        h.update(b"\0")
    stamp = (WWW / "dist" / "SOURCES.sha256").read_text().strip()
    assert stamp == h.hexdigest(), "www/dist is older than its sources: run `make ui` and commit www/dist"
    bundle = (WWW / "dist" / "main.umd.js").read_text()
    assert "AirflowPlugin" in bundle
    assert "lakefs-gc/api" in bundle


def test_a_run_carries_what_its_sweep_freed_beside_what_it_reclaimed(tmp_path):
    """Issue 54: the bill's figures reach the page as the summary has them; an older report has none."""
    (tmp_path / "repo").mkdir()
    st = open_storage("local://repo", None, tmp_path)
    freeing = {"when": "later", "on": "2026-12-08T00:00:00.000000Z", "how": "s3 versioning", "detail": "a rule"}
    bill = {
        "freeing": freeing,
        "freed_now_bytes": 100,
        "freed_later": [{"on": "2026-12-08T00:00:00.000000Z", "bytes": 300}],
        "still_billed_bytes": 0,
    }
    write_summary(st, layout.summary_key("m2"), _summary("m2", "2026-11-02T00:00:00+00:00", **bill))
    write_summary(st, layout.summary_key("m1"), _summary("m1", "2026-11-01T00:00:00+00:00"))
    m2, m1 = runs.repository_runs(st)[:2]
    assert {k: m2[k] for k in bill} == bill
    assert m2["reclaimed_bytes"] == 400
    assert any(
        label == "freed" and value.startswith("freed now 100 B, freed later 300 B on 2026-12-08")
        for label, value in m2["rows"]
    )
    assert (m1["freeing"], m1["freed_now_bytes"], m1["freed_later"], m1["still_billed_bytes"]) == (
        None,
        None,
        None,
        None,
    )
