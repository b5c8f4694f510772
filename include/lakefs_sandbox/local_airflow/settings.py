"""
The user's settings of ``make airflow`` made a plan.

The settings: ``config/airflow.env`` and the environment. The plan: the connections, the
components' environment, the state directory's private files.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lakefs_gc.config import ConfigError, load_config, project_root
from lakefs_sandbox.local_airflow.processes import LOOPBACK, SIMPLE_AUTH_MANAGER, airflow_env


class SetupError(ValueError):
    """A setting is missing or wrong; the message names it and how to fix it."""


@dataclass(frozen=True)
class Setting:
    """One setting of ``make airflow``: its name, what it is, its default, whether it is a secret."""

    name: str
    help: str
    default: str | None = None
    secret: bool = False


SETTINGS = {
    s.name: s
    for s in (
        Setting("LAKEFS_GC_CONFIG", "the repositories file", "config/gc_repositories.yaml"),
        Setting("LAKEFS_ENDPOINT", "lakeFS's URL, e.g. http://127.0.0.1:8000 (/api/v1 is added)"),
        Setting("LAKEFS_ACCESS_KEY_ID", "lakeFS access key id"),
        Setting("LAKEFS_SECRET_ACCESS_KEY", "lakeFS secret access key", secret=True),
        Setting(
            "LAKEFS_LOCAL_BLOCKSTORE_ROOT",
            "local:// namespaces: lakeFS's blockstore.local.path as this machine "
            "sees it (relative: from the project root)",
        ),
        Setting("S3_ENDPOINT_URL", "s3:// namespaces: an S3-compatible endpoint (empty: AWS)"),
        Setting("S3_ACCESS_KEY_ID", "s3:// namespaces: access key id (empty: boto3's default chain)"),
        Setting("S3_SECRET_ACCESS_KEY", "s3:// namespaces: secret access key", secret=True),
        Setting("S3_REGION", "s3:// namespaces: region", "us-east-1"),
        Setting("SPARK_MASTER", "the Spark master of spark_default", "local[*]"),
        Setting("LAKEFS_GC_WORK_DIR", "the runs' work files", "var/airflow/work"),
        Setting("AIRFLOW_PORT", "the UI's port on 127.0.0.1", "8080"),
        Setting("AIRFLOW_USER", "the UI's user (admin role)", "admin"),
    )
}
_LINE = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def read_env_file(path: Path) -> dict[str, str]:
    """
    Read ``KEY=value`` lines (``export`` allowed, ``#`` comments, values optionally quoted).

    A line of another shape or an unknown key is an error naming the file and the line.
    """
    out: dict[str, str] = {}
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            raise SetupError(f"{path}:{n}: not a KEY=value line: {line.split('=')[0][:40]!r}...")
        key, value = m.group(1), m.group(2).strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        if key not in SETTINGS and not key.startswith(("AIRFLOW_CONN_", "AIRFLOW__")):
            raise SetupError(
                f"{path}:{n}: unknown setting {key} (known: {', '.join(SETTINGS)}; or any "
                f"AIRFLOW_CONN_<ID> connection, or AIRFLOW__<SECTION>__<KEY> Airflow setting)"
            )
        out[key] = value
    return out


@dataclass
class Plan:
    """What ``make airflow`` starts: settings resolved, connections built, nothing started."""

    state: Path
    port: int
    user: str
    config_path: Path
    dag_ids: list[str]
    entry_errors: list[str]
    connections: dict[str, str]  # AIRFLOW_CONN_<ID> -> JSON (holds secrets: never printed)
    described: dict[str, str]  # conn id -> what it points at, secrets left out
    airflow_settings: dict[str, str]  # AIRFLOW__* from the file
    work_dir: str
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # settings replaced by the lakeFS this command runs
    min_ages: dict[str, int] = field(default_factory=dict)  # repository -> min_age_seconds


def ui_connections(state: Path) -> set[str]:
    """
    Return the ids of the connections in this Airflow's database (added in the UI at an earlier start).

    An empty set when there is no database yet or it cannot be read.
    """
    import sqlite3

    db = state / "airflow.db"
    if not db.is_file():
        return set()
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return set()
    try:
        return {row[0] for row in con.execute("SELECT conn_id FROM connection")}
    except sqlite3.Error:
        return set()
    finally:
        con.close()


def plan(
    env_file: Path | None,
    environ: Mapping[str, str],
    state: Path,
    port: int | None = None,
    lakefs: Mapping[str, str] | None = None,
) -> Plan:
    """
    Resolve the settings (environment over file over defaults) into a :class:`Plan`.

    A wrong setting raises :class:`SetupError` naming it. ``lakefs``: the ``LAKEFS_*`` settings of
    the lakeFS this command runs (``--lakefs real``), over the environment and the file (each value
    of theirs it replaces is noted in :attr:`Plan.notes`, secrets left out).
    """
    root = project_root()
    from_file: dict[str, str] = {}
    if env_file is not None:
        if not env_file.is_file():
            raise SetupError(
                f"{env_file}: no such file: copy config/airflow.env.example to it and fill it in "
                f"(or give the settings as environment variables and no --env-file)"
            )
        from_file = read_env_file(env_file)
    where = str(env_file) if env_file else "the environment"

    lakefs = lakefs or {}

    def get(name: str) -> str | None:
        value = lakefs.get(name) or environ.get(name) or from_file.get(name) or SETTINGS[name].default
        return value.strip() if value else None

    def get_defaulted(name: str) -> str:
        # a setting with a default (SETTINGS): get() gives None only for one without
        return get(name) or ""

    notes = []
    for name, value in lakefs.items():
        for source, values in (("the environment", environ), (str(env_file), from_file)):
            given = (values.get(name) or "").strip()
            if given and given != value:
                shown = "" if SETTINGS[name].secret else f"={given}"
                notes.append(f"{name}{shown} in {source} is replaced by the lakeFS this command runs (--lakefs real)")

    cfg_path = Path(get_defaulted("LAKEFS_GC_CONFIG"))
    cfg_path = cfg_path if cfg_path.is_absolute() else root / cfg_path
    try:
        cfg = load_config(cfg_path, strict=False)
    except ConfigError as e:
        raise SetupError(
            f"{e} (LAKEFS_GC_CONFIG in {where}; relative paths are from the project root, {root})"
        ) from None

    conns = {k: v for k, v in from_file.items() if k.startswith("AIRFLOW_CONN_")}
    conns.update({k: v for k, v in environ.items() if k.startswith("AIRFLOW_CONN_")})
    described: dict[str, str] = {k.removeprefix("AIRFLOW_CONN_").lower(): "given as " + k for k in conns}

    def own(conn_id: str, value: dict, text: str) -> None:
        key = "AIRFLOW_CONN_" + conn_id.upper()
        if key in conns:
            raise SetupError(
                f"{where}: {key} and the {text.split(' ')[0]} settings both define {conn_id}: keep one of them"
            )
        conns[key] = json.dumps(value)
        described[conn_id] = text

    endpoint = get("LAKEFS_ENDPOINT")
    key_id, secret = get("LAKEFS_ACCESS_KEY_ID"), get("LAKEFS_SECRET_ACCESS_KEY")
    if endpoint:
        if not re.match(r"^https?://[^/\s]+", endpoint):
            raise SetupError(
                f"{where}: LAKEFS_ENDPOINT must be an http(s) URL such as http://127.0.0.1:8000, got {endpoint!r}"
            )
        missing = [n for n, v in (("LAKEFS_ACCESS_KEY_ID", key_id), ("LAKEFS_SECRET_ACCESS_KEY", secret)) if not v]
        if missing:
            raise SetupError(
                f"{where}: LAKEFS_ENDPOINT is set but {' and '.join(missing)} "
                f"{'is' if len(missing) == 1 else 'are'} not: set the keys of a lakeFS user"
            )
        extra = {}
        blockroot = get("LAKEFS_LOCAL_BLOCKSTORE_ROOT")
        if blockroot:
            blockroot = str(root / blockroot)  # relative: from the project root (an absolute path stays)
            extra["local_blockstore_root"] = blockroot
        own(
            "lakefs_default",
            {
                "conn_type": "lakefs_gc",
                "host": endpoint,
                "login": key_id,
                "password": secret,
                **({"extra": extra} if extra else {}),
            },
            f"lakeFS {endpoint}" + (f", local blockstore root {blockroot}" if blockroot else ""),
        )
    elif key_id or secret:
        raise SetupError(f"{where}: lakeFS keys are set but LAKEFS_ENDPOINT is not: set lakeFS's URL")

    s3_endpoint, s3_key, s3_secret = get("S3_ENDPOINT_URL"), get("S3_ACCESS_KEY_ID"), get("S3_SECRET_ACCESS_KEY")
    if bool(s3_key) != bool(s3_secret):
        raise SetupError(
            f"{where}: set both S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY, or neither (boto3's default chain)"
        )
    if s3_endpoint or s3_key:
        extra = {"region_name": get_defaulted("S3_REGION")}
        if s3_endpoint:
            if not re.match(r"^https?://[^/\s]+", s3_endpoint):
                raise SetupError(f"{where}: S3_ENDPOINT_URL must be an http(s) URL, got {s3_endpoint!r}")
            extra["endpoint_url"] = s3_endpoint
        own(
            "aws_default",
            {"conn_type": "aws", **({"login": s3_key, "password": s3_secret} if s3_key else {}), "extra": extra},
            f"S3 {s3_endpoint or 'AWS'} ({'keys given' if s3_key else 'default credentials chain'})",
        )
    if "AIRFLOW_CONN_SPARK_DEFAULT" not in conns or environ.get("SPARK_MASTER") or from_file.get("SPARK_MASTER"):
        own("spark_default", {"conn_type": "spark", "host": get("SPARK_MASTER")}, f"Spark {get('SPARK_MASTER')}")

    warnings = []
    in_ui = ui_connections(state)
    for repo in cfg.repositories:
        for kind, conn_id in (("lakeFS", repo.lakefs_conn_id), ("Spark", repo.spark_conn_id)):
            # AIRFLOW_CONN_<ID>: Airflow upper-cases the id; or added in the UI at an earlier start
            if conn_id.lower() not in described and conn_id not in in_ui:
                hint = (
                    "LAKEFS_ENDPOINT, LAKEFS_ACCESS_KEY_ID and LAKEFS_SECRET_ACCESS_KEY"
                    if conn_id == "lakefs_default"
                    else f"AIRFLOW_CONN_{conn_id.upper()}"
                )
                warnings.append(
                    f"{repo.repository}: its {kind} connection {conn_id!r} is not defined: its runs fail "
                    f"until you set {hint} in {where} or add it in the UI (Admin > Connections)"
                )

    port_text = str(port) if port is not None else get_defaulted("AIRFLOW_PORT")
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise SetupError(f"{where}: AIRFLOW_PORT must be a port number, got {port_text!r}")
    user = get_defaulted("AIRFLOW_USER")
    if not re.match(r"^[A-Za-z0-9_.@-]{1,64}$", user):
        raise SetupError(f"{where}: AIRFLOW_USER must be a user name (letters, digits, _ . @ -), got {user!r}")
    work_dir = get_defaulted("LAKEFS_GC_WORK_DIR")
    if not work_dir.startswith(("/", "s3://", "s3a://", "file:")):
        work_dir = str(root / work_dir)
    settings = {k: v for k, v in from_file.items() if k.startswith("AIRFLOW__")}
    return Plan(
        state=state,
        port=int(port_text),
        user=user,
        config_path=cfg.path,
        dag_ids=[r.dag_id for r in cfg.repositories],
        entry_errors=list(cfg.entry_errors),
        connections=conns,
        described=described,
        airflow_settings=settings,
        work_dir=work_dir,
        warnings=warnings,
        notes=notes,
        min_ages={r.repository: r.min_age_seconds for r in cfg.repositories},
    )


# ---------------------------------------------------------------- the state directory


def private_json(path: Path, make: dict[str, str]) -> dict[str, str]:
    """Read a JSON object only its owner can read, add the keys of ``make`` it lacks, write it back."""
    data = json.loads(path.read_text()) if path.exists() else {}
    if not isinstance(data, dict):
        raise SetupError(f"{path}: not a JSON object: remove it (a new one is generated)")
    if any(k not in data for k in make):
        data = {**make, **data}
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
    os.chmod(path, 0o600)
    return data


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((LOOPBACK, port))
            return True
        except OSError:
            return False


def component_env(p: Plan, base: Mapping[str, str]) -> dict[str, str]:
    from cryptography.fernet import Fernet

    keys = private_json(
        p.state / "secrets.json", {"jwt_secret": secrets.token_hex(32), "fernet_key": Fernet.generate_key().decode()}
    )
    env = airflow_env(
        p.state,
        p.port,
        f"sqlite:///{p.state / 'airflow.db'}",
        p.config_path,
        base=base,
        **{
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__AUTH_MANAGER": SIMPLE_AUTH_MANAGER,
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{p.user}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(p.state / "passwords.json"),
            "AIRFLOW__API_AUTH__JWT_SECRET": keys["jwt_secret"],  # kept: a restart keeps the UI's sessions
            "AIRFLOW__CORE__FERNET_KEY": keys["fernet_key"],  # connections added in the UI, encrypted
            "AIRFLOW__CORE__PARALLELISM": "4",
            # the connection form's Test button (Airflow's default: Disabled); the file may set it back
            "AIRFLOW__CORE__TEST_CONNECTION": "Enabled",
            "LAKEFS_GC_WORK_DIR": p.work_dir,
        },
    )
    env.update(p.airflow_settings)
    env.update(p.connections)
    return env
