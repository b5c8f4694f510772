"""
Airflow's components as processes on 127.0.0.1: their environment, start, listeners, stop by PID.

Shared by ``make airflow`` and the tests (no Airflow import: Airflow runs in the processes).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path

from lakefs_gc.config import project_root

# Each component's arguments: no log server (it would listen on every interface).
COMPONENTS: dict[str, tuple[str, ...]] = {
    "api-server": ("api-server",),
    "scheduler": ("scheduler", "--skip-serve-logs"),
    "dag-processor": ("dag-processor",),
    "triggerer": ("triggerer", "--skip-serve-logs"),
}
LOOPBACK = "127.0.0.1"
SIMPLE_AUTH_MANAGER = "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
START_TIMEOUT = 240.0  # db migrate excepted: four components on 2 busy cores take about a minute
MIGRATE_TIMEOUT = 600.0
STOP_TIMEOUT = 20.0  # per component, then SIGKILL


def airflow_env(
    home: Path, port: int, db_url: str, config: Path | str, base: Mapping[str, str] | None = None, **settings: str
) -> dict[str, str]:
    """
    Return the environment of an Airflow of our own.

    Its home and metadata DB, our dags and plugins and GC config, the api-server (and the execution
    API the tasks call) on 127.0.0.1:``port``; nothing of ``base``'s (default: this process's)
    ``AIRFLOW*`` or ``LAKEFS_GC_*`` settings.
    """
    root = project_root()
    base = os.environ if base is None else base
    env = {k: v for k, v in base.items() if not k.startswith(("AIRFLOW", "LAKEFS_GC_"))}
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(root / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(root / "plugins"),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": db_url,
            "AIRFLOW__API__HOST": LOOPBACK,
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(16),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://{LOOPBACK}:{port}/execution/",
            "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "False",
            "LAKEFS_GC_CONFIG": str(config),
            "SPARK_LOCAL_IP": LOOPBACK,  # the Spark driver's ports and its UI, when enabled
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{base.get('PATH', os.defpath)}",
        }
    )
    env.update(settings)
    return env


class AirflowProcesses:
    """
    Airflow CLI commands and long-running components, stopped by PID.

    Each component runs in its own session (process group) with its output in
    ``<home>/<name>.log``.
    """

    def __init__(self, home: Path, env: dict[str, str]):
        self.home, self.env = Path(home), env
        self.procs: dict[str, subprocess.Popen] = {}

    def cli(self, *args: str, timeout: float = 180) -> str:
        """``airflow <args>``; its stdout. Raises naming the command and its output's end on failure."""
        r = subprocess.run(
            [sys.executable, "-m", "airflow", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.home,
            check=False,
        )
        if r.returncode != 0:
            raise RuntimeError(
                f"airflow {' '.join(args)} failed (exit {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
            )
        return r.stdout

    def create_pools(self, config: Path | str) -> list[str]:
        """
        Create (or resize) the GC config's Airflow pools (``pools``), as ``lakefs-gc config pools`` prints them.

        Return their names. A Spark step in a pool Airflow does not have would never start.
        """
        import json

        from lakefs_gc.config import load_config

        pools = load_config(config, strict=False).pools_import()
        if pools:
            path = self.home / "lakefs-gc-pools.json"
            path.write_text(json.dumps(pools))
            self.cli("pools", "import", str(path))
        return sorted(pools)

    def start(self, name: str, *args: str) -> subprocess.Popen:
        """Start component ``name`` (``args``: its airflow arguments; default :data:`COMPONENTS`)."""
        args = args or COMPONENTS[name]
        with open(self.home / f"{name}.log", "ab") as log:
            self.procs[name] = subprocess.Popen(
                [sys.executable, "-m", "airflow", *args],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.home,
                start_new_session=True,
            )
        return self.procs[name]

    def dead(self) -> dict[str, int]:
        """Components that exited, with their exit status."""
        return {n: p.returncode for n, p in self.procs.items() if p.poll() is not None}

    def check_alive(self) -> None:
        for name, code in self.dead().items():
            raise RuntimeError(f"airflow {name} exited with {code}:\n{self.tail(name)}")

    def tail(self, name: str, n: int = 4000) -> str:
        path = self.home / f"{name}.log"
        return path.read_text(errors="replace")[-n:] if path.exists() else ""

    def pids(self) -> set[int]:
        """Return the components and every process below them (task runners, spark-submit, its JVM)."""
        import psutil

        out: set[int] = set()
        for p in self.procs.values():
            if p.poll() is None:
                out.add(p.pid)
                with contextlib.suppress(psutil.NoSuchProcess):
                    out.update(c.pid for c in psutil.Process(p.pid).children(recursive=True))
        return out

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """
        Stop every component and every process below it.

        SIGTERM each component's process group (scheduler first: no new tasks), wait up to
        ``timeout`` each, SIGKILL the group; then SIGKILL by PID any process of the tree left (one
        that left the group).
        """
        import psutil

        left = []
        for pid in self.pids():
            with contextlib.suppress(psutil.NoSuchProcess):
                left.append(psutil.Process(pid))
        order = sorted(
            self.procs,
            key=lambda n: ["scheduler", "triggerer", "dag-processor", "api-server"].index(n) if n in COMPONENTS else -1,
        )
        for name in order:
            p = self.procs[name]
            if p.poll() is None:
                _signal_group(p.pid, signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(timeout=timeout)
            _signal_group(p.pid, signal.SIGKILL)  # leftovers of the group once the leader is gone
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=timeout)
        for proc in left:
            try:
                if proc.is_running():
                    proc.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(left, timeout=timeout)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def listeners(pids: Iterable[int]) -> list[tuple[int, str, str, int]]:
    """Return the listening TCP sockets of ``pids``: (pid, process name, address, port)."""
    import psutil

    out = []
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            for c in proc.net_connections(kind="inet"):
                if c.status == psutil.CONN_LISTEN:
                    out.append((pid, proc.name(), c.laddr.ip, c.laddr.port))
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return out


def wait_http(url: str, procs: AirflowProcesses, timeout: float) -> None:
    """Until ``url`` answers 200; fails when a component exits first or after ``timeout``."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        procs.check_alive()
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                r.read()
                return
        except (OSError, urllib.error.HTTPError) as e:
            last = str(e)
        time.sleep(0.5)
    raise TimeoutError(
        f"{url} did not answer within {timeout:.0f}s (last: {last});\n"
        + "\n".join(f"--- {n}.log\n{procs.tail(n, 1500)}" for n in procs.procs)
    )
