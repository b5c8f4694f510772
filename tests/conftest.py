"""Shared fixtures: a moto S3 server, the lakeFS API emulator, and an SDK client for it.

Servers run as subprocesses on free 127.0.0.1 ports, are waited for with a bounded timeout, and are
stopped by PID at teardown.
"""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from lakefs_gc.spark import jvm
from lakefs_sandbox.emulator.launcher import free_port, start_server, stop_group

REPO_ROOT = Path(__file__).resolve().parents[1]
# a deadline, not a wait: on CI's loaded 2 cores Azurite once took over 30 s to answer its first list
READY_TIMEOUT = 120.0
EMULATOR_ACCESS_KEY = "AKIAIOSFOLEMULATOR"
EMULATOR_SECRET_KEY = "emulator/secret/key"
MOTO_ACCESS_KEY = "AKIAMOTOTESTACCESS01"  # distinctive: the secrets checks grep for them
MOTO_SECRET_KEY = "moto/test/secret/key/0001"

# One JVM class archive for the whole suite, the one the set-up made (lakefs_gc.spark.jvm): the Spark
# drivers the tests start, and the Airflow tasks' own fast start, which inherit this environment (a
# test that moves the package's cache, LAKEFS_GC_CACHE_DIR, does not move the archive)
os.environ.setdefault(jvm.ENV_ARCHIVE_DIR, str(jvm.archive_dir()))


# Seconds each long file took in ``make test`` (2026-11-27, a fresh clone at 22b6105, 4 workers on 2
# cores, a quiet machine): only the order in which workers take files depends on it (longest first, so
# that none starts last and runs alone).
FILE_SECONDS = {
    "stack/test_compose_stack.py": 650,  # the end-to-end run, then the short chaos run (327 s alone)
    "sandbox/chaos/test_checker.py": 20,
    "airflow/e2e/test_fleet.py": 313,
    "airflow/e2e/test_e2e_cluster.py": 488,
    "bench/test_reference.py": 30,
    "real_lakefs/test_runs_in_a_row.py": 242,
    "runs/test_random_histories.py": 231,
    "airflow/wheel/test_wheel.py": 192,
    "airflow/e2e/test_e2e_real_lakefs.py": 189,
    "runs/test_faults.py": 157,
    "steps/test_delete.py": 144,
    "airflow/e2e/test_backfill.py": 330,  # the backfill, and the approval: reject, time-out, approve
    "airflow/lineage/test_lineage.py": 90,
    "airflow/e2e/test_e2e_deferred.py": 60,
    "steps/test_delete_storm.py": 30,
    "real_lakefs/test_histories.py": 134,
    "listing/test_uncommitted.py": 130,
    "runs/test_demo.py": 108,
    "sweeping/test_deleter.py": 96,
    "runs/test_jobs_local.py": 91,
    "airflow/dags/test_dag_run.py": 89,
    "real_lakefs/test_bench_reference.py": 88,
    "real_lakefs/test_holes.py": 85,
    "airflow/e2e/test_e2e_histories.py": 81,
    "listing/test_staged.py": 76,
    "real_lakefs/test_interleavings.py": 64,
    "airflow/ui/test_forms.py": 54,
    "runs/test_hostile_inputs.py": 46,
    "airflow/local_airflow/test_local_airflow.py": 45,
    "storage/test_backends.py": 36,
    "cli/test_cli_report.py": 35,
    "listing/test_holders.py": 60,
    "real_lakefs/test_space.py": 25,
    "runs/test_cost.py": 52,
    "airflow/e2e/test_e2e_keep_rules.py": 35,
    "real_lakefs/test_doctor.py": 60,
}

# LAKEFS_GC_TEST_TIMELINE=<file>: one JSON line per test (worker, test, start, wall and CPU seconds of
# the worker and of the children it waited for), to see where a suite's time goes
TIMELINE = os.environ.get("LAKEFS_GC_TEST_TIMELINE")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not TIMELINE:
        yield
        return
    import json
    import resource
    import time

    def cpu(who):
        r = resource.getrusage(who)
        return r.ru_utime + r.ru_stime

    t0, s0, c0 = time.time(), cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
    yield
    line = {
        "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
        "test": item.nodeid,
        "start": round(t0, 1),
        "wall": round(time.time() - t0, 1),
        "cpu_self": round(cpu(resource.RUSAGE_SELF) - s0, 1),
        "cpu_children": round(cpu(resource.RUSAGE_CHILDREN) - c0, 1),
    }
    with open(TIMELINE, "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


def pytest_collection_modifyitems(config, items):
    """The slow files first (``make test`` runs ``--dist loadfile --no-loadscope-reorder``: workers
    take whole files in this order): the end-to-end ones, then the Spark ones, then the rest, each
    group longest first (``FILE_SECONDS``), so that the long tests do not start last and leave one
    worker running alone at the end."""
    here = Path(__file__).parent

    def rank(item) -> int:
        return 0 if item.get_closest_marker("e2e") else 1 if item.get_closest_marker("spark") else 2

    by_file: dict[Path, int] = {}
    for item in items:
        by_file[item.path] = min(by_file.get(item.path, 2), rank(item))

    def key(item) -> tuple[int, int]:
        rel = item.path.relative_to(here).as_posix() if item.path.is_relative_to(here) else ""
        return by_file[item.path], -FILE_SECONDS.get(rel, 0)

    items.sort(key=key)  # stable: a file's tests keep their order


def stop_process(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Stop a process we started (in its own session), by its PID: SIGTERM, then SIGKILL."""
    stop_group(proc, timeout)


def _start(cmd: list[str], log: Path, ready_url: str, env: dict | None = None) -> subprocess.Popen:
    return start_server(cmd, log, ready_url, env, timeout=READY_TIMEOUT)


@dataclass
class MotoServer:
    endpoint_url: str
    proc: subprocess.Popen
    access_key: str = MOTO_ACCESS_KEY
    secret_key: str = MOTO_SECRET_KEY
    region: str = "us-east-1"

    def s3_options(self):
        from lakefs_gc.storage import S3Options

        return S3Options(
            endpoint_url=self.endpoint_url,
            access_key_id=self.access_key,
            secret_access_key=self.secret_key,
            region=self.region,
        )

    options = s3_options  # the same name as the other stores' (lakefs_sandbox.cloud_servers.CloudServer)

    def client(self):
        from lakefs_gc.storage import make_s3_client

        return make_s3_client(self.s3_options())

    def create_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory) -> Iterator[MotoServer]:
    """A moto S3 server on 127.0.0.1 (one per test session)."""
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    proc = _start(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        log,
        f"http://127.0.0.1:{port}/moto-api/",
    )
    try:
        yield MotoServer(f"http://127.0.0.1:{port}", proc)
    finally:
        stop_process(proc)


def _serve(start, tmp_path_factory, name: str):
    """A cloud stand-in (lakefs_sandbox.cloud_servers) for the session, stopped by PID at its end."""
    server = start(tmp_path_factory.mktemp(name), timeout=READY_TIMEOUT)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def azurite(tmp_path_factory):
    """Azurite's blob service on 127.0.0.1 (one per test session; scripts/setup.sh installs it)."""
    from lakefs_sandbox.cloud_servers import start_azurite

    yield from _serve(start_azurite, tmp_path_factory, "azurite")


@pytest.fixture(scope="session")
def fake_gcs(tmp_path_factory):
    """fake-gcs-server on 127.0.0.1 (one per test session; scripts/setup.sh builds it)."""
    from lakefs_sandbox.cloud_servers import start_fake_gcs

    yield from _serve(start_fake_gcs, tmp_path_factory, "fake-gcs")


# local:// namespace handed out by an emulator -> its blockstore.local.path (the newest wins)
LOCAL_ROOTS: dict[str, str] = {}


def ns_storage(ns: str, store=None):
    """The storage of a namespace an emulator handed out (local: under that emulator's root);
    ``store``: the moto server, Azurite or fake-gcs-server it is on."""
    from lakefs_gc.storage import open_storage

    return open_storage(ns, store.options() if store is not None else None, LOCAL_ROOTS.get(ns.rstrip("/")))


def ns_rel(ns: str, uri: str) -> str:
    """A location or physical address lakeFS returned, relative to namespace ``ns``."""
    from lakefs_gc.storage import parse_namespace, relative_to

    rel = relative_to(parse_namespace(ns, LOCAL_ROOTS.get(ns.rstrip("/"))).roots(), uri)
    assert rel is not None, (ns, uri)
    return rel


@dataclass
class Emulator:
    """A running emulator process."""

    url: str  # http://127.0.0.1:PORT
    access_key: str
    secret_key: str
    proc: subprocess.Popen
    root: Path  # scratch directory = the emulator's blockstore.local.path (namespaces local://ns/<name>)
    blockstore_type: str
    args: list[str] = field(default_factory=list)
    cloud: object | None = None  # the CloudServer of an azure or gs blockstore

    @property
    def api_url(self) -> str:
        return self.url + "/api/v1"

    def namespace(self, name: str, bucket: str = "") -> str:
        """A fresh storage namespace URI of this emulator's blockstore type."""
        if self.blockstore_type == "s3":
            return f"s3://{bucket}/{name}"
        if self.cloud is not None:
            return self.cloud.namespace(self.cloud.create(bucket or "lakefs"), name)
        ns = f"local://ns/{name}"  # relative to blockstore.local.path, as lakeFS has it
        LOCAL_ROOTS[ns] = str(self.root)
        return ns

    @property
    def local_root(self) -> str | None:
        """blockstore.local.path (what the GC's lakeFS connection gives as local_blockstore_root)."""
        return str(self.root) if self.blockstore_type == "local" else None

    def _private(self, method: str, path: str, body: dict | None = None):
        """Call one of the emulator's private endpoints (``/_emulator/...``); the JSON answer or None."""
        import base64
        import json

        req = urllib.request.Request(
            self.url + path,
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={
                "Content-Type": "application/json",
                "Authorization": "Basic " + base64.b64encode(f"{self.access_key}:{self.secret_key}".encode()).decode(),
            },
        )
        with urllib.request.urlopen(req, timeout=60) as r:
            raw = r.read()
            return json.loads(raw) if raw else None

    def set_clock(self, **body: float) -> dict:
        """The emulator's private clock endpoint (offset=, now= or advance= seconds)."""
        return self._private("PUT", "/_emulator/clock", body)

    def compact(self, repo: str, branch: str) -> int:
        """Staging compaction of ``branch`` (the emulator's private endpoint); returns entries moved."""
        return self._private("POST", f"/_emulator/compact/{repo}/{branch}", {})["compacted"]

    def set_faults(self, *rules: dict) -> None:
        """Injected faults (include/lakefs_sandbox/emulator/faults.py); none clears them."""
        self._private("PUT", "/_emulator/faults", {"rules": list(rules)})

    def faults(self) -> list[dict]:
        return self._private("GET", "/_emulator/faults")["rules"]

    def client(self):
        import lakefs_sdk
        from lakefs_sdk.client import LakeFSClient

        return LakeFSClient(
            lakefs_sdk.Configuration(host=self.api_url, username=self.access_key, password=self.secret_key)
        )


def start_emulator(
    root: Path,
    *extra: str,
    state: Path | None = None,
    s3: MotoServer | None = None,
    access_key: str = EMULATOR_ACCESS_KEY,
    secret_key: str = EMULATOR_SECRET_KEY,
    cloud=None,
) -> Emulator:
    """An emulator on the local blockstore, on moto (``s3``), or on Azurite / fake-gcs-server (``cloud``)."""
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    args = [
        "--listen",
        f"127.0.0.1:{port}",
        "--access-key",
        access_key,
        "--secret-key",
        secret_key,
        "--local-path",
        str(root),
        *extra,
    ]
    if state is not None:
        args += ["--state", str(state)]
    if s3 is not None:
        args += [
            "--s3-endpoint",
            s3.endpoint_url,
            "--s3-access-key",
            s3.access_key,
            "--s3-secret-key",
            s3.secret_key,
            "--s3-region",
            s3.region,
        ]
    env, kind = {}, "s3" if s3 is not None else "local"
    if cloud is not None and cloud.kind == "azure":
        from lakefs_sandbox.cloud_servers import AZURITE_KEY

        args += ["--azure-account-url", cloud.account_url]
        env["LAKEFS_EMULATOR_AZURE_ACCOUNT_KEY"], kind = AZURITE_KEY, "azure"
    elif cloud is not None:
        args += ["--gcs-endpoint", cloud.endpoint_url]
        kind = "gs"
    log = root / f"emulator-{port}.log"
    proc = _start(
        [sys.executable, "-m", "lakefs_sandbox.emulator", *args],
        log,
        f"http://127.0.0.1:{port}/api/v1/healthcheck",
        env=env,
    )
    return Emulator(f"http://127.0.0.1:{port}", access_key, secret_key, proc, root, kind, args, cloud)


@pytest.fixture
def lakefs_emulator_factory(tmp_path) -> Iterator[Callable[..., Emulator]]:
    """Start emulators with extra flags: ``factory(*flags, state=None, s3=None, cloud=None)``; all stopped at teardown."""
    started: list[Emulator] = []

    def factory(
        *extra: str, state: Path | None = None, s3: MotoServer | None = None, root: Path | None = None, cloud=None
    ):
        emu = start_emulator(root or tmp_path / f"emu{len(started)}", *extra, state=state, s3=s3, cloud=cloud)
        started.append(emu)
        return emu

    yield factory
    for emu in started:
        stop_process(emu.proc)


@pytest.fixture(scope="module")
def lakefs_emulator(tmp_path_factory) -> Iterator[Emulator]:
    """One emulator (local blockstore, in-memory state) per test module."""
    emu = start_emulator(tmp_path_factory.mktemp("lakefs_emulator"))
    try:
        yield emu
    finally:
        stop_process(emu.proc)


@pytest.fixture
def lakefs_client(lakefs_emulator):
    """A lakefs-sdk client of ``lakefs_emulator``; every response it receives is checked against swagger.yml."""
    from tests.support.openapi import ResponseRecorder

    client = lakefs_emulator.client()
    recorder = ResponseRecorder(client)
    client.recorder = recorder
    yield client
    problems = recorder.problems()
    assert not problems, "responses not matching swagger.yml:\n" + "\n".join(problems)


@pytest.fixture(scope="session")
def spark():
    """One in-process local SparkSession for every test that runs step functions without
    spark-submit (the jobs' own code, minus the process start)."""
    from lakefs_sandbox.inprocess import local_session
    from tests.support.jvm import java_options

    session = local_session("lakefs-gc tests", java_options=java_options())
    yield session
    session.stop()


# ---------------------------------------------------------------------------------------------
# lakeFS itself (lakefs_sandbox.real_lakefs: the 1.84.0 server scripts/setup.sh builds)

from lakefs_sandbox.real_lakefs import RealLakeFS  # noqa: E402


class RealServer(RealLakeFS):
    """A real lakeFS whose ``local://`` namespaces ``ns_storage`` can open (as the emulator's)."""

    def namespace(self, name: str, bucket: str = "") -> str:
        ns = super().namespace(name, bucket)
        if self.blockstore_type == "local":
            LOCAL_ROOTS[ns] = str(self.root)
        return ns


BLOCKSTORE_FIXTURES = {"local": None, "s3": "moto_server", "azure": "azurite", "gs": "fake_gcs"}


def start_real_lakefs(workdir: Path, kind: str = "local", store=None) -> RealServer:
    from lakefs_sandbox import real_lakefs

    return real_lakefs.start(workdir, kind, store, timeout=READY_TIMEOUT * 2, cls=RealServer)


@pytest.fixture(scope="session")
def real_lakefs(tmp_path_factory, request) -> Iterator[Callable[[str], RealServer]]:
    """``real_lakefs(kind)``: lakeFS 1.84 on the ``local``, ``s3`` (moto), ``azure`` (Azurite) or
    ``gs`` (fake-gcs-server) blockstore; one server per kind and session, started on first use in
    its own working directory, stopped by PID at the end."""
    servers: dict[str, RealServer] = {}

    def get(kind: str) -> RealServer:
        if kind not in servers:
            fixture = BLOCKSTORE_FIXTURES[kind]
            store = request.getfixturevalue(fixture) if fixture else None
            servers[kind] = start_real_lakefs(tmp_path_factory.mktemp(f"lakefs-{kind}"), kind, store)
        return servers[kind]

    yield get
    for server in servers.values():
        server.stop()
