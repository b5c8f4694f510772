"""RocksDB's own sst_dump (apt rocksdb-tools): an implementation of the table format that is not ours."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator

_LINE = re.compile(r"^'([0-9A-F]*)' seq:(\d+), type:(\d+) => ([0-9A-F]*)$")


def sst_dump_path() -> str:
    path = shutil.which("sst_dump")
    if not path:
        raise FileNotFoundError("sst_dump not found: install Debian's rocksdb-tools (scripts/setup.sh does)")
    return path


@contextlib.contextmanager
def _as_sst(path: str) -> Iterator[str]:
    """sst_dump only opens names ending in .sst; lakeFS names its tables by bare ID."""
    if path.endswith(".sst"):
        yield path
        return
    with tempfile.TemporaryDirectory() as d:
        link = os.path.join(d, os.path.basename(path) + ".sst")
        os.symlink(os.path.abspath(path), link)
        yield link


def scan(path: str) -> list[tuple[bytes, bytes]]:
    """All (user key, value) records as RocksDB reads them; raises if RocksDB rejects the file."""
    with _as_sst(path) as p:
        return _scan(p)


def _scan(path: str) -> list[tuple[bytes, bytes]]:
    exe = sst_dump_path()
    check = subprocess.run(
        [exe, f"--file={path}", "--command=check", "--verify_checksum"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if (
        check.returncode != 0
        or "Corruption" in check.stdout + check.stderr
        or "not a valid" in check.stdout + check.stderr
    ):
        raise AssertionError(f"sst_dump check failed: {check.stdout}{check.stderr}")
    res = subprocess.run(
        [exe, f"--file={path}", "--command=scan", "--output_hex"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = []
    for line in res.stdout.splitlines():
        if "not a valid" in line or "Corruption" in line:
            raise AssertionError(f"sst_dump scan failed: {line}")
        m = _LINE.match(line)
        if m:
            assert m.group(3) == "1", f"unexpected key kind {m.group(3)}"
            out.append((bytes.fromhex(m.group(1)), bytes.fromhex(m.group(4))))
    return out


def properties(path: str) -> str:
    with _as_sst(path) as p:
        res = subprocess.run(
            [sst_dump_path(), f"--file={p}", "--show_properties"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    return res.stdout + res.stderr
