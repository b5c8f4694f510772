"""Real Airflow runs (``dag.test()``, SQLite) of the GC DAG with the lakeFS client and spark-submit
stood in for: proves the wiring (XCom merging, Params into prepare_run, the order of tasks, the
mark-only no-op, the report written last on storage). The real jobs and the lakeFS emulator are
exercised by the end-to-end tests, not here."""

from __future__ import annotations

import json
import textwrap

import lakefs_sdk
import pytest

from tests.airflow.conftest import LAKEFS_ACCESS, LAKEFS_SECRET, conn_env
from tests.airflow.helpers import REPO, fake_spark_submit

GRACE = 3600


class FakeLakeFSClient:
    """Stands in for lakefs_gc.lakefs.client.LakeFSClient (same constructor and the calls the operators make)."""

    namespace = ""
    instances: list[FakeLakeFSClient] = []

    def __init__(self, endpoint, access_key, secret_key, **kwargs):
        self.endpoint, self.access_key = endpoint, access_key
        FakeLakeFSClient.instances.append(self)

    def get_repository(self, repo):
        return lakefs_sdk.Repository(
            id=repo, creation_date=0, default_branch="main", storage_namespace=self.namespace, storage_id=""
        )

    def blockstore_type(self, storage_id=None):
        return "local"

    def require_gc_rules(self, repo):
        return None

    def grace_period_seconds(self):
        return GRACE

    def prepare_uncommitted_all(self, repo):
        return "gcrun0001", [f"{self.namespace}/_lakefs/retention/gc/uncommitted/gcrun0001/uncommitted/"], 2

    def branches(self, repo, page=1000, show_hidden=False):
        return iter(())  # no branch has staged entries of its own (mark_uncommitted's API check)

    def close(self):
        pass


@pytest.fixture
def gc_dag(tmp_path, monkeypatch, connections, airflow_db):
    import lakefs_gc.lakefs.client as api

    ns_dir = tmp_path / "ns"
    (ns_dir / "_lakefs").mkdir(parents=True)
    (ns_dir / "_lakefs" / "dummy").write_bytes(b"lakeFS namespace marker")
    from lakefs_gc.report.formats import write_staged
    from lakefs_gc.storage import LocalStorage

    # what lakeFS's prepare_uncommited writes for the run the fake reports (lakeFS's Parquet format)
    write_staged(LocalStorage(ns_dir), "_lakefs/retention/gc/uncommitted/gcrun0001/uncommitted/f1", [], 0)
    FakeLakeFSClient.namespace = "local://ns"  # under the blockstore root tmp_path, as lakeFS resolves it
    monkeypatch.setenv(
        *conn_env(
            "lakefs_default",
            conn_type="lakefs_gc",
            host="http://127.0.0.1:8000",
            login=LAKEFS_ACCESS,
            password=LAKEFS_SECRET,
            extra={"local_blockstore_root": str(tmp_path)},
        )
    )
    FakeLakeFSClient.instances = []
    monkeypatch.setattr(api, "LakeFSClient", FakeLakeFSClient)
    # the stand-in makes none of the reads of lakefs-gc doctor's checks: they run against lakeFS itself
    # (tests/real_lakefs/test_doctor.py)
    monkeypatch.setattr("lakefs_gc.doctor.preflight.preflight", lambda *args, **kwargs: [])
    binary = fake_spark_submit(tmp_path)
    cfg = tmp_path / "gc.yaml"
    cfg.write_text(
        textwrap.dedent(f"""
        repositories:
          - repository: sample-repo
            lakefs_conn_id: lakefs_default
            storage_conn_id: aws_default
            spark_conn_id: spark_default
            min_age_seconds: {GRACE}
            mode: mark_and_sweep
            work_dir: {tmp_path / "work"}
            spark: {{binary: {binary}, fast_start: false, in_process_max_keys: 0}}  # every Spark step a (fake) spark-submit
            tasks: {{retries: 1, retry_delay_seconds: 1}}
    """)
    )
    monkeypatch.setenv("LAKEFS_GC_CONFIG", str(cfg))
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags" / "gc_dags.py"))
    assert bag.import_errors == {}
    return bag.dags["lakefs_gc__sample-repo"], ns_dir


def _states(dr):
    return {ti.task_id: ti.state for ti in dr.get_task_instances()}


def test_full_run_wires_the_eight_tasks_and_writes_the_report_last(gc_dag):
    dag, ns_dir = gc_dag
    dr = dag.test()
    assert dr.state == "success", _states(dr)
    tis = {ti.task_id: ti for ti in dr.get_task_instances()}
    assert {k: v.state for k, v in tis.items()} == dict.fromkeys(
        [
            "prepare_run",
            "mark_uncommitted",
            "list_committed",
            "list_slices",
            "compute_candidates",
            "attribute_space",
            "delete",
            "save_report",
        ],
        "success",
    )
    assert tis["mark_uncommitted"].end_date <= tis["list_committed"].start_date
    assert tis["delete"].end_date <= tis["save_report"].start_date

    [summary_path] = ns_dir.glob("_lakefs/retention/gc/unified/*/summary.json")
    assert summary_path.parent.name == "gcrun0001"  # the mark id from mark_uncommitted
    summary = json.loads(summary_path.read_text())
    assert summary["success"] is True
    assert summary["run_id"] == "gcrun0001"
    assert summary["mode"] == "mark_and_sweep"
    assert summary["airflow_run_id"] == dr.run_id
    assert summary["min_age_seconds"] == GRACE
    assert summary["unsafe_min_age_override"] is False
    assert summary["uncommitted_pages"] == 2
    assert FakeLakeFSClient.instances[0].endpoint == "http://127.0.0.1:8000/api/v1"

    # every Spark step got the context and the results it reads, by task id (run dir per Airflow run), no secrets
    from lakefs_gc.contract import inputs_from_wire

    [control] = (ns_dir.parent / "work" / "sample-repo").glob("*/_control")
    assert sorted(p.name for p in control.glob("*.input.json")) == sorted(
        f"{s}.input.json" for s in ("list_committed", "list_slices", "compute_candidates", "attribute_space", "delete")
    )
    inputs = inputs_from_wire(json.loads((control / "compute_candidates.input.json").read_text()))
    assert inputs.mark_id() == "gcrun0001"
    assert inputs.context.cutoff_time
    assert inputs.results["list_slices"].listed_objects == 3
    assert inputs.results["list_committed"].ranges == 1
    assert inputs.context.work_dir == str(control.parent)
    assert inputs.context.airflow_run_id == dr.run_id
    assert summary["listed_objects"] == 3
    assert summary["deleted"] == 3
    assert summary["candidates"] == 3
    from tests.airflow.conftest import LAKEFS_SECRET, S3_SECRET

    for p in control.iterdir():
        assert LAKEFS_SECRET not in p.read_text()
        assert S3_SECRET not in p.read_text()
    _assert_run_summary_and_links(dag, dr, tis["save_report"], summary_path)


def _assert_run_summary_and_links(dag, dr, ti, summary_path):
    """What a person sees of the run in Airflow: the summary as save_report's rendered field
    ``run_summary`` (Rendered Templates) and in its XCom, and the extra links as the API serves
    them (the serialized DAG's links read the XCom the task pushed)."""
    from airflow.models.renderedtifields import RenderedTaskInstanceFields
    from airflow.serialization.serialized_objects import DagSerialization

    from tests.airflow.conftest import LAKEFS_ACCESS, LAKEFS_SECRET, S3_ACCESS, S3_SECRET

    result = ti.xcom_pull(task_ids="save_report")
    text = result["summary"]
    uri = "local://ns/_lakefs/retention/gc/unified/gcrun0001/summary.json"  # the namespace as lakeFS names it
    assert result["summary_uri"] == uri
    for line in (
        "mode: mark_and_sweep",
        "result: success",
        "listed: 3 objects, 30 B",
        "marked: 3",
        "held back: 0",
        "deleted: 3",
        "already gone: 0",
        "dead letters: 0",
        "reclaimed: 30 B",
        f"report: {uri}",
    ):
        assert f"\n{line}" in text, (line, text)
    assert "candidates: 3  (" in text
    assert f"cutoff: {json.loads(summary_path.read_text())['cutoff_time'][:19]}Z" in text
    rendered = RenderedTaskInstanceFields.get_templated_fields(ti)
    assert rendered["run_summary"] == text, rendered
    serialized = DagSerialization.from_dict(DagSerialization.to_dict(dag)).get_task("save_report")
    # as GET .../taskInstances/save_report/links serves them (``link or None``; None: the UI shows no button)
    links = {name: serialized.get_extra_links(ti, name) or None for name in serialized.extra_links}
    assert links == {
        "GC report (summary.json)": None,  # a local:// report: no URL a browser opens
        "lakeFS repository": "http://127.0.0.1:8000/repositories/sample-repo",
        "GC page": f"/dags/{dag.dag_id}/plugin/lakefs-gc-dag",
    }, links
    shown = json.dumps([text, rendered, links, result])
    assert not any(s in shown for s in (LAKEFS_ACCESS, LAKEFS_SECRET, S3_ACCESS, S3_SECRET))


def test_mark_only_from_the_run_form_skips_deletion(gc_dag):
    dag, ns_dir = gc_dag
    dr = dag.test(run_conf={"mode": "mark_only"})
    assert dr.state == "success", _states(dr)
    [summary_path] = ns_dir.glob("_lakefs/retention/gc/unified/*/summary.json")
    summary = json.loads(summary_path.read_text())
    assert summary["mode"] == "mark_only"
    assert summary["deleted"] == 0


def test_min_age_below_grace_period_is_refused_naming_the_override(gc_dag):
    dag, ns_dir = gc_dag
    dr = dag.test(run_conf={"min_age_seconds": 60})
    states = _states(dr)
    assert dr.state == "failed"
    assert states["prepare_run"] == "failed"
    assert all(states[t] == "upstream_failed" for t in states if t != "prepare_run")
    assert not list(ns_dir.glob("_lakefs/**/summary.json"))


def test_invalid_params_are_rejected_before_anything_runs(gc_dag):
    from airflow.sdk.exceptions import ParamValidationError

    dag, ns_dir = gc_dag
    with pytest.raises(ParamValidationError, match="Invalid input for param mode"):
        dag.test(run_conf={"mode": "delete_everything"})
    assert FakeLakeFSClient.instances == []


def test_local_namespace_needs_the_blockstore_root_and_finds_lakefs_marker_there(gc_dag, monkeypatch, tmp_path, capfd):
    """lakeFS keeps local://ns at <blockstore.local.path>/ns: without the root the run refuses
    (naming the connection extra); with a wrong root (no lakeFS marker there) it refuses too, and
    the files in the wrong place are untouched."""
    dag, ns_dir = gc_dag
    monkeypatch.setenv(
        *conn_env(
            "lakefs_default",
            conn_type="lakefs_gc",
            host="http://127.0.0.1:8000",
            login=LAKEFS_ACCESS,
            password=LAKEFS_SECRET,
        )
    )
    dr = dag.test()
    states = _states(dr)
    assert dr.state == "failed", states
    assert states["prepare_run"] == "failed", states
    assert all(states[t] == "upstream_failed" for t in states if t != "prepare_run"), states
    out = "".join(capfd.readouterr())
    assert "local_blockstore_root" in out
    assert "'lakefs_default'" in out

    elsewhere = tmp_path / "elsewhere"
    stranger = elsewhere / "ns" / "data" / "slice" / "not-lakefs.bin"
    stranger.parent.mkdir(parents=True)
    stranger.write_bytes(b"someone else's file")
    monkeypatch.setenv(
        *conn_env(
            "lakefs_default",
            conn_type="lakefs_gc",
            host="http://127.0.0.1:8000",
            login=LAKEFS_ACCESS,
            password=LAKEFS_SECRET,
            extra={"local_blockstore_root": str(elsewhere)},
        )
    )
    dr = dag.test()
    assert dr.state == "failed"
    assert _states(dr)["prepare_run"] == "failed"
    assert "has no lakeFS marker (_lakefs/dummy)" in "".join(capfd.readouterr())
    assert stranger.exists()


@pytest.mark.parametrize("step", ["list_committed", "list_slices", "compute_candidates", "delete"])
def test_a_refusal_in_a_spark_job_fails_its_task_once_with_the_message_in_the_log(gc_dag, tmp_path, capfd, step):
    """The Spark tasks have a retry here; a refusal (the same on every retry) does not use it."""
    dag, _ = gc_dag
    message = f"refusing in {step}: nothing was deleted; change the Param max_delete_share"
    fake_spark_submit(tmp_path, failures={step: {"kind": "refused", "type": "SweepRefused", "message": message}})
    dr = dag.test()
    tis = {ti.task_id: ti for ti in dr.get_task_instances()}
    assert dr.state == "failed"
    assert (tis[step].state, tis[step].try_number) == ("failed", 1), _states(dr)
    assert tis["save_report"].state == "upstream_failed"
    out = "".join(capfd.readouterr())
    assert f"lakefs-gc {step}: REFUSED: SweepRefused: {message}" in out
    assert f"{step} refused: {message}" in out


@pytest.mark.parametrize("failure", ["recorded", "no record"])
def test_a_spark_job_failure_that_may_pass_is_retried(gc_dag, tmp_path, failure):
    """A failure the job records as "failed" (a storage error), or a job that died without a record."""
    dag, _ = gc_dag
    if failure == "recorded":
        fake_spark_submit(
            tmp_path,
            failures={
                "list_slices": {"kind": "failed", "type": "StorageError", "message": "s3://b/r/data/: 503 SlowDown"}
            },
        )
    else:
        fake_spark_submit(tmp_path, exit_code=137, write_result=False)
    dr = dag.test()
    ti = {ti.task_id: ti for ti in dr.get_task_instances()}["list_slices"]
    assert dr.state == "failed", _states(dr)
    assert (ti.state, ti.try_number) == ("failed", 2), _states(dr)
