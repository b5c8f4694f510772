"""A throwaway PostgreSQL cluster for Airflow's metadata database, as a user running a scheduler has.

Debian's server binaries (``/usr/lib/postgresql/<version>/bin``, the ``postgresql`` package that
``scripts/setup.sh`` installs), a fresh ``initdb`` in its own temporary directory, the postmaster
listening on 127.0.0.1 only (a free port) with its unix socket in that directory, and one role and
database for Airflow reached over TCP with a password (scram-sha-256), as Airflow's set-up guide
does it. PostgreSQL refuses to run as root: as root the cluster runs as the ``postgres`` OS user,
otherwise as the current user. The postmaster is our child and is stopped by its PID.
"""

from __future__ import annotations

import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import psycopg2

from tests.conftest import free_port

INSTALL_HINT = (
    "install Debian's PostgreSQL server (`make setup` as root does it: apt-get install postgresql), "
    "or put a PostgreSQL server's bin directory (with initdb and postgres) on PATH"
)


def server_bindir() -> Path:
    """The newest Debian PostgreSQL server bin directory, else the one holding ``initdb`` on PATH."""
    found = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/initdb")]
    if found:
        return max(found, key=lambda d: [int(x) for x in re.findall(r"\d+", d.parent.name)] or [0])
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).resolve().parent
    raise RuntimeError(
        f"no PostgreSQL server found (no /usr/lib/postgresql/*/bin/initdb, no initdb on PATH): {INSTALL_HINT}"
    )


@dataclass
class Postgres:
    host: str
    port: int
    user: str
    password: str
    dbname: str
    bindir: Path

    @property
    def sqlalchemy_url(self) -> str:
        return f"postgresql+psycopg2://{self.user}:{self.password}@{self.host}:{self.port}/{self.dbname}"

    def connect(self, timeout: int = 10):
        return psycopg2.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            dbname=self.dbname,
            connect_timeout=timeout,
            options=f"-c statement_timeout={timeout * 1000}",
        )

    def dump(self, out: Path, timeout: float = 120) -> None:
        """The whole database as SQL text (pg_dump), e.g. to grep it for what must not be stored."""
        r = subprocess.run(
            [
                str(self.bindir / "pg_dump"),
                "-h",
                self.host,
                "-p",
                str(self.port),
                "-U",
                self.user,
                "-d",
                self.dbname,
                "-f",
                str(out),
                "--no-password",
            ],
            env={**os.environ, "PGPASSWORD": self.password, "PGCONNECT_TIMEOUT": "10"},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if r.returncode != 0:
            raise RuntimeError(f"pg_dump failed ({r.returncode}): {r.stderr[-2000:]}")


def _stop(proc: subprocess.Popen, timeout: float) -> None:
    """Fast shutdown (SIGINT: clients disconnected, a clean checkpoint), then immediate (SIGQUIT),
    then SIGKILL of the postmaster's process group (we started it in its own session)."""
    for sig in (signal.SIGINT, signal.SIGQUIT):
        if proc.poll() is not None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(timeout=timeout)
            return
        except subprocess.TimeoutExpired:
            pass
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=timeout)


@contextmanager
def postgres_cluster(
    log: Path, dbname: str = "airflow", user: str = "airflow", timeout: float = 60.0
) -> Iterator[Postgres]:
    """Start a fresh cluster (initdb, postmaster), create ``user`` and ``dbname`` owned by it, yield
    how to reach it, and stop the postmaster by PID and remove the cluster's directory on exit.
    The server's output goes to ``log``."""
    bindir = server_bindir()
    run_as: dict = {}
    if os.geteuid() == 0:
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            raise RuntimeError(
                f"running as root, but there is no `postgres` OS user to run PostgreSQL as "
                f"(PostgreSQL refuses to run as root): {INSTALL_HINT}"
            ) from None
        run_as = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
    base = Path(tempfile.mkdtemp(prefix="lakefs-gc-pg-"))  # short: the unix socket path is limited to 107 bytes
    proc = None
    try:
        if run_as:
            os.chown(base, run_as["user"], run_as["group"])
        data = base / "data"
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base), "LC_ALL": "C"}
        init = subprocess.run(
            [
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--no-sync",
            ],
            env=env,
            cwd=base,
            capture_output=True,
            text=True,
            timeout=timeout,
            **run_as,
            check=False,
        )
        if init.returncode != 0:
            raise RuntimeError(f"initdb failed ({init.returncode}):\n{init.stdout[-2000:]}\n{init.stderr[-2000:]}")
        port = free_port()
        # fsync off: a throwaway cluster nobody recovers after a crash; locking and isolation are untouched
        with open(log, "ab") as fh:
            proc = subprocess.Popen(
                [
                    str(bindir / "postgres"),
                    "-D",
                    str(data),
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(port),
                    "-k",
                    str(base),
                    "-c",
                    "fsync=off",
                    "-c",
                    "full_page_writes=off",
                ],
                env=env,
                cwd=base,
                stdout=fh,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                **run_as,
            )
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"postgres exited with {proc.returncode} before accepting connections:\n"
                    f"{log.read_text(errors='replace')[-3000:]}"
                )
            try:
                admin = psycopg2.connect(
                    host=str(base), port=port, user="postgres", dbname="postgres", connect_timeout=5
                )
                break
            except psycopg2.OperationalError:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"postgres not accepting connections after {timeout:.0f}s:\n"
                        f"{log.read_text(errors='replace')[-3000:]}"
                    ) from None
                time.sleep(0.1)
        password = secrets.token_hex(16)
        try:
            admin.autocommit = True
            with admin.cursor() as cur:
                cur.execute(f'CREATE ROLE "{user}" LOGIN PASSWORD %s', (password,))
                cur.execute(f'CREATE DATABASE "{dbname}" OWNER "{user}" ENCODING \'UTF8\'')
        finally:
            admin.close()
        yield Postgres("127.0.0.1", port, user, password, dbname, bindir)
    finally:
        try:
            if proc is not None:
                _stop(proc, timeout=30)
        finally:
            shutil.rmtree(base, ignore_errors=True)
