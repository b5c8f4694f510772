"""What the stack's tests read of docker-compose.yaml, docker/Dockerfile and .env: the files
parsed as compose does (YAML merge keys, ``${VAR}`` from ``.env``), and a compose client's
``config`` of them (skipping the test, saying why, without a client)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yaml"
DOCKERFILE = ROOT / "docker" / "Dockerfile"
DOTENV = ROOT / ".env"
REQUIREMENTS = ROOT / "requirements.txt"
PROJECT_IN_IMAGE = "/opt/lakefs-gc"  # where docker/Dockerfile puts the repository's files
AIRFLOW_SERVICES = (
    "airflow-init",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
)


# ------------------------------------------------------------------------------------------------
# helpers


def read_dotenv(path: Path = DOTENV) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        assert sep, f"{path}: not KEY=VALUE: {line!r}"
        out[key.strip()] = value.strip()
    return out


_VAR = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def interpolate(value, env: dict[str, str], missing: set[str]):
    """Compose's variable substitution (``$$``, ``$VAR``, ``${VAR}``, ``${VAR:-x}``, ``${VAR:?msg}``)."""
    if isinstance(value, dict):
        return {k: interpolate(v, env, missing) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env, missing) for v in value]
    if not isinstance(value, str):
        return value

    def sub(m: re.Match) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1) or m.group(4)
        op, arg = m.group(2), m.group(3)
        val = env.get(name)
        if op in (":-", "-"):
            return arg if (val is None or (op == ":-" and val == "")) else val
        if val is None:
            missing.add(name)
            return ""
        return val

    return _VAR.sub(sub, value)


@lru_cache(maxsize=1)
def compose() -> dict:
    """docker-compose.yaml with merge keys resolved and variables filled from .env."""
    raw = yaml.safe_load(COMPOSE_FILE.read_text())
    missing: set[str] = set()
    doc = interpolate(raw, read_dotenv(), missing)
    assert not missing, f"docker-compose.yaml uses variables that .env does not define: {sorted(missing)}"
    return doc


def services() -> dict[str, dict]:
    return compose()["services"]


def env_of(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):  # KEY=VALUE list form
        env = dict(item.split("=", 1) for item in env)
    return {k: "" if v is None else str(v) for k, v in env.items()}


def argv_of(value) -> list[str]:
    if value is None:
        return []
    return value.split() if isinstance(value, str) else [str(v) for v in value]


def is_pinned(ref: str) -> bool:
    """An exact image: a digest, an exact version tag (x.y.z..., MinIO's RELEASE.<date>), or for
    Postgres (whose releases are major.minor) major.minor. Never 'latest', a bare major, or no tag."""
    if "@sha256:" in ref:
        return True
    name, _, tag = ref.rpartition(":")
    if not name or "/" in tag:  # no tag at all (a ':' only in a registry host:port)
        return False
    if re.match(r"^RELEASE\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ$", tag):
        return True
    if re.match(r"^v?\d+\.\d+\.\d+", tag):
        return True
    if name.split("/")[-1] == "postgres" and re.match(r"^\d+\.\d+(-[a-z0-9]+)?$", tag):
        return True
    return False


def dockerfile_lines() -> list[str]:
    """Dockerfile instructions, comments dropped and continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def requirement_pins() -> dict[str, str]:
    pins = {}
    for line in REQUIREMENTS.read_text().splitlines():
        m = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(\S+)", line)
        if m:
            pins[m.group(1).lower()] = m.group(2)
    return pins


def mounts(service: dict) -> dict[str, str]:
    """container path -> source (named volume or host path) of a service's short-form volumes."""
    out = {}
    for v in service.get("volumes") or []:
        if isinstance(v, dict):
            out[v["target"]] = v.get("source", "")
        else:
            parts = v.split(":")
            out[parts[1]] = parts[0]
    return out


def airflow_conns(env: dict[str, str]) -> dict[str, dict]:
    return {k[len("AIRFLOW_CONN_") :].lower(): json.loads(v) for k, v in env.items() if k.startswith("AIRFLOW_CONN_")}


def container_ports(service: dict) -> set[int]:
    """Ports a service listens on, as far as the file says (published targets and expose)."""
    out = set()
    for p in service.get("ports") or []:
        if isinstance(p, dict):
            out.add(int(p["target"]))
        else:
            out.add(int(str(p).split("/")[0].rsplit(":", 1)[-1]))
    out.update(int(p) for p in service.get("expose") or [])
    return out


# ------------------------------------------------------------------------------------------------
# a compose client


def _compose_client() -> tuple[list[str] | None, str]:
    tried = []
    if shutil.which("docker"):
        r = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, timeout=30, check=False)
        if r.returncode == 0:
            return ["docker", "compose"], ""
        tried.append(
            f"`docker compose`: {(r.stderr or r.stdout).strip().splitlines()[0] if (r.stderr or r.stdout).strip() else 'exit ' + str(r.returncode)}"
        )
    else:
        tried.append("`docker`: not on PATH")
    if shutil.which("docker-compose"):
        r = subprocess.run(["docker-compose", "version"], capture_output=True, text=True, timeout=30, check=False)
        if r.returncode == 0:
            return ["docker-compose"], ""
        tried.append(f"`docker-compose version` exited {r.returncode}")
    else:
        tried.append("`docker-compose`: not on PATH")
    return None, "; ".join(tried)


def compose_config(*overrides: Path) -> dict:
    """``config`` of a compose client on docker-compose.yaml (and ``overrides``): the resolved services
    (skips the test, saying why, without a client)."""
    client, why = _compose_client()
    if client is None:
        pytest.skip(f"no compose client (install the Docker Compose plugin, or apt-get install docker-compose): {why}")
    # The shell must not override .env here, so the resolved values are the file's own.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in read_dotenv() and not k.startswith("COMPOSE_") and k != "DOCKER_HOST"
    }
    files = [arg for f in (COMPOSE_FILE, *overrides) for arg in ("-f", str(f))]
    base = [*client, "--project-directory", str(ROOT), *files, "config"]
    quiet = subprocess.run([*base, "-q"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert quiet.returncode == 0, f"{' '.join(client)} config -q failed:\n{quiet.stderr}{quiet.stdout}"
    full = subprocess.run(base, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert full.returncode == 0, full.stderr
    return yaml.safe_load(full.stdout)["services"]
