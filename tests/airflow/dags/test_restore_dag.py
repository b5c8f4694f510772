"""The restore DAG (``lakefs_gc_airflow.dags``, built by ``dags/gc_dags.py``; ``lakefs_gc_airflow.operators.RestoreOperator``) in a
real Airflow run (``dag.test()``, SQLite): a person undoes a GC run from the trigger form with the
repository and the run's id. The sweep it undoes is the delete step's own, with the ``local://``
quarantine; lakeFS is stood in for as in ``test_dag_run.py`` (the namespace is all it asks)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

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
