"""The datasets' names (``lakefs_gc_airflow.lineage``), each store's as the OpenLineage naming spec
writes it (https://openlineage.io/docs/spec/naming), the figures of a step's result, and what a task
keeps for its lineage (only when lineage is on)."""

from __future__ import annotations

import pytest

from lakefs_gc import contract
from lakefs_gc_airflow.lineage import lakefs_dataset, step_figures, store_dataset


@pytest.mark.parametrize(
    ("namespace", "key", "expected"),
    [
        ("s3://bucket/repos/r1", "", ("s3://bucket", "repos/r1")),
        ("s3://bucket/r1/", "_lakefs/retention/gc/unified/m1/", ("s3://bucket", "r1/_lakefs/retention/gc/unified/m1")),
        ("s3a://bucket", "", ("s3://bucket", "/")),
        ("gs://bucket/r1", "_lakefs/x.json", ("gs://bucket", "r1/_lakefs/x.json")),
        (
            "https://acct.blob.core.windows.net/cont/r1",
            "",
            ("wasbs://cont@acct.dfs.core.windows.net", "r1"),
        ),
        (
            "https://acct.blob.core.chinacloudapi.cn/cont",
            "k",
            ("wasbs://cont@acct.dfs.core.chinacloudapi.cn", "k"),
        ),
        ("local://repos/r1", "_lakefs/s.json", ("file", "/data/lakefs/repos/r1/_lakefs/s.json")),
    ],
)
def test_store_datasets_are_named_as_the_spec_names_their_store(namespace, key, expected):
    assert store_dataset(namespace, "/data/lakefs", key) == expected


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        ("http://lakefs:8000/api/v1", ("lakefs://lakefs:8000", "repo")),
        ("https://lakefs.example.com/api/v1", ("lakefs://lakefs.example.com:443", "repo")),
        ("http://127.0.0.1/api/v1", ("lakefs://127.0.0.1:80", "repo")),
    ],
)
def test_the_repositorys_commits_are_named_by_lakefs_host_and_port(endpoint, expected):
    assert lakefs_dataset(endpoint, "repo") == expected


def test_a_dry_runs_sweep_reports_what_it_would_delete_and_reclaims_nothing():
    counts = contract.DeleteCounts(keys=7, deleted=7, requests=1, parts=1)
    dry = contract.DeleteResult(counts=counts, dry_run=True, freed_now_bytes=0, still_billed_bytes=0)
    figures = step_figures("delete", dry)
    assert (figures["deleted"], figures["would_delete"], figures["reclaimed_bytes"]) == (0, 7, 0)
    later = (contract.FreedOn("2026-12-01T00:00:00Z", 30),)
    real = contract.DeleteResult(counts=counts, freed_now_bytes=10, freed_later=later, still_billed_bytes=2)
    figures = step_figures("delete", real)
    assert (figures["deleted"], figures["reclaimed_bytes"]) == (7, 42)
    assert "would_delete" not in figures
    # a sweep that did not run (mark_only) and a skipped attribution report no figures
    assert step_figures("delete", contract.DeleteResult(skipped="mark_only")) == {}
    assert step_figures("attribute_space", contract.SpaceResult(skipped="incremental run")) == {}


class _TI:
    """What a task's ``context["ti"]`` gives the mixin: its task id, and the XComs it pulls (recorded)."""

    def __init__(self, task_id: str, xcoms: dict):
        self.task_id, self.xcoms, self.pulled = task_id, xcoms, []

    def xcom_pull(self, task_ids):
        self.pulled.append(list(task_ids))
        return [self.xcoms.get(t) for t in task_ids]


def _report_operator():
    from airflow.sdk import BaseOperator

    from lakefs_gc_airflow.lineage import OpenLineageMixin

    class Report(OpenLineageMixin, BaseOperator):
        step = "save_report"

        def execute(self, context):
            return {"summary_uri": "s3://bucket/repo/_lakefs/retention/gc/unified/m1/summary.json"}

    return Report(task_id="gc.save_report")


def test_a_task_keeps_its_lineage_sources_only_when_lineage_is_on(monkeypatch):
    from lakefs_gc_airflow import lineage
    from tests.support.contract import make_context

    ctx = contract.to_wire(make_context("s3://bucket/repo", lakefs_endpoint="http://lakefs:8000/api/v1"))
    unc = contract.to_wire(contract.UncommittedResult(run_id="m1", locations=(), pages=1))
    # lineage off (no provider, or no transport): the task returns as before and reads nothing more
    monkeypatch.setattr(lineage, "lineage_enabled", lambda: False)
    op, ti = _report_operator(), _TI("gc.save_report", {"gc.prepare_run": ctx, "gc.mark_uncommitted": unc})
    assert op.execute({"ti": ti})["summary_uri"].endswith("/m1/summary.json")
    assert (op.lineage_sources, ti.pulled) == (None, [])
    # lineage on: the run context and the mark, read in the task's own group, and its result
    monkeypatch.setattr(lineage, "lineage_enabled", lambda: True)
    op, ti = _report_operator(), _TI("gc.save_report", {"gc.prepare_run": ctx, "gc.mark_uncommitted": unc})
    result = op.execute({"ti": ti})
    assert ti.pulled == [["gc.prepare_run", "gc.mark_uncommitted"]]
    assert op.lineage_sources == {"context": ctx, "mark_uncommitted": unc, "result": result}
    event = op.get_openlineage_facets_on_complete(ti)
    assert [(d.namespace, d.name) for d in event.inputs] == [("s3://bucket", "repo/_lakefs/retention/gc/unified/m1")]
    assert [(d.namespace, d.name) for d in event.outputs] == [
        ("s3://bucket", "repo/_lakefs/retention/gc/unified/m1/summary.json")
    ]
    facet = event.run_facets["lakefs_gc"]
    assert (facet.step, facet.repository, facet.markId, facet.summaryUri) == (
        "save_report",
        "repo",
        "m1",
        result["summary_uri"],
    )
    assert ti.pulled == [["gc.prepare_run", "gc.mark_uncommitted"]]  # the event read nothing more


def test_a_task_that_kept_nothing_reports_no_datasets():
    event = _report_operator().get_openlineage_facets_on_complete(_TI("gc.save_report", {}))
    assert (event.inputs, event.outputs, event.run_facets) == ([], [], {})


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("/work/gc/repo/run1/listed", ("file", "/work/gc/repo/run1/listed")),
        ("file:///work/gc/listed", ("file", "/work/gc/listed")),
        ("s3://scratch/gc/repo/run1/listed", ("s3://scratch", "gc/repo/run1/listed")),
    ],
)
def test_a_work_location_is_named_as_its_store(uri, expected):
    from lakefs_gc_airflow.lineage import location_dataset

    assert location_dataset(uri) == expected
