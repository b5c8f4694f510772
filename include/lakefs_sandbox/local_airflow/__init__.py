"""
An Airflow 3 of our own on this machine, with the GC DAGs: ``make airflow`` (``python -m lakefs_sandbox.local_airflow``).

A development tool of this repository: not part of the installed provider (it runs lakeFS and seeds
the sample repository through the sandbox).

The four components as separate processes (``api-server``, ``scheduler``, ``dag-processor``,
``triggerer``), LocalExecutor on an embedded SQLite database, in a state directory under the
project (``var/airflow``). Every listener on 127.0.0.1: the api-server is given that host, and the
scheduler and the triggerer run with ``--skip-serve-logs``, because Airflow 3.3's log servers (what
``airflow standalone`` starts) bind every interface and have no host setting; on one machine the
api-server reads the task logs from the log folder directly. The command checks it: a listener of
its process tree on another address stops everything.

Settings come from a file the user fills in (``config/airflow.env``, copied from
``config/airflow.env.example``) and from the environment, which wins: the lakeFS endpoint and keys,
the local blockstore root, the S3 endpoint and keys, the Spark master, the repositories file. They
become Airflow connections given to the components as ``AIRFLOW_CONN_*`` environment variables
(never argv, never printed). The UI's login is the simple auth manager's: one user (``admin``), its
password generated once into ``<state>/passwords.json`` (0600) and printed at each start.

With ``--lakefs real`` (``make airflow LAKEFS=real``) the command also runs lakeFS 1.84 itself (the
server the set-up builds, ``lakefs_sandbox.real_lakefs``, imported only then) on the local
blockstore in ``<state>/lakefs`` (its state stays there from one start to the next; its admin's keys
in ``<state>/lakefs/keys.json``, 0600), seeds ``sample-repo`` on ``local://sample-repo`` the first
time, and the ``LAKEFS_*`` settings point at it, whatever the file or the environment say.

Ctrl-C (SIGINT) or SIGTERM stops every component: its process group by the leader's PID, then any
process of the tree still alive by its own PID, each with a bounded wait; then lakeFS, by its PID.

The tests start their Airflow components with the same pieces (:func:`airflow_env`,
:class:`AirflowProcesses`, :data:`COMPONENTS`). No Airflow import here: Airflow runs in the processes.

The package: ``processes.py`` (the components as processes, shared with the tests), ``settings.py``
(the user's settings made a plan; the state directory's private files), ``lakefs.py`` (``--lakefs
real``), and here the command itself.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from lakefs_gc.config import project_root
from lakefs_sandbox.local_airflow.lakefs import (
    LAKEFS_MODES,
    SAMPLE_NAMESPACE,
    SAMPLE_REPO,
    lakefs_lines,
    lakefs_settings,
    seed_sample,
    start_lakefs,
)
from lakefs_sandbox.local_airflow.processes import (
    COMPONENTS,
    LOOPBACK,
    MIGRATE_TIMEOUT,
    START_TIMEOUT,
    AirflowProcesses,
    airflow_env,
    listeners,
    wait_http,
)
from lakefs_sandbox.local_airflow.settings import SetupError, component_env, plan, port_free, private_json

COMMAND = "make airflow"  # how its messages name it

__all__ = [
    "COMMAND",
    "COMPONENTS",
    "AirflowProcesses",
    "SetupError",
    "airflow_env",
    "component_env",
    "lakefs_settings",
    "main",
    "plan",
    "run",
    "seed_sample",
    "start_lakefs",
]

# ---------------------------------------------------------------- the command


class _Stop(Exception):
    pass


def _on_signal(signum, _frame):
    raise _Stop(signal.Signals(signum).name)


def run(
    env_file: Path | None,
    state: Path,
    port: int | None = None,
    out=sys.stdout,
    environ: Mapping[str, str] | None = None,
    lakefs: str = "settings",
) -> int:
    """
    Start everything, print where to sign in, wait for Ctrl-C or a component's exit, stop everything.

    ``lakefs``: ``settings`` (the lakeFS of the settings) or ``real`` (lakeFS itself, run by this command
    in ``<state>/lakefs``, :func:`start_lakefs`).
    """
    environ = os.environ if environ is None else environ
    if lakefs not in LAKEFS_MODES:
        raise ValueError(f"lakefs: one of {LAKEFS_MODES}, got {lakefs!r}")
    real = lakefs == "real"
    lakefs_home = state / "lakefs"

    def say(text: str = "") -> None:
        print(text, file=out, flush=True)

    try:
        if real:
            from lakefs_sandbox import real_lakefs

            try:
                real_lakefs.lakefs_binary()
            except FileNotFoundError as e:
                raise SetupError(str(e)) from None
            # every other setting checked before lakeFS starts (its URL and keys: placeholders here)
            p = plan(
                env_file,
                environ,
                state,
                port,
                lakefs={
                    "LAKEFS_ENDPOINT": f"http://{LOOPBACK}:1",
                    "LAKEFS_ACCESS_KEY_ID": "-",
                    "LAKEFS_SECRET_ACCESS_KEY": "-",
                    "LAKEFS_LOCAL_BLOCKSTORE_ROOT": str(lakefs_home / "block"),
                },
            )
        else:
            p = plan(env_file, environ, state, port)
    except SetupError as e:
        say(f"{COMMAND}: error: {e}")
        return 2
    if not port_free(p.port):
        say(
            f"{COMMAND}: error: port {p.port} on {LOOPBACK} is in use: set AIRFLOW_PORT "
            f"(in {env_file or 'the environment'}) or --port to a free one"
        )
        return 2
    state.mkdir(parents=True, exist_ok=True)
    (state / "logs").mkdir(exist_ok=True)
    password = private_json(state / "passwords.json", {p.user: secrets.token_urlsafe(12)})[p.user]
    procs = AirflowProcesses(state, {})
    server = None
    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    url = f"http://{LOOPBACK}:{p.port}"
    try:
        if real:
            say(
                f"{COMMAND}: starting lakeFS {real_lakefs.VERSION} (local blockstore) in {lakefs_home} "
                f"(log: {lakefs_home}/lakefs.log)"
            )
            server = start_lakefs(lakefs_home)
            say(f"{COMMAND}: lakeFS at {server.url} (pid {server.proc.pid}); looking for {SAMPLE_REPO}")
            seeded, created = seed_sample(server)
            if seeded:
                say(f"{COMMAND}: seeded {SAMPLE_REPO} on {SAMPLE_NAMESPACE}")
            p = plan(env_file, environ, state, port, lakefs=lakefs_settings(server))
        procs.env = component_env(p, environ)
        say(f"{COMMAND}: state in {state}; preparing the metadata database (logs: {state}/db-migrate.log)")
        log = procs.cli("db", "migrate", timeout=MIGRATE_TIMEOUT)
        (state / "db-migrate.log").write_text(log)
        pools = procs.create_pools(p.config_path)
        for name in COMPONENTS:
            procs.start(name)
        say(f"{COMMAND}: started {', '.join(f'{n} (pid {pr.pid})' for n, pr in procs.procs.items())}")
        wait_http(f"{url}/api/v2/monitor/health", procs, START_TIMEOUT)
        wrong = [x for x in listeners(procs.pids() | ({server.proc.pid} if server else set())) if x[2] != LOOPBACK]
        if wrong:
            say(
                f"{COMMAND}: error: listening beyond 127.0.0.1, stopping: "
                + "; ".join(f"{name} (pid {pid}) on {ip}:{port_}" for pid, name, ip, port_ in wrong)
            )
            return 1
        say()
        say(f"  Airflow UI   {url}")
        say(f"  sign in as   {p.user} / {password}   (kept in {state}/passwords.json)")
        if server is not None:
            for line in lakefs_lines(server, lakefs_home, seeded, created, p):
                say(line)
        say(f"  repositories {p.config_path}: {', '.join(p.dag_ids) or 'no good entry'}")
        if pools:
            say(f"  pools        {', '.join(pools)} (the config's pools: the Spark steps run a few at a time)")
        for error in p.entry_errors:
            say(f"  BAD ENTRY    {error}")
        for conn_id, text in sorted(p.described.items()):
            say(f"  connection   {conn_id}: {text}")
        for note in p.notes:
            say(f"  NOTE         {note}")
        for warning in p.warnings:
            say(f"  WARNING      {warning}")
        say(f"  logs         {state}/*.log, task logs in {state}/logs")
        say(
            "  The DAGs start paused: unpause one to let its schedule run. Ctrl-C stops everything"
            + (", lakeFS too." if server else ".")
        )
        say()
        while True:
            dead = procs.dead()
            if dead:
                name, code = next(iter(dead.items()))
                say(
                    f"{COMMAND}: error: airflow {name} exited with {code}; stopping the others. "
                    f"The end of {state}/{name}.log:\n{procs.tail(name, 2000)}"
                )
                return 1
            if server is not None and server.proc.poll() is not None:
                say(
                    f"{COMMAND}: error: lakeFS exited with {server.proc.returncode}; stopping Airflow. "
                    f"The end of {lakefs_home}/lakefs.log:\n{server.log_tail(2000)}"
                )
                return 1
            time.sleep(1)
    except _Stop as e:
        say(f"{COMMAND}: {e}: stopping")
        return 0
    except SetupError as e:
        say(f"{COMMAND}: error: {e}")
        return 2
    except (RuntimeError, TimeoutError, subprocess.TimeoutExpired) as e:
        say(f"{COMMAND}: error: {e}")
        return 1
    finally:
        for s in previous:  # a second Ctrl-C during the stop must not leave processes behind
            signal.signal(s, signal.SIG_IGN)
        procs.stop()
        if server is not None:  # after Airflow, whose tasks may be calling it
            server.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
        stopped = list(procs.procs) + ([f"lakeFS (pid {server.proc.pid})"] if server is not None else [])
        if stopped:
            say(f"{COMMAND}: stopped " + ", ".join(stopped))


def main(
    env_file: str | None = None, state_dir: str | None = None, port: int | None = None, lakefs: str | None = None
) -> int:
    """
    Run ``make airflow``: paths relative to the working directory, defaults under the project.

    With ``lakefs="real"`` a missing default settings file is no error: lakeFS's settings come from
    the lakeFS the command runs, the others have defaults.
    """
    root = project_root()
    lakefs = lakefs or "settings"
    default_env = root / "config" / "airflow.env"
    env = default_env if env_file is None else (Path(env_file) if env_file else None)
    if lakefs == "real" and env_file is None and not default_env.exists():
        print(f"{COMMAND}: no {env}: the defaults and the environment only", flush=True)
        env = None
    state = Path(state_dir) if state_dir else root / "var" / "airflow"
    return run(env, state.resolve(), port, lakefs=lakefs)
