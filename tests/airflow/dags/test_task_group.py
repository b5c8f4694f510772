"""The GC in your own DAG: the README's example (``lakefs_gc_task_group``) run as written with
``dag.test()`` on the lakeFS emulator, its steps in their tasks' processes; and the group's arguments
checked when the DAG is parsed."""

from __future__ import annotations

import re
import time

import pytest

from lakefs_gc.config import ConfigError
from lakefs_sandbox.seed import DELETED, KEPT, seed
from tests.airflow.conftest import conn_env
from tests.airflow.e2e.test_e2e import clock_for
from tests.airflow.helpers import REPO
from tests.conftest import ns_storage

GRACE = 5


def readme_example() -> str:
    """The README's "in your own DAG" block, exactly as written."""
    text = (REPO / "README.md").read_text()
    m = re.search(r"<!-- readme-own-dag -->\n```python\n(.*?)\n```", text, re.S)
    assert m, "the README's example is marked <!-- readme-own-dag -->"
    return m.group(1) + "\n"


def test_the_readmes_own_dag_example_runs_as_written(tmp_path, monkeypatch, lakefs_emulator_factory, airflow_db):
    emu = lakefs_emulator_factory("--grace-period", str(GRACE))
    ns = emu.namespace("sample-repo")
    manifest = seed(emu.client(), "sample-repo", ns, phase=clock_for(emu), local_root=emu.local_root)
    emu.set_clock(offset=0)
    seeded = time.time()
    storage = ns_storage(ns)
    before = {o.key for o in storage.list("", recursive=True)}
    for k, v in (
        conn_env(
            "lakefs_default",
            conn_type="lakefs_gc",
            host=emu.url,
            login=emu.access_key,
            password=emu.secret_key,
            extra={"local_blockstore_root": emu.local_root},
        ),
        conn_env("aws_default", conn_type="aws"),
        conn_env("spark_default", conn_type="spark", host="local[1]"),
    ):
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("LAKEFS_GC_WORK_DIR", str(tmp_path / "work"))
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "nightly_lake.py").write_text(readme_example())
    from airflow import settings

    monkeypatch.setattr(settings, "DAGS_FOLDER", str(dags))  # dag.test() serializes the DAGs of its bundle
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(dags))
    assert bag.import_errors == {}
    dag = bag.dags["nightly_lake"]
    steps = [
        "prepare_run",
        "mark_uncommitted",
        "list_committed",
        "list_slices",
        "compute_candidates",
        "attribute_space",
        "delete",
        "save_report",
    ]
    assert {t.task_id for t in dag.tasks} == {"export_tables", "tell_finance"} | {f"lakefs_gc.{s}" for s in steps}
    assert dag.get_task("lakefs_gc.prepare_run").upstream_task_ids == {"export_tables"}
    assert dag.get_task("tell_finance").upstream_task_ids == {"lakefs_gc.save_report"}

    time.sleep(max(0.0, seeded + GRACE + 2 - time.time()))  # the seeded objects are older than the cutoff
    dr = dag.test(run_conf={"min_age_seconds": GRACE})  # the example's day, shortened for the test
    tis = {ti.task_id: ti for ti in dr.get_task_instances()}
    assert {k: ti.state for k, ti in tis.items()} == dict.fromkeys(tis, "success")
    assert len(tis) == len(steps) + 2
    report = tis["lakefs_gc.save_report"].xcom_pull(task_ids="lakefs_gc.save_report")
    assert tis["tell_finance"].xcom_pull(task_ids="tell_finance") == report["summary_uri"]
    after = {o.key for o in storage.list("", recursive=True)}
    assert before - after == manifest.expected(DELETED)
    assert manifest.expected(KEPT) <= after


def test_the_groups_arguments_are_checked_at_parse_time():
    from airflow.sdk import DAG

    from lakefs_gc_airflow.task_group import lakefs_gc_task_group

    with DAG("bad_args"), pytest.raises(ConfigError, match=r"field 'sweep.max_delete_share': must be a number 0..1"):
        lakefs_gc_task_group("my-repo", settings={"sweep": {"max_delete_share": 5}})
    with DAG("bad_repo"), pytest.raises(ConfigError, match="must be a lakeFS repository id"):
        lakefs_gc_task_group("My_Repo")
    with DAG("schedule"), pytest.raises(ConfigError, match="'schedule' and 'repository' are not settings"):
        lakefs_gc_task_group("my-repo", settings={"schedule": "@daily"})


def test_two_groups_in_one_dag_read_their_own_results():
    """Each group's tasks pull their inputs from their own group (the task ids' prefix)."""
    from airflow.sdk import DAG

    from lakefs_gc_airflow.task_group import lakefs_gc_task_group
    from lakefs_gc_airflow.task_io import group_prefix

    with DAG("two") as dag:
        a = lakefs_gc_task_group("repo-a", group_id="gc_a", pool="lakefs_gc_spark")
        b = lakefs_gc_task_group("repo-b", group_id="gc_b")
    assert a.report.task_id == "gc_a.save_report"
    assert b.first.task_id == "gc_b.prepare_run"
    assert a.tasks["delete"].pool == "lakefs_gc_spark"
    assert b.tasks["delete"].pool == "default_pool"
    assert group_prefix("delete", "gc_a.delete") == "gc_a."
    assert group_prefix("delete", "delete") == ""
    assert a.first.params["min_age_seconds"] == 86400
    assert len(dag.tasks) == 16


def test_tasks_deferrable_reaches_the_wait_for_lakefs():
    """The repositories file's ``tasks.deferrable`` is list_committed's ``deferrable`` (its wait for lakeFS on the triggerer)."""
    from datetime import datetime

    from airflow.sdk import DAG

    from lakefs_gc.config import parse_entry
    from lakefs_gc_airflow.task_group import gc_tasks

    for value in (True, False):
        with DAG("d", schedule=None, start_date=datetime(2026, 1, 1)) as d:
            gc_tasks(parse_entry({"repository": "repo-a", "tasks": {"deferrable": value}}, "t"))
        assert d.task_dict["list_committed"].deferrable is value
