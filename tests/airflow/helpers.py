"""Shared test helpers: the DAG factory loaded from dags/, a fake task context, a fake spark-submit, a
GC config file, Airflow's components as processes."""

from __future__ import annotations

import json
import sys
import textwrap
import urllib.request
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from lakefs_sandbox.local_airflow import AirflowProcesses

REPO = Path(__file__).resolve().parents[2]


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


class Airflow(AirflowProcesses):
    """Airflow's components as ``make airflow`` starts them, plus read-only queries of the
    metadata database when it is a PostgreSQL (``tests/airflow/postgres.py``)."""

    def __init__(self, home: Path, env: dict[str, str], db=None):
        super().__init__(home, env)
        self.db = db

    def query(self, sql: str, *params) -> list[tuple]:
        conn = self.db.connect()
        try:
            conn.set_session(readonly=True, autocommit=True)
            with conn.cursor() as cur:
                cur.execute(sql, params)
                return cur.fetchall()
        finally:
            conn.close()


def wait_for(what: str, cond, airflow: Airflow, timeout: float, every: float = 2.0):
    """``cond()``'s first true value, checking ``airflow``'s components are alive between tries; a
    timeout names ``what`` with every component's log tail."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        airflow.check_alive()
        value = cond()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(
        f"{what} not reached after {timeout:.0f}s\n" + "\n".join(f"--- {n}\n{airflow.tail(n)}" for n in airflow.procs)
    )


@cache
def dag_module():
    """The DAG factory module (``build_gc_dag``)."""
    from lakefs_gc_airflow import factory

    return factory


def repo_config(**overrides: Any):
    from lakefs_gc.config import RepoConfig, SparkSettings, TaskSettings

    spark = overrides.pop(
        "spark",
        SparkSettings(driver_memory="1g", executor_memory="1g", parallelism=2, conf={"spark.ui.enabled": "false"}),
    )
    fields = dict(
        repository="sample-repo",
        lakefs_conn_id="lakefs_default",
        storage_conn_id="aws_default",
        spark_conn_id="spark_default",
        min_age_seconds=86400,
        mode="mark_and_sweep",
        schedule=None,
        spark=spark,
        tasks=TaskSettings(retries=0),
    )
    fields.update(overrides)
    return RepoConfig(**fields)


class FakeTI:
    """Only what the operators use: ``xcom_pull(task_ids=[...])`` -> list in the same order."""

    def __init__(self, xcoms: dict[str, Any]):
        self.xcoms = xcoms
        self.pulled: list[list[str]] = []

    def xcom_pull(self, task_ids, **_: Any):
        self.pulled.append(list(task_ids))
        return [self.xcoms.get(t) for t in task_ids]


def context(
    xcoms: dict[str, Any], run_id: str = "manual__2024-05-01T00:00:00+00:00", params: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {"ti": FakeTI(xcoms), "run_id": run_id, "params": dict(params or {})}


def fake_results() -> dict[str, dict]:
    """A plausible result per Spark step, on the wire (what the fake job writes by default)."""
    from lakefs_gc import contract as c

    return {
        k: c.to_wire(v)
        for k, v in {
            "list_committed": c.CommittedResult(
                committed_dir=c.PartsDir("s/committed/", 2),
                commits_csv="c",
                active_commits=1,
                metaranges=1,
                ranges=1,
                committed_addresses=2,
            ),
            "list_slices": c.SlicesResult(
                listed_dir="/w/listed",
                first_slice="",
                slices_listed=1,
                slices_skipped=0,
                listed_objects=3,
                listed_bytes=30,
            ),
            "compute_candidates": c.CandidatesResult(
                report_dir="r",
                uncommitted_files=1,
                candidates=3,
                candidate_bytes=30,
                to_delete=3,
                to_delete_bytes=30,
                held_back=0,
                confirm_after_seconds=0,
            ),
            "attribute_space": c.SpaceResult(space_key="r/space.json", objects=3, bytes=30, deleted_bytes=30),
            "delete": c.DeleteResult(counts=c.DeleteCounts(keys=3, deleted=3, parts=1)),
        }.items()
    }


def fake_spark_submit(
    tmp_path: Path,
    exit_code: int = 0,
    write_result: bool = True,
    result: dict | None = None,
    failures: dict[str, dict] | None = None,
) -> Path:
    """An executable standing in for spark-submit: checks the input file is a valid step input,
    records argv, digests of the secrets it was given (its ``--secrets`` file, and any secret env
    var) and the file's mode (in ``fake-job-seen.json``, never in the result: a result is an XCom),
    and writes the step's result like a job would (``result``, else a plausible one for the step).
    A step in ``failures`` writes ``{"failure": failures[step]}`` instead, says so on stderr and
    exits 1, as a failing job does."""
    script = tmp_path / "fake-spark-submit"
    results = json.dumps(fake_results())
    script.write_text(
        textwrap.dedent(f"""\
        #!{sys.executable}
        import hashlib, json, os, sys
        from lakefs_gc.contract import inputs_from_wire
        from lakefs_gc.spark.runtime import SECRET_ENV
        argv = sys.argv[1:]
        input_path = argv[argv.index("--input") + 1]
        result_path = argv[argv.index("--result") + 1]
        step = os.path.basename(argv[argv.index("--input") - 1]).removesuffix(".py")
        inputs_from_wire(json.load(open(input_path)))
        seen = {{k: hashlib.sha256(os.environ[k].encode()).hexdigest() for k in SECRET_ENV if os.environ.get(k)}}
        secrets_path = argv[argv.index("--secrets") + 1] if "--secrets" in argv else None
        from_file = {{k: hashlib.sha256(v.encode()).hexdigest() for k, v in json.load(open(secrets_path)).items()
                     }} if secrets_path else {{}}
        json.dump({{"argv": argv, "secret_env": seen, "secrets_file": from_file,
                   "secrets_mode": oct(os.stat(secrets_path).st_mode & 0o777) if secrets_path else None,
                   "pyspark_python": os.environ.get("PYSPARK_PYTHON")}},
                  open({str(tmp_path / "fake-job-seen.json")!r}, "w"))
        print("fake spark-submit running", step)
        failure = json.loads({json.dumps(failures or {})!r}).get(step)
        if failure:
            json.dump({{"failure": failure}}, open(result_path, "w"))
            print(f"lakefs-gc {{step}}: {{failure['kind'].upper()}}: {{failure['type']}}: {{failure['message']}}",
                  file=sys.stderr)
            sys.exit(1)
        result = json.loads({json.dumps(result) if result is not None else "null"!r}) or json.loads({results!r})[step]
        if {write_result!r}:
            json.dump(result, open(result_path, "w"))
        sys.exit({exit_code})
    """)
    )
    script.chmod(0o755)
    return script


def digest(value: str) -> str:
    import hashlib

    return hashlib.sha256(value.encode()).hexdigest()


def validate_params(dag, conf: dict[str, Any]) -> dict[str, Any]:
    """What the API/UI does before creating a run (SerializedDAG.create_dagrun), on the serialized DAG."""
    from airflow.serialization.serialized_objects import DagSerialization

    serialized = DagSerialization.from_dict(DagSerialization.to_dict(dag))
    return serialized.params.deep_merge(conf).validate()


def airflow_api(base: str, path: str, user: str, password: str, timeout: float = 60):
    """GET ``path`` from the REST API of the api-server at ``base``, signed in as ``user`` (Airflow
    3's simple auth manager: a token from ``/auth/token``). ``timeout`` is per request: on a loaded
    machine a plugin's first answer (its imports, a report read from the store) takes over 10 s."""
    req = urllib.request.Request(
        base + "/auth/token",
        data=json.dumps({"username": user, "password": password}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=timeout) as r:
        token = json.load(r)["access_token"]
    req = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.load(r)


def sign_in(page, user: str, password: str) -> None:
    """Sign in on the login page the UI redirected ``page`` to (playwright)."""
    page.get_by_label("Username").fill(user)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()


@contextmanager
def gc_page(base: str, profile: Path, login: tuple[str, str] | None = None):
    """The GC page of the api-server at ``base`` in Debian's Chromium, yielded once its runs table is
    drawn (playwright's ``expect`` set to the UI's deadline). ``login``: (user, password) for the
    simple auth manager's login form; None: everyone is admin (the compose stack's, a plain
    Airflow's), a token without a login."""
    from playwright.sync_api import expect, sync_playwright

    from tests.airflow.ui.test_forms import UI_TIMEOUT_MS, _browser

    expect.set_options(timeout=UI_TIMEOUT_MS)
    with sync_playwright() as p:
        browser = _browser(p, profile)
        try:
            page = browser.new_page()
            page.set_default_timeout(UI_TIMEOUT_MS)
            if login is None:
                page.goto(f"{base}/auth/token/login")
                page.goto(f"{base}/plugin/lakefs-gc")
            else:
                page.goto(f"{base}/plugin/lakefs-gc")
                sign_in(page, *login)
                page.wait_for_url("**/plugin/lakefs-gc**")
            page.get_by_test_id("gc-runs").wait_for()
            yield page
        finally:
            browser.close()
