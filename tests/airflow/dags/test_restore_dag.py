"""The restore DAG (``lakefs_gc_airflow.dags``, built by ``dags/gc_dags.py``; ``lakefs_gc_airflow.operators.RestoreOperator``) in a
real Airflow run (``dag.test()``, SQLite): a person undoes a GC run from the trigger form with the
repository and the run's id. The sweep it undoes is the delete step's own, with the ``local://``
quarantine; lakeFS is stood in for as in ``test_dag_run.py`` (the namespace is all it asks)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from lakefs_gc.report import layout
from lakefs_gc.storage import LocalStorage
from tests.airflow.dags.test_dag_run import gc_dag  # noqa: F401 - the fixture: config, connections, fake lakeFS
from tests.airflow.helpers import REPO
from tests.sweeping.test_restore import MARK, _files, _mark, _sweep


def _restore_dag():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags" / "gc_dags.py"))
    assert bag.import_errors == {}
    return bag.dags["lakefs_gc_restore"]


def test_a_person_undoes_a_run_from_the_restore_dag(gc_dag, tmp_path):  # noqa: F811
    _, ns_dir = gc_dag
    st = LocalStorage(ns_dir)
    st.uri = "local://ns"
    objs = _files(5)
    for k, v in objs.items():
        st.put(k, v)
    _mark(st, sorted(objs), datetime.now(UTC) - timedelta(minutes=5))
    _sweep("local://ns", tmp_path / "sweep-work", local_root=str(ns_dir.parent), quarantine_days=7)
    assert not any(st.exists(k) for k in objs)

    dag = _restore_dag()
    dr = dag.test(run_conf={"repository": "sample-repo", "run_id": "manual__mark1"})
    tis = {ti.task_id: ti for ti in dr.get_task_instances()}
    assert dr.state == "success", {k: t.state for k, t in tis.items()}
    assert tis["restore"].state == "success", {k: t.state for k, t in tis.items()}
    for k, v in objs.items():
        assert st.get(k) == v
    out = tis["restore"].xcom_pull(task_ids="restore")
    assert out["counts"] == {"restored": 5}
    assert out["mark_id"] == MARK
    assert out["namespace"] == "local://ns"
    report = json.loads(st.get(layout.restore_dir(MARK, dr.run_id) + "summary.json"))
    assert report["counts"] == {"restored": 5}
    assert report["restore_id"] == dr.run_id

    # a run that is not there: the task fails, naming it; nothing changes
    dr = dag.test(run_conf={"repository": "sample-repo", "run_id": "manual__nope"})
    [ti] = dr.get_task_instances()
    assert dr.state == "failed"
    assert ti.state == "failed"
    for k, v in objs.items():
        assert st.get(k) == v


def test_the_restore_dag_is_built_while_no_entry_is_good_and_restores_by_hand(gc_dag, tmp_path, monkeypatch):  # noqa: F811
    """Issue 52: ``lakefs_gc_restore`` disappeared while no repository entry was good, the very time
    a bad config may need a run undone. It is built; without connections it fails naming what is
    wrong with the file; with them (the form's by-hand fields) it restores."""
    _, ns_dir = gc_dag
    st = LocalStorage(ns_dir)
    st.uri = "local://ns"
    objs = _files(3)
    for k, v in objs.items():
        st.put(k, v)
    _mark(st, sorted(objs), datetime.now(UTC) - timedelta(minutes=5))
    _sweep("local://ns", tmp_path / "sweep-work", local_root=str(ns_dir.parent), quarantine_days=7)
    bad = tmp_path / "bad.yaml"
    bad.write_text("repositories:\n  - {repository: sample-repo, lakefs_conn_id: lakefs_default, shedule: '@daily'}\n")
    monkeypatch.setenv("LAKEFS_GC_CONFIG", str(bad))

    from airflow.dag_processing.dagbag import DagBag
    from airflow.sdk.exceptions import AirflowFailException

    bag = DagBag(dag_folder=str(REPO / "dags" / "gc_dags.py"))
    assert bag.import_errors == {}
    assert sorted(bag.dag_ids) == ["lakefs_gc_config_errors", "lakefs_gc_restore"]
    dag = bag.dags["lakefs_gc_restore"]
    assert "has no good repository entry" in dag.description
    schema = {k: dag.params.get_param(k).schema for k in dag.params}
    assert "enum" not in schema["repository"]  # any name: none is configured
    assert schema["lakefs_conn_id"]["type"] == ["null", "string"]

    # no connections given: refused, naming the file's problem and the way out
    task = dag.get_task("restore")
    with pytest.raises(AirflowFailException) as e:
        task.execute({"params": {"repository": "sample-repo", "run_id": "manual__mark1"}, "run_id": "r0"})
    msg = str(e.value)
    assert (
        f"repository 'sample-repo' has no good entry in the GC config ({bad} has no good repository entry: 1 bad entry"
        in msg
    )
    assert "repositories[0] (sample-repo): unknown field" in msg, msg  # the entry's problem itself
    assert "shedule" in msg, msg
    assert "lakefs-gc config check" in msg, msg
    assert "give lakefs_conn_id (and storage_conn_id) to restore it by hand" in msg, msg
    dr = dag.test(run_conf={"repository": "sample-repo", "run_id": "manual__mark1"})
    assert dr.state == "failed"
    assert not any(st.exists(k) for k in objs)

    # by hand: the repository's lakeFS connection named in the form
    dr = dag.test(run_conf={"repository": "sample-repo", "run_id": "manual__mark1", "lakefs_conn_id": "lakefs_default"})
    [ti] = dr.get_task_instances()
    assert dr.state == "success", ti.state
    for k, v in objs.items():
        assert st.get(k) == v
    report = json.loads(st.get(layout.restore_dir(MARK, dr.run_id) + "summary.json"))
    assert report["counts"] == {"restored": 3}

    # a second restore of the run: nothing to do, each key named as the first restore's; not a failure
    dr2 = dag.test(
        run_conf={"repository": "sample-repo", "run_id": "manual__mark1", "lakefs_conn_id": "lakefs_default"}
    )
    [ti] = dr2.get_task_instances()
    assert dr2.state == "success", ti.state
    out = ti.xcom_pull(task_ids="restore")
    assert out["counts"] == {"already restored": 3}
    assert out["already_restored_by"] == {dr.run_id: 3}
