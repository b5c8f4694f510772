"""
The compose stack, driven from Python.

The Docker engine and the compose stack as the stack's test and the chaos bench drive them: the
project's own dockerd (``scripts/dockerd.sh``: started as root, its own data root under the tools
cache, stopped by PID), the stack's images (``scripts/stack_images.sh``), ``docker-compose``
(Debian's 1.29) on ``docker-compose.yaml`` (and override files, e.g. ``docker/chaos.compose.yaml``)
under a project name of the caller's own, with its published ports moved to free ones on
127.0.0.1, and Airflow's REST API of the stack.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from lakefs_sandbox.emulator.launcher import free_port

ROOT = Path(__file__).resolve().parents[2]
TOOLS_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "lakefs-gc"
LAKEFS_BINARY = TOOLS_CACHE / "lakefs-1.84.0" / "lakefs"
ONE_SHOTS = ("airflow-init", "minio-init", "lakefs-seed")  # exit 0 when done; every other service: healthy
LONG_RUNNING = (
    "postgres",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
    "spark-master",
    "spark-worker",
    "minio",
    "lakefs",
)
IMAGES_DEADLINE_S = 3600  # a new machine builds every image (about 15 minutes); a warm one checks labels
UP_DEADLINE_S = 600  # every service healthy; on a loaded 2-core machine Airflow's start takes minutes


def run(cmd: list[str], env: dict, timeout: float, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


@dataclass
class Engine:
    """The project's Docker engine (``scripts/dockerd.sh``); ``started``: this process started it."""

    env: dict
    started: bool

    @classmethod
    def start(cls) -> Engine:
        env = dict(os.environ)
        p = run(["bash", "scripts/dockerd.sh", "start"], env, timeout=120)
        lines = p.stdout.strip().splitlines()
        env["DOCKER_HOST"] = next(ln for ln in lines if ln.startswith("DOCKER_HOST=")).split("=", 1)[1]
        return cls(env, lines[-1].startswith("started"))

    def stop(self) -> None:
        if self.started:
            run(["bash", "scripts/dockerd.sh", "stop"], self.env, timeout=90, check=False)

    def build_images(self) -> float:
        t0 = time.monotonic()
        run(["bash", "scripts/stack_images.sh", str(LAKEFS_BINARY)], self.env, timeout=IMAGES_DEADLINE_S)
        return time.monotonic() - t0


def dotenv() -> dict[str, str]:
    """Return the stack's ``.env`` (what docker-compose reads): its local-development keys and names."""
    out = {}
    for line in (ROOT / ".env").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            k, _, v = line.partition("=")
            out[k.strip()] = v.strip()
    return out


class API:
    """Airflow's REST API of the stack (simple auth manager, everyone admin: a token for nobody)."""

    def __init__(self, base: str, timeout: float = 60):
        self.base = base
        self.timeout = timeout
        self.refresh_token()

    def refresh_token(self) -> None:
        """Take a new token (after the api-server restarted, the old one is refused with 401)."""
        with urllib.request.urlopen(self.base + "/auth/token", timeout=self.timeout) as r:
            self.token = json.load(r)["access_token"]

    def task_log(self, run_path: str, task: str, try_number: int = 1) -> list[str]:
        """Return the lines of one try of a run's task log (``run_path``: ``/api/v2/dags/D/dagRuns/R``)."""
        doc = self.call("GET", f"{run_path}/taskInstances/{task}/logs/{max(1, try_number)}")
        return [str(c.get("event", c)) if isinstance(c, dict) else str(c) for c in doc.get("content", [])]

    def call(self, method: str, path: str, body: dict | None = None):
        req = urllib.request.Request(
            self.base + path,
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=self.timeout) as r:
            return json.load(r)


@dataclass
class Stack:
    """One compose project of the stack, its published ports on free ones of 127.0.0.1."""

    engine: Engine
    project: str
    ports: dict[str, int] = field(default_factory=dict)
    overrides: tuple[Path, ...] = ()  # compose files merged over docker-compose.yaml, in order

    def __post_init__(self) -> None:
        for name in ("AIRFLOW_PORT", "LAKEFS_PORT", "S3_PORT", "S3_CONSOLE_PORT", "SPARK_UI_PORT"):
            self.ports[name] = free_port()
        self.env = {
            **self.engine.env,
            **{k: str(v) for k, v in self.ports.items()},
            "COMPOSE_PROJECT_NAME": self.project,
        }

    def compose(self, *args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess:
        files = [arg for f in (ROOT / "docker-compose.yaml", *self.overrides) for arg in ("-f", str(f))]
        return run(
            ["docker-compose", *files, "-p", self.project, *args],
            self.env,
            timeout=timeout,
            check=check,
        )

    def docker(self, *args: str, timeout: float = 60) -> str:
        return run(["docker", *args], self.env, timeout=timeout).stdout

    def container_id(self, service: str) -> str:
        """Return the id of the service's (first) container."""
        ids = self.docker(
            "ps",
            "-aq",
            "--filter",
            f"label=com.docker.compose.project={self.project}",
            "--filter",
            f"label=com.docker.compose.service={service}",
        ).split()
        if not ids:
            raise AssertionError(f"the stack has no container of {service}")
        return ids[0]

    def containers(self) -> dict[str, dict]:
        """Each service's container state (``docker inspect``), by service name."""
        ids = self.docker("ps", "-aq", "--filter", f"label=com.docker.compose.project={self.project}").split()
        if not ids:
            return {}
        return {
            c["Config"]["Labels"]["com.docker.compose.service"]: c["State"]
            for c in json.loads(self.docker("inspect", *ids))
        }

    def wait_up(self, services: list[str], deadline_s: float = UP_DEADLINE_S) -> float:
        """
        Wait until every long-running service is healthy and every one-shot exited 0.

        Fails at once on a one-shot that exited otherwise or a service that is unhealthy or gone.
        """
        t0 = time.monotonic()
        while True:
            states = self.containers()
            waiting = []
            for svc in services:
                st = states.get(svc)
                if st is None:
                    waiting.append(f"{svc}: no container yet")
                elif svc in ONE_SHOTS:
                    if st["Status"] == "exited" and st["ExitCode"] != 0:
                        raise AssertionError(f"{svc} exited {st['ExitCode']}:\n{self.logs(svc)}")
                    if st["Status"] != "exited":
                        waiting.append(f"{svc}: {st['Status']}")
                else:
                    health = (st.get("Health") or {}).get("Status")
                    if st["Status"] in ("exited", "dead") or health == "unhealthy":
                        raise AssertionError(f"{svc} is {st['Status']}/{health}:\n{self.logs(svc)}")
                    if health != "healthy":
                        waiting.append(f"{svc}: {health or st['Status']}")
            if not waiting:
                return time.monotonic() - t0
            if time.monotonic() - t0 > deadline_s:
                raise AssertionError(
                    f"the stack was not up within {deadline_s:.0f} s; still waiting for "
                    f"{waiting}\n"
                    + "\n".join(
                        self.health_log(states.get(w.split(":")[0])) + self.logs(w.split(":")[0]) for w in waiting
                    )
                )
            time.sleep(2)

    @staticmethod
    def health_log(state: dict | None) -> str:
        """Return the container's last health checks (start, exit code, output), as Docker keeps them."""
        checks = ((state or {}).get("Health") or {}).get("Log") or []
        return "".join(
            f"health check at {c['Start'][11:19]}: exit {c['ExitCode']}: {c['Output'].strip()[:300]}\n" for c in checks
        )

    def logs(self, service: str, tail: int = 60) -> str:
        p = self.compose("logs", "--no-color", "--tail", str(tail), service, timeout=60, check=False)
        return f"--- {service} ---\n{p.stdout[-6000:]}{p.stderr[-2000:]}"

    def finished_at(self, service: str) -> float:
        """When a one-shot service's container exited (epoch seconds)."""
        from datetime import datetime

        stamp = self.containers()[service]["FinishedAt"]  # 2026-11-27T13:01:02.123456789Z
        return datetime.fromisoformat(stamp[:26].rstrip("Z") + "+00:00").timestamp()
