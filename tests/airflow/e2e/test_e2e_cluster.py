"""End to end on a real Spark standalone cluster (``lakefs_sandbox.spark_cluster``: a master and two
workers on 127.0.0.1, each its own JVM and work directory): the real GC DAG (``dag.test()``), with
``spark://`` as the Spark connection's master. spark-submit runs each step's driver on this machine
(client deploy mode); its executors run in the workers' JVMs, whose Python workers start cold with
no file of the driver's but the ``--py-files`` bundle Spark ships them.

On a ``local://`` namespace (a mark-only run, a refused and a real sweep-only run of its mark) and an
``s3://`` namespace (moto server on 127.0.0.1, with fresh garbage): exactly the seeded garbage goes,
as on ``local[*]`` (``tests/airflow/e2e/test_e2e.py``, whose set-up and checks
these are; conformance mode too); every Spark step ran as an application of the master with
executors in the workers; no secret is in any XCom, the run's output or files, the master's state,
or the workers' logs and executor output (where each executor's launch command, with the Spark
properties it got, is written). On ``s3://`` three runs: one whose delayed confirmation holds back every
candidate (its steps in their tasks, as for any small repository: fewer applications for the suite's two
cores), the sweep, and one refused by ``prepare_run``; the sweep is then opened in Airflow's UI in
a real browser, and the three in the GC page (``tests/airflow/gc_page/run_page.py``). Both in one file: one
cluster for both.
"""

from __future__ import annotations

import json
import urllib.request

import pytest

from lakefs_sandbox import spark_cluster
from lakefs_sandbox.seed import DELETED, KEPT
from tests.airflow.e2e.test_e2e import (
    PAGES,
    TARGET,
    TASKS,
    _assert_no_secrets,
    _fresh_garbage_then_sweep,
    _load_dag,
    _seed_env,
    _states,
    needs,
)

pytestmark = [pytest.mark.spark, pytest.mark.e2e]

SPARK_STEPS = 5  # list_committed, list_slices, compute_candidates, attribute_space, delete: one application each


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = spark_cluster.start(tmp_path_factory.mktemp("spark-cluster"), workers=2, cores=1, memory="1g")
    yield c
    c.stop()


def _apps(cluster) -> set[str]:
    """The applications the master has seen (ids), finished ones included."""
    status = cluster.status()
    return {a["id"] for a in status.get("activeapps", []) + status.get("completedapps", [])}


def _on_the_cluster(cluster, apps_before: set[str], secrets: list[str], env, output: str, tmp_path) -> None:
    """Each Spark step of the run (of a mark-only run and a sweep-only run: the same five) was an
    application of the master, each with executors in the
    workers (an ``<app-id>/<executor-id>/stderr`` in a worker's work directory), both workers used;
    no secret anywhere the run or the cluster wrote."""
    ran = {
        app: {w.name for w in cluster.worker_dirs if any((w / app).glob("*/stderr"))}
        for app in _apps(cluster) - apps_before
    }
    assert len(ran) == SPARK_STEPS, ran
    assert all(ran.values()), ran
    assert set().union(*ran.values()) == {w.name for w in cluster.worker_dirs}, ran
    with urllib.request.urlopen(cluster.ui_url + "/json/", timeout=60) as r:
        master_state = r.read().decode()
    _assert_no_secrets(secrets, env.last_tis, output + master_state, tmp_path, cluster.workdir)


@needs("local")
def test_local_namespace_mark_only_then_sweep_only_on_a_standalone_cluster(
    cluster, lakefs_emulator_factory, monkeypatch, tmp_path, airflow_db, capfd
):
    env = _seed_env(lakefs_emulator_factory, monkeypatch, tmp_path, "e2e-local", spark_master=cluster.master_url)
    env.wait_until_old()
    before = env.keys()
    apps_before = _apps(cluster)

    # 1. mark only (from the run form): the report is written, nothing is deleted
    dr, tis = env.run(mode="mark_only")
    assert dr.state == "success", _states(tis)
    assert _states(tis) == dict.fromkeys(TASKS, "success"), _states(tis)
    assert env.keys() >= before
    assert env.sibling[0].exists(env.sibling[1])
    mark = tis["mark_uncommitted"].xcom_pull(task_ids="mark_uncommitted")
    assert mark["pages"] == PAGES  # one row per page, then an empty last page
    summary = json.loads(env.storage.get(f"_lakefs/retention/gc/unified/{mark['run_id']}/summary.json"))
    assert summary["success"] is True
    assert summary["mode"] == "mark_only"
    assert summary["deleted"] == 0
    assert summary["candidates"] == len(env.manifest.expected(DELETED))
    import pyarrow.parquet as pq  # the mark's list, in lakeFS's layout

    marked = set()
    for o in env.storage.list(f"_lakefs/retention/gc/unified/{mark['run_id']}/deleted/", recursive=True):
        marked.update(pq.read_table(env.storage.open_input(o.key)).column("address").to_pylist())
    assert marked == env.manifest.expected(DELETED)

    # 2. sweep-only of a mark that does not exist: refused before anything, nothing deleted
    dr, tis = env.run(mode="sweep_only", mark_id="nosuchmark")
    assert dr.state == "failed"
    assert tis["prepare_run"].state == "failed"
    assert env.keys() >= before

    # 3. sweep-only of the mark: exactly its list is deleted; the mark's own summary is untouched
    dr, tis = env.run(mode="sweep_only", mark_id=mark["run_id"])
    assert dr.state == "success", _states(tis)
    assert _states(tis) == dict.fromkeys(TASKS, "success"), _states(tis)
    assert before - env.keys() == env.manifest.expected(DELETED)
    assert json.loads(env.storage.get(f"_lakefs/retention/gc/unified/{mark['run_id']}/summary.json")) == summary
    [sweep_summary] = [
        k
        for k in env.keys()
        if k.startswith(f"_lakefs/retention/gc/unified/{mark['run_id']}/sweeps/") and k.endswith("/summary.json")
    ]
    assert json.loads(env.storage.get(sweep_summary))["deleted"] == len(env.manifest.expected(DELETED))

    # the mark's three Spark steps and the sweep's one ran on the cluster
    out, err = capfd.readouterr()
    _on_the_cluster(
        cluster, apps_before, [env.lakefs_conn["login"], env.lakefs_conn["password"]], env, out + err, tmp_path
    )


@needs("s3")
def test_s3_namespace_on_a_standalone_cluster_and_the_run_as_the_ui_shows_it(
    cluster, lakefs_emulator_factory, request, monkeypatch, tmp_path, airflow_db, capfd
):
    """A full run on s3:// with fresh garbage (kept: newer than the cutoff); with the emulator, the
    same run is then opened in Airflow's UI in a real browser (``tests/airflow/gc_page/run_page.py``)."""
    moto = request.getfixturevalue("moto_server") if TARGET is None else None
    # the first run's Spark steps in their tasks (the product's default for a small repository): the
    # sweep is the run whose steps are the cluster's applications
    env = _seed_env(
        lakefs_emulator_factory,
        monkeypatch,
        tmp_path,
        "e2e-s3",
        moto=moto,
        spark_master=cluster.master_url,
        in_process=10_000,
    )
    env.wait_until_old()
    n = len(env.manifest.expected(DELETED))
    # 1. delayed confirmation: no mark started an hour before this run, so every candidate is held back
    before, apps_before_held = env.keys(), _apps(cluster)
    dr, tis = env.run(confirm_after_seconds=3600)
    assert dr.state == "success", _states(tis)
    assert _states(tis) == dict.fromkeys(TASKS, "success"), _states(tis)
    assert env.keys() >= before  # nothing deleted (the run wrote its report under _lakefs/)
    held_id = tis["mark_uncommitted"].xcom_pull(task_ids="mark_uncommitted")["run_id"]
    held = json.loads(env.storage.get(f"_lakefs/retention/gc/unified/{held_id}/summary.json"))
    assert held["candidates"] == held["held_back"] == n
    assert held["deleted"] == 0
    assert held["held_back_until"]
    assert _apps(cluster) == apps_before_held, "the first run's steps ran in their tasks"
    # 2. the sweep (confirmation off, as for a manual run), every Spark step on the cluster: exactly the
    # garbage goes
    env.dag = _load_dag(
        monkeypatch, tmp_path, env.manifest.repository, env.lakefs_conn, env.aws_conn, spark_master=cluster.master_url
    )
    apps_before = _apps(cluster)
    # a clean run again (auto would build on the first: incremental); dag.test() keeps the last run's conf
    # every branch whose HEAD is older than now is stale (the GC page's table then has rows)
    summary = _fresh_garbage_then_sweep(env, confirm_after_seconds=0, flow="clean", stale_branch_days=0)
    assert summary["deleted"] == summary["num_deleted_objects"] == n
    assert summary["storage_namespace"].startswith("s3://")
    assert summary["mode"] == "mark_and_sweep"
    assert summary["uncommitted_pages"] == PAGES
    assert summary["active_commits"] >= 3  # main's HEAD and the two commits within retention on `recent`
    assert summary["first_slice"]
    assert summary["listed_objects"] >= len(env.manifest.expected(KEPT)) - 1
    out, err = capfd.readouterr()
    secrets = [env.lakefs_conn["login"], env.lakefs_conn["password"], env.aws_conn["login"], env.aws_conn["password"]]
    _on_the_cluster(cluster, apps_before, secrets, env, out + err, tmp_path)
    # 3. refused before anything: a minimum age under lakeFS's grace period, without the override
    kept = env.keys()
    dr, tis = env.run(min_age_seconds=1)
    assert dr.state == "failed"
    assert tis["prepare_run"].state == "failed"
    assert env.keys() >= kept
    refused_run_id = dr.run_id
    if TARGET is not None:
        return
    from airflow.configuration import conf

    from tests.airflow.gc_page import run_page

    conns = {
        "lakefs_default": env.lakefs_conn,
        "aws_default": env.aws_conn,
        "spark_default": {"conn_type": "spark", "host": cluster.master_url},
    }
    with run_page.api_server(
        tmp_path / "ui-home", conf.get("database", "sql_alchemy_conn"), tmp_path / "gc.yaml", conns
    ) as (base, password):
        run_page.check_run_page(
            base,
            password,
            env.dag.dag_id,
            env.manifest.repository,
            n,
            moto,
            summary["storage_namespace"],
            secrets,
            tmp_path / "chromium-profile",
            summary["airflow_run_id"],
        )
        run_page.check_gc_page(
            base,
            password,
            env.dag.dag_id,
            env.storage,
            held,
            summary,
            refused_run_id,
            secrets,
            tmp_path / "chromium-profile-gc",
        )
