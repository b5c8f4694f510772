"""A fleet of repositories on lakeFS 1.84 itself, run by a real Airflow (api-server, scheduler,
dag-processor; LocalExecutor on a real PostgreSQL), as a user deploys it.

One Airflow, one lakeFS with 12 repositories, a config with one ``discover`` source (``fleet-*``,
excluding ``fleet-tmp-*``: 8 match), a 2-slot pool for the Spark steps, a StatsD listener and an
SMTP server on 127.0.0.1, and one downstream DAG per repository scheduled on its ``swept`` Asset:

- discovery: the refresh DAG lists lakeFS; the dag-processor then builds exactly 8 GC DAGs;
- pool: 8 GC runs triggered at once; the pool's tasks (read from Airflow's task instances' start
  and end) never run more than 2 at a time; each run deletes exactly its repository's garbage;
- metrics: the StatsD listener receives every named figure of every run, equal to its summary.json;
- Assets: each downstream DAG ran once, for its repository's sweep, with the counts in the event;
- a repository created then appears after the next refresh and its first run deletes exactly its
  garbage; one deleted loses its DAG and the GC page's API names it;
- notifier: a refused run mails its one-line reason to the SMTP server.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request

import pytest

from lakefs_gc.report.figures import FIGURES, run_figures
from lakefs_gc.report.run_summary import RunSummary
from lakefs_sandbox.local_airflow import airflow_env
from lakefs_sandbox.local_airflow.processes import START_TIMEOUT, wait_http
from lakefs_sandbox.seed import DELETED, KEPT, seed
from tests.airflow.conftest import conn_env
from tests.airflow.helpers import REPO, Airflow, gc_page, wait_for
from tests.airflow.postgres import postgres_cluster
from tests.conftest import free_port, ns_storage

pytestmark = [pytest.mark.e2e, pytest.mark.real_lakefs]

MATCHED = [f"fleet-0{i}" for i in range(1, 9)]
OTHERS = ["fleet-tmp-1", "other-a", "other-b", "sample-x"]  # 12 repositories in all; these do not match
NEW, GONE = "fleet-09", "fleet-08"
POOL, SLOTS = "lakefs_gc_spark", 2
MIN_AGE = 5
RUN_CONF = {"min_age_seconds": MIN_AGE, "unsafe_min_age_override": True}  # lakeFS's grace period is a day
TIMEOUT = 900.0
FLEET_SCREENSHOT = REPO / "docs" / "screenshots" / "gc-page-fleet.png"  # the removed repository's line

DOWNSTREAM = '''
"""One DAG per fleet repository, scheduled on its GC's sweeps (the test's downstream)."""
import json
from datetime import datetime, UTC
from pathlib import Path

from airflow.sdk import DAG, task
from lakefs_gc_airflow.observability import swept_asset

for repo in {repos!r}:
    with DAG(f"after_gc__{{repo}}", schedule=swept_asset(repo), start_date=datetime(2024, 1, 1, tzinfo=UTC),
             catchup=False) as dag:
        @task
        def record(repo=repo, **context):
            # keyed by what the DAG is scheduled on (the asset, and the alias it came through): one event
            # may show under both keys
            events = context["triggering_asset_events"]
            seen = {{(e.asset.name, str(e.timestamp)): e.extra for evs in events.values() for e in evs}}
            extras = [dict(x, asset=name) for (name, _), x in seen.items()]
            out = Path({out!r}) / f"{{repo}}.{{context['run_id']}}.json"
            out.write_text(json.dumps(extras))
            return extras
        record()
    globals()[dag.dag_id.replace("-", "_")] = dag
'''


class StatsD:
    """A StatsD listener on 127.0.0.1 (UDP): every datagram's lines, kept."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.lines: list[str] = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopped.is_set():
            try:
                data = self.sock.recv(65535)
            except TimeoutError:
                continue
            except OSError:
                return
            self.lines.extend(data.decode(errors="replace").splitlines())

    def gauges(self, prefix: str) -> dict[str, float]:
        """The last value of each gauge whose name starts with ``prefix`` (prefix removed)."""
        out = {}
        for line in list(self.lines):
            name, _, rest = line.partition(":")
            value, _, kind = rest.partition("|")
            if name.startswith(prefix) and kind.startswith("g"):
                out[name[len(prefix) :]] = float(value)
        return out

    def stop(self):
        self.stopped.set()
        self.thread.join(timeout=5)
        self.sock.close()


class Mailbox:
    """An SMTP server on 127.0.0.1 (aiosmtpd): every message it received."""

    def __init__(self):
        from aiosmtpd.controller import Controller

        self.messages: list = []
        box = self

        class Handler:
            async def handle_DATA(self, server, session, envelope):
                from email import message_from_bytes, policy

                box.messages.append(message_from_bytes(envelope.content, policy=policy.default))
                return "250 OK"

        self.port = free_port()
        self.controller = Controller(Handler(), hostname="127.0.0.1", port=self.port)
        self.controller.start()

    def stop(self):
        self.controller.stop()


def _wait(what: str, cond, af: Airflow, timeout: float = TIMEOUT, every: float = 2.0):
    return wait_for(what, cond, af, timeout, every)


class Api:
    """Airflow's REST API as the all-admins simple auth manager serves it (a token without a login)."""

    def __init__(self, base: str):
        self.base = base
        self._token: str | None = None

    def _call(self, method: str, path: str, body=None, timeout: float = 60):
        if self._token is None:
            with urllib.request.urlopen(self.base + "/auth/token", timeout=timeout) as r:
                self._token = json.load(r)["access_token"]
        req = urllib.request.Request(
            self.base + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self._token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.load(r)

    def trigger(self, dag_id: str, conf: dict | None = None) -> str:
        return self._call("POST", f"/api/v2/dags/{dag_id}/dagRuns", {"logical_date": None, "conf": conf or {}})[
            "dag_run_id"
        ]

    def get(self, path: str):
        return self._call("GET", path)


@pytest.fixture
def fleet(tmp_path, real_lakefs):
    server = real_lakefs("local")
    client = server.client()
    manifests = {}
    for repo in MATCHED + OTHERS:
        manifests[repo] = seed(client, repo, server.namespace(repo), backdate=True, local_root=server.local_root)
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "gc_dags.py").write_text((REPO / "dags" / "gc_dags.py").read_text())
    events = tmp_path / "events"
    events.mkdir()
    (dags / "downstream.py").write_text(DOWNSTREAM.format(repos=MATCHED + [NEW], out=str(events)))
    mail_to = "ops@example.test"
    cfg = tmp_path / "gc.yaml"
    cfg.write_text(f"""
pools:
  {POOL}: {SLOTS}
defaults:
  spark_conn_id: spark_default
  work_dir: {tmp_path / "work"}
  spark: {{pool: {POOL}}}
  tasks: {{retries: 0}}
discover:
  schedule: null
  sources:
    - lakefs_conn_id: lakefs_default
      include: ["fleet-*"]
      exclude: ["fleet-tmp-*"]
      defaults:
        min_age_seconds: {MIN_AGE}
        notify: {{on_failure: [{{smtp: {{to: [{mail_to}], from_email: gc@example.test}}}}]}}
      overrides:
        fleet-03: {{sweep: {{max_delete_share: 0.9}}}}
""")
    statsd, mailbox = StatsD(), Mailbox()
    with postgres_cluster(tmp_path / "postgres.log") as pg:
        home = tmp_path / "airflow-home"
        home.mkdir()
        port = free_port()
        env = airflow_env(
            home,
            port,
            pg.sqlalchemy_url,
            cfg,
            **{
                "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
                "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
                "AIRFLOW__CORE__PARALLELISM": "6",  # more than the pool's slots: the pool is the limit
                "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
                "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
                "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "10",
                "AIRFLOW__METRICS__STATSD_ON": "True",
                "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
                "AIRFLOW__METRICS__STATSD_PORT": str(statsd.port),
                "AIRFLOW__METRICS__STATSD_PREFIX": "airflow",
            },
        )
        for k, v in (
            conn_env(
                "lakefs_default",
                conn_type="lakefs_gc",
                host=server.url,
                login=server.access_key,
                password=server.secret_key,
                extra={"local_blockstore_root": server.local_root},
            ),
            conn_env("spark_default", conn_type="spark", host="local[1]"),
            conn_env(
                "smtp_default",
                conn_type="smtp",
                host="127.0.0.1",
                port=mailbox.port,
                extra={"disable_tls": True, "disable_ssl": True, "timeout": 10, "retry_limit": 1},
            ),
        ):
            env[k] = v
        af = Airflow(home, env, pg)
        try:
            af.cli("db", "migrate", timeout=300)
            assert af.create_pools(cfg) == [POOL]
            for component in ("api-server", "scheduler", "dag-processor"):
                af.start(component)
            wait_http(f"http://127.0.0.1:{port}/api/v2/monitor/health", af, START_TIMEOUT)
            yield {
                "af": af,
                "api": Api(f"http://127.0.0.1:{port}"),
                "tmp": tmp_path,
                "server": server,
                "client": client,
                "manifests": manifests,
                "statsd": statsd,
                "mailbox": mailbox,
                "events": events,
                "mail_to": mail_to,
            }
        finally:
            af.stop()
            statsd.stop()
            mailbox.stop()


def _gc_dags(af: Airflow) -> set[str]:
    rows = af.query("SELECT dag_id FROM dag WHERE dag_id LIKE 'lakefs_gc\\_\\_%%' AND NOT is_stale")
    return {r[0] for r in rows}


def _finished(af: Airflow, run_ids: dict[str, str]):
    rows = af.query("SELECT dag_id, run_id, state FROM dag_run WHERE run_id = ANY(%s)", list(run_ids.values()))
    states = {d: s for d, r, s in rows}
    done = len(states) == len(run_ids) and all(s in ("success", "failed") for s in states.values())
    return states if done else None


def _discover(fx) -> None:
    af, api = fx["af"], fx["api"]
    _wait("the refresh DAG parsed", lambda: af.query("SELECT 1 FROM dag WHERE dag_id='lakefs_gc_discover'"), af)
    run = api.trigger("lakefs_gc_discover")
    states = _wait("the refresh finished", lambda: _finished(af, {"lakefs_gc_discover": run}), af)
    assert states == {"lakefs_gc_discover": "success"}, af.tail("scheduler")


def _sweep_matches(fx, repo: str, summary: dict) -> None:
    m = fx["manifests"][repo] if repo in fx["manifests"] else fx["new_manifest"]
    storage = ns_storage(m.namespace)
    after = {o.key for o in storage.list("", recursive=True)}
    assert not (m.expected(DELETED) & after), f"{repo}: garbage left"
    assert m.expected(KEPT) <= after, f"{repo}: live data deleted: {m.expected(KEPT) - after}"
    assert summary["deleted"] == len(m.expected(DELETED)), summary


def _newest_summary(fx, repo: str) -> dict:
    m = fx["manifests"][repo] if repo in fx["manifests"] else fx["new_manifest"]
    storage = ns_storage(m.namespace)
    docs = [
        json.loads(storage.get(o.key))
        for o in storage.list("_lakefs/retention/gc/unified/", recursive=True)
        if o.key.endswith("/summary.json") and "/sweeps/" not in o.key
    ]
    return max(docs, key=lambda d: d["start_time"])


def test_a_fleet_discovered_pooled_measured_announced(fleet):
    fx = fleet
    af, api, statsd, mailbox = fx["af"], fx["api"], fx["statsd"], fx["mailbox"]

    # --- discovery: one refresh, then exactly the 8 matched repositories have a GC DAG
    _discover(fx)
    want = {f"lakefs_gc__{r}" for r in MATCHED}
    _wait("the 8 discovered GC DAGs parsed", lambda: _gc_dags(af) == want or None, af, timeout=300)

    # --- a few at a time: 8 runs at once through a 2-slot pool
    time.sleep(MIN_AGE + 1)  # the seeded objects are older than the runs' cutoff
    runs = {f"lakefs_gc__{r}": api.trigger(f"lakefs_gc__{r}", RUN_CONF) for r in MATCHED}
    states = _wait("8 GC runs finished", lambda: _finished(af, runs), af)
    assert set(states.values()) == {"success"}, states
    spans = af.query(
        "SELECT start_date, end_date FROM task_instance WHERE pool=%s AND run_id = ANY(%s) AND start_date IS NOT NULL",
        POOL,
        list(runs.values()),
    )
    assert len(spans) == 8 * 5, spans  # the five Spark steps of each run ran in the pool
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans], key=lambda x: (x[0], x[1]))
    running, most = 0, 0
    for _, d in edges:
        running += d
        most = max(most, running)
    assert most <= SLOTS, f"{most} Spark steps at once in a {SLOTS}-slot pool"
    for repo in MATCHED:
        summary = _newest_summary(fx, repo)
        _sweep_matches(fx, repo, summary)

        # --- metrics: every figure of the run, as its summary.json has it
        got = statsd.gauges(f"airflow.lakefs_gc.{repo}.")
        figures = run_figures(RunSummary.from_doc(summary))
        assert set(FIGURES) <= set(got), (repo, sorted(got))
        assert {k: got.get(k) for k in figures} == {k: float(v) for k, v in figures.items()}, repo
        assert any(k.startswith("seconds.") for k in got), got
        assert any(k.startswith("space_bytes.") for k in got), got

    # --- Assets: each downstream DAG ran once, for its repository's sweep, with its counts
    def downstream_done():
        rows = af.query("SELECT dag_id, state FROM dag_run WHERE dag_id LIKE 'after_gc\\_\\_%%'")
        return rows if len(rows) == len(MATCHED) and all(s == "success" for _, s in rows) else None

    _wait("the downstream DAGs ran", downstream_done, af, timeout=300)
    for repo in MATCHED:
        files = list(fx["events"].glob(f"{repo}.*.json"))
        assert len(files) == 1, (repo, files)
        extras = json.loads(files[0].read_text())
        summary = _newest_summary(fx, repo)
        assert len(extras) == 1, extras
        assert extras[0]["asset"] == f"lakefs_gc/{repo}/swept", extras
        assert extras[0]["deleted"] == summary["deleted"] > 0, extras
        assert extras[0]["objects_listed"] == summary["listed_objects"]
        assert extras[0]["repository"] == repo

    # --- a repository created appears after the next refresh; one deleted disappears
    server, client = fx["server"], fx["client"]
    fx["new_manifest"] = seed(client, NEW, server.namespace(NEW), backdate=True, local_root=server.local_root)
    client.repositories_api.delete_repository(GONE)
    _discover(fx)
    want = {f"lakefs_gc__{r}" for r in MATCHED if r != GONE} | {f"lakefs_gc__{NEW}"}
    _wait("the new repository's DAG, and the deleted one's gone", lambda: _gc_dags(af) == want or None, af, timeout=300)
    page = api.get("/lakefs-gc/api/repositories")
    assert [r["repository"] for r in page["removed"]] == [GONE], page
    listed = {r["repository"] for r in page["repositories"]}
    assert NEW in listed
    assert GONE not in listed
    from playwright.sync_api import expect

    with gc_page(api.base, fx["tmp"] / "browser") as browser:  # what a person sees: the line above the repositories
        expect(browser.get_by_test_id("gc-removed-repository")).to_contain_text(
            f"{GONE}: gone from lakeFS (lakefs_default) since"
        )
        expect(browser.get_by_role("button", name=NEW)).to_be_visible()
        FLEET_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        browser.screenshot(path=str(FLEET_SCREENSHOT), full_page=True)
    time.sleep(MIN_AGE + 1)
    new_run = {f"lakefs_gc__{NEW}": api.trigger(f"lakefs_gc__{NEW}", RUN_CONF)}
    assert _wait("the new repository's first run", lambda: _finished(af, new_run), af) == {
        f"lakefs_gc__{NEW}": "success"
    }
    _sweep_matches(fx, NEW, _newest_summary(fx, NEW))

    # --- a refused run mails its one-line reason
    refused = {"lakefs_gc__fleet-02": api.trigger("lakefs_gc__fleet-02", {"min_age_seconds": MIN_AGE})}
    assert _wait("the refused run", lambda: _finished(af, refused), af) == {"lakefs_gc__fleet-02": "failed"}
    _wait("the refusal's mail", lambda: mailbox.messages, af, timeout=120, every=1)
    [mail] = mailbox.messages
    assert mail["To"] == fx["mail_to"]
    assert "fleet-02" in mail["Subject"], mail["Subject"]
    assert "prepare_run" in mail["Subject"], mail["Subject"]
    body = mail.get_body().get_content()
    reason = next(line for line in body.splitlines() if line.startswith("Reason: "))
    assert "grace period" in reason, body
    assert "Nothing was deleted" in reason, body
    assert "grace period" in mail["Subject"]  # the reason is in the subject too, as far as it fits
