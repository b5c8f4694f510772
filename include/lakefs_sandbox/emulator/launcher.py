"""
Start and stop an emulator process outside pytest (the demo, the benchmarks).

The test fixtures in tests/conftest.py do the same with pytest's temporary directories.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class RunningEmulator:
    """An emulator process started by :func:`start`: its URL, its key pair, the process."""

    url: str
    access_key: str
    secret_key: str
    proc: subprocess.Popen

    def set_clock(self, offset: float) -> None:
        auth = base64.b64encode(f"{self.access_key}:{self.secret_key}".encode()).decode()
        req = urllib.request.Request(
            self.url + "/_emulator/clock",
            method="PUT",
            data=json.dumps({"offset": offset}).encode(),
            headers={"Content-Type": "application/json", "Authorization": "Basic " + auth},
        )
        urllib.request.urlopen(req, timeout=30).read()

    def stop(self, timeout: float = 15) -> None:
        stop_group(self.proc, timeout)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_group(proc: subprocess.Popen, timeout: float = 15) -> None:
    """SIGTERM the process group started with ``start_new_session=True``, SIGKILL after ``timeout``."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=timeout)


def wait_http(url: str, proc: subprocess.Popen, log: Path, timeout: float = 30.0) -> None:
    """Until ``url`` answers (any HTTP status); fails if ``proc`` exits first or after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before it was ready:\n{log.read_text()[-3000:]}")
        try:
            # a loaded machine's first answer can take seconds: each try waits up to 5 s for it
            with urllib.request.urlopen(url, timeout=min(5.0, max(0.5, deadline - time.monotonic()))) as r:
                r.read()
                return
        except urllib.error.HTTPError:
            return  # it answered
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"{url} not ready after {timeout}s:\n{log.read_text()[-3000:]}")


def start_server(
    cmd: list[str],
    log: Path,
    ready_url: str,
    env: dict | None = None,
    timeout: float = 30.0,
    cwd: Path = ROOT,
    inherit_env: bool = True,
) -> subprocess.Popen:
    """
    Start ``cmd`` in its own session in ``cwd`` (output to ``log``); wait until ``ready_url`` answers.

    ``env`` is added to this process's environment, or is the whole of it without ``inherit_env``.
    """
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            cmd,
            stdout=fh,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env={**os.environ, **(env or {})} if inherit_env else dict(env or {}),
            start_new_session=True,
        )
    try:
        wait_http(ready_url, proc, log, timeout)
    except BaseException:
        stop_group(proc)
        raise
    return proc


def start(log: Path, *flags: str, access_key: str, secret_key: str, timeout: float = 60) -> RunningEmulator:
    port = free_port()
    proc = start_server(
        [
            sys.executable,
            "-m",
            "lakefs_sandbox.emulator",
            "--listen",
            f"127.0.0.1:{port}",
            "--access-key",
            access_key,
            "--secret-key",
            secret_key,
            *flags,
        ],
        log,
        f"http://127.0.0.1:{port}/api/v1/healthcheck",
        timeout=timeout,
    )
    return RunningEmulator(f"http://127.0.0.1:{port}", access_key, secret_key, proc)
