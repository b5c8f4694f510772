"""Scheduler-driven runs: a real Airflow (api-server, scheduler, dag-processor, triggerer; LocalExecutor
on a real PostgreSQL started for the module, in its own AIRFLOW_HOME) runs ``airflow backfill create``
over two dates of the GC DAG against the lakeFS emulator with real Spark jobs, and, sharing it, a
repository whose sweeps wait for a person's approval (answered through the REST API).

Asserts: two successful backfill runs, in logical-date order, never overlapping; the storage ends
exactly as after one run (the first run deletes the garbage, the second deletes nothing new).
Every process is started in its own session and stopped by PID (its whole process group), with the
start-up code of ``make airflow`` (``lakefs_sandbox.local_airflow``).
PostgreSQL, not SQLite: with SQLite, ``airflow backfill create`` failed now and then with "database is
locked" while the scheduler was writing the same file; Airflow documents SQLite for development only.
"""

from __future__ import annotations

import json
import textwrap
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lakefs_sandbox.local_airflow import airflow_env
from lakefs_sandbox.seed import DELETED, KEPT, seed
from tests.airflow.conftest import conn_env
from tests.airflow.helpers import Airflow, gc_config, wait_for
from tests.airflow.postgres import postgres_cluster
from tests.conftest import free_port, ns_storage, start_emulator, stop_process
from tests.support.jvm import java_options

pytestmark = [pytest.mark.spark, pytest.mark.e2e]

DAY = 86400
REPO_NAME = "backfill-repo"
DAG_ID = f"lakefs_gc__{REPO_NAME}"
MIN_AGE, GRACE = 15, 5
RUNS_TIMEOUT = 1200.0  # two GC runs on 2 cores take about 4 minutes
APPROVAL_REPO = "approval-repo"
APPROVAL_DAG = f"lakefs_gc__{APPROVAL_REPO}"
APPROVAL_TIMEOUT_S = 90  # sweep.approval_timeout_hours of the approval's repository
APPROVER = ("alice", "alice-password")
PREPARE_S = 6  # seconds the emulator's prepare_commits task takes (list_committed waits for it)


_wait = wait_for


@pytest.fixture(scope="module")
def metadata_db(tmp_path_factory):
    """Airflow's metadata database: a fresh PostgreSQL cluster, stopped after the Airflow processes."""
    with postgres_cluster(tmp_path_factory.mktemp("postgres") / "postgres.log") as pg:
        yield pg


@pytest.fixture(scope="module")
def airflow_cluster(tmp_path_factory, metadata_db):
    """
    One Airflow (api-server, scheduler, dag-processor, triggerer) and one lakeFS emulator for the module.

    Two repositories: the backfill's (scheduled daily) and the approval's (manual; its sweeps wait
    for a person when the blast-radius guard would refuse them).
    """
    tmp_path = tmp_path_factory.mktemp("scheduler")
    # lakeFS takes a while to prepare the commits: the approval's repository waits for it on the triggerer
    emu = start_emulator(tmp_path / "emu", "--grace-period", str(GRACE), "--prepare-commits-delay", str(PREPARE_S))
    home = tmp_path / "airflow-home"
    home.mkdir()
    port = free_port()
    cfg = gc_config(
        tmp_path / "gc.yaml",
        REPO_NAME,
        f"""
        schedule: "@daily"
        min_age_seconds: {MIN_AGE}
        sweep: {{confirm_after_seconds: 0}}  # scheduled/backfill runs would wait one interval (a day) by default
        work_dir: {tmp_path / "work"}
        tasks: {{retry_delay_seconds: 5}}
        spark:
          parallelism: 2
          conf: {{spark.ui.enabled: "false", spark.driver.extraJavaOptions: "{java_options()}"}}
    """,
    )
    with cfg.open("a") as f:  # the approval's repository: manual runs, in the tasks' own processes (no Spark)
        f.write(
            textwrap.indent(
                textwrap.dedent(f"""
              - repository: {APPROVAL_REPO}
                lakefs_conn_id: lakefs_default
                spark_conn_id: spark_default
                mode: mark_and_sweep
                min_age_seconds: {MIN_AGE}
                work_dir: {tmp_path / "work"}
                sweep: {{approval_above: guard, max_delete_share: 0.01, approval_timeout_hours: {APPROVAL_TIMEOUT_S / 3600}}}
                tasks: {{deferrable: true}}  # list_committed's wait for lakeFS on the triggerer
                space: {{enabled: true}}
            """),
                "  ",
            )
        )
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({APPROVER[0]: APPROVER[1]}))
    env = airflow_env(
        home,
        port,
        metadata_db.sqlalchemy_url,
        cfg,
        **{
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
            # one parse of the DAG file, not one every 30 s (each takes seconds of CPU the runs need)
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "3600",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{APPROVER[0]}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        },
    )
    for k, v in (
        conn_env(
            "lakefs_default",
            conn_type="lakefs",
            host=emu.url,
            login=emu.access_key,
            password=emu.secret_key,
            extra={"local_blockstore_root": emu.local_root},
        ),
        conn_env("spark_default", conn_type="spark", host="local[2]"),
    ):
        env[k] = v
    af = Airflow(home, env, metadata_db)
    af.port = port
    try:
        af.cli("db", "migrate", timeout=300)
        for component in ("api-server", "scheduler", "dag-processor", "triggerer"):
            af.start(component)
        yield af, emu
    finally:
        af.stop()
        stop_process(emu.proc)


def _seeded(emu, repository: str):
    """Seed ``repository`` in the emulator (its old and recent phases on a moved clock); its manifest, storage, and when."""
    offsets = {"old": -10 * DAY, "recent": -3600}
    manifest = seed(
        emu.client(),
        repository,
        emu.namespace(repository),
        phase=lambda p: emu.set_clock(offset=offsets[p]),
        local_root=emu.local_root,
    )
    emu.set_clock(offset=0)
    return manifest, ns_storage(emu.namespace(repository)), time.time()


def test_backfill_over_two_dates(airflow_cluster):
    af, emu = airflow_cluster
    manifest, storage, seeded_at = _seeded(emu, REPO_NAME)
    before = {o.key for o in storage.list("", recursive=True)}

    def parsed():
        errors = af.query("SELECT filename, stacktrace FROM import_error")
        assert not errors, f"the dag-processor could not import the DAG file: {errors}"
        return af.query("SELECT 1 FROM serialized_dag WHERE dag_id=%s", DAG_ID)

    _wait("the DAG parsed by the dag-processor", parsed, af, timeout=180)
    time.sleep(max(0.0, seeded_at + MIN_AGE + 3 - time.time()))  # the seeded objects are older than the cutoff

    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    dates = [today - timedelta(days=d) for d in (1, 0)]
    af.cli(
        "backfill",
        "create",
        "--dag-id",
        DAG_ID,
        "--from-date",
        dates[0].isoformat(),
        "--to-date",
        dates[-1].isoformat(),
        "--max-active-runs",
        "1",
    )
    af.cli("dags", "unpause", DAG_ID)

    def finished():
        rows = af.query(
            "SELECT run_id, state, logical_date, start_date, end_date, run_type FROM dag_run "
            "WHERE dag_id=%s ORDER BY logical_date",
            DAG_ID,
        )
        backfill = [r for r in rows if r[5] == "backfill"]
        done = len(backfill) == 2 and all(r[1] in ("success", "failed") for r in rows)
        return rows if done else None

    rows = _wait("two finished backfill runs", finished, af, timeout=RUNS_TIMEOUT, every=5)
    runs = [r for r in rows if r[5] == "backfill"]
    detail = "\n".join(map(str, rows)) + "\n" + af.tail("scheduler")
    assert [r[1] for r in runs] == ["success"] * 2, detail
    assert [r[2].date() for r in runs] == [d.date() for d in dates], detail
    # in order, never overlapping: each run started after the previous one ended (also vs any other run)
    spans = sorted((r[3], r[4]) for r in rows)
    assert all(prev_end <= start for (_, prev_end), (start, _) in zip(spans, spans[1:])), spans
    assert [r[3] for r in sorted(runs, key=lambda r: r[3])] == [r[3] for r in runs]  # started in date order

    after = {o.key for o in storage.list("", recursive=True)}
    assert before - after == manifest.expected(DELETED)
    assert manifest.expected(KEPT) <= after
    # two reports: the first deleted the garbage, the second found nothing new to delete
    summaries = [json.loads(storage.get(k)) for k in sorted(after) if k.endswith("/summary.json")]
    by_run = sorted(summaries, key=lambda s: s["start_time"])
    backfill_reports = [s for s in by_run if s["airflow_run_id"] in {r[0] for r in runs}]
    assert [s["deleted"] for s in backfill_reports] == [len(manifest.expected(DELETED)), 0], by_run
    assert all(s["success"] for s in backfill_reports)
    # no key or secret anywhere the scheduler-run tasks wrote: task logs, the metadata DB (XComs,
    # rendered fields), step files, reports
    secrets = [emu.access_key.encode(), emu.secret_key.encode()]
    af.db.dump(af.home / "metadata-db.sql")  # the whole metadata database as text, grepped with the rest
    assert DAG_ID.encode() in (af.home / "metadata-db.sql").read_bytes(), "the metadata dump holds no run"
    written = [f for d in (af.home, storage.root, af.home.parent / "work") for f in Path(d).rglob("*") if f.is_file()]
    assert any("task_id=list_committed" in str(f) for f in written), "no task log to check"
    leaks = [str(f) for f in written if any(s in f.read_bytes() for s in secrets)]
    assert not leaks, f"a lakeFS key or secret in {leaks}"


def _api(af: Airflow, method: str, path: str, body: dict | None = None, timeout: float = 60) -> dict:
    """Call the api-server's REST API as the approver (a token from the simple auth manager's ``/auth/token``)."""
    base = f"http://127.0.0.1:{af.port}"
    req = urllib.request.Request(
        base + "/auth/token",
        data=json.dumps({"username": APPROVER[0], "password": APPROVER[1]}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=timeout) as r:
        token = json.load(r)["access_token"]
    req = urllib.request.Request(
        base + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.load(r)


def test_a_sweep_over_the_guard_waits_for_a_person_holding_no_slot(airflow_cluster):
    """
    ``sweep.approval_above: guard``: the mark over the guard waits in approve_sweep, no task running and
    no pool slot taken; "Reject" (REST, as alice) deletes nothing and the report says who; no answer
    within the timeout deletes nothing and fails the run; "Approve" sweeps exactly the garbage, beyond
    the guard, and the report names alice. Its list_committed waits for lakeFS (``tasks.deferrable``,
    a slow prepare_commits) on the triggerer.
    """
    af, emu = airflow_cluster
    manifest, storage, seeded_at = _seeded(emu, APPROVAL_REPO)
    data = lambda: {o.key for o in storage.list("", recursive=True) if o.key.startswith("data/")}
    before = data()
    garbage = manifest.expected(DELETED)
    assert garbage
    assert garbage <= before

    def parsed():
        errors = af.query("SELECT filename, stacktrace FROM import_error")
        assert not errors, f"the dag-processor could not import the DAG file: {errors}"
        return af.query("SELECT 1 FROM serialized_dag WHERE dag_id=%s", APPROVAL_DAG)

    _wait("the approval's DAG parsed", parsed, af, timeout=180)
    time.sleep(max(0.0, seeded_at + MIN_AGE + 3 - time.time()))
    af.cli("dags", "unpause", APPROVAL_DAG)

    def asked(run_id: str) -> str:
        def state():
            rows = af.query(
                "SELECT task_id, state FROM task_instance WHERE dag_id=%s AND run_id=%s", APPROVAL_DAG, run_id
            )
            states = dict(rows)
            if states.get("approve_sweep") in ("awaiting_input", "deferred"):
                return states
            failed = {t: s for t, s in states.items() if s in ("failed", "upstream_failed")}
            assert not failed, f"{failed}\n{af.tail('scheduler')}"
            return None

        states = _wait(f"run {run_id} waiting for approval", state, af, timeout=600, every=2)
        # Airflow 3.3.2 fails a task answered before its scheduler has read the executor's event of the
        # workload that parked it (the stale "success" then finds the resumed task queued): a person
        # answers later than that; the test waits for the event, as a person's pace would
        parked = f"Received executor event with state success for task instance TaskInstanceKey(dag_id='{APPROVAL_DAG}', task_id='approve_sweep', run_id='{run_id}'"
        _wait(
            "the scheduler read the parked workload's event",
            lambda: parked in (af.home / "scheduler.log").read_text(),
            af,
            timeout=120,
            every=1,
        )
        # waiting holds no worker and no pool slot: no task of the run runs, the pool has nothing occupied
        assert not [t for t, s in states.items() if s in ("running", "queued")], states
        pool = _api(af, "GET", "/api/v2/pools/default_pool")
        assert pool["occupied_slots"] == 0, pool
        assert pool["running_slots"] == 0, pool
        assert data() == before  # nothing deleted while the question waits
        return states["approve_sweep"]

    def answer(run_id: str, option: str) -> None:
        path = f"/api/v2/dags/{APPROVAL_DAG}/dagRuns/{run_id}/taskInstances/approve_sweep/-1/hitlDetails"
        shown = _api(af, "GET", path)
        assert f"{len(garbage)} objects" in shown["subject"], shown
        assert "blast-radius guard would refuse it" in shown["body"], shown
        assert "Largest prefixes" in shown["body"], shown
        _api(af, "PATCH", path, {"chosen_options": [option], "params_input": {}})

    def finished(run_id: str) -> str:
        def state():
            rows = af.query("SELECT state FROM dag_run WHERE dag_id=%s AND run_id=%s", APPROVAL_DAG, run_id)
            return rows[0][0] if rows and rows[0][0] in ("success", "failed") else None

        return _wait(f"run {run_id} finished", state, af, timeout=600, every=3)

    def report(run_id: str) -> dict:
        keys = [o.key for o in storage.list("_lakefs/retention/gc/unified/", recursive=True)]
        for key in keys:
            if key.endswith("/summary.json"):
                doc = json.loads(storage.get(key))
                if doc.get("airflow_run_id") == run_id:
                    return doc
        raise AssertionError(f"no summary.json of run {run_id} in {keys}")

    # 1. rejected: nothing deleted, the run ends, the report names who rejected
    af.cli("dags", "trigger", APPROVAL_DAG, "--run-id", "reject")
    waiting_state = asked("reject")
    answer("reject", "Reject")
    assert finished("reject") == "success", af.tail("scheduler")
    assert data() == before
    rejected = report("reject")
    assert rejected["approval"]["decision"] == "rejected", rejected
    assert rejected["approval"]["by"] == APPROVER[0], rejected
    assert rejected["deleted"] == 0, rejected
    assert rejected["delete_skipped"] == "rejected", rejected

    # 2. nobody answers: the task fails when the timeout passes, nothing deleted
    af.cli("dags", "trigger", APPROVAL_DAG, "--run-id", "timeout")
    asked("timeout")
    assert finished("timeout") == "failed"
    assert data() == before
    states = dict(
        af.query("SELECT task_id, state FROM task_instance WHERE dag_id=%s AND run_id='timeout'", APPROVAL_DAG)
    )
    assert states["approve_sweep"] == "failed", states
    assert states["delete"] == "upstream_failed", states
    reason = af.query(
        "SELECT value FROM xcom WHERE dag_id=%s AND run_id='timeout' AND task_id='approve_sweep' AND key='refusal'",
        APPROVAL_DAG,
    )
    assert reason, reason
    assert "nobody approved or rejected" in str(reason[0][0]), reason

    # 3. approved: exactly the garbage goes (beyond the guard's max_delete_share 0.01), the report names alice
    af.cli("dags", "trigger", APPROVAL_DAG, "--run-id", "approve")
    asked("approve")
    answer("approve", "Approve")
    assert finished("approve") == "success", af.tail("scheduler")
    after = data()
    assert before - after == garbage
    assert manifest.expected(KEPT) <= {o.key for o in storage.list("", recursive=True)}
    approved = report("approve")
    assert approved["approval"]["decision"] == "approved", approved
    assert approved["approval"]["by"] == APPROVER[0], approved
    assert approved["deleted"] == len(garbage), approved
    # lakeFS's wait held no slot either: list_committed deferred to the triggerer, which ran its trigger
    log = af.home / "logs" / f"dag_id={APPROVAL_DAG}" / "run_id=approve" / "task_id=list_committed" / "attempt=1.log"
    assert "deferring to the triggerer" in log.read_text(), log.read_text()[-3000:]
    triggered = "".join(t.read_text() for t in log.parent.glob("attempt=1.log.trigger.*.log"))
    assert "lakeFS prepared the commits of approval-repo" in triggered, (triggered[-3000:], af.tail("triggerer"))
    assert "in the triggerer" in triggered
    print(f"approve_sweep waited in state {waiting_state}")
