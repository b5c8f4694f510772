"""End to end: the real GC DAG (``dag.test()``, SQLite) against the lakeFS emulator, real spark-submit
jobs, on a ``local://`` namespace; the set-up and checks here also serve ``test_e2e_cluster.py`` (a
Spark standalone cluster; an ``s3://`` namespace on a moto server on 127.0.0.1) and ``test_e2e_histories.py``.

Conformance mode: with ``LAKEFS_GC_TARGET_ENDPOINT`` and its companions set
(include/lakefs_sandbox/target.py) the same tests run against that real lakeFS: commits are dated
back with the commit API instead of moving the emulator's clock, and runs set
``unsafe_min_age_override`` (a real server's grace period is a day). The test for the other
namespace kind than the target's root is skipped.

The repository is seeded through lakefs-sdk by ``lakefs_sandbox.seed`` with the emulator's clock moved
back (commits ten days old, retention one day); ``min_age_seconds`` is small (the emulator's grace
period is smaller still) so that objects written a few seconds before the run are "newer than the
cutoff" and objects written before a short wait are older. Every test asserts on what is left in
storage.
"""

from __future__ import annotations

import json
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from lakefs_sandbox.seed import DELETED, KEPT, STAGED_ON_MAIN, Manifest, seed, seed_fresh
from lakefs_sandbox.target import target_from_env
from tests.airflow.conftest import conn_env
from tests.airflow.helpers import REPO
from tests.conftest import ns_storage
from tests.support.jvm import java_options

TARGET = target_from_env()
# the emulator pages prepare_uncommited by one row; a real lakeFS fits this repository in one page
PAGES = STAGED_ON_MAIN + 1 if TARGET is None else 1

pytestmark = [pytest.mark.spark, pytest.mark.e2e]

DAY = 86400
GRACE = 5
MIN_AGE = 25  # above the time from the fresh garbage to the DAG run's start (the run clock's) on a busy machine
TASKS = [
    "prepare_run",
    "mark_uncommitted",
    "list_committed",
    "list_slices",
    "compute_candidates",
    "attribute_space",
    "delete",
    "save_report",
]


def is_real(emu) -> bool:
    """A real lakeFS: the conformance target (None) or a server of lakefs_sandbox.real_lakefs."""
    return emu is None or getattr(emu, "real", False)


def clock_for(emu):
    if is_real(emu):  # a real lakeFS: commits are dated back by the seed instead
        return lambda phase: None
    offsets = {"old": -10 * DAY, "recent": -3600, "fresh": 0}
    return lambda phase: emu.set_clock(offset=offsets[phase])


def needs(kind: str):
    """Skip when a real lakeFS target serves the other namespace kind."""
    return pytest.mark.skipif(
        TARGET is not None and TARGET.blockstore_type != kind,
        reason=f"the target lakeFS's namespace root is not {kind}://",
    )


class GCEnv:
    """An emulator with a seeded repository, its storage, and the GC DAG configured for it."""

    def __init__(self, emu, storage, manifest: Manifest, dag, sibling: tuple, seeded_at: float, client, local_root):
        self.emu, self.storage, self.manifest, self.dag = emu, storage, manifest, dag
        self.client, self.local_root = client, local_root
        self.sibling = sibling  # (storage of the sibling prefix, key)
        self.seeded_at = seeded_at

    def keys(self) -> set[str]:
        return {o.key for o in self.storage.list("", recursive=True)}

    def wait_until_old(self) -> None:
        """Until everything seeded so far is older than the run's cutoff (bounded: MIN_AGE + 3 s)."""
        remaining = self.seeded_at + MIN_AGE + 3 - time.time()
        if remaining > 0:
            time.sleep(remaining)

    def run(self, **conf):
        # always the whole conf: dag.test() keeps the previous run's conf as the DAG's params
        conf = {"mode": "mark_and_sweep", **conf}
        if is_real(self.emu):  # a real lakeFS's grace period (a day) is above the test's minimum age
            conf.setdefault("unsafe_min_age_override", True)
        dr = self.dag.test(run_conf=conf)
        tis = {ti.task_id: ti for ti in dr.get_task_instances()}
        self.last_tis = tis
        return dr, tis


def _states(tis) -> dict[str, str]:
    return {k: ti.state for k, ti in tis.items()}


def _assert_no_secrets(secrets: list[str], tis, output: str, *dirs: Path) -> None:
    """No key or secret in any XCom, in what the run printed (task logs: dag.test() runs the tasks
    in this process), or in any file the run wrote (work dir and its step files, reports)."""
    secrets = [s for s in secrets if s]
    assert secrets
    for task_id, ti in tis.items():
        text = json.dumps(ti.xcom_pull(task_ids=task_id), default=str)
        assert not any(s in text for s in secrets), f"a secret in the XCom of {task_id}"
    assert not any(s in output for s in secrets), "a secret in the run's output"
    for d in dirs:
        for f in d.rglob("*"):
            if f.is_file():
                data = f.read_bytes()
                assert not any(s.encode() in data for s in secrets), f"a secret in {f}"


def _write_config(
    tmp_path: Path,
    repo: str,
    storage_conn_id: str = "aws_default",
    in_process_max_keys: int = 10_000,
    keep: dict | None = None,
) -> Path:
    """The repositories file of one entry; ``keep``: its keep rules (none by default)."""
    cfg = tmp_path / "gc.yaml"
    cfg.write_text(
        textwrap.dedent(f"""
        repositories:
          - repository: {repo}
            lakefs_conn_id: lakefs_default
            storage_conn_id: {storage_conn_id}
            spark_conn_id: spark_default
            min_age_seconds: {MIN_AGE}
            mode: mark_and_sweep
            work_dir: {tmp_path / "work"}
            tasks: {{retry_delay_seconds: 5}}
            spark:
              parallelism: 2
              in_process_max_keys: {in_process_max_keys}
              conf:
                spark.ui.enabled: "false"
                spark.driver.extraJavaOptions: "{java_options()}"
                spark.executor.extraJavaOptions: "{java_options()}"
    """)
        + (f"    keep: {json.dumps(keep)}\n" if keep else "")
    )
    return cfg


def _load_dag(
    monkeypatch,
    tmp_path: Path,
    repo: str,
    lakefs: dict,
    aws: dict | None,
    storage_conn_id: str = "aws_default",
    spark_master: str = "local[2]",
    in_process: int | None = None,
    keep: dict | None = None,
):
    """``in_process``: the config's ``spark.in_process_max_keys``; by default 0 on a cluster (every
    Spark step an application of it, the sweep too), else the product's default. ``keep``: the
    entry's keep rules."""
    if in_process is None:
        in_process = 0 if spark_master.startswith("spark://") else 10_000
    monkeypatch.setenv("LAKEFS_GC_CONFIG", str(_write_config(tmp_path, repo, storage_conn_id, in_process, keep)))
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    conns = [conn_env("lakefs_default", **lakefs), conn_env("spark_default", conn_type="spark", host=spark_master)]
    if aws is not None:
        conns.append(conn_env(storage_conn_id, **aws))
    for k, v in conns:
        monkeypatch.setenv(k, v)
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags" / "gc_dags.py"))
    assert bag.import_errors == {}
    return bag.dags[f"lakefs_gc__{repo}"]


def _seed_env(
    lakefs_emulator_factory,
    monkeypatch,
    tmp_path,
    repo: str,
    moto=None,
    cloud=None,
    server=None,
    spark_master: str = "local[2]",
    in_process: int | None = None,
) -> GCEnv:
    """A seeded repository on the local blockstore, on moto (``moto``), or on Azurite or
    fake-gcs-server (``cloud``: then the storage connection is a ``wasb`` one with Azurite's
    connection string, or a ``google_cloud_platform`` one, anonymous, with ``STORAGE_EMULATOR_HOST``
    as the Google provider's users point it at an emulator). ``server``: lakeFS itself
    (``tests/conftest.py``'s ``real_lakefs``) instead of an emulator, on its own blockstore.
    ``spark_master``: the Spark connection's host (a ``spark://`` cluster's master); ``in_process``:
    ``_load_dag``'s."""
    storage_conn_id = "aws_default"
    if server is not None:
        repo = f"{repo}-{uuid.uuid4().hex[:6]}"
        moto = server.store if server.blockstore_type == "s3" else None
        cloud = server.cloud
    if TARGET is not None and server is None:  # conformance mode: a real lakeFS
        emu = None
        repo = f"{repo}-{uuid.uuid4().hex[:6]}"
        ns = TARGET.namespace(repo)
        storage, client, local_root = TARGET.storage(ns), TARGET.client(), TARGET.local_root
        sibling = TARGET.storage(TARGET.namespace(repo + "-sibling"))
        lakefs, aws = TARGET.lakefs_conn(), TARGET.aws_conn()
    else:
        emu = server or lakefs_emulator_factory(
            "--uncommitted-page-size", "1", "--grace-period", str(GRACE), s3=moto, cloud=cloud
        )
        client, local_root = emu.client(), emu.local_root
        if cloud is not None:
            container = cloud.create(f"gc-e2e-{repo}")
            ns = emu.namespace(repo, bucket=container)
            storage = ns_storage(ns, cloud)
            sibling = ns_storage(cloud.namespace(container, f"{repo}-sibling"), cloud)
            if cloud.kind == "azure":
                storage_conn_id = "azure_storage"
                aws = {"conn_type": "wasb", "extra": {"connection_string": cloud.connection_string}}
            else:
                storage_conn_id = "gcs_storage"
                aws = {"conn_type": "google_cloud_platform", "extra": {"is_anonymous": True, "project": "test"}}
                monkeypatch.setenv("STORAGE_EMULATOR_HOST", cloud.endpoint_url)
        elif moto is not None:
            bucket = moto.create_bucket(f"gc-e2e-{repo}")
            ns = emu.namespace(repo, bucket=bucket)
            storage = ns_storage(ns, moto)
            sibling = ns_storage(f"s3://{bucket}/{repo}-sibling", moto)
            aws = {
                "conn_type": "aws",
                "login": moto.access_key,
                "password": moto.secret_key,
                "extra": {"endpoint_url": moto.endpoint_url, "region_name": moto.region},
            }
        else:
            ns = emu.namespace(repo)
            storage = ns_storage(ns)
            sibling = ns_storage(emu.namespace(f"{repo}-sibling"))
            aws = None
        lakefs = {
            "conn_type": "lakefs_gc",
            "host": emu.url,
            "login": emu.access_key,
            "password": emu.secret_key,
            "extra": {"local_blockstore_root": local_root} if local_root else {},
        }
    manifest = seed(client, repo, ns, phase=clock_for(emu), backdate=is_real(emu), local_root=local_root)
    # outside the namespace: same bucket (or parent directory), a prefix that starts with the namespace's name
    sibling.put("data/slice/not-ours.bin", b"not in the namespace")
    seeded_at = time.time()
    dag = _load_dag(monkeypatch, tmp_path, repo, lakefs, aws, storage_conn_id, spark_master, in_process)
    env = GCEnv(emu, storage, manifest, dag, (sibling, "data/slice/not-ours.bin"), seeded_at, client, local_root)
    env.lakefs_conn, env.aws_conn = lakefs, aws
    return env


def _assert_swept(env: GCEnv, before: set[str], tis) -> dict:
    """Exactly the expected garbage is gone; everything else (incl. _lakefs/ and the sibling) is there."""
    after = env.keys()
    expected_deleted = env.manifest.expected(DELETED)
    assert expected_deleted, "the seeded repository must contain garbage"
    gone = before - after
    assert gone == expected_deleted, {
        o.label: o.address for o in env.manifest.objects if o.address in gone ^ expected_deleted
    }
    for o in env.manifest.objects:
        assert (o.address in after) == (o.expect == KEPT), (o.label, o.path, o.address)
    assert {k for k in before if k.startswith("_lakefs/")} <= after  # _lakefs/ untouched
    sibling, key = env.sibling
    assert sibling.exists(key)
    run_id = tis["mark_uncommitted"].xcom_pull(task_ids="mark_uncommitted")["run_id"]
    summary = json.loads(env.storage.get(f"_lakefs/retention/gc/unified/{run_id}/summary.json"))
    assert summary["success"] is True
    assert summary["run_id"] == run_id
    return summary


def _assert_ordered(tis) -> None:
    assert tis["mark_uncommitted"].end_date <= tis["list_committed"].start_date
    assert tis["prepare_run"].end_date <= tis["list_slices"].start_date
    assert max(tis["list_committed"].end_date, tis["list_slices"].end_date) <= tis["compute_candidates"].start_date
    assert (
        tis["compute_candidates"].end_date
        <= tis["delete"].start_date
        <= tis["delete"].end_date
        <= tis["save_report"].start_date
    )


def _fresh_garbage_then_sweep(env: GCEnv, before: set[str] | None = None, **conf) -> dict:
    """Write garbage newer than the cutoff, run a sweep (``conf``: its Params), check storage against
    ``before`` (default: the state just before the run); return the report."""
    seed_fresh(env.client, env.manifest, phase=clock_for(env.emu), local_root=env.local_root)
    before = env.keys() if before is None else before | {env.manifest.objects[-1].address}
    dr, tis = env.run(**conf)
    assert dr.state == "success", _states(tis)
    assert _states(tis) == dict.fromkeys(TASKS, "success"), _states(tis)
    _assert_ordered(tis)
    return _assert_swept(env, before, tis)


def test_repository_without_gc_rules_fails_clearly_and_deletes_nothing(
    lakefs_emulator_factory, monkeypatch, tmp_path, airflow_db, capfd
):
    env = _seed_env(lakefs_emulator_factory, monkeypatch, tmp_path, "e2e-norules")
    env.client.repositories_api.delete_gc_rules(env.manifest.repository)
    before = env.keys()
    dr, tis = env.run()
    states = _states(tis)
    assert dr.state == "failed", states
    assert states["prepare_run"] == "failed", states
    assert all(states[t] == "upstream_failed" for t in TASKS[1:]), states
    assert env.keys() == before
    out, err = capfd.readouterr()
    assert f"repository '{env.manifest.repository}' has no GC rules" in out + err
    assert "set-config" in out + err
