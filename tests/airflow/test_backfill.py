"""Scheduler-driven backfill: a real Airflow (api-server, scheduler, dag-processor; LocalExecutor on a
real PostgreSQL started for the test, in its own AIRFLOW_HOME) runs ``airflow backfill create`` over
three dates of the GC DAG against the lakeFS emulator with real Spark jobs.

Asserts: three successful backfill runs, in logical-date order, never overlapping; the storage ends
exactly as after one run (the first run deletes the garbage, the next two delete nothing new).
Every process is started in its own session and stopped by PID (its whole process group).
PostgreSQL, not SQLite: with SQLite, ``airflow backfill create`` failed now and then with "database is
locked" while the scheduler was writing the same file; Airflow documents SQLite for development only.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from lakefs_sandbox.seed import DELETED, KEPT, seed
from tests.conftest import ns_storage
from tests.airflow.conftest import conn_env
from tests.airflow.helpers import REPO
from tests.airflow.postgres import Postgres, postgres_cluster
from tests.conftest import free_port
from lakefs_sandbox.emulator.launcher import stop_group

pytestmark = [pytest.mark.spark, pytest.mark.e2e]

DAY = 86400
REPO_NAME = "backfill-repo"
DAG_ID = f"lakefs_gc__{REPO_NAME}"
MIN_AGE, GRACE = 15, 5
RUNS_TIMEOUT = 1500.0  # three GC runs on 2 cores take about 6 minutes


def _stop_group(proc: subprocess.Popen, timeout: float = 20.0) -> None:
    """Stop the process group we started (the daemon and its task subprocesses), then SIGKILL any
    leftovers of the group (task runners, spark-submit) after the leader exited."""
    stop_group(proc, timeout)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class Airflow:
    def __init__(self, home: Path, env: dict[str, str], db: Postgres):
        self.home, self.env, self.db, self.procs = home, env, db, {}

    def cli(self, *args: str, timeout: float = 180) -> str:
        r = subprocess.run([sys.executable, "-m", "airflow", *args], env=self.env, capture_output=True, text=True,
                           timeout=timeout, cwd=self.home)
        assert r.returncode == 0, f"airflow {' '.join(args)} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
        return r.stdout

    def start(self, name: str, *args: str) -> None:
        log = open(self.home / f"{name}.log", "wb")
        self.procs[name] = subprocess.Popen([sys.executable, "-m", "airflow", *args], env=self.env, stdout=log,
                                            stderr=subprocess.STDOUT, cwd=self.home, start_new_session=True)
        log.close()

    def check_alive(self) -> None:
        for name, p in self.procs.items():
            assert p.poll() is None, f"airflow {name} exited with {p.returncode}:\n{self.tail(name)}"

    def tail(self, name: str, n: int = 4000) -> str:
        return (self.home / f"{name}.log").read_text(errors="replace")[-n:]

    def query(self, sql: str, *params) -> list[tuple]:
        conn = self.db.connect()
        try:
            conn.set_session(readonly=True, autocommit=True)
            with conn.cursor() as cur:
                cur.execute(sql, params)
                return cur.fetchall()
        finally:
            conn.close()

    def stop(self) -> None:
        for p in self.procs.values():
            _stop_group(p)


def _wait(what: str, cond, airflow: Airflow, timeout: float, every: float = 2.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        airflow.check_alive()
        value = cond()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(f"{what} not reached after {timeout:.0f}s\n" +
                       "\n".join(f"--- {n}\n{airflow.tail(n)}" for n in airflow.procs))


def gc_config(path: Path, repository: str, entry: str) -> Path:
    """A GC config of one mark_and_sweep entry on the default connections; ``entry``: its other
    fields, as YAML lines."""
    path.write_text(f"""
repositories:
  - repository: {repository}
    lakefs_conn_id: lakefs_default
    storage_conn_id: aws_default
    spark_conn_id: spark_default
    mode: mark_and_sweep
{textwrap.indent(textwrap.dedent(entry).strip(), "    ")}
""")
    return path


def airflow_env(home: Path, port: int, db_url: str, config: Path, **settings: str) -> dict[str, str]:
    """An Airflow of our own: its home and metadata DB, our dags and plugins and GC config, the
    api-server on 127.0.0.1:``port``; nothing of the caller's AIRFLOW_* or LAKEFS_GC_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "LAKEFS_GC_"))}
    env.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": db_url,
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(16),
        "LAKEFS_GC_CONFIG": str(config),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    })
    env.update(settings)
    return env


@pytest.fixture
def metadata_db(tmp_path):
    """Airflow's metadata database: a fresh PostgreSQL cluster, stopped after the Airflow processes."""
    with postgres_cluster(tmp_path / "postgres.log") as pg:
        yield pg


@pytest.fixture
def airflow_cluster(tmp_path, metadata_db, lakefs_emulator_factory):
    emu = lakefs_emulator_factory("--grace-period", str(GRACE))
    home = tmp_path / "airflow-home"
    home.mkdir()
    port = free_port()
    cfg = gc_config(tmp_path / "gc.yaml", REPO_NAME, f"""
        schedule: "@daily"
        min_age_seconds: {MIN_AGE}
        sweep: {{confirm_after_seconds: 0}}  # scheduled/backfill runs would wait one interval (a day) by default
        work_dir: {tmp_path / 'work'}
        tasks: {{retry_delay_seconds: 5}}
        spark:
          parallelism: 2
          conf: {{spark.ui.enabled: "false", spark.driver.extraJavaOptions: "-XX:TieredStopAtLevel=1"}}
    """)
    env = airflow_env(home, port, metadata_db.sqlalchemy_url, cfg, **{
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
        "SPARK_LOCAL_IP": "127.0.0.1",
    })
    for k, v in (conn_env("lakefs_default", conn_type="lakefs", host=emu.url, login=emu.access_key,
                          password=emu.secret_key, extra={"local_blockstore_root": emu.local_root}),
                 conn_env("spark_default", conn_type="spark", host="local[2]")):
        env[k] = v
    af = Airflow(home, env, metadata_db)
    try:
        af.cli("db", "migrate", timeout=300)
        af.start("api-server", "api-server")
        af.start("scheduler", "scheduler")
        af.start("dag-processor", "dag-processor")
        yield af, emu
    finally:
        af.stop()


def test_backfill_over_three_dates(airflow_cluster):
    af, emu = airflow_cluster
    ns = emu.namespace(REPO_NAME)
    offsets = {"old": -10 * DAY, "recent": -3600}
    manifest = seed(emu.client(), REPO_NAME, ns, phase=lambda p: emu.set_clock(offset=offsets[p]),
                    local_root=emu.local_root)
    emu.set_clock(offset=0)
    storage = ns_storage(ns)
    seeded_at = time.time()
    before = {o.key for o in storage.list("", recursive=True)}

    def parsed():
        errors = af.query("SELECT filename, stacktrace FROM import_error")
        assert not errors, f"the dag-processor could not import the DAG file: {errors}"
        return af.query("SELECT 1 FROM serialized_dag WHERE dag_id=%s", DAG_ID)

    _wait("the DAG parsed by the dag-processor", parsed, af, timeout=180)
    time.sleep(max(0.0, seeded_at + MIN_AGE + 3 - time.time()))  # the seeded objects are older than the cutoff

    today = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    dates = [today - timedelta(days=d) for d in (2, 1, 0)]
    af.cli("backfill", "create", "--dag-id", DAG_ID, "--from-date", dates[0].isoformat(),
           "--to-date", dates[-1].isoformat(), "--max-active-runs", "1")
    af.cli("dags", "unpause", DAG_ID)

    def finished():
        rows = af.query("SELECT run_id, state, logical_date, start_date, end_date, run_type FROM dag_run "
                        "WHERE dag_id=%s ORDER BY logical_date", DAG_ID)
        backfill = [r for r in rows if r[5] == "backfill"]
        done = len(backfill) == 3 and all(r[1] in ("success", "failed") for r in rows)
        return rows if done else None

    rows = _wait("three finished backfill runs", finished, af, timeout=RUNS_TIMEOUT, every=5)
    runs = [r for r in rows if r[5] == "backfill"]
    detail = "\n".join(map(str, rows)) + "\n" + af.tail("scheduler")
    assert [r[1] for r in runs] == ["success"] * 3, detail
    assert [r[2].date() for r in runs] == [d.date() for d in dates], detail
    # in order, never overlapping: each run started after the previous one ended (also vs any other run)
    spans = sorted((r[3], r[4]) for r in rows)
    assert all(prev_end <= start for (_, prev_end), (start, _) in zip(spans, spans[1:])), spans
    assert [r[3] for r in sorted(runs, key=lambda r: r[3])] == [r[3] for r in runs]  # started in date order

    after = {o.key for o in storage.list("", recursive=True)}
    assert before - after == manifest.expected(DELETED)
    assert manifest.expected(KEPT) <= after
    # three reports: the first deleted the garbage, the other two found nothing new to delete
    summaries = [json.loads(storage.get(k)) for k in sorted(after) if k.endswith("/summary.json")]
    by_run = sorted(summaries, key=lambda s: s["start_time"])
    backfill_reports = [s for s in by_run if s["airflow_run_id"] in {r[0] for r in runs}]
    assert [s["deleted"] for s in backfill_reports] == [len(manifest.expected(DELETED)), 0, 0], by_run
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
