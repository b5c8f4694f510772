"""The wheel's pins cannot skew: ``pyspark`` and ``pyspark-client`` write into the same ``pyspark/``
folder, so a resolver must never be able to pick two versions of them.

The wheel built from this repository is resolved with no constraints against an index-like folder
(``--find-links``, ``--no-index``: nothing beyond this machine) that holds a stub wheel for each of
its other requirements and, as PyPI did in the issue that found this, a pyspark release newer than
every pyspark-client (4.2.1 beside 4.2.0). The resolution must pin both to one version.
"""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from packaging.requirements import Requirement

from tests.airflow.wheel.test_wheel import BUILD_TIMEOUT, _clean_env, _run, _uv

REPO = Path(__file__).resolve().parents[3]


def _stub_wheel(folder: Path, name: str, version: str, requires: list[str] = ()) -> None:
    """A minimal valid wheel: METADATA, WHEEL, RECORD, no code."""
    dist = re.sub(r"[-_.]+", "_", name).lower()
    info = f"{dist}-{version}.dist-info"
    files = {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: lakefs-gc-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join(record + [f"{info}/RECORD,,"]) + "\n"
    with zipfile.ZipFile(folder / f"{dist}-{version}-py3-none-any.whl", "w") as z:
        for path, text in files.items():
            z.writestr(path, text)


def _lowest(req: Requirement) -> str:
    """The lowest version ``req`` allows among its own bounds (our requirements all name one)."""
    for spec in req.specifier:
        if spec.operator in ("==", ">=", "~="):
            return spec.version
    raise AssertionError(f"{req}: no lower bound to stub")


def _requires_dist(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        lines = z.read(meta).decode().splitlines()
    reqs = [Requirement(ln.split(":", 1)[1].strip()) for ln in lines if ln.startswith("Requires-Dist:")]
    return [r for r in reqs if not (r.marker and "extra" in str(r.marker))]


def test_pyspark_and_pyspark_client_resolve_to_one_version(tmp_path):
    uv, env = _uv(), _clean_env()
    dist = tmp_path / "dist"
    _run(
        [
            uv,
            "build",
            "--wheel",
            "--no-build-isolation",
            "--offline",
            "-p",
            sys.executable,
            "--out-dir",
            str(dist),
            str(REPO),
        ],
        BUILD_TIMEOUT,
        cwd=REPO,
        env=env,
    )
    (wheel,) = dist.glob("lakefs_gc-*-py3-none-any.whl")
    index = tmp_path / "index"
    index.mkdir()
    shutil.copy(wheel, index)
    names = set()
    for req in _requires_dist(wheel):
        names.add(req.name)
        if req.name not in ("pyspark", "pyspark-client"):
            # the Spark provider pulls pyspark-client, as the real one does
            extra = ["pyspark-client>=4.0"] if req.name == "apache-airflow-providers-apache-spark" else []
            _stub_wheel(index, req.name, _lowest(req), extra)
    assert {"pyspark", "pyspark-client"} <= names, names
    for name, version in (("pyspark", "4.2.0"), ("pyspark", "4.2.1"), ("pyspark-client", "4.2.0")):
        _stub_wheel(index, name, version)
    req_in = tmp_path / "requirements.in"
    req_in.write_text(f"lakefs-gc @ {wheel.as_uri()}\n")
    out = subprocess.run(
        [
            uv,
            "pip",
            "compile",
            "--no-index",
            "--find-links",
            str(index),
            "--python-version",
            "3.11",
            "--no-header",
            "--no-annotate",
            str(req_in),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    pins = dict(ln.split("==", 1) for ln in out.stdout.splitlines() if "==" in ln)
    assert pins["pyspark"] == pins["pyspark-client"], (
        f"pyspark {pins['pyspark']} beside pyspark-client {pins['pyspark-client']}"
    )
