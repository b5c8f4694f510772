"""``make airflow`` (``lakefs_sandbox.local_airflow``): an Airflow 3 of its own with the GC DAGs.

The settings file resolved into connections, and each wrong setting refused naming it (no process
started); then the command itself, as a user runs it: a subprocess with a settings file pointing at
the lakeFS emulator, until Airflow's REST API (signed in with the printed login) lists the DAG of
the configured repository and the bad entry as an import error; every listening socket of its
process tree on 127.0.0.1; SIGINT stops it and every process it started.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from lakefs_sandbox.local_airflow import SetupError, plan
from tests.airflow.helpers import REPO, airflow_api
from tests.conftest import free_port

COMMAND = (sys.executable, "-m", "lakefs_sandbox.local_airflow")  # what `make airflow` runs
KEY, SECRET = "AKIAIOSFOLEMULATOR", "local-airflow-secret-5c1e"
GOOD = (
    "{lakefs_conn_id: lakefs_default, storage_conn_id: aws_default, spark_conn_id: spark_default, "
    "min_age_seconds: 86400, mode: mark_and_sweep"
)


def repositories(tmp_path: Path) -> Path:
    p = tmp_path / "gc.yaml"
    p.write_text(
        f"repositories:\n  - {GOOD}, repository: emu-repo}}\n  - {GOOD}, repository: typo-repo, shedule: '@daily'}}\n"
    )
    return p


def env_file(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "airflow.env"
    p.write_text(textwrap.dedent(text))
    return p


def test_the_settings_become_connections_and_secrets_stay_out_of_what_is_printed(tmp_path):
    cfg = repositories(tmp_path)
    f = env_file(
        tmp_path,
        f"""\
        # comment
        LAKEFS_GC_CONFIG={cfg}
        export LAKEFS_ENDPOINT=http://127.0.0.1:8000
        LAKEFS_ACCESS_KEY_ID={KEY}
        LAKEFS_SECRET_ACCESS_KEY="{SECRET}"
        LAKEFS_LOCAL_BLOCKSTORE_ROOT=/data/block
        S3_ENDPOINT_URL=http://127.0.0.1:9000   # MinIO
        S3_ACCESS_KEY_ID=s3-key
        S3_SECRET_ACCESS_KEY=s3-secret-value
        AIRFLOW_CONN_OTHER_LAKEFS='{{"conn_type": "lakefs", "host": "http://lakefs2:8000"}}'
        AIRFLOW__CORE__PARALLELISM=8
    """,
    )
    p = plan(f, {"SPARK_MASTER": "local[2]", "AIRFLOW_PORT": "18080"}, tmp_path / "state")
    conns = {k: json.loads(v) for k, v in p.connections.items()}
    assert conns["AIRFLOW_CONN_LAKEFS_DEFAULT"] == {
        "conn_type": "lakefs_gc",
        "host": "http://127.0.0.1:8000",
        "login": KEY,
        "password": SECRET,
        "extra": {"local_blockstore_root": "/data/block"},
    }
    assert conns["AIRFLOW_CONN_AWS_DEFAULT"] == {
        "conn_type": "aws",
        "login": "s3-key",
        "password": "s3-secret-value",
        "extra": {"region_name": "us-east-1", "endpoint_url": "http://127.0.0.1:9000"},
    }
    assert conns["AIRFLOW_CONN_SPARK_DEFAULT"] == {"conn_type": "spark", "host": "local[2]"}  # the environment wins
    assert conns["AIRFLOW_CONN_OTHER_LAKEFS"]["host"] == "http://lakefs2:8000"
    assert (p.port, p.user, p.airflow_settings) == (18080, "admin", {"AIRFLOW__CORE__PARALLELISM": "8"})
    assert p.work_dir == str(REPO / "var" / "airflow" / "work")  # relative: from the project root
    assert p.dag_ids == ["lakefs_gc__emu-repo"]
    [bad] = p.entry_errors
    assert bad == f"{cfg}:3: repositories[1] (typo-repo): unknown field 'shedule' (did you mean 'schedule'?)"
    shown = json.dumps(p.described)
    assert SECRET not in shown
    assert "s3-secret-value" not in shown
    assert "http://127.0.0.1:8000" in shown


def test_its_own_airflow_has_test_connection_on_unless_the_file_says_otherwise(tmp_path):
    from lakefs_sandbox.local_airflow import component_env

    cfg = repositories(tmp_path)
    lakefs = (
        f"LAKEFS_GC_CONFIG={cfg}\nLAKEFS_ENDPOINT=http://127.0.0.1:8000\nLAKEFS_ACCESS_KEY_ID={KEY}\n"
        f"LAKEFS_SECRET_ACCESS_KEY={SECRET}\n"
    )
    on = plan(env_file(tmp_path, lakefs), {}, tmp_path / "s1")
    on.state.mkdir(parents=True)
    assert component_env(on, {})["AIRFLOW__CORE__TEST_CONNECTION"] == "Enabled"
    off = plan(env_file(tmp_path, lakefs + "AIRFLOW__CORE__TEST_CONNECTION=Disabled\n"), {}, tmp_path / "s2")
    off.state.mkdir(parents=True)
    assert component_env(off, {})["AIRFLOW__CORE__TEST_CONNECTION"] == "Disabled"


@pytest.mark.parametrize(
    ("text", "environ", "expected"),
    [
        (
            "LAKEFS_ENDPONT=http://x\n",
            {},
            r"airflow.env:2: unknown setting LAKEFS_ENDPONT \(did you mean LAKEFS_ENDPOINT\?\)$",
        ),
        (
            "PORT=80\n",
            {},
            r"airflow.env:2: unknown setting PORT \(known: LAKEFS_GC_CONFIG, .* AIRFLOW__<SECTION>__<KEY>",
        ),
        ("AIRFLOW_CONN_OTHER='{\"conn_type\": aws}'\n", {}, r"airflow.env:2: AIRFLOW_CONN_OTHER is not valid JSON"),
        ("AIRFLOW_CONN_OTHER=just-a-host\n", {}, r"airflow.env:2: AIRFLOW_CONN_OTHER must be a connection URI"),
        ("# ok\njust words\n", {}, r"airflow.env:3: not a KEY=value line"),
        (
            "LAKEFS_ENDPOINT=http://127.0.0.1:8000\nLAKEFS_ACCESS_KEY_ID=\n",
            {},
            r"LAKEFS_ENDPOINT is set but LAKEFS_ACCESS_KEY_ID and LAKEFS_SECRET_ACCESS_KEY are not",
        ),
        ("LAKEFS_ENDPOINT=127.0.0.1:8000\n", {}, r"LAKEFS_ENDPOINT must be an http\(s\) URL"),
        ("", {"LAKEFS_ACCESS_KEY_ID": "k"}, r"lakeFS keys are set but LAKEFS_ENDPOINT is not"),
        ("S3_ACCESS_KEY_ID=k\n", {}, r"set both S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY, or neither"),
        ("AIRFLOW_PORT=eighty\n", {}, r"AIRFLOW_PORT must be a port number, got 'eighty'"),
        (
            "AIRFLOW_CONN_LAKEFS_DEFAULT='{}'\nLAKEFS_ENDPOINT=http://h\nLAKEFS_ACCESS_KEY_ID=k\nLAKEFS_SECRET_ACCESS_KEY=s\n",
            {},
            r"AIRFLOW_CONN_LAKEFS_DEFAULT and the lakeFS settings both define lakefs_default",
        ),
        (
            "LAKEFS_GC_CONFIG=nope.yaml\n",
            {},
            r"(?s)nope.yaml: cannot read the GC configuration.*\(LAKEFS_GC_CONFIG in .*airflow.env:1; "
            r"relative paths are from the project root",
        ),
    ],
)
def test_a_wrong_setting_is_refused_naming_it(tmp_path, text, environ, expected):
    f = env_file(
        tmp_path, text if "LAKEFS_GC_CONFIG" in text else f"LAKEFS_GC_CONFIG={repositories(tmp_path)}\n" + text
    )
    with pytest.raises(SetupError, match=expected):
        plan(f, environ, tmp_path / "state")


def test_every_wrong_setting_is_named_at_once_at_its_line(tmp_path):
    """A misspelt key, a bad value, a line of another shape and a bad repositories file: one error
    names all of them, each at its line (the environment's where it wins), before anything starts."""
    cfg = tmp_path / "gc.yaml"
    cfg.write_text("defaults: {mode: sweep}\nrepositories: [{repository: my-repo}]\n")
    f = env_file(
        tmp_path,
        f"""\
        # settings
        LAKEFS_GC_CONFIG={cfg}
        LAKEFS_ENDPONT=http://127.0.0.1:8000
        AIRFLOW_PORT=eighty
        S3_ENDPOINT_URL=minio:9000
        AIRFLOW_USER=me
        just words
    """,
    )
    with pytest.raises(SetupError) as e:
        plan(f, {"AIRFLOW_USER": "not a user"}, tmp_path / "state")
    assert str(e.value).splitlines() == [
        "6 problems in the settings; nothing was started:",
        f"  {f}:3: unknown setting LAKEFS_ENDPONT (did you mean LAKEFS_ENDPOINT?)",
        f"  {f}:4: AIRFLOW_PORT must be a port number, got 'eighty'",
        f"  {f}:5: S3_ENDPOINT_URL must be an http(s) URL, got 'minio:9000'",
        f"  {f}:7: not a KEY=value line: 'just words'...",
        f"  {cfg}:1: defaults: field 'mode': must be one of mark_and_sweep, mark_only, got 'sweep' "
        f"(LAKEFS_GC_CONFIG in {f}:2; relative paths are from the project root, {REPO})",
        "  the environment: AIRFLOW_USER must be a user name (letters, digits, _ . @ -), got 'not a user'",
    ]


def test_a_setting_given_twice_is_a_warning_naming_the_line_that_counts(tmp_path):
    f = env_file(tmp_path, f"LAKEFS_GC_CONFIG={repositories(tmp_path)}\nAIRFLOW_PORT=8081\nAIRFLOW_PORT=8082\n")
    p = plan(f, {}, tmp_path / "state")
    assert p.port == 8082
    assert p.warnings[0] == f"{f}:3: AIRFLOW_PORT is set again (first on line 2): line 3 counts"


def test_a_missing_settings_file_says_to_copy_the_example(tmp_path):
    with pytest.raises(SetupError, match=r"airflow.env: no such file: copy config/airflow.env.example"):
        plan(tmp_path / "airflow.env", {}, tmp_path / "state")


def test_a_connection_a_repository_needs_and_nobody_defines_is_a_warning(tmp_path):
    p = plan(env_file(tmp_path, f"LAKEFS_GC_CONFIG={repositories(tmp_path)}\n"), {}, tmp_path / "state")
    [w] = p.warnings
    assert w.startswith("emu-repo: its lakeFS connection 'lakefs_default' is not defined")
    assert "LAKEFS_ENDPOINT" in w


def test_a_connection_added_in_the_ui_at_an_earlier_start_is_no_warning(tmp_path):
    import sqlite3

    (tmp_path / "state").mkdir()
    with sqlite3.connect(tmp_path / "state" / "airflow.db") as con:  # what Airflow keeps of the UI's Add Connection
        con.execute("CREATE TABLE connection (id INTEGER PRIMARY KEY, conn_id VARCHAR(250), conn_type VARCHAR(500))")
        con.execute("INSERT INTO connection (conn_id, conn_type) VALUES ('lakefs_default', 'lakefs')")
    con.close()
    p = plan(env_file(tmp_path, f"LAKEFS_GC_CONFIG={repositories(tmp_path)}\n"), {}, tmp_path / "state")
    assert p.warnings == []


def test_the_lakefs_this_command_runs_wins_over_the_file_and_the_environment_and_says_so(tmp_path):
    f = env_file(
        tmp_path,
        f"""\
        LAKEFS_GC_CONFIG={repositories(tmp_path)}
        LAKEFS_ENDPOINT=http://127.0.0.1:8000
        LAKEFS_ACCESS_KEY_ID=file-key
        LAKEFS_SECRET_ACCESS_KEY=file-secret-value
    """,
    )
    own = {
        "LAKEFS_ENDPOINT": "http://127.0.0.1:41234",
        "LAKEFS_ACCESS_KEY_ID": KEY,
        "LAKEFS_SECRET_ACCESS_KEY": SECRET,
        "LAKEFS_LOCAL_BLOCKSTORE_ROOT": "/state/lakefs/block",
    }
    p = plan(f, {"LAKEFS_ACCESS_KEY_ID": "env-key"}, tmp_path / "state", lakefs=own)
    assert json.loads(p.connections["AIRFLOW_CONN_LAKEFS_DEFAULT"]) == {
        "conn_type": "lakefs_gc",
        "host": "http://127.0.0.1:41234",
        "login": KEY,
        "password": SECRET,
        "extra": {"local_blockstore_root": "/state/lakefs/block"},
    }
    notes = "\n".join(p.notes)
    assert f"LAKEFS_ENDPOINT=http://127.0.0.1:8000 in {f} is replaced by the lakeFS this command runs" in notes
    assert "LAKEFS_ACCESS_KEY_ID=env-key in the environment is replaced" in notes
    assert f"LAKEFS_SECRET_ACCESS_KEY in {f} is replaced" in notes
    assert "file-secret-value" not in notes
    assert len(p.notes) == 4
    assert not p.warnings  # the file's key too; no blockstore root in the file
    assert p.min_ages == {"emu-repo": 86400}


def _banner(created: float, state: Path, config: Path | None = None) -> list[str]:
    """What ``make airflow LAKEFS=real`` prints of its lakeFS, for a sample repository made at ``created``."""
    from types import SimpleNamespace

    from lakefs_gc.config import load_config
    from lakefs_sandbox.local_airflow.lakefs import lakefs_lines

    cfg = load_config(config or REPO / "config" / "gc_repositories.yaml", strict=False)
    server = SimpleNamespace(
        api_url="http://127.0.0.1:41000/api/v1",
        url="http://127.0.0.1:41000",
        proc=SimpleNamespace(pid=4242),
        access_key=KEY,
        local_root=str(state / "lakefs" / "block"),
    )
    p = SimpleNamespace(
        min_ages={r.repository: r.min_age_seconds for r in cfg.repositories},
        dag_ids=[r.dag_id for r in cfg.repositories],
        state=state,
        config_path=cfg.path,
    )
    return lakefs_lines(server, state / "lakefs", True, int(created), p)


def test_the_banner_gives_the_conf_that_collects_the_seeded_repository_now(tmp_path):
    """Seeded now, nothing is a day old: the banner gives the conf that collects now, the two forms'
    fields and the CLI commands; the conf passes the DAG's Params (as a trigger checks them, on the
    DAG ``make airflow`` serves from the checked-in config) and prepare_run's rule (below lakeFS's grace
    period only with the override), and its cutoff lies after the seed's objects."""
    import shlex
    from datetime import UTC, datetime

    from lakefs_gc.config import load_config
    from lakefs_gc.contract import settings_from_params
    from lakefs_gc.gc.clock import make_run_clock
    from lakefs_gc_airflow.factory import build_gc_dag
    from lakefs_sandbox.local_airflow.lakefs import COLLECT_NOW, FORM_FIELDS
    from tests.airflow.helpers import validate_params

    seeded = time.time() - 300  # Airflow took minutes to start after the seed
    state = tmp_path / "state"
    lines = _banner(seeded, state)
    text = "\n".join(lines)
    conf = '{"mode": "mark_and_sweep", "min_age_seconds": 60, "unsafe_min_age_override": true}'
    assert "before that it deletes nothing. To collect now:" in text
    assert f"  collect now  conf {conf}\n" in text + "\n", text  # old enough: no "from HH:MM:SS on"
    assert (
        'in the UI: unpause lakefs_gc__sample-repo, Trigger, and set "Run mode" mark_and_sweep, '
        '"Minimum object age (s)" 60, "Unsafe minimum-age override" on'
    ) in text
    assert "(the GC page's Run GC form has the same fields)" in text
    shell = [ln.strip() for ln in lines if ln.strip().startswith(("source ", "airflow "))]
    assert shell == [
        f"source .venv/bin/activate; export AIRFLOW_HOME={state}",
        "airflow dags unpause lakefs_gc__sample-repo",
        f"airflow dags trigger lakefs_gc__sample-repo --conf '{conf}'",
    ]
    assert json.loads(shlex.split(shell[2])[-1]) == COLLECT_NOW

    [entry] = [r for r in load_config(REPO / "config" / "gc_repositories.yaml").repositories]
    dag = build_gc_dag(entry)
    assert {k: dag.params.get_param(k).schema["title"] for k in FORM_FIELDS} == FORM_FIELDS
    params = validate_params(dag, COLLECT_NOW)
    settings = settings_from_params(params)
    now = datetime.now(UTC)
    grace = 86400  # lakeFS 1.84's link-address grace period (catalog.LinkAddressTime), what prepare_run reads
    clock = make_run_clock(now, settings.min_age_seconds, grace, settings.unsafe_min_age_override)
    assert (settings.mode, settings.confirm_after_seconds) == ("mark_and_sweep", 0)  # a manual run: no delay
    assert datetime.fromisoformat(clock.cutoff_time).timestamp() > seeded + 10  # the seed's objects are older
    with pytest.raises(Exception, match="unsafe_min_age_override"):  # without the override: refused
        make_run_clock(now, settings.min_age_seconds, grace, False)


def test_the_banner_says_when_the_conf_collects_if_the_seed_is_under_a_minute_old_and_nothing_once_a_day_old(
    tmp_path,
):
    fresh = "\n".join(_banner(time.time(), tmp_path))
    m = re.search(r"collect now  conf \{.*\} \(from (\d\d:\d\d:\d\d) on: the objects must be a minute old\)", fresh)
    assert m, fresh
    old = "\n".join(_banner(time.time() - 2 * 86400, tmp_path))
    assert "collect now" not in old
    assert "its objects are older than the minimum age (86400s): a run with the defaults collects" in old


class Output:
    """The command's output, read by a thread (never blocks the test), kept for messages."""

    def __init__(self, proc: subprocess.Popen):
        self.lines: list[str] = []
        self._t = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._t.start()

    def _read(self, proc):
        for line in proc.stdout:
            self.lines.append(line)

    def text(self) -> str:
        return "".join(self.lines)

    def wait_for(self, pattern: str, proc: subprocess.Popen, timeout: float) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(pattern, self.text())
            if m:
                return m
            assert proc.poll() is None, f"make airflow exited with {proc.returncode}:\n{self.text()}"
            time.sleep(0.2)
        raise TimeoutError(f"{pattern!r} not printed after {timeout}s:\n{self.text()}")


@pytest.mark.e2e
def test_the_command_serves_the_dags_on_loopback_and_stops_on_ctrl_c(tmp_path, lakefs_emulator_factory):
    import psutil

    emu = lakefs_emulator_factory()
    cfg = repositories(tmp_path)
    settings = env_file(
        tmp_path,
        f"""\
        LAKEFS_GC_CONFIG={cfg}
        LAKEFS_ENDPOINT={emu.url}
        LAKEFS_ACCESS_KEY_ID={emu.access_key}
        LAKEFS_SECRET_ACCESS_KEY={emu.secret_key}
        LAKEFS_LOCAL_BLOCKSTORE_ROOT={emu.local_root}
        SPARK_MASTER=local[1]
    """,
    )
    proc, out, port, state = _start_command(tmp_path, settings, *COMMAND)
    tree: set[int] = set()
    try:
        login = out.wait_for(r"sign in as\s+(\S+) / (\S+)", proc, timeout=300)
        user, password = login.group(1), login.group(2)
        base = f"http://127.0.0.1:{port}"
        assert f"Airflow UI   {base}" in out.text()
        assert json.loads((state / "passwords.json").read_text()) == {"admin": password}
        assert user == "admin"
        assert oct((state / "passwords.json").stat().st_mode & 0o777) == "0o600"

        deadline = time.monotonic() + 180  # the dag-processor parses the DAG files once started
        while True:
            dags = [d["dag_id"] for d in airflow_api(base, "/api/v2/dags", user, password)["dags"]]
            errors = airflow_api(base, "/api/v2/importErrors", user, password)["import_errors"]
            if {"lakefs_gc__emu-repo", "lakefs_gc_restore", "lakefs_gc_config_errors"} <= set(dags) and errors:
                break
            assert proc.poll() is None, out.text()
            assert time.monotonic() < deadline, f"DAGs {dags}, import errors {errors} after 180 s:\n{out.text()}"
            time.sleep(2)
        # the GC DAG, the config-error DAG (the file has a bad entry) and the restore DAG
        assert sorted(dags) == ["lakefs_gc__emu-repo", "lakefs_gc_config_errors", "lakefs_gc_restore"]
        [error] = errors
        assert error["filename"].endswith("gc_config_errors.py"), error
        assert "repositories[1] (typo-repo): unknown field 'shedule'" in error["stack_trace"]
        with pytest.raises(urllib.error.HTTPError):  # the API wants the login
            urllib.request.urlopen(base + "/api/v2/dags", timeout=60)

        me = psutil.Process(proc.pid)
        tree = {proc.pid, *(c.pid for c in me.children(recursive=True))}
        sockets = []
        for pid in tree:
            with contextlib.suppress(psutil.NoSuchProcess):
                sockets += [
                    (pid, c.laddr)
                    for c in psutil.Process(pid).net_connections(kind="inet")
                    if c.status == psutil.CONN_LISTEN
                ]
        assert ("127.0.0.1", port) in {(a.ip, a.port) for _, a in sockets}, sockets
        assert all(a.ip == "127.0.0.1" for _, a in sockets), f"listening beyond 127.0.0.1: {sockets}"
        assert len(tree) >= 5, tree  # the command and its four components at least
        assert emu.secret_key not in out.text()
    finally:
        code, left = _interrupt(proc, tree)
    assert code == 0, out.text()
    assert not left, f"still running after Ctrl-C: {left}\n{out.text()}"
    assert "SIGINT: stopping" in out.text()
    assert "stopped api-server, scheduler, dag-processor, triggerer" in out.text()


@pytest.mark.e2e
@pytest.mark.real_lakefs
def test_lakefs_real_runs_lakefs_itself_seeded_with_the_connection_on_it_and_stops_it(tmp_path):
    """``--lakefs real`` (``make airflow LAKEFS=real``): lakeFS 1.84 itself started in
    ``<state>/lakefs`` with its keys in ``keys.json`` (0600), ``sample-repo`` seeded with commits
    dated back, the components' ``lakefs_default`` on it whatever the settings file says, and Ctrl-C
    as soon as the components are started stops them and lakeFS; the next start reuses the state and
    the keys (lakeFS is already set up) and seeds nothing again."""
    import psutil

    from lakefs_sandbox.local_airflow import lakefs_settings, seed_sample, start_lakefs

    cfg = tmp_path / "gc.yaml"
    cfg.write_text(f"repositories:\n  - {GOOD}, repository: sample-repo}}\n")
    settings = env_file(
        tmp_path,
        f"""\
        LAKEFS_GC_CONFIG={cfg}
        LAKEFS_ENDPOINT=http://127.0.0.1:8000
        LAKEFS_ACCESS_KEY_ID=file-key
        LAKEFS_SECRET_ACCESS_KEY=file-secret-value
        SPARK_MASTER=local[1]
    """,
    )
    proc, out, port, state = _start_command(tmp_path, settings, *COMMAND, "--lakefs", "real")
    tree: set[int] = set()
    try:
        m = out.wait_for(r"lakeFS at (http://127\.0\.0\.1:\d+) \(pid (\d+)\)", proc, timeout=120)
        lakefs_url, lakefs_pid = m.group(1), int(m.group(2))
        tree.add(lakefs_pid)
        out.wait_for(r"seeded sample-repo on local://sample-repo", proc, timeout=120)
        started = out.wait_for(r"started api-server \(pid (\d+)\), scheduler \(pid (\d+)\)", proc, timeout=600)
        home = state / "lakefs"
        keys = json.loads((home / "keys.json").read_text())
        assert oct((home / "keys.json").stat().st_mode & 0o777) == "0o600"
        me = psutil.Process(proc.pid)
        tree |= {proc.pid, *(c.pid for c in me.children(recursive=True))}
        assert psutil.Process(lakefs_pid).cwd() == str(home)
        assert "lakefs" in psutil.Process(lakefs_pid).name()
        conn = json.loads(psutil.Process(int(started.group(2))).environ()["AIRFLOW_CONN_LAKEFS_DEFAULT"])
        assert conn == {
            "conn_type": "lakefs_gc",
            "host": lakefs_url,
            "login": keys["access_key_id"],
            "password": keys["secret_access_key"],
            "extra": {"local_blockstore_root": str(home / "block")},
        }, conn
        auth = "Basic " + base64.b64encode(f"{keys['access_key_id']}:{keys['secret_access_key']}".encode()).decode()

        def api(path: str):
            req = urllib.request.Request(f"{lakefs_url}/api/v1{path}", headers={"Authorization": auth})
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read())

        assert api("/repositories/sample-repo")["storage_namespace"] == "local://sample-repo"
        commits = api("/repositories/sample-repo/refs/main/commits?amount=100")["results"]
        assert min(c["creation_date"] for c in commits if c["parents"]) < time.time() - 9 * 86400, commits
        assert any((home / "block" / "sample-repo").rglob("*"))
        _trigger_as_the_banner_says(out, proc, port)
    finally:
        code, left = _interrupt(proc, tree)
    text = out.text()
    assert code == 0, text
    assert not left, f"still running after Ctrl-C: {left}\n{text}"
    assert f"stopped api-server, scheduler, dag-processor, triggerer, lakeFS (pid {lakefs_pid})" in text, text
    assert keys["secret_access_key"] not in text
    assert "file-secret-value" not in text

    again = start_lakefs(state / "lakefs")  # a restart: already set up (409), the keys of keys.json reused
    try:
        assert (again.access_key, again.secret_key) == (keys["access_key_id"], keys["secret_access_key"])
        assert seed_sample(again)[0] is False
        assert lakefs_settings(again)["LAKEFS_LOCAL_BLOCKSTORE_ROOT"] == str(state / "lakefs" / "block")
    finally:
        again.stop()
    assert again.proc.poll() is not None


def _trigger_as_the_banner_says(out: Output, proc: subprocess.Popen, port: int) -> None:
    """The banner's shell lines that collect now, run as printed from the project root (the DAG is
    left paused, so the run waits, queued): Airflow creates the run, its conf checked by the DAG's
    Params (``create_dagrun``), with exactly the printed conf."""
    from lakefs_sandbox.local_airflow.lakefs import COLLECT_NOW

    user, password = out.wait_for(r"sign in as\s+(\S+) / (\S+)", proc, timeout=300).groups()
    out.wait_for(r"airflow dags trigger \S+ --conf .*\n", proc, timeout=60)
    shell = [ln.strip() for ln in out.text().splitlines() if ln.strip().startswith(("source .venv", "airflow dags"))]
    assert [ln.split()[:3] for ln in shell[1:]] == [["airflow", "dags", "unpause"], ["airflow", "dags", "trigger"]]
    base, dag_id = f"http://127.0.0.1:{port}", shell[2].split()[3]
    deadline = time.monotonic() + 300  # the dag-processor has parsed the DAG file
    while dag_id not in [d["dag_id"] for d in airflow_api(base, "/api/v2/dags", user, password)["dags"]]:
        assert time.monotonic() < deadline, f"{dag_id} not served after 300 s:\n{out.text()}"
        time.sleep(2)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "LAKEFS", "VIRTUAL_ENV"))}
    p = subprocess.run(
        ["bash", "-c", f"{shell[0]}; {shell[2]}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    [run] = airflow_api(base, f"/api/v2/dags/{dag_id}/dagRuns", user, password)["dag_runs"]
    assert run["conf"] == COLLECT_NOW
    assert run["state"] == "queued"  # paused: it runs once unpaused, as the banner's unpause line does


def _interrupt(proc: subprocess.Popen, tree) -> tuple[int, list[int]]:
    """Ctrl-C to the command (if still running), its exit code, and the processes of ``tree`` still
    alive after it (killed, never left to the next test)."""
    import psutil

    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)  # Ctrl-C
    try:
        code = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    finally:
        left = []
        for pid in tree:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    left.append(pid)
            except psutil.NoSuchProcess:
                pass
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    return code, left


def _start_command(tmp_path: Path, settings: Path, *command: str):
    """``command`` (``make airflow`` and its options) with ``settings`` as its env file, a state
    directory under ``tmp_path`` and a free port, in an environment without the settings' variables;
    (the process, its :class:`Output`, the port, the state directory)."""
    port, state = free_port(), tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "LAKEFS", "S3_", "SPARK_MASTER"))}
    proc = subprocess.Popen(
        [*command, "--env-file", str(settings), "--state-dir", str(state), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=tmp_path,
        start_new_session=True,
    )
    return proc, Output(proc), port, state
