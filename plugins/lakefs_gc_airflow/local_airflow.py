"""An Airflow 3 of our own on this machine, with the GC DAGs: ``make airflow`` / ``lakefs-gc airflow``.

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
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lakefs_gc.config import ConfigError, load_config, project_root

# Each component's arguments: no log server (it would listen on every interface).
COMPONENTS: dict[str, tuple[str, ...]] = {
    "api-server": ("api-server",),
    "scheduler": ("scheduler", "--skip-serve-logs"),
    "dag-processor": ("dag-processor",),
    "triggerer": ("triggerer", "--skip-serve-logs"),
}
LOOPBACK = "127.0.0.1"
SIMPLE_AUTH_MANAGER = "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
START_TIMEOUT = 240.0   # db migrate excepted: four components on 2 busy cores take about a minute
MIGRATE_TIMEOUT = 600.0
STOP_TIMEOUT = 20.0     # per component, then SIGKILL
# --lakefs real: lakeFS itself in <state>/lakefs, the settings it fills, the repository it seeds.
LAKEFS_MODES = ("settings", "real")
SAMPLE_REPO, SAMPLE_NAMESPACE = "sample-repo", "local://sample-repo"


class SetupError(ValueError):
    """A setting is missing or wrong; the message names it and how to fix it."""


# ---------------------------------------------------------------- the processes (shared with tests)

def airflow_env(home: Path, port: int, db_url: str, config: Path | str, base: Mapping[str, str] | None = None,
                **settings: str) -> dict[str, str]:
    """The environment of an Airflow of our own: its home and metadata DB, our dags and plugins and
    GC config, the api-server (and the execution API the tasks call) on 127.0.0.1:``port``; nothing
    of ``base``'s (default: this process's) ``AIRFLOW*`` or ``LAKEFS_GC_*`` settings."""
    root = project_root()
    base = os.environ if base is None else base
    env = {k: v for k, v in base.items() if not k.startswith(("AIRFLOW", "LAKEFS_GC_"))}
    env.update({
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
    })
    env.update(settings)
    return env


class AirflowProcesses:
    """Airflow CLI commands and long-running components, each component in its own session (process
    group) with its output in ``<home>/<name>.log``; stopped by PID."""

    def __init__(self, home: Path, env: dict[str, str]):
        self.home, self.env = Path(home), env
        self.procs: dict[str, subprocess.Popen] = {}

    def cli(self, *args: str, timeout: float = 180) -> str:
        """``airflow <args>``; its stdout. Raises naming the command and its output's end on failure."""
        r = subprocess.run([sys.executable, "-m", "airflow", *args], env=self.env, capture_output=True, text=True,
                           timeout=timeout, cwd=self.home)
        if r.returncode != 0:
            raise RuntimeError(f"airflow {' '.join(args)} failed (exit {r.returncode}):\n"
                               f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        return r.stdout

    def start(self, name: str, *args: str) -> subprocess.Popen:
        """Start component ``name`` (``args``: its airflow arguments; default :data:`COMPONENTS`)."""
        args = args or COMPONENTS[name]
        with open(self.home / f"{name}.log", "ab") as log:
            self.procs[name] = subprocess.Popen([sys.executable, "-m", "airflow", *args], env=self.env, stdout=log,
                                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.home,
                                                start_new_session=True)
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
        """The components and every process below them (task runners, spark-submit, its JVM)."""
        import psutil

        out: set[int] = set()
        for p in self.procs.values():
            if p.poll() is None:
                out.add(p.pid)
                try:
                    out.update(c.pid for c in psutil.Process(p.pid).children(recursive=True))
                except psutil.NoSuchProcess:
                    pass
        return out

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """SIGTERM each component's process group (scheduler first: no new tasks), wait up to
        ``timeout`` each, SIGKILL the group; then SIGKILL by PID any process of the tree left (one
        that left the group)."""
        import psutil

        left = []
        for pid in self.pids():
            try:
                left.append(psutil.Process(pid))
            except psutil.NoSuchProcess:
                pass
        order = sorted(self.procs, key=lambda n: ["scheduler", "triggerer", "dag-processor", "api-server"].index(n)
                       if n in COMPONENTS else -1)
        for name in order:
            p = self.procs[name]
            if p.poll() is None:
                _signal_group(p.pid, signal.SIGTERM)
                try:
                    p.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    pass
            _signal_group(p.pid, signal.SIGKILL)  # leftovers of the group once the leader is gone
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        for proc in left:
            try:
                if proc.is_running():
                    proc.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(left, timeout=timeout)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def listeners(pids: Iterable[int]) -> list[tuple[int, str, str, int]]:
    """Listening TCP sockets of ``pids``: (pid, process name, address, port)."""
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
    raise TimeoutError(f"{url} did not answer within {timeout:.0f}s (last: {last});\n"
                       + "\n".join(f"--- {n}.log\n{procs.tail(n, 1500)}" for n in procs.procs))


# ---------------------------------------------------------------- the user's settings

@dataclass(frozen=True)
class Setting:
    name: str
    help: str
    default: str | None = None
    secret: bool = False


SETTINGS = {s.name: s for s in (
    Setting("LAKEFS_GC_CONFIG", "the repositories file", "config/gc_repositories.yaml"),
    Setting("LAKEFS_ENDPOINT", "lakeFS's URL, e.g. http://127.0.0.1:8000 (/api/v1 is added)"),
    Setting("LAKEFS_ACCESS_KEY_ID", "lakeFS access key id"),
    Setting("LAKEFS_SECRET_ACCESS_KEY", "lakeFS secret access key", secret=True),
    Setting("LAKEFS_LOCAL_BLOCKSTORE_ROOT", "local:// namespaces: lakeFS's blockstore.local.path as this machine "
                                            "sees it (relative: from the project root)"),
    Setting("S3_ENDPOINT_URL", "s3:// namespaces: an S3-compatible endpoint (empty: AWS)"),
    Setting("S3_ACCESS_KEY_ID", "s3:// namespaces: access key id (empty: boto3's default chain)"),
    Setting("S3_SECRET_ACCESS_KEY", "s3:// namespaces: secret access key", secret=True),
    Setting("S3_REGION", "s3:// namespaces: region", "us-east-1"),
    Setting("SPARK_MASTER", "the Spark master of spark_default", "local[*]"),
    Setting("LAKEFS_GC_WORK_DIR", "the runs' work files", "var/airflow/work"),
    Setting("AIRFLOW_PORT", "the UI's port on 127.0.0.1", "8080"),
    Setting("AIRFLOW_USER", "the UI's user (admin role)", "admin"),
)}
_LINE = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def read_env_file(path: Path) -> dict[str, str]:
    """``KEY=value`` lines (``export`` allowed, ``#`` comments, values optionally quoted). A line of
    another shape or an unknown key is an error naming the file and the line."""
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
            raise SetupError(f"{path}:{n}: unknown setting {key} (known: {', '.join(SETTINGS)}; or any "
                             f"AIRFLOW_CONN_<ID> connection, or AIRFLOW__<SECTION>__<KEY> Airflow setting)")
        out[key] = value
    return out


@dataclass
class Plan:
    """What ``lakefs-gc airflow`` starts: settings resolved, connections built, nothing started."""

    state: Path
    port: int
    user: str
    config_path: Path
    dag_ids: list[str]
    entry_errors: list[str]
    connections: dict[str, str]        # AIRFLOW_CONN_<ID> -> JSON (holds secrets: never printed)
    described: dict[str, str]          # conn id -> what it points at, secrets left out
    airflow_settings: dict[str, str]   # AIRFLOW__* from the file
    work_dir: str
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)       # settings replaced by the lakeFS this command runs
    min_ages: dict[str, int] = field(default_factory=dict)  # repository -> min_age_seconds


def ui_connections(state: Path) -> set[str]:
    """The ids of the connections in this Airflow's database (added in the UI at an earlier start);
    none when there is no database yet or it cannot be read."""
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


def plan(env_file: Path | None, environ: Mapping[str, str], state: Path, port: int | None = None,
         lakefs: Mapping[str, str] | None = None) -> Plan:
    """Resolve the settings (environment over file over defaults) into a :class:`Plan`; a wrong
    setting raises :class:`SetupError` naming it. ``lakefs``: the ``LAKEFS_*`` settings of the lakeFS
    this command runs (``--lakefs real``), over the environment and the file (each value of theirs it
    replaces is noted in :attr:`Plan.notes`, secrets left out)."""
    root = project_root()
    from_file: dict[str, str] = {}
    if env_file is not None:
        if not env_file.is_file():
            raise SetupError(f"{env_file}: no such file: copy config/airflow.env.example to it and fill it in "
                             f"(or give the settings as environment variables and no --env-file)")
        from_file = read_env_file(env_file)
    where = str(env_file) if env_file else "the environment"

    lakefs = lakefs or {}

    def get(name: str) -> str | None:
        value = lakefs.get(name) or environ.get(name) or from_file.get(name) or SETTINGS[name].default
        return value.strip() if value else None

    notes = []
    for name, value in lakefs.items():
        for source, values in (("the environment", environ), (str(env_file), from_file)):
            given = (values.get(name) or "").strip()
            if given and given != value:
                shown = "" if SETTINGS[name].secret else f"={given}"
                notes.append(f"{name}{shown} in {source} is replaced by the lakeFS this command runs (--lakefs real)")

    cfg_path = Path(get("LAKEFS_GC_CONFIG"))
    cfg_path = cfg_path if cfg_path.is_absolute() else root / cfg_path
    try:
        cfg = load_config(cfg_path, strict=False)
    except ConfigError as e:
        raise SetupError(f"{e} (LAKEFS_GC_CONFIG in {where}; relative paths are from the project root, "
                         f"{root})") from None

    conns = {k: v for k, v in from_file.items() if k.startswith("AIRFLOW_CONN_")}
    conns.update({k: v for k, v in environ.items() if k.startswith("AIRFLOW_CONN_")})
    described: dict[str, str] = {k.removeprefix("AIRFLOW_CONN_").lower(): "given as " + k for k in conns}

    def own(conn_id: str, value: dict, text: str) -> None:
        key = "AIRFLOW_CONN_" + conn_id.upper()
        if key in conns:
            raise SetupError(f"{where}: {key} and the {text.split(' ')[0]} settings both define {conn_id}: "
                             f"keep one of them")
        conns[key] = json.dumps(value)
        described[conn_id] = text

    endpoint = get("LAKEFS_ENDPOINT")
    key_id, secret = get("LAKEFS_ACCESS_KEY_ID"), get("LAKEFS_SECRET_ACCESS_KEY")
    if endpoint:
        if not re.match(r"^https?://[^/\s]+", endpoint):
            raise SetupError(f"{where}: LAKEFS_ENDPOINT must be an http(s) URL such as http://127.0.0.1:8000, "
                             f"got {endpoint!r}")
        missing = [n for n, v in (("LAKEFS_ACCESS_KEY_ID", key_id), ("LAKEFS_SECRET_ACCESS_KEY", secret)) if not v]
        if missing:
            raise SetupError(f"{where}: LAKEFS_ENDPOINT is set but {' and '.join(missing)} "
                             f"{'is' if len(missing) == 1 else 'are'} not: set the keys of a lakeFS user")
        extra = {}
        blockroot = get("LAKEFS_LOCAL_BLOCKSTORE_ROOT")
        if blockroot:
            blockroot = str(root / blockroot)  # relative: from the project root (an absolute path stays)
            extra["local_blockstore_root"] = blockroot
        own("lakefs_default", {"conn_type": "lakefs_gc", "host": endpoint, "login": key_id, "password": secret,
                               **({"extra": extra} if extra else {})},
            f"lakeFS {endpoint}" + (f", local blockstore root {blockroot}" if blockroot else ""))
    elif key_id or secret:
        raise SetupError(f"{where}: lakeFS keys are set but LAKEFS_ENDPOINT is not: set lakeFS's URL")

    s3_endpoint, s3_key, s3_secret = get("S3_ENDPOINT_URL"), get("S3_ACCESS_KEY_ID"), get("S3_SECRET_ACCESS_KEY")
    if bool(s3_key) != bool(s3_secret):
        raise SetupError(f"{where}: set both S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY, or neither "
                         f"(boto3's default chain)")
    if s3_endpoint or s3_key:
        extra = {"region_name": get("S3_REGION")}
        if s3_endpoint:
            if not re.match(r"^https?://[^/\s]+", s3_endpoint):
                raise SetupError(f"{where}: S3_ENDPOINT_URL must be an http(s) URL, got {s3_endpoint!r}")
            extra["endpoint_url"] = s3_endpoint
        own("aws_default", {"conn_type": "aws", **({"login": s3_key, "password": s3_secret} if s3_key else {}),
                            "extra": extra},
            f"S3 {s3_endpoint or 'AWS'} ({'keys given' if s3_key else 'default credentials chain'})")
    if "AIRFLOW_CONN_SPARK_DEFAULT" not in conns or environ.get("SPARK_MASTER") or from_file.get("SPARK_MASTER"):
        own("spark_default", {"conn_type": "spark", "host": get("SPARK_MASTER")}, f"Spark {get('SPARK_MASTER')}")

    warnings = []
    in_ui = ui_connections(state)
    for repo in cfg.repositories:
        for kind, conn_id in (("lakeFS", repo.lakefs_conn_id), ("Spark", repo.spark_conn_id)):
            # AIRFLOW_CONN_<ID>: Airflow upper-cases the id; or added in the UI at an earlier start
            if conn_id.lower() not in described and conn_id not in in_ui:
                hint = ("LAKEFS_ENDPOINT, LAKEFS_ACCESS_KEY_ID and LAKEFS_SECRET_ACCESS_KEY"
                        if conn_id == "lakefs_default" else f"AIRFLOW_CONN_{conn_id.upper()}")
                warnings.append(f"{repo.repository}: its {kind} connection {conn_id!r} is not defined: its runs fail "
                                f"until you set {hint} in {where} or add it in the UI (Admin > Connections)")

    port_text = str(port) if port is not None else get("AIRFLOW_PORT")
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise SetupError(f"{where}: AIRFLOW_PORT must be a port number, got {port_text!r}")
    user = get("AIRFLOW_USER")
    if not re.match(r"^[A-Za-z0-9_.@-]{1,64}$", user):
        raise SetupError(f"{where}: AIRFLOW_USER must be a user name (letters, digits, _ . @ -), got {user!r}")
    work_dir = get("LAKEFS_GC_WORK_DIR")
    if not work_dir.startswith(("/", "s3://", "s3a://", "file:")):
        work_dir = str(root / work_dir)
    settings = {k: v for k, v in from_file.items() if k.startswith("AIRFLOW__")}
    return Plan(state=state, port=int(port_text), user=user, config_path=cfg.path,
                dag_ids=[r.dag_id for r in cfg.repositories], entry_errors=list(cfg.entry_errors),
                connections=conns, described=described, airflow_settings=settings, work_dir=work_dir,
                warnings=warnings, notes=notes, min_ages={r.repository: r.min_age_seconds for r in cfg.repositories})


# ---------------------------------------------------------------- the state directory

def _private_json(path: Path, make: dict[str, str]) -> dict[str, str]:
    """A JSON object only its owner can read: read it, add the keys of ``make`` it lacks, write it back."""
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


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((LOOPBACK, port))
            return True
        except OSError:
            return False


def component_env(p: Plan, base: Mapping[str, str]) -> dict[str, str]:
    from cryptography.fernet import Fernet

    keys = _private_json(p.state / "secrets.json", {"jwt_secret": secrets.token_hex(32),
                                                    "fernet_key": Fernet.generate_key().decode()})
    env = airflow_env(p.state, p.port, f"sqlite:///{p.state / 'airflow.db'}", p.config_path, base=base, **{
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__AUTH_MANAGER": SIMPLE_AUTH_MANAGER,
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{p.user}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(p.state / "passwords.json"),
        "AIRFLOW__API_AUTH__JWT_SECRET": keys["jwt_secret"],  # kept: a restart keeps the UI's sessions
        "AIRFLOW__CORE__FERNET_KEY": keys["fernet_key"],      # connections added in the UI, encrypted
        "AIRFLOW__CORE__PARALLELISM": "4",
        # the connection form's Test button (Airflow's default: Disabled); the file may set it back
        "AIRFLOW__CORE__TEST_CONNECTION": "Enabled",
        "LAKEFS_GC_WORK_DIR": p.work_dir,
    })
    env.update(p.airflow_settings)
    env.update(p.connections)
    return env


# ---------------------------------------------------------------- --lakefs real: lakeFS itself

def start_lakefs(home: Path, timeout: float = 60.0):
    """lakeFS 1.84 itself (``lakefs_sandbox.real_lakefs``, local blockstore) in ``home``, whose state
    stays there from one start to the next: its admin's keys generated at the first start into
    ``home/keys.json`` (0600) and reused at the next ones (lakeFS is then already set up). Its handle
    (``.url``, ``.access_key``, ``.secret_key``, ``.local_root``, ``.proc``, ``.stop()``)."""
    from lakefs_sandbox import real_lakefs

    home.mkdir(parents=True, exist_ok=True)
    key_id, secret = real_lakefs.new_keys()
    keys = _private_json(home / "keys.json", {"access_key_id": key_id, "secret_access_key": secret})
    try:
        return real_lakefs.start(home, "local", timeout=timeout, access_key=keys["access_key_id"],
                                 secret_key=keys["secret_access_key"])
    except FileNotFoundError as e:  # no binary: the set-up builds it
        raise RuntimeError(str(e)) from None
    except RuntimeError as e:
        if "refuses the given keys" not in str(e):
            raise
        raise RuntimeError(f"{e}: {home}/keys.json is not the one of the lakeFS in {home}; put that one back, "
                           f"or remove {home} to start lakeFS over (its repositories go with it)") from None


def lakefs_settings(server) -> dict[str, str]:
    """The ``LAKEFS_*`` settings of a lakeFS this command runs (``plan(..., lakefs=...)``)."""
    return {"LAKEFS_ENDPOINT": server.url, "LAKEFS_ACCESS_KEY_ID": server.access_key,
            "LAKEFS_SECRET_ACCESS_KEY": server.secret_key, "LAKEFS_LOCAL_BLOCKSTORE_ROOT": server.local_root}


def seed_sample(server) -> tuple[bool, int]:
    """``sample-repo`` on ``local://sample-repo`` (``lakefs_sandbox.seed``, commits dated back ten
    days through the commit API) unless the repository exists; (seeded now, its creation time)."""
    from lakefs_sdk.exceptions import ApiException, NotFoundException

    from lakefs_sandbox.seed import seed

    client = server.client()
    try:
        return False, int(client.repositories_api.get_repository(SAMPLE_REPO).creation_date)
    except NotFoundException:
        pass
    try:
        seed(client, SAMPLE_REPO, SAMPLE_NAMESPACE, backdate=True, local_root=server.local_root)
        return True, int(client.repositories_api.get_repository(SAMPLE_REPO).creation_date)
    except ApiException as e:
        raise RuntimeError(f"seeding {SAMPLE_REPO} on {SAMPLE_NAMESPACE} failed: lakeFS answered {e.status} "
                           f"{e.reason}: {str(e.body)[:300]}") from None


def _lakefs_lines(server, home: Path, seeded: bool, created: int, p: Plan) -> list[str]:
    """What the summary says of the lakeFS this command runs: where, how to sign in (the secret only
    as where it is), the placeholder UI, the sample repository and when a GC run has garbage to take."""
    from lakefs_sandbox.real_lakefs import VERSION

    keys = home / "keys.json"
    creds = ("$(python3 -c 'import json,sys; k=json.load(open(sys.argv[1])); "
             "print(k[\"access_key_id\"]+\":\"+k[\"secret_access_key\"])' " + f"{keys})")
    lines = [
        f"  lakeFS API   {server.api_url}   (lakeFS {VERSION} run by this command, pid {server.proc.pid}; "
        f"state in {home}, log {home}/lakefs.log)",
        f"  its login    access key id {server.access_key}, secret access key in {keys} (0600); HTTP basic "
        f"auth, e.g.",
        f"               curl -u \"{creds}\" {server.api_url}/repositories",
        f"  lakeFS UI    none: {server.url}/ is a placeholder page (this lakeFS is built without its web UI); "
        f"use the API",
    ]
    when = "seeded now" if seeded else "seeded at an earlier start"
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(created))
    lines.append(f"  {SAMPLE_REPO}  {when} ({stamp}) on {SAMPLE_NAMESPACE}, in {server.local_root}/{SAMPLE_REPO}: "
                 f"commits dated back ten days, GC retention 1 day")
    if SAMPLE_REPO in p.min_ages:
        age = p.min_ages[SAMPLE_REPO]
        ready = time.strftime("%Y-%m-%d %H:%M", time.localtime(created + age))
        lines.append(f"               a GC run deletes its garbage once the objects are older than the minimum age "
                     f"(min_age_seconds {age}, and lakeFS's grace period), i.e. from about {ready} on; "
                     f"before that it deletes nothing")
    else:
        lines.append(f"               not in {p.config_path}: no DAG collects it")
    return lines


# ---------------------------------------------------------------- the command

class _Stop(Exception):
    pass


def _on_signal(signum, _frame):
    raise _Stop(signal.Signals(signum).name)


def run(env_file: Path | None, state: Path, port: int | None = None, out=sys.stdout,
        environ: Mapping[str, str] | None = None, lakefs: str = "settings") -> int:
    """Start everything, print where to sign in, wait for Ctrl-C or a component's exit, stop everything.
    ``lakefs``: ``settings`` (the lakeFS of the settings) or ``real`` (lakeFS itself, run by this command
    in ``<state>/lakefs``, :func:`start_lakefs`)."""
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
            p = plan(env_file, environ, state, port, lakefs={
                "LAKEFS_ENDPOINT": f"http://{LOOPBACK}:1", "LAKEFS_ACCESS_KEY_ID": "-", "LAKEFS_SECRET_ACCESS_KEY": "-",
                "LAKEFS_LOCAL_BLOCKSTORE_ROOT": str(lakefs_home / "block")})
        else:
            p = plan(env_file, environ, state, port)
    except SetupError as e:
        say(f"lakefs-gc airflow: error: {e}")
        return 2
    if not _port_free(p.port):
        say(f"lakefs-gc airflow: error: port {p.port} on {LOOPBACK} is in use: set AIRFLOW_PORT "
            f"(in {env_file or 'the environment'}) or --port to a free one")
        return 2
    state.mkdir(parents=True, exist_ok=True)
    (state / "logs").mkdir(exist_ok=True)
    password = _private_json(state / "passwords.json", {p.user: secrets.token_urlsafe(12)})[p.user]
    procs = AirflowProcesses(state, {})
    server = None
    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    url = f"http://{LOOPBACK}:{p.port}"
    try:
        if real:
            say(f"lakefs-gc airflow: starting lakeFS {real_lakefs.VERSION} (local blockstore) in {lakefs_home} "
                f"(log: {lakefs_home}/lakefs.log)")
            server = start_lakefs(lakefs_home)
            say(f"lakefs-gc airflow: lakeFS at {server.url} (pid {server.proc.pid}); looking for {SAMPLE_REPO}")
            seeded, created = seed_sample(server)
            if seeded:
                say(f"lakefs-gc airflow: seeded {SAMPLE_REPO} on {SAMPLE_NAMESPACE}")
            p = plan(env_file, environ, state, port, lakefs=lakefs_settings(server))
        procs.env = component_env(p, environ)
        say(f"lakefs-gc airflow: state in {state}; preparing the metadata database (logs: {state}/db-migrate.log)")
        log = procs.cli("db", "migrate", timeout=MIGRATE_TIMEOUT)
        (state / "db-migrate.log").write_text(log)
        for name in COMPONENTS:
            procs.start(name)
        say(f"lakefs-gc airflow: started {', '.join(f'{n} (pid {pr.pid})' for n, pr in procs.procs.items())}")
        wait_http(f"{url}/api/v2/monitor/health", procs, START_TIMEOUT)
        wrong = [x for x in listeners(procs.pids() | ({server.proc.pid} if server else set())) if x[2] != LOOPBACK]
        if wrong:
            say("lakefs-gc airflow: error: listening beyond 127.0.0.1, stopping: "
                + "; ".join(f"{name} (pid {pid}) on {ip}:{port_}" for pid, name, ip, port_ in wrong))
            return 1
        say()
        say(f"  Airflow UI   {url}")
        say(f"  sign in as   {p.user} / {password}   (kept in {state}/passwords.json)")
        if server is not None:
            for line in _lakefs_lines(server, lakefs_home, seeded, created, p):
                say(line)
        say(f"  repositories {p.config_path}: {', '.join(p.dag_ids) or 'no good entry'}")
        for error in p.entry_errors:
            say(f"  BAD ENTRY    {error}")
        for conn_id, text in sorted(p.described.items()):
            say(f"  connection   {conn_id}: {text}")
        for note in p.notes:
            say(f"  NOTE         {note}")
        for warning in p.warnings:
            say(f"  WARNING      {warning}")
        say(f"  logs         {state}/*.log, task logs in {state}/logs")
        say("  The DAGs start paused: unpause one to let its schedule run. Ctrl-C stops everything"
            + (", lakeFS too." if server else "."))
        say()
        while True:
            dead = procs.dead()
            if dead:
                name, code = next(iter(dead.items()))
                say(f"lakefs-gc airflow: error: airflow {name} exited with {code}; stopping the others. "
                    f"The end of {state}/{name}.log:\n{procs.tail(name, 2000)}")
                return 1
            if server is not None and server.proc.poll() is not None:
                say(f"lakefs-gc airflow: error: lakeFS exited with {server.proc.returncode}; stopping Airflow. "
                    f"The end of {lakefs_home}/lakefs.log:\n{server.log_tail(2000)}")
                return 1
            time.sleep(1)
    except _Stop as e:
        say(f"lakefs-gc airflow: {e}: stopping")
        return 0
    except SetupError as e:
        say(f"lakefs-gc airflow: error: {e}")
        return 2
    except (RuntimeError, TimeoutError, subprocess.TimeoutExpired) as e:
        say(f"lakefs-gc airflow: error: {e}")
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
            say("lakefs-gc airflow: stopped " + ", ".join(stopped))


def main(env_file: str | None = None, state_dir: str | None = None, port: int | None = None,
         lakefs: str | None = None) -> int:
    """``lakefs-gc airflow``: paths relative to the working directory, defaults under the project.
    With ``lakefs="real"`` a missing default settings file is no error: lakeFS's settings come from
    the lakeFS the command runs, the others have defaults."""
    root = project_root()
    lakefs = lakefs or "settings"
    env = root / "config" / "airflow.env" if env_file is None else (Path(env_file) if env_file else None)
    if lakefs == "real" and env_file is None and not env.exists():
        print(f"lakefs-gc airflow: no {env}: the defaults and the environment only", flush=True)
        env = None
    state = Path(state_dir) if state_dir else root / "var" / "airflow"
    return run(env, state.resolve(), port, lakefs=lakefs)

