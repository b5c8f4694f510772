"""A run's cost on the GC page's API (issue 54, ``lakefs_gc_airflow.gc_page.runs``): the summary's
requests by kind, their cost and the monthly saving of the bytes freed now, in the run's ``cost``
and its report rows, valid against the API's model; a report that counted no request has none."""

from __future__ import annotations

from lakefs_gc.report import layout
from lakefs_gc.report.run_summary import RunSummary
from lakefs_gc.report.summary import write_summary
from lakefs_gc.storage import open_storage
from lakefs_gc_airflow.gc_page import runs
from lakefs_gc_airflow.gc_page.models import Run


def _summary(run_id: str, start: str, **kw) -> RunSummary:
    base = {
        "run_id": run_id,
        "success": True,
        "start_time": start,
        "cutoff_time": start,
        "mode": "mark_and_sweep",
        "storage_namespace": "local://repo",
        "airflow_run_id": f"manual__{start}",
        "num_deleted_objects": 4,
        "deleted": 4,
        "reclaimed_bytes": 400,
    }
    return RunSummary.from_doc({**base, **kw})


def test_a_run_carries_its_cost_and_an_older_report_none(tmp_path):
    (tmp_path / "repo").mkdir()
    st = open_storage("local://repo", None, tmp_path)
    cost = {
        "requests": [
            {"store": "s3", "kind": "LIST", "count": 12},
            {"store": "s3", "kind": "GET", "count": 3},
            {"store": "gs", "kind": "LIST", "count": 1},
        ],
        "request_cost_usd": 0.0000662,
        "saving_bytes": 400,
        "monthly_saving_usd": 8.57e-9,
        "prices_as_of": "2026-11-29",
    }
    write_summary(st, layout.summary_key("m2"), _summary("m2", "2026-11-02T00:00:00+00:00", **cost))
    write_summary(st, layout.summary_key("m1"), _summary("m1", "2026-11-01T00:00:00+00:00"))
    m2, m1 = runs.repository_runs(st)[:2]
    assert m2["cost"] == {
        "requests": {"LIST": 13, "GET": 3},
        "request_cost_usd": 0.0000662,
        "saving_bytes": 400,
        "monthly_saving_usd": 8.57e-9,
        "prices_as_of": "2026-11-29",
    }
    assert (
        "cost",
        "16 storage requests (LIST 13, GET 3): $0.000066 at list prices of 2026-11-29; the 400 B freed now "
        "save less than $0.000001 a month",
    ) in [tuple(r) for r in m2["rows"]]
    assert m1["cost"] is None
    assert not any(label == "cost" for label, _ in m1["rows"])
    for rec in (m1, m2):  # what the API answers: valid against its model
        Run.model_validate({**rec, "dag_run": None})
