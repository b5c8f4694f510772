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
import tomllib
import zipfile
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.airflow.wheel import install_doc
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


def _requirements() -> list[Requirement]:
    return [Requirement(r) for r in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]]


def test_the_requirements_install_md_names_above_each_supported_airflows_constraints_are_those():
    """docs/install.md's reason for installing the provider without Airflow's constraints: per supported
    Airflow, the provider's requirements that the stand-in of its constraints file holds at a version
    outside their range (with ``--constraint``, pip refuses the provider naming one of them)."""
    documented = install_doc.table("the provider's requirements above its constraints")
    assert set(documented) == set(install_doc.AIRFLOW_VERSIONS.values())
    for airflow in install_doc.AIRFLOW_VERSIONS.values():
        lock = install_doc.pins(install_doc.lock(airflow))
        above = [
            r.name
            for r in _requirements()
            if canonicalize_name(r.name) in lock and lock[canonicalize_name(r.name)] not in r.specifier
        ]
        assert sorted(documented[airflow]) == sorted(above), airflow
        # the exact pins fit: the constraints hold pyspark-client at the version both pins name
        exact = {r.name: next(iter(r.specifier)).version for r in _requirements() if r.name.startswith("pyspark")}
        assert exact == {"pyspark": "4.2.0", "pyspark-client": "4.2.0"}
        assert lock["pyspark-client"] == exact["pyspark-client"], airflow


def test_the_stand_ins_of_airflows_constraints_are_the_supported_versions_and_install_md_installs_the_newest():
    locks = {p.name for p in install_doc.CONSTRAINTS_DIR.glob("airflow-*.txt")}  # setup.sh fetches each
    assert locks == {f"airflow-{v}.txt" for v in install_doc.AIRFLOW_VERSIONS.values()}
    oldest, newest = install_doc.AIRFLOW_VERSIONS["oldest"], install_doc.AIRFLOW_VERSIONS["newest"]
    for airflow in (oldest, newest):
        lock = install_doc.pins(install_doc.lock(airflow))
        assert lock["apache-airflow"] == lock["apache-airflow-core"] == airflow
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT00:00:00Z", install_doc.pypi_as_of(airflow))
    (airflow_req,) = [r for r in _requirements() if r.name == "apache-airflow"]
    assert f">={oldest}" in str(airflow_req.specifier), airflow_req  # the lower bound is the oldest tested
    # our own set-up's Airflow (requirements.txt), the install block's and the compose image's are the newest
    assert f"apache-airflow=={newest}\n" in (REPO / "requirements.txt").read_text()
    assert f'"apache-airflow=={newest}" --constraint' in install_doc.block("install")
    major, minor = newest.split(".")[:2]
    range_ = f"{oldest} to {major}.{minor}.x"
    for doc in ("README.md", "docs/install.md", "docs/compatibility.md"):
        assert range_ in (REPO / doc).read_text(), f"{doc} does not say Airflow {range_}"
