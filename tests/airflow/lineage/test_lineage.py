"""OpenLineage from every GC task (``lakefs_gc_airflow.lineage``).

The real GC DAG (``dag.test()``) runs against the lakeFS emulator in a child Python process whose
Airflow has the OpenLineage provider configured with its own file transport: the provider's plugin
registers its listener when Airflow loads plugins, which happens once per process, so the
transport must be in the environment before that (this test process may have loaded them long
before). Every task's COMPLETE event is read from the file: its inputs and outputs, and the facet
``lakefs_gc`` whose figures must equal the run's summary.json. Then the same run with the provider
made missing (imports fail, its distributions hidden from Airflow's entry points): the DAG parses,
every task succeeds and the garbage is gone, as without lineage.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lakefs_sandbox.seed import DELETED
from tests.airflow.e2e.test_e2e import TARGET, TASKS, _seed_env
from tests.airflow.helpers import REPO

# The child: load the GC DAG from dags/ and run it with dag.test(); print the tasks' states last.
RUN_DAG = textwrap.dedent("""
    import json, sys
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=sys.argv[1])
    assert bag.import_errors == {}, bag.import_errors
    dr = bag.dags[sys.argv[2]].test(run_conf=json.loads(sys.argv[3]))
    print("STATES " + json.dumps({ti.task_id: str(ti.state) for ti in dr.get_task_instances()}))
    from airflow import plugins_manager

    loaded = sorted(m for m in sys.modules if m.split(".")[0] == "openlineage" or m.startswith("airflow.providers.openlineage"))
    print("PROCESS " + json.dumps({"openlineage_modules": loaded, "plugin_errors": plugins_manager.get_import_errors()}))
""")
# The provider missing: its modules (and the OpenLineage client's) fail to import, and its
# distributions are hidden from importlib's metadata, so Airflow finds neither its provider nor
# its plugin entry point, as on a machine without it.
WITHOUT_PROVIDER = textwrap.dedent("""
    import importlib.abc, importlib.metadata, sys
    import importlib_metadata

    HIDDEN = {"apache-airflow-providers-openlineage", "openlineage-python", "openlineage-integration-common",
              "openlineage-sql"}

    class Missing(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "openlineage" or name.startswith(("openlineage.", "airflow.providers.openlineage")):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Missing())
    for mod in (importlib.metadata, importlib_metadata):
        def distributions(_real=mod.distributions, **kw):
            return (d for d in _real(**kw) if d.metadata["Name"] not in HIDDEN)
        mod.distributions = distributions
    try:
        import airflow.providers.openlineage
    except ModuleNotFoundError:
        pass
    else:
        raise SystemExit("the OpenLineage provider is still importable")
""")

pytestmark = [pytest.mark.spark, pytest.mark.e2e]


def _run_dag(env, tmp_path: Path, *, lineage_file: Path | None, conf: dict) -> tuple[dict[str, str], dict]:
    """Run the GC DAG of ``env`` in a child process; return its tasks' states, and the OpenLineage
    modules it had loaded at the end and Airflow's plugin import errors."""
    child_env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__OPENLINEAGE__", "OPENLINEAGE_"))}
    code = RUN_DAG
    if lineage_file is not None:
        child_env["AIRFLOW__OPENLINEAGE__TRANSPORT"] = json.dumps(
            {"type": "file", "log_file_path": str(lineage_file), "append": True}
        )
        child_env["AIRFLOW__OPENLINEAGE__NAMESPACE"] = "lakefs-gc-test"
    else:
        code = WITHOUT_PROVIDER + RUN_DAG
    proc = subprocess.run(  # noqa: PLW1510 - its exit code is asserted below, with its output
        [
            sys.executable,
            "-c",
            code,
            str(REPO / "dags" / "gc_dags.py"),
            env.dag.dag_id,
            json.dumps({"mode": "mark_and_sweep", **conf}),
        ],
        env=child_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    (tmp_path / "child.log").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    found = {
        ln.split(" ", 1)[0]: json.loads(ln.split(" ", 1)[1])
        for ln in proc.stdout.splitlines()
        if ln.startswith(("STATES ", "PROCESS "))
    }
    assert set(found) == {"STATES", "PROCESS"}, (proc.stdout + proc.stderr)[-4000:]
    return found["STATES"], found["PROCESS"]


def _swept(env, before: set[str]) -> dict:
    """Exactly the seeded garbage is gone; return the run's summary.json."""
    after = env.keys()
    assert before - after == env.manifest.expected(DELETED)
    marks = {
        k.split("/")[4] for k in after if k.startswith("_lakefs/retention/gc/unified/") and k.endswith("summary.json")
    }
    assert len(marks) == 1, marks
    (mark,) = marks
    return json.loads(env.storage.get(f"_lakefs/retention/gc/unified/{mark}/summary.json"))


@pytest.mark.skipif(TARGET is not None, reason="the emulator's local:// namespace")
def test_every_task_reports_its_datasets_and_figures_through_the_providers_file_transport(
    lakefs_emulator_factory, monkeypatch, tmp_path, airflow_db
):
    env = _seed_env(lakefs_emulator_factory, monkeypatch, tmp_path, "e2e-lineage")
    env.wait_until_old()
    before = env.keys()
    events_file = tmp_path / "openlineage.ndjson"
    states, process = _run_dag(env, tmp_path, lineage_file=events_file, conf={})
    assert states == dict.fromkeys(TASKS, "success"), states
    assert "airflow.providers.openlineage.plugins.listener" in process["openlineage_modules"]
    summary = _swept(env, before)

    events = [json.loads(line) for line in events_file.read_text().splitlines() if line.strip()]
    complete = {
        e["job"]["name"].rpartition(".")[2]: e
        for e in events
        if e["eventType"] == "COMPLETE" and e["job"]["name"].startswith(env.dag.dag_id + ".")
    }
    assert set(complete) == set(TASKS), sorted(complete)

    repo, mark = env.manifest.repository, summary["run_id"]
    host = env.lakefs_conn["host"].split("://", 1)[1].split("/", 1)[0]
    commits = {"namespace": f"lakefs://{host}", "name": repo}
    assert env.manifest.namespace.startswith("local://")  # named by the spec's local file system: "file", the path
    ns_path = os.path.normpath(os.path.join(env.local_root, env.manifest.namespace[len("local://") :]))
    namespace = {"namespace": "file", "name": ns_path}
    mark_ds = {"namespace": "file", "name": f"{ns_path}/_lakefs/retention/gc/unified/{mark}"}
    # the run's listing, in its work location: <work_dir>/<repository>/<Airflow run id, made safe>/listed
    (run_dir,) = (tmp_path / "work" / repo).iterdir()
    listing = {"namespace": "file", "name": str(run_dir / "listed")}
    assert (run_dir / "listed").is_dir()
    expected = {
        "prepare_run": ([commits], []),
        "mark_uncommitted": ([commits], [mark_ds]),
        "list_committed": ([commits], [mark_ds]),
        "list_slices": ([namespace], [listing]),
        "compute_candidates": ([mark_ds, listing], [mark_ds]),
        "attribute_space": (
            [commits, mark_ds, listing],
            [{"namespace": "file", "name": f"{mark_ds['name']}/space.json"}],
        ),
        "delete": ([mark_ds], [namespace]),
        "save_report": ([mark_ds], [{"namespace": "file", "name": f"{mark_ds['name']}/summary.json"}]),
    }
    figures_seen: dict[str, object] = {}
    for task, (inputs, outputs) in expected.items():
        event = complete[task]
        got = (
            [{k: d[k] for k in ("namespace", "name")} for d in event["inputs"]],
            [{k: d[k] for k in ("namespace", "name")} for d in event["outputs"]],
        )
        assert got == (inputs, outputs), (task, got)
        facet = event["run"]["facets"]["lakefs_gc"]
        assert (facet["step"], facet["repository"], facet["mode"]) == (task, repo, "mark_and_sweep"), facet
        # the mark is named from mark_uncommitted on: prepare_run runs before there is one, list_slices
        # beside mark_uncommitted (before or after it)
        assert facet.get("markId") in (
            {None} if task == "prepare_run" else {None, mark} if task == "list_slices" else {mark}
        )
        # every figure is the summary.json's field of the same name, as the report has it
        for name, value in facet["figures"].items():
            assert name in summary, (task, name)
            assert value == summary[name], (task, name, value, summary[name])
        assert not set(facet["figures"]) & set(figures_seen), (task, set(facet["figures"]) & set(figures_seen))
        figures_seen.update(facet["figures"])
    # the run's figures, each from the task that produced it
    for name in (
        "run_id",
        "listed_objects",
        "listed_bytes",
        "committed_addresses",
        "active_commits",
        "candidates",
        "candidate_bytes",
        "to_delete",
        "to_delete_bytes",
        "deleted",
        "delete_failed",
        "reclaimed_bytes",
        "space_bytes",
    ):
        assert name in figures_seen, name
    assert figures_seen["deleted"] == len(env.manifest.expected(DELETED)) > 0
    assert figures_seen["reclaimed_bytes"] == summary["to_delete_bytes"] > 0
    assert complete["save_report"]["run"]["facets"]["lakefs_gc"]["summaryUri"].endswith(
        f"/_lakefs/retention/gc/unified/{mark}/summary.json"
    )
    # the tasks' START events came too (their datasets are named on completion)
    started = {e["job"]["name"].rpartition(".")[2] for e in events if e["eventType"] == "START"}
    assert set(TASKS) <= started, sorted(started)


@pytest.mark.skipif(TARGET is not None, reason="the emulator's local:// namespace")
def test_without_the_provider_the_dag_parses_and_runs_as_before(
    lakefs_emulator_factory, monkeypatch, tmp_path, airflow_db
):
    env = _seed_env(lakefs_emulator_factory, monkeypatch, tmp_path, "e2e-nolineage")
    env.wait_until_old()
    before = env.keys()
    states, process = _run_dag(env, tmp_path, lineage_file=None, conf={})
    assert states == dict.fromkeys(TASKS, "success"), states
    # nothing of OpenLineage was loaded, and Airflow found no plugin of it to fail on
    assert process == {"openlineage_modules": [], "plugin_errors": {}}, process
    summary = _swept(env, before)
    assert summary["success"] is True
    assert summary["deleted"] == len(env.manifest.expected(DELETED)) > 0
