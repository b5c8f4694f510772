"""Scheduler-driven backfill: a real Airflow (api-server, scheduler, dag-processor; LocalExecutor on a
real PostgreSQL started for the test, in its own AIRFLOW_HOME) runs ``airflow backfill create`` over
two dates of the GC DAG against the lakeFS emulator with real Spark jobs.

Asserts: two successful backfill runs, in logical-date order, never overlapping; the storage ends
exactly as after one run (the first run deletes the garbage, the second deletes nothing new).
Every process is started in its own session and stopped by PID (its whole process group), with the
start-up code of ``make airflow`` (``lakefs_sandbox.local_airflow``).
PostgreSQL, not SQLite: with SQLite, ``airflow backfill create`` failed now and then with "database is
locked" while the scheduler was writing the same file; Airflow documents SQLite for development only.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lakefs_sandbox.local_airflow import airflow_env
from lakefs_sandbox.seed import DELETED, KEPT, seed
from tests.airflow.conftest import conn_env
from tests.airflow.helpers import Airflow, gc_config, wait_for
from tests.airflow.postgres import postgres_cluster
from tests.conftest import free_port, ns_storage
from tests.support.jvm import java_options

pytestmark = [pytest.mark.spark, pytest.mark.e2e]

DAY = 86400
REPO_NAME = "backfill-repo"
DAG_ID = f"lakefs_gc__{REPO_NAME}"
MIN_AGE, GRACE = 15, 5
RUNS_TIMEOUT = 1200.0  # two GC runs on 2 cores take about 4 minutes


_wait = wait_for


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
    try:
        af.cli("db", "migrate", timeout=300)
        for component in ("api-server", "scheduler", "dag-processor"):
            af.start(component)
        yield af, emu
    finally:
        af.stop()


def test_backfill_over_two_dates(airflow_cluster):
    af, emu = airflow_cluster
    ns = emu.namespace(REPO_NAME)
    offsets = {"old": -10 * DAY, "recent": -3600}
    manifest = seed(
        emu.client(), REPO_NAME, ns, phase=lambda p: emu.set_clock(offset=offsets[p]), local_root=emu.local_root
    )
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
