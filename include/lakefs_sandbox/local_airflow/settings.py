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

from lakefs_gc.config import ConfigError, GCConfig, check_config, project_root
from lakefs_gc.words import plural
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


@dataclass
class EnvFile:
    """A settings file as read: its values, the line of each, and every problem of it."""

    values: dict[str, str] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)  # key -> the line its value comes from (the last)
    problems: list[str] = field(default_factory=list)  # "FILE:LINE: what is wrong", one each
    repeated: list[str] = field(default_factory=list)  # a key set twice: which line counts


def _unknown_setting(key: str) -> str:
    """Return what to say of an unknown key: the setting it is closest to, else every one there is."""
    import difflib

    close = difflib.get_close_matches(key, list(SETTINGS), 1, 0.75)
    if close:
        return f"unknown setting {key} (did you mean {close[0]}?)"
    return (
        f"unknown setting {key} (known: {', '.join(SETTINGS)}; or any AIRFLOW_CONN_<ID> connection, "
        "or AIRFLOW__<SECTION>__<KEY> Airflow setting)"
    )


def _connection_problem(key: str, value: str) -> str | None:
    """Return what is wrong with an ``AIRFLOW_CONN_<ID>`` value (JSON, or a URI ``type://...``), if anything."""
    if value.lstrip().startswith("{"):
        try:
            doc = json.loads(value)
        except ValueError as e:
            return f"{key} is not valid JSON ({e})"
        if not isinstance(doc, dict) or not doc.get("conn_type"):
            return f'{key} must be a JSON object with a conn_type, e.g. {{"conn_type": "aws", ...}}'
        return None
    if "://" not in value:
        return f"{key} must be a connection URI (type://login:password@host:port) or JSON, got {value[:40]!r}"
    return None


def read_env_file(path: Path) -> EnvFile:
    """
    Read ``KEY=value`` lines (``export`` allowed, ``#`` comments, values optionally quoted).

    Every problem is kept (``FILE:LINE: ...``), not only the first: a line of another shape, an
    unknown key (with the known one it is closest to), a connection that does not read.
    """
    out = EnvFile()
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            out.problems.append(f"{path}:{n}: not a KEY=value line: {line.split('=')[0][:40]!r}...")
            continue
        key, value = m.group(1), m.group(2).strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        if key not in SETTINGS and not key.startswith(("AIRFLOW_CONN_", "AIRFLOW__")):
            out.problems.append(f"{path}:{n}: {_unknown_setting(key)}")
            continue
        wrong = _connection_problem(key, value) if key.startswith("AIRFLOW_CONN_") else None
        if wrong:
            out.problems.append(f"{path}:{n}: {wrong}")
        if key in out.lines:
            out.repeated.append(f"{path}:{n}: {key} is set again (first on line {out.lines[key]}): line {n} counts")
        out.values[key], out.lines[key] = value, n
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

    Every wrong setting is found before anything starts: one :class:`SetupError` names each, at its
    line of the file (or in the environment). ``lakefs``: the ``LAKEFS_*`` settings of the lakeFS
    this command runs (``--lakefs real``), over the environment and the file (each value of theirs it
    replaces is noted in :attr:`Plan.notes`, secrets left out).
    """
    root = project_root()
    read = EnvFile()
    if env_file is not None:
        if not env_file.is_file():
            raise SetupError(
                f"{env_file}: no such file: copy config/airflow.env.example to it and fill it in "
                f"(or give the settings as environment variables and no --env-file)"
            )
        read = read_env_file(env_file)
    from_file = read.values
    problems = list(read.problems)
    where = str(env_file) if env_file else "the environment"

    lakefs = lakefs or {}

    def get(name: str) -> str | None:
        value = lakefs.get(name) or environ.get(name) or from_file.get(name) or SETTINGS[name].default
        return value.strip() if value else None

    def get_defaulted(name: str) -> str:
        # a setting with a default (SETTINGS): get() gives None only for one without
        return get(name) or ""

    def at(name: str) -> str:
        """Where the value of ``name`` comes from: its line of the file, or the environment."""
        if environ.get(name) and not lakefs.get(name):
            return "the environment"
        return f"{env_file}:{read.lines[name]}" if name in read.lines and from_file.get(name) else where

    notes = []
    for name, value in lakefs.items():
        for source, values in (("the environment", environ), (str(env_file), from_file)):
            given = (values.get(name) or "").strip()
            if given and given != value:
                shown = "" if SETTINGS[name].secret else f"={given}"
                notes.append(f"{name}{shown} in {source} is replaced by the lakeFS this command runs (--lakefs real)")

    cfg_path = Path(get_defaulted("LAKEFS_GC_CONFIG"))
    cfg_path = cfg_path if cfg_path.is_absolute() else root / cfg_path
    cfg: GCConfig | None = None
    try:
        checked = check_config(cfg_path)  # as the DAG files read it, every problem of the file as a whole
    except ConfigError as e:  # not readable, not YAML
        wrong = [str(e)]
    else:
        wrong = [str(x) for x in checked.file_problems]
        cfg = None if wrong else checked.config
    if wrong:
        wrong[-1] += (
            f" (LAKEFS_GC_CONFIG in {at('LAKEFS_GC_CONFIG')}; relative paths are from the project root, {root})"
        )
        problems.extend(wrong)

    conns = {k: v for k, v in from_file.items() if k.startswith("AIRFLOW_CONN_")}
    conns.update({k: v for k, v in environ.items() if k.startswith("AIRFLOW_CONN_")})
    described: dict[str, str] = {k.removeprefix("AIRFLOW_CONN_").lower(): "given as " + k for k in conns}

    def own(conn_id: str, value: dict, text: str) -> None:
        key = "AIRFLOW_CONN_" + conn_id.upper()
        if key in conns:
            problems.append(
                f"{at(key)}: {key} and the {text.split(' ')[0]} settings both define {conn_id}: keep one of them"
            )
            return
        conns[key] = json.dumps(value)
        described[conn_id] = text

    endpoint = get("LAKEFS_ENDPOINT")
    key_id, secret = get("LAKEFS_ACCESS_KEY_ID"), get("LAKEFS_SECRET_ACCESS_KEY")
    if endpoint:
        missing = [n for n, v in (("LAKEFS_ACCESS_KEY_ID", key_id), ("LAKEFS_SECRET_ACCESS_KEY", secret)) if not v]
        if not re.match(r"^https?://[^/\s]+", endpoint):
            problems.append(
                f"{at('LAKEFS_ENDPOINT')}: LAKEFS_ENDPOINT must be an http(s) URL such as http://127.0.0.1:8000, "
                f"got {endpoint!r}"
            )
        elif missing:
            problems.append(
                f"{at('LAKEFS_ENDPOINT')}: LAKEFS_ENDPOINT is set but {' and '.join(missing)} "
                f"{'is' if len(missing) == 1 else 'are'} not: set the keys of a lakeFS user"
            )
        else:
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
        given = "LAKEFS_ACCESS_KEY_ID" if key_id else "LAKEFS_SECRET_ACCESS_KEY"
        problems.append(f"{at(given)}: lakeFS keys are set but LAKEFS_ENDPOINT is not: set lakeFS's URL")

    s3_endpoint, s3_key, s3_secret = get("S3_ENDPOINT_URL"), get("S3_ACCESS_KEY_ID"), get("S3_SECRET_ACCESS_KEY")
    s3_ok = True
    if bool(s3_key) != bool(s3_secret):
        s3_ok = False
        problems.append(
            f"{at('S3_ACCESS_KEY_ID' if s3_key else 'S3_SECRET_ACCESS_KEY')}: set both S3_ACCESS_KEY_ID and "
            "S3_SECRET_ACCESS_KEY, or neither (boto3's default chain)"
        )
    if s3_endpoint and not re.match(r"^https?://[^/\s]+", s3_endpoint):
        s3_ok = False
        problems.append(f"{at('S3_ENDPOINT_URL')}: S3_ENDPOINT_URL must be an http(s) URL, got {s3_endpoint!r}")
    if s3_ok and (s3_endpoint or s3_key):
        extra = {"region_name": get_defaulted("S3_REGION")}
        if s3_endpoint:
            extra["endpoint_url"] = s3_endpoint
        own(
            "aws_default",
            {"conn_type": "aws", **({"login": s3_key, "password": s3_secret} if s3_key else {}), "extra": extra},
            f"S3 {s3_endpoint or 'AWS'} ({'keys given' if s3_key else 'default credentials chain'})",
        )
    if "AIRFLOW_CONN_SPARK_DEFAULT" not in conns or environ.get("SPARK_MASTER") or from_file.get("SPARK_MASTER"):
        own("spark_default", {"conn_type": "spark", "host": get("SPARK_MASTER")}, f"Spark {get('SPARK_MASTER')}")

    port_text = str(port) if port is not None else get_defaulted("AIRFLOW_PORT")
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        problems.append(
            f"{'--port' if port is not None else at('AIRFLOW_PORT')}: AIRFLOW_PORT must be a port number, "
            f"got {port_text!r}"
        )
    user = get_defaulted("AIRFLOW_USER")
    if not re.match(r"^[A-Za-z0-9_.@-]{1,64}$", user):
        problems.append(
            f"{at('AIRFLOW_USER')}: AIRFLOW_USER must be a user name (letters, digits, _ . @ -), got {user!r}"
        )
    if problems or cfg is None:
        raise SetupError(_every(problems, env_file))

    warnings = list(read.repeated)
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
        entry_errors=list(cfg.entry_problems),
        connections=conns,
        described=described,
        airflow_settings=settings,
        work_dir=work_dir,
        warnings=warnings,
        notes=notes,
        min_ages={r.repository: r.min_age_seconds for r in cfg.repositories},
    )


def _every(problems: list[str], env_file: Path | None) -> str:
    """
    One problem as it is; several under a line that counts them, one (or its lines) a line.

    Those of the settings file first, in the order of their lines; then the others.
    """
    if len(problems) == 1:
        return problems[0]

    def order(i: int) -> tuple[int, int]:
        m = re.match(rf"{re.escape(str(env_file))}:(\d+): ", problems[i]) if env_file else None
        return (0, int(m.group(1))) if m else (1, i)

    problems = [problems[i] for i in sorted(range(len(problems)), key=order)]
    return f"{plural(len(problems), 'problem')} in the settings; nothing was started:\n" + "\n".join(
        f"  {line}" for problem in problems for line in problem.splitlines()
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
