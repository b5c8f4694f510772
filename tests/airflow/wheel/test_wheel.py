"""The provider as a user gets it: the wheel built from this repository, installed into a fresh
virtual environment by following docs/install.md word for word, for the oldest and the newest
supported Airflow; then ``config check`` on the documented two-line entry and the DAGs listed with no
import error (the doc's next block, as written), and a GC DAG run end to end against the lakeFS
emulator on an ``s3://`` namespace (moto server on 127.0.0.1).

No network beyond 127.0.0.1. The wheel is built with the main venv's setuptools (``uv build --wheel
--no-build-isolation --offline``; docs/install.md says ``uv build --wheel``). docs/install.md's
install block runs in a new venv, activated (its ``bin`` first on PATH), from the folder the wheel is
in, as the doc says, with these substitutions and no other (``install_doc.install_script``):

- Airflow's constraints URL (``https://raw.githubusercontent.com/apache/airflow/constraints-<v>/
  constraints-3.11.txt``, out of this machine's reach) -> its stand-in, the lock
  ``tests/airflow/constraints/airflow-<v>.txt`` (resolved the way Airflow makes its own: lock.sh);
- the block's Airflow version (3.3.2) -> the version under test (3.2.2 or 3.3.2);
- ``pip install`` -> ``uv pip install --offline -p <venv python>`` (from uv's cache, which
  scripts/setup.sh fills), and ``pip check`` -> ``uv pip check -p <venv python>``.

The wheel's path is not substituted: the block names ``./lakefs_gc-<version>-py3-none-any.whl`` and
the test asserts that is the file the build made. The provider's step, without constraints, resolves
as on PyPI; offline, PyPI is uv's cache, held to the day in the lock's header (``UV_EXCLUDE_NEWER``,
the one uv setting the test adds to the environment), so that it picks what setup.sh fetched. The DAG
run's DAG file is copied into a DAGS_FOLDER of its own, as the README says.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from lakefs_sandbox.compose_stack import TOOLS_CACHE
from tests.airflow.helpers import REPO
from tests.airflow.wheel import install_doc

pytestmark = [pytest.mark.spark, pytest.mark.e2e]

# Deadlines, not waits: a build or an install from uv's cache takes well under a minute on a quiet
# machine, but once ran past 180 s on a loaded one (LAKEFS_GC_WHEEL_INSTALL_TIMEOUT moves it).
BUILD_TIMEOUT = float(os.environ.get("LAKEFS_GC_WHEEL_INSTALL_TIMEOUT", "900"))
GRACE = 3
MIN_AGE = 5  # no fresh garbage here: the seeded objects only need to be older than the cutoff
REPO_NAME = "wheel-repo"
DAG_ID = f"lakefs_gc__{REPO_NAME}"
TASKS = [
    "prepare_run",
    "mark_uncommitted",
    "list_committed",
    "list_slices",
    "compute_candidates",
    "attribute_space",
    "delete",
    "save_report",
]


def _uv() -> str:
    found = shutil.which("uv") or next((str(p) for p in (Path.home() / ".local" / "bin" / "uv",) if p.exists()), None)
    assert found, "uv not found on PATH or in ~/.local/bin: run scripts/setup.sh (it installs uv)"
    return found


def _run(cmd: list[str], timeout: float, **kwargs) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs, check=False)
    except subprocess.TimeoutExpired as e:  # say where it stood, not only that it timed out
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        raise AssertionError(
            f"{' '.join(map(str, cmd))[:300]} timed out after {timeout:.0f} s:\n{out[-6000:]}\n{err[-4000:]}"
        ) from None
    assert proc.returncode == 0, (
        f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    )
    return proc.stdout


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment of the new venv's processes: nothing that would put the repository, the main
    venv or a pytest setting on its path."""
    main_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != main_bin)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST", "AIRFLOW", "LAKEFS_GC", "PYTHON", "VIRTUAL_ENV", "SPARK", "PYSPARK"))
    }
    # pyspark and pyspark-client as scripts/setup.sh built them once (PyPI has only their source)
    env.update(
        {"PATH": path, "UV_OFFLINE": "1", "UV_NO_PROGRESS": "1", "UV_FIND_LINKS": str(TOOLS_CACHE / "wheels"), **extra}
    )
    return env


@dataclass
class Installed:
    venv: Path
    python: Path
    wheel: Path
    work: Path
    airflow: str  # its Airflow version
    transcript: install_doc.Transcript = field(default_factory=lambda: install_doc.Transcript([]))
    frozen: dict[str, str] = field(default_factory=dict)  # the new venv's packages, by canonical name

    def run(self, script: str, timeout: float, env: dict[str, str]) -> str:
        """Run ``script`` with the new venv's Python from a directory outside the repository."""
        return _run([str(self.python), "-c", script], timeout, cwd=self.work, env=env)

    def shell_env(self, **extra: str) -> dict[str, str]:
        """A shell's environment with the new venv activated, PyPI as of its lock's day."""
        env = _clean_env(**extra)
        env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{env['PATH']}"
        env["VIRTUAL_ENV"] = str(self.venv)
        env["UV_EXCLUDE_NEWER"] = install_doc.pypi_as_of(self.airflow)
        return env


# The Airflow versions the provider supports, oldest and newest (docs/compatibility.md): docs/install.md
# is followed for each, with the stand-in of its constraints file (constraints/, fetched by setup.sh).
OLDEST_AIRFLOW = install_doc.AIRFLOW_VERSIONS["oldest"]
AIRFLOW_VERSIONS = install_doc.AIRFLOW_VERSIONS


def _freeze(uv: str, python: Path, env: dict[str, str]) -> dict[str, str]:
    lines = _run([uv, "pip", "freeze", "-p", str(python)], 60, env=env).split()
    return {canonicalize_name(ln.split("==")[0]): ln.split("==")[1] for ln in lines if "==" in ln}


@pytest.fixture(scope="module", params=sorted(AIRFLOW_VERSIONS))
def installed(tmp_path_factory, request) -> Installed:
    t0 = time.monotonic()
    airflow = AIRFLOW_VERSIONS[request.param]
    tmp = tmp_path_factory.mktemp(f"wheel-{request.param}")
    uv, env = _uv(), _clean_env()
    dist = tmp / "dist"
    build = [uv, "build", "--wheel", "--no-build-isolation", "--offline", "-p", sys.executable]
    _run([*build, "--out-dir", str(dist), str(REPO)], BUILD_TIMEOUT, cwd=REPO, env=env)
    (wheel,) = dist.glob("lakefs_gc-*-py3-none-any.whl")

    venv = tmp / "venv"
    _run([uv, "venv", "-q", "-p", sys.executable, str(venv)], 60, env=env)
    work = tmp / "work"
    work.mkdir()
    new = Installed(venv, venv / "bin" / "python", wheel, work, airflow)
    # docs/install.md's install block, from the wheel's folder: Airflow with its constraints, then the wheel
    script = install_doc.install_script(airflow, uv, new.python, wheel)
    new.transcript = install_doc.run(script, new.shell_env(AIRFLOW_HOME=str(tmp / "home")), dist, BUILD_TIMEOUT)
    new.frozen = _freeze(uv, new.python, env)
    print(f"docs/install.md installed Airflow {airflow} and {wheel.name} in {time.monotonic() - t0:.1f}s")
    return new


PROBE = """
import importlib.metadata as md, importlib.util, json, re, sys, warnings
import lakefs_gc, lakefs_gc_airflow
from lakefs_gc.spark import bundle
from airflow.providers_manager import ProvidersManager
from airflow.api_fastapi.core_api.services.ui.connections import HookMetaService

pm = ProvidersManager()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    hook = pm.hooks["lakefs_gc"]
meta = {m.connection_type: m for m in HookMetaService.hook_meta_data()}["lakefs_gc"]
dist = md.distribution("lakefs-gc")
print(json.dumps({
    "sys_path": sys.path, "lakefs_gc": lakefs_gc.__file__, "lakefs_gc_airflow": lakefs_gc_airflow.__file__,
    "airflow": md.version("apache-airflow"), "version": lakefs_gc.__version__, "dist_version": dist.version, "dist_files": str(dist.locate_file("")),
    "requires": dist.requires, "dists": sorted({d.metadata["Name"] for d in md.distributions()}),
    "provider_entry_points": [ep.value for ep in md.entry_points(group="apache_airflow_provider")
                              if ep.value.startswith("lakefs_gc_airflow")],
    "providers": sorted(pm.providers), "hook": hook.hook_class_name,
    "host_label": meta.standard_fields.host.title,
    "extra_labels": {k: v["schema"]["title"] for k, v in (meta.extra_fields or {}).items()},
    "job": str(bundle.job_path()),
    "sandbox_spec": str(importlib.util.find_spec("lakefs_sandbox")),
    "installed_py": sorted(str(f) for f in dist.files if str(f).endswith(".py")),
    "importing_sandbox": sorted(str(f) for f in dist.files if str(f).endswith(".py") and re.search(
        r"^\\s*(from|import)\\s+lakefs_sandbox\\b", f.read_text(), re.M)),
}))
"""


def test_the_wheel_installs_into_a_plain_airflow_with_its_dependencies_and_provider_metadata(installed):
    out = json.loads(installed.run(PROBE, 120, _clean_env()).splitlines()[-1])
    venv = str(installed.venv)
    # the installed package, nothing of the repository or the main venv (its editable install)
    assert out["lakefs_gc"].startswith(venv), out
    assert out["lakefs_gc_airflow"].startswith(venv), out
    assert out["dist_files"].startswith(venv)
    main_site = str(Path(sys.executable).parent.parent)
    leaks = [p for p in out["sys_path"] if p.startswith((str(REPO), main_site))]
    assert not leaks, f"the repository or the main venv is on the new venv's path: {leaks}"
    assert out["airflow"] == installed.airflow
    assert (
        out["version"]
        == out["dist_version"]
        == re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M).group(1)
    )
    assert out["provider_entry_points"] == ["lakefs_gc_airflow:get_provider_info"]
    assert "lakefs-gc" in out["providers"]
    assert out["hook"] == "lakefs_gc_airflow.hooks.LakeFSHook"
    assert out["host_label"] == "lakeFS endpoint"
    assert out["extra_labels"]["local_blockstore_root"] == "Local blockstore root"
    assert out["job"].startswith(venv)
    assert out["job"].endswith("/lakefs_gc/jobs/gc_step.py")
    # test-only and optional packages are not dragged in (Kubernetes is an extra)
    names = {n.lower() for n in out["dists"]}
    assert {"apache-airflow", "apache-airflow-providers-apache-spark", "pyspark", "lakefs-sdk"} <= names
    assert not names & {"moto", "pytest", "hypothesis", "playwright", "apache-airflow-providers-cncf-kubernetes"}, names
    assert any(r.startswith(f"apache-airflow<4,>={OLDEST_AIRFLOW}") for r in out["requires"]), out["requires"]
    # only what a user runs: the sandbox (emulator, seeding, make airflow) is not in the wheel, and no
    # installed module imports it
    assert out["sandbox_spec"] == "None", out["sandbox_spec"]
    assert not [f for f in out["installed_py"] if f.startswith("lakefs_sandbox/")]
    assert any(f.startswith("lakefs_gc/") for f in out["installed_py"])
    assert out["importing_sandbox"] == [], out["importing_sandbox"]


def test_install_md_gives_airflow_with_its_constraints_then_the_provider_changing_what_it_says(installed):
    t, lock = installed.transcript, install_doc.pins(install_doc.lock(installed.airflow))
    # Airflow with its constraints: each package of the first step at its constraint's version
    _, first = install_doc.changes(t.output(r"pip install .*apache-airflow==[0-9.]+ --constraint "))
    assert first.get("apache-airflow") == installed.airflow, first
    assert {n: v for n, v in first.items() if lock.get(n) != v} == {}, "the first step left its constraints"
    # the provider's step: the dry run's replacements are the ones docs/install.md names, never Airflow's
    removed, _ = install_doc.changes(t.output(r"pip install .*--dry-run"))
    documented = install_doc.table("installed packages the provider's step replaces")[installed.airflow]
    assert not removed.keys() & install_doc.AIRFLOW_ITSELF, removed
    assert install_doc.unmatched(set(removed), documented) == (set(), set()), (removed, documented)
    # and the install does what its dry run said
    replaced, added = install_doc.changes(t.output(r"pip install (?!.*--dry-run).*lakefs_gc-\S+\.whl"))
    assert replaced == removed
    assert "lakefs-gc" in added
    assert installed.frozen["apache-airflow"] == installed.airflow
    held = {n: installed.frozen[n] for n in first if n not in replaced}
    assert held == {n: lock[n] for n in held}, "the provider's step moved a constrained package it did not list"
    assert "All installed packages are compatible" in t.output(r"pip check")
    version = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M).group(1)
    assert t.output(r"^lakefs-gc --version").strip() == f"lakefs-gc {version}"
    # what the wheel holds (docs/install.md, "The wheel"): two packages, the DAGs as a module, no DAG file
    with zipfile.ZipFile(installed.wheel) as z:
        names = z.namelist()
    assert {n.split("/")[0] for n in names} == {"lakefs_gc", "lakefs_gc_airflow", f"lakefs_gc-{version}.dist-info"}
    assert "lakefs_gc_airflow/dags.py" in names
    assert not [n for n in names if n.endswith(("gc_dags.py", "gc_config_errors.py"))], names


def test_install_md_first_check_passes_and_the_dags_list_without_import_errors(installed, tmp_path):
    """docs/install.md's next block as written, in the installed venv: the two-line repositories entry
    passes ``config check``, the two-line DAG file goes into Airflow's DAGS_FOLDER, and Airflow lists
    its DAGs with no import error. Your Airflow has a metadata database: the test migrates one first."""
    home = tmp_path / "airflow-home"
    env = installed.shell_env(AIRFLOW_HOME=str(home), AIRFLOW__CORE__LOAD_EXAMPLES="False")
    _run([str(installed.venv / "bin" / "airflow"), "db", "migrate"], BUILD_TIMEOUT, cwd=tmp_path, env=env)
    t = install_doc.run(install_doc.block("first-check"), env, tmp_path, BUILD_TIMEOUT)

    check = t.output(r"^lakefs-gc config check")
    assert re.search(r"^ok\s+my-repo\b", check, re.M), check
    assert not re.search(r"^error\b", check, re.M), check
    dag_file = home / "dags" / "lakefs_gc_dags.py"  # Airflow's default DAGS_FOLDER
    code = [ln for ln in (REPO / "dags" / "gc_dags.py").read_text().splitlines() if ln.startswith(("from", "glob"))]
    assert [ln for ln in dag_file.read_text().splitlines() if ln] == code, "the doc's DAG file is not dags/gc_dags.py"
    assert "No data found" in t.output(r"airflow dags list-import-errors"), str(t)
    listed = re.findall(r"^(lakefs_gc\S*)\s*\|", t.output(r"airflow dags list --local"), re.M)
    assert listed == ["lakefs_gc__my-repo", "lakefs_gc_restore"], str(t)


DRIVER = """
import json, os, sys
import lakefs_gc
from airflow.utils import db
db.resetdb()
from airflow.dag_processing.dagbag import DagBag

bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
assert not bag.import_errors, bag.import_errors
dag = bag.dags[%(dag_id)r]
apps = {t.task_id: t.application for t in dag.tasks if hasattr(t, "application")}
dr = dag.test(run_conf={"mode": "mark_and_sweep"})
tis = {ti.task_id: ti for ti in dr.get_task_instances()}
print("RESULT " + json.dumps({
    "state": dr.state, "tis": {k: ti.state for k, ti in tis.items()}, "apps": apps,
    "xcom": {k: t.xcom_pull(task_ids=k) for k, t in tis.items()}, "lakefs_gc": lakefs_gc.__file__,
    "dag_ids": sorted(bag.dag_ids), "errors_dag": bag.dags.get("lakefs_gc_config_errors").description,
}, default=str))
"""


def test_the_installed_wheel_runs_a_gc_dag_end_to_end(installed, moto_server, lakefs_emulator_factory, tmp_path):
    from lakefs_sandbox.seed import DELETED, KEPT, seed
    from tests.conftest import ns_storage

    t0 = time.monotonic()
    emu = lakefs_emulator_factory("--grace-period", str(GRACE), s3=moto_server)
    bucket = moto_server.create_bucket(f"gc-wheel-{installed.airflow.replace('.', '-')}")  # one per Airflow
    ns = emu.namespace(REPO_NAME, bucket=bucket)
    offsets = {"old": -10 * 86400, "recent": -3600, "fresh": 0}
    manifest = seed(emu.client(), REPO_NAME, ns, phase=lambda p: emu.set_clock(offset=offsets[p]))
    storage = ns_storage(ns, moto_server)
    before = {o.key for o in storage.list("", recursive=True)}
    seeded_at = time.time()

    # what a user sets up (README and docs/install.md, "Installing into your own Airflow"): a DAGS_FOLDER with our DAG
    # file, the repositories file, connections in the environment
    dags, plugins, home, cache = (tmp_path / d for d in ("dags", "plugins", "airflow-home", "py-files-cache"))
    for d in (dags, plugins, home):
        d.mkdir()
    shutil.copy(REPO / "dags" / "gc_dags.py", dags / "gc_dags.py")
    config = tmp_path / "gc_repositories.yaml"
    config.write_text(
        textwrap.dedent(f"""\
        repositories:
          # a bad entry: its DAG is not built, the DAG lakefs_gc_config_errors names it
          - repository: Not_A_Repo
            storage_conn_id: aws_default
          - repository: {REPO_NAME}
            lakefs_conn_id: lakefs_default
            storage_conn_id: aws_default
            spark_conn_id: spark_default
            min_age_seconds: {MIN_AGE}
            mode: mark_and_sweep
            work_dir: {tmp_path / "work"}
            tasks: {{retries: 0}}
            # the approval task in the DAG, on this Airflow's standard provider; the sweep is under it
            # (asked only above a million objects), so it goes on without a person
            sweep: {{approval_above: 1000000}}
            spark:
              parallelism: 2
              in_process_max_keys: 0  # every Spark step a spark-submit of the installed package's job
              # no class archive: one for this venv's new Spark would be made in the run (40 s of a
              # Spark job, more on a loaded machine) for four jobs; tests/spark/test_jvm.py tests it
              fast_start: false
              conf:
                spark.ui.enabled: "false"
                spark.driver.extraJavaOptions: "-XX:TieredStopAtLevel=1"
        """)
    )
    env = _clean_env(
        **{
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(plugins),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
            "LAKEFS_GC_CONFIG": str(config),
            "LAKEFS_GC_CACHE_DIR": str(cache),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "AIRFLOW_CONN_LAKEFS_DEFAULT": json.dumps(
                {"conn_type": "lakefs_gc", "host": emu.url, "login": emu.access_key, "password": emu.secret_key}
            ),
            "AIRFLOW_CONN_AWS_DEFAULT": json.dumps(
                {
                    "conn_type": "aws",
                    "login": moto_server.access_key,
                    "password": moto_server.secret_key,
                    "extra": {"endpoint_url": moto_server.endpoint_url, "region_name": moto_server.region},
                }
            ),
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        }
    )
    time.sleep(max(0.0, seeded_at + MIN_AGE + 1 - time.time()))  # everything seeded is older than the cutoff
    out = installed.run(DRIVER % {"dag_id": DAG_ID}, float(os.environ.get("LAKEFS_GC_WHEEL_RUN_TIMEOUT", "1200")), env)
    result = json.loads(next(ln for ln in out.splitlines() if ln.startswith("RESULT "))[len("RESULT ") :])

    venv = str(installed.venv)
    assert result["lakefs_gc"].startswith(venv)
    assert result["state"] == "success", (result["tis"], out[-6000:])
    assert result["tis"] == dict.fromkeys((*TASKS, "approve_sweep"), "success"), (result["tis"], out[-6000:])
    # the one DAG file gives every DAG of the provider
    assert result["dag_ids"] == [DAG_ID, "lakefs_gc_config_errors", "lakefs_gc_restore"], result["dag_ids"]
    assert "Not_A_Repo" in result["errors_dag"]
    assert "field 'repository'" in result["errors_dag"]
    # the Spark jobs are the installed package's; their --py-files zip was built from it, once
    assert set(result["apps"]) == {"list_committed", "list_slices", "compute_candidates", "attribute_space", "delete"}
    assert all(a.startswith(venv) and "/lakefs_gc/jobs/" in a for a in result["apps"].values()), result["apps"]
    assert len(list(cache.glob("lakefs_gc-*.zip"))) == 1

    # what is left in storage: exactly the expected garbage is gone
    after = {o.key for o in storage.list("", recursive=True)}
    assert before - after == manifest.expected(DELETED)
    assert manifest.expected(KEPT) <= after
    assert {k for k in before if k.startswith("_lakefs/")} <= after
    run_id = result["xcom"]["mark_uncommitted"]["run_id"]
    summary = json.loads(storage.get(f"_lakefs/retention/gc/unified/{run_id}/summary.json"))
    assert summary["success"] is True
    assert summary["deleted"] == len(manifest.expected(DELETED)) > 0
    assert summary["approval"]["decision"] == "not_needed", summary["approval"]
    print(f"DAG run from the installed wheel: {time.monotonic() - t0:.1f}s")
    _the_page_reads_the_report(installed, env, tmp_path, summary)


def _the_page_reads_the_report(installed: Installed, env: dict, tmp_path: Path, summary: dict) -> None:
    """That Airflow's api-server, given what the README says every component needs (the repositories
    file and the connections), serves the GC page: in a browser, the run's row shows its report's counts."""
    from playwright.sync_api import expect

    from lakefs_sandbox.emulator.launcher import free_port, start_server, stop_group
    from tests.airflow.helpers import gc_page

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    api_env = {
        **env,
        "AIRFLOW__CORE__AUTH_MANAGER": "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
    }
    server = start_server(
        [str(installed.venv / "bin" / "airflow"), "api-server", "--host", "127.0.0.1", "--port", str(port)],
        tmp_path / "api-server.log",
        f"{base}/api/v2/version",
        env=api_env,
        timeout=BUILD_TIMEOUT,
        cwd=installed.work,
        inherit_env=False,
    )
    try:
        with gc_page(base, tmp_path / "profile") as page:
            row = page.locator("tr[data-run]").first  # the one run, dag.test()'s
            expect(row.locator('td[data-col="deleted"]')).to_contain_text(f"{summary['deleted']:,}")
            expect(row.locator('td[data-col="listed"]')).to_contain_text(f"{summary['listed_objects']:,}")
            page.screenshot(path=str(tmp_path / "gc-page.png"), full_page=True)
    finally:
        stop_group(server)
