"""DAG import and structure: one DAG per config entry, eight tasks, exact dependencies, Params."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.airflow.helpers import validate_params

REPO = Path(__file__).resolve().parents[3]

EXPECTED_UPSTREAM = {
    "prepare_run": set(),
    "mark_uncommitted": {"prepare_run"},
    "list_committed": {"mark_uncommitted"},
    "list_slices": {"prepare_run"},
    "compute_candidates": {"list_committed", "list_slices"},
    "attribute_space": {"compute_candidates"},
    "delete": {"attribute_space"},
    "save_report": {"delete"},
}


@pytest.fixture(scope="module")
def dagbag(tmp_path_factory):
    """One DagBag over dags/, with a two-repository config (the checked-in one has one entry)."""
    cfg = tmp_path_factory.mktemp("cfg") / "gc.yaml"
    cfg.write_text(
        textwrap.dedent("""
        defaults: {lakefs_conn_id: lakefs_default, storage_conn_id: aws_default, spark_conn_id: spark_default,
                   min_age_seconds: 86400, mode: mark_and_sweep}
        repositories:
          - {repository: sample-repo, schedule: "@daily"}
          - {repository: other-repo, mode: mark_only, min_age_seconds: 172800, schedule: null, tags: [team-x]}
    """)
    )
    mp = pytest.MonkeyPatch()
    mp.setenv("LAKEFS_GC_CONFIG", str(cfg))
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags"))
    mp.undo()
    return bag


def test_dagbag_imports_without_errors(dagbag):
    assert dagbag.import_errors == {}
    assert set(dagbag.dag_ids) == {"lakefs_gc__sample-repo", "lakefs_gc__other-repo", "lakefs_gc_restore"}


def test_checked_in_config_parses(monkeypatch):
    monkeypatch.delenv("LAKEFS_GC_CONFIG", raising=False)
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags" / "gc_dags.py"))
    assert bag.import_errors == {}
    assert "lakefs_gc__sample-repo" in bag.dag_ids


def test_dags_folder_parses_in_a_fresh_interpreter_like_the_dag_processor(tmp_path):
    """The whole dags folder, parsed in an interpreter that imported nothing of ours before."""
    import os
    import subprocess
    import sys

    code = (
        "import json; from airflow.dag_processing.dagbag import DagBag; "
        f"b = DagBag(dag_folder={str(REPO / 'dags')!r}); "
        "print(json.dumps({'errors': {k: str(v)[-300:] for k, v in b.import_errors.items()}, 'ids': sorted(b.dag_ids)}))"
    )
    env = {**os.environ, "LAKEFS_GC_CONFIG": str(REPO / "config" / "gc_repositories.yaml")}
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path, check=False
    )
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out == {"errors": {}, "ids": ["lakefs_gc__sample-repo", "lakefs_gc_restore"]}


@pytest.mark.parametrize("dag_id", ["lakefs_gc__sample-repo", "lakefs_gc__other-repo"])
def test_eight_tasks_with_exact_dependencies(dagbag, dag_id):
    dag = dagbag.dags[dag_id]
    assert {t.task_id: set(t.upstream_task_ids) for t in dag.tasks} == EXPECTED_UPSTREAM
    # mark_uncommitted strictly before list_committed, list_slices independent of both
    assert "mark_uncommitted" in dag.get_task("list_committed").get_flat_relative_ids(upstream=True)
    assert "mark_uncommitted" not in dag.get_task("list_slices").get_flat_relative_ids(upstream=True)
    assert "delete" in dag.get_task("save_report").get_flat_relative_ids(upstream=True)


def test_dag_settings(dagbag):
    sample, other = dagbag.dags["lakefs_gc__sample-repo"], dagbag.dags["lakefs_gc__other-repo"]
    for dag in (sample, other):
        assert dag.max_active_runs == 1
        assert dag.catchup is False
        assert {"lakefs", "gc"} <= set(dag.tags)
        assert dag.doc_md
        assert "lakeFS garbage collection" in dag.doc_md
    assert "team-x" in other.tags
    assert sample.schedule == "@daily"
    assert other.schedule is None
    assert sample.params["mode"] == "mark_and_sweep"
    assert other.params["mode"] == "mark_only"
    assert other.params["min_age_seconds"] == 172800
    assert sample.params["unsafe_min_age_override"] is False
    # every step is idempotent: retried with a delay; each has a timeout (config: tasks)
    from datetime import timedelta

    for task in sample.tasks:
        assert task.retries == 2, task.task_id
        assert task.retry_delay == timedelta(seconds=120), task.task_id
        assert task.execution_timeout == timedelta(hours=6), task.task_id


def test_spark_tasks_use_the_configured_connection_and_job_files(dagbag):
    dag = dagbag.dags["lakefs_gc__sample-repo"]
    for step in ("list_committed", "list_slices", "compute_candidates", "attribute_space", "delete"):
        t = dag.get_task(step)
        assert t.spark_conn_id == "spark_default"
        # the entry point inside the package; the --py-files zip is built from the package when the task runs
        assert t.application == str(REPO / "include" / "lakefs_gc" / "jobs" / "gc_step.py")
        assert t.application_args[0] == step  # the one entry point, told the step
        assert Path(t.application).exists(), f"missing job file {t.application}"
        assert t.py_files is None
        assert {"application", "application_args", "env_vars", "conf"} <= set(t.template_fields)
    from lakefs_gc.contract import skipped

    assert skipped("delete", "mark_only")
    assert not skipped("delete", "sweep_only")
    assert skipped("list_committed", "sweep_only")
    assert not skipped("list_committed", "mark_only")


def test_params_accept_valid_values(dagbag):
    dag = dagbag.dags["lakefs_gc__sample-repo"]
    assert validate_params(dag, {}) == {
        "mode": "mark_and_sweep",
        "flow": "auto",
        "staged_check": "candidates",
        "min_age_seconds": 86400,
        "unsafe_min_age_override": False,
        "mark_id": None,
        "dry_run": False,
        "confirm_after_seconds": -1,
        "max_delete_share": 0.5,
        "max_delete_count": 10_000_000,
        "mark_max_age_seconds": 7 * 86400,
        "delete_rate": 3000.0,
        "delete_concurrency": 2,
        "delete_batch_size": 1000,
        "delete_max_attempts": 8,
        "prepare_commits_timeout_seconds": 1200,
        "quarantine_days": 0,
        "abort_uploads_after_days": 7.0,
        "attribute_space": True,
        "stale_branch_days": 30,
        "expire_leftovers": True,
        "keep_marks_days": 90,
        "keep_marks_runs": 10,
        "keep_work_days": 7,
        "listing_source": "list",
        "inventory_location": None,
        "inventory_name": None,
        "inventory_source_prefix": None,
        "inventory_max_age_days": 8.0,
        "inventory_fallback": "none",
    }
    conf = {
        "mode": "sweep_only",
        "mark_id": "ft0abc",
        "min_age_seconds": 0,
        "unsafe_min_age_override": True,
        "delete_rate": 0,
        "confirm_after_seconds": 0,
    }
    assert {k: v for k, v in validate_params(dag, conf).items() if k in conf} == conf


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        (
            {"mode": "sweep"},
            r"Invalid input for param mode: 'sweep' is not one of \['mark_and_sweep', 'mark_only', 'sweep_only'\]",
        ),
        (
            {"delete_batch_size": 5000},
            r"Invalid input for param delete_batch_size: 5000 is greater than the maximum of 1000",
        ),
        ({"max_delete_share": 1.5}, r"Invalid input for param max_delete_share: 1.5 is greater than the maximum of 1"),
        ({"min_age_seconds": -1}, r"Invalid input for param min_age_seconds: -1 is less than the minimum of 0"),
        ({"min_age_seconds": "3600"}, r"Invalid input for param min_age_seconds: '3600' is not of type 'integer'"),
        (
            {"unsafe_min_age_override": "yes"},
            r"Invalid input for param unsafe_min_age_override: 'yes' is not of type 'boolean'",
        ),
    ],
)
def test_params_reject_invalid_values_with_a_clear_message(dagbag, conf, message):
    from airflow.sdk.exceptions import ParamValidationError

    with pytest.raises(ParamValidationError, match=message):
        validate_params(dagbag.dags["lakefs_gc__sample-repo"], conf)


def test_params_have_a_ui_form(dagbag):
    params = dagbag.dags["lakefs_gc__sample-repo"].params
    assert params.get_param("mode").schema["enum"] == ["mark_and_sweep", "mark_only", "sweep_only"]
    for knob in ("delete_rate", "delete_concurrency", "delete_batch_size", "max_delete_share", "confirm_after_seconds"):
        assert params.get_param(knob).schema.get("title")
    age = params.get_param("min_age_seconds")
    assert (age.schema["type"], age.schema["allOf"], age.schema["title"]) == (
        "integer",
        [{"minimum": 0}],
        "Minimum object age (s)",
    )
    assert "grace period" in age.description
    assert params.get_param("unsafe_min_age_override").schema["type"] == "boolean"


def test_dag_file_does_no_io_beyond_the_config(monkeypatch, tmp_path):
    """Parsing needs no connection, Variable or network: a DagBag with no connections defined and
    a bad lakeFS endpoint env still imports."""
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFS_DEFAULT", "not-even-a-uri")
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags" / "gc_dags.py"))
    assert bag.import_errors == {}


def test_bad_config_is_an_import_error_naming_the_field(monkeypatch, tmp_path):
    cfg = tmp_path / "gc.yaml"
    cfg.write_text(
        "repositories:\n  - {repository: repo-a, lakefs_conn_id: a, storage_conn_id: b, "
        "spark_conn_id: c, min_age_seconds: 1, mode: sweep}\n"
    )
    monkeypatch.setenv("LAKEFS_GC_CONFIG", str(cfg))
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags"))
    [(path, err)] = bag.import_errors.items()
    assert path.endswith("gc_config_errors.py")
    assert "field 'mode'" in err
    assert "repo-a" in err
    assert str(cfg) in err
    # no good entry: no GC DAG, but the restore DAG stays (a restore by hand: test_restore_dag.py)
    assert sorted(bag.dag_ids) == ["lakefs_gc_config_errors", "lakefs_gc_restore"]


def test_a_bad_entry_breaks_only_itself(monkeypatch, tmp_path):
    """Two good entries and two bad ones: the good DAGs are built (in gc_dags.py, which imports
    cleanly, so Airflow keeps them), the bad ones are one import error of gc_config_errors.py naming
    each entry and field."""
    cfg = tmp_path / "gc.yaml"
    cfg.write_text(
        textwrap.dedent("""
        defaults: {lakefs_conn_id: lakefs_default, storage_conn_id: aws_default, spark_conn_id: spark_default,
                   min_age_seconds: 86400, mode: mark_and_sweep}
        repositories:
          - {repository: good-one}
          - {repository: typo-repo, shedule: "@daily"}
          - {repository: good-two, mode: mark_only}
          - {repository: bad-sweep, sweep: {max_delete_share: 5, batch_size: 0}}
    """)
    )
    monkeypatch.setenv("LAKEFS_GC_CONFIG", str(cfg))
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags"))
    assert sorted(bag.dag_ids) == [
        "lakefs_gc__good-one",
        "lakefs_gc__good-two",
        "lakefs_gc_config_errors",
        "lakefs_gc_restore",
    ]
    [(path, err)] = bag.import_errors.items()
    assert path.endswith("gc_config_errors.py"), bag.import_errors
    assert "2 bad repository entries, whose GC DAGs are not built" in err
    # every problem of each bad entry (both of bad-sweep's), each at its line
    problems = [
        f"{cfg}:6: repositories[1] (typo-repo): unknown field 'shedule' (did you mean 'schedule'?)",
        f"{cfg}:8: repositories[3] (bad-sweep): field 'sweep.max_delete_share': must be a number 0..1, got 5",
        f"{cfg}:8: repositories[3] (bad-sweep): field 'sweep.batch_size': must be an integer 1..1000, got 0",
    ]
    for problem in problems:
        assert problem in err
    assert "good-one" not in err
    assert "good-two" not in err
    # the one DAG file alone (no gc_config_errors.py) shows them as the DAG lakefs_gc_config_errors
    errors_dag = bag.dags["lakefs_gc_config_errors"]
    assert errors_dag.description.startswith(
        f"2 bad entries in {cfg}: line 6: repositories[1] (typo-repo): unknown field 'shedule'"
    )
    assert "line 8: repositories[3] (bad-sweep): field 'sweep.batch_size'" in errors_dag.description
    for problem in problems:
        assert f"- `{problem}`" in errors_dag.doc_md
    [task] = errors_dag.tasks
    with pytest.raises(Exception, match="2 bad repository entries") as failed:
        task.python_callable(*task.op_args)
    assert str(failed.value).splitlines()[1:] == problems


def test_a_file_that_is_not_yaml_fails_as_a_whole_with_line_and_column(monkeypatch, tmp_path):
    cfg = tmp_path / "gc.yaml"
    cfg.write_text("repositories:\n  - {repository: repo-a\n  - oops: [\n")
    monkeypatch.setenv("LAKEFS_GC_CONFIG", str(cfg))
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags"))
    [(path, err)] = bag.import_errors.items()  # once, from gc_dags.py (gc_config_errors.py leaves it there)
    assert path.endswith("gc_dags.py")
    assert f"{cfg}: not valid YAML" in err
    assert "line 3, column" in err
    assert bag.dag_ids == []


def test_plugins_manager_does_not_import_the_package_files_as_top_level_modules():
    """plugins/.airflowignore: without it Airflow imports plugins/lakefs_gc_airflow/hooks.py as a
    top-level module ``hooks`` (a second LakeFSHook class, and a name any other plugin may clash with)."""
    import sys

    from airflow import plugins_manager

    plugins_manager.ensure_plugins_loaded()
    assert not {"hooks", "operators"} & set(sys.modules)


def test_the_dag_file_is_only_the_providers_dags():
    """DAG file = wiring: its docstring, the import and one call (what users copy: the README); the
    DAGs ship in the package (lakefs_gc_airflow.dags)."""
    import ast

    tree = ast.parse((REPO / "dags" / "gc_dags.py").read_text())
    kinds = [type(node).__name__ for node in tree.body]
    assert kinds == ["Expr", "ImportFrom", "Expr"], kinds
    assert sorted(p.name for p in (REPO / "dags").glob("*.py")) == ["gc_config_errors.py", "gc_dags.py"]
    tree = ast.parse((REPO / "dags" / "gc_config_errors.py").read_text())
    assert [type(node).__name__ for node in tree.body] == ["Expr", "ImportFrom", "Expr"]


def test_the_restore_dag_offers_every_configured_repository(dagbag):
    """``lakefs_gc_restore``: manual runs, one task; its form names a repository (the configured ones
    proposed), the run, optionally keys, and a dry run."""
    from airflow.sdk.definitions.param import ParamsDict

    dag = dagbag.dags["lakefs_gc_restore"]
    assert dag.schedule is None
    assert dag.max_active_runs == 1
    assert [t.task_id for t in dag.tasks] == ["restore"]
    assert dag.get_task("restore").repositories == {
        "sample-repo": {"lakefs_conn_id": "lakefs_default", "storage_conn_id": "aws_default"},
        "other-repo": {"lakefs_conn_id": "lakefs_default", "storage_conn_id": "aws_default"},
    }
    schema = {k: dag.params.get_param(k).schema for k in dag.params}
    assert schema["repository"]["examples"] == ["other-repo", "sample-repo"]  # proposed; another by hand
    assert dag.get_task("restore").config_note.endswith("are other-repo, sample-repo")
    assert schema["run_id"]["minLength"] == 1
    assert schema["keys"]["type"] == ["null", "array"]
    params = ParamsDict(dag.params)
    with pytest.raises(Exception, match="run_id"):
        params.validate()  # no run id: refused when the run is created
