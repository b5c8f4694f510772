"""Hook and operators: connections -> client, the spark-submit command line, secrets only in env."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import pytest

from lakefs_gc import runmeta
from tests.airflow.conftest import LAKEFS_ACCESS, LAKEFS_SECRET, S3_ACCESS, S3_SECRET, conn_env
from tests.airflow.helpers import REPO, context, dag_module, digest, fake_spark_submit, repo_config

SECRETS = (LAKEFS_ACCESS, LAKEFS_SECRET, S3_ACCESS, S3_SECRET)
SPARK_STEPS = ("list_committed", "list_slices", "compute_candidates", "delete")


def base_meta(tmp_path: Path, namespace: str = "s3://bucket/repos/sample-repo") -> dict:
    return {"repository": "sample-repo", "storage_namespace": namespace, "mode": "mark_and_sweep",
            "work_dir": str(tmp_path / "work" / "sample-repo" / "run1"), "start_time": "2024-05-01T00:00:00.000000Z",
            "cutoff_time": "2024-04-30T00:00:00.000000Z", "airflow_run_id": "manual__1", "run_id": "gc-run-1",
            "lakefs_endpoint": "http://127.0.0.1:8000/api/v1", "s3_endpoint_url": "http://127.0.0.1:5000"}


# ---------------------------------------------------------------------------------------------
# LakeFSHook

def test_lakefs_hook_builds_a_client_from_a_json_env_connection(monkeypatch, connections):
    from lakefs_gc.lakefs_api import LakeFSClient
    from lakefs_gc_airflow.hooks import LakeFSHook

    monkeypatch.setenv(*conn_env("lakefs_test", conn_type="lakefs", host="http://127.0.0.1:8123/",
                                 login="AKIATEST", password="sekret",
                                 extra={"max_retries": 2, "backoff_base": 0.01}))
    hook = LakeFSHook(lakefs_conn_id="lakefs_test")
    client = hook.get_conn()
    assert isinstance(client, LakeFSClient)
    assert client.endpoint == "http://127.0.0.1:8123/api/v1" == hook.endpoint
    assert (client.max_retries, client.backoff_base) == (2, 0.01)
    assert client._api.configuration.username == "AKIATEST"
    assert client._api.configuration.password == "sekret"
    assert hook.get_conn() is client  # built once, lazily
    assert hook.credentials() == ("AKIATEST", "sekret")


def test_lakefs_hook_passes_exact_arguments_to_the_client(monkeypatch, connections):
    import lakefs_gc.lakefs_api as api
    from lakefs_gc_airflow.hooks import LakeFSHook

    calls = []
    monkeypatch.setattr(api, "LakeFSClient", lambda *a, **kw: calls.append((a, kw)) or "client")
    assert LakeFSHook().get_conn() == "client"
    assert calls == [(("http://127.0.0.1:8000/api/v1", LAKEFS_ACCESS, LAKEFS_SECRET), {})]


def test_lakefs_hook_errors_are_clear(monkeypatch):
    from lakefs_gc_airflow.hooks import LakeFSHook

    monkeypatch.setenv(*conn_env("lakefs_nokeys", conn_type="lakefs", host="http://127.0.0.1:8000"))
    with pytest.raises(ValueError, match="'lakefs_nokeys' needs login .access key id. and password"):
        LakeFSHook(lakefs_conn_id="lakefs_nokeys").get_conn()
    monkeypatch.setenv(*conn_env("lakefs_badextra", conn_type="lakefs", host="h", login="a", password="b",
                                 extra={"max_retries": "many"}))
    with pytest.raises(ValueError, match="extra 'max_retries' must be a int"):
        LakeFSHook(lakefs_conn_id="lakefs_badextra").get_conn()


@pytest.mark.parametrize("host, port, schema, expected", [
    ("http://127.0.0.1:8000", None, None, "http://127.0.0.1:8000/api/v1"),
    ("https://lakefs.example.com/api/v1/", None, None, "https://lakefs.example.com/api/v1"),
    ("http://lakefs", 8000, None, "http://lakefs:8000/api/v1"),
    ("lakefs", 8000, None, "http://lakefs:8000/api/v1"),
    ("lakefs", None, "prefix", "http://lakefs/prefix/api/v1"),
])
def test_lakefs_endpoint_normalisation(host, port, schema, expected):
    from lakefs_gc_airflow.hooks import lakefs_endpoint

    assert lakefs_endpoint(host, port, schema) == expected


def test_lakefs_connection_type_is_registered_as_a_provider():
    from airflow.providers_manager import ProvidersManager

    from lakefs_gc_airflow.hooks import LakeFSHook

    pm = ProvidersManager()
    assert "lakefs-gc" in pm.providers
    with warnings.catch_warnings():  # the UI side still reads ProvidersManager.hooks
        warnings.simplefilter("ignore")
        info = pm.hooks["lakefs"]
    assert info.hook_class_name == "lakefs_gc_airflow.hooks.LakeFSHook"
    assert info.connection_id_attribute_name == "lakefs_conn_id"
    ui = LakeFSHook.get_ui_field_behaviour()
    assert ui["relabeling"] == {"host": "Endpoint URL", "login": "Access key ID", "password": "Secret access key"}


def test_storage_settings_from_the_aws_connection(connections, monkeypatch):
    from lakefs_gc_airflow.hooks import storage_settings

    s = storage_settings("aws_default")
    assert (s.endpoint_url, s.region, s.access_key_id, s.secret_access_key) == \
        ("http://127.0.0.1:5000", "us-east-1", S3_ACCESS, S3_SECRET)
    assert S3_SECRET not in repr(s)
    assert storage_settings("no_such_conn") == type(s)()  # absent: empty (local namespaces need none)


# ---------------------------------------------------------------------------------------------
# GCSparkSubmitOperator: the command line and the environment

@pytest.mark.parametrize("step", SPARK_STEPS)
def test_spark_submit_command_has_files_and_args_but_no_secrets(tmp_path, connections, step):
    dag = dag_module().build_gc_dag(repo_config())
    op = dag.get_task(step)
    meta = base_meta(tmp_path)
    meta_path, result_path = op.prepare_submit(meta)
    hook = op._get_hook()
    cmd = hook._build_spark_submit_command(op.application)

    assert cmd[0] == str(Path(sys.executable).parent / "spark-submit")
    assert cmd[cmd.index("--master") + 1] == "local[*]"
    assert cmd[cmd.index("--py-files") + 1] == str(REPO / "build" / "lakefs_gc.zip")
    job = str(REPO / "jobs" / f"{step}.py")
    assert cmd[cmd.index(job) + 1:] == ["--meta", str(meta_path), "--result", str(result_path)]
    assert "--driver-memory" in cmd and "spark.ui.enabled=false" in cmd
    assert "spark.default.parallelism=2" in cmd
    line = " ".join(cmd)
    for secret in SECRETS:
        assert secret not in line
    # the meta file is the merged dict, without secrets
    text = meta_path.read_text()
    assert json.loads(text) == meta
    for secret in SECRETS:
        assert secret not in text
    # secrets reach spark-submit through its environment only
    env = hook._env
    assert env == op.env_vars
    assert env[runmeta.ENV_LAKEFS_ACCESS_KEY] == LAKEFS_ACCESS
    assert env[runmeta.ENV_LAKEFS_SECRET_KEY] == LAKEFS_SECRET
    assert env[runmeta.ENV_S3_ACCESS_KEY] == S3_ACCESS
    assert env[runmeta.ENV_S3_SECRET_KEY] == S3_SECRET
    assert env["PYSPARK_PYTHON"] == sys.executable
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)
    assert set(env) - {"PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PATH", "LAKEFS_GC_S3_ENDPOINT_URL",
                       "LAKEFS_GC_S3_REGION"} <= set(runmeta.SECRET_ENV)


def test_local_namespace_gets_no_s3_secrets(tmp_path, connections):
    op = dag_module().build_gc_dag(repo_config()).get_task("list_slices")
    op.prepare_submit(base_meta(tmp_path, namespace="local:///data/lakefs/sample-repo"))
    assert runmeta.ENV_S3_SECRET_KEY not in op.env_vars
    assert op.env_vars[runmeta.ENV_LAKEFS_SECRET_KEY] == LAKEFS_SECRET


def test_prepare_submit_twice_does_not_repeat_arguments(tmp_path, connections):
    op = dag_module().build_gc_dag(repo_config()).get_task("delete")
    op.prepare_submit(base_meta(tmp_path))
    op.prepare_submit(base_meta(tmp_path))
    assert op.application_args.count("--meta") == 1


def test_missing_spark_connection_fails_clearly_instead_of_defaulting_to_yarn(tmp_path, connections, monkeypatch):
    from airflow.sdk.exceptions import AirflowFailException

    monkeypatch.delenv("AIRFLOW_CONN_SPARK_DEFAULT")
    op = dag_module().build_gc_dag(repo_config()).get_task("list_slices")
    with pytest.raises(AirflowFailException, match=r"'spark_default' is not defined.*AIRFLOW_CONN_SPARK_DEFAULT"):
        op.prepare_submit(base_meta(tmp_path))


# ---------------------------------------------------------------------------------------------
# GCSparkSubmitOperator.execute with a stand-in spark-submit (real subprocess, no JVM)

def _spark_dag(tmp_path, **spark):
    from lakefs_gc.config import SparkSettings

    return dag_module().build_gc_dag(repo_config(spark=SparkSettings(**spark)))


def test_execute_merges_upstream_meta_runs_the_job_and_returns_its_result(tmp_path, connections):
    dag = _spark_dag(tmp_path, binary=str(fake_spark_submit(tmp_path)))
    op = dag.get_task("compute_candidates")
    meta = base_meta(tmp_path)
    xcoms = {"prepare_run": meta, "mark_uncommitted": {"run_id": "gc-run-1", "uncommitted_locations": ["x"]},
             "list_committed": {"committed_dir": "/w/committed", "committed_addresses": 5},
             "list_slices": {"listed_dir": "/w/listed", "listed_objects": 7}}
    ctx = context(xcoms)
    result = op.execute(ctx)

    # pulled from every ancestor, in topological order
    pulled = ctx["ti"].pulled[0]
    assert set(pulled) == {"prepare_run", "mark_uncommitted", "list_committed", "list_slices"}
    assert pulled[0] == "prepare_run" and pulled.index("mark_uncommitted") < pulled.index("list_committed")
    written = json.loads(Path(meta["work_dir"], "_control", "compute_candidates.meta.json").read_text())
    assert written["committed_dir"] == "/w/committed" and written["listed_objects"] == 7
    assert written["storage_namespace"] == meta["storage_namespace"]
    # the job saw the secrets in its environment, and not in argv
    assert result["secret_env"] == {runmeta.ENV_LAKEFS_ACCESS_KEY: digest(LAKEFS_ACCESS),
                                    runmeta.ENV_LAKEFS_SECRET_KEY: digest(LAKEFS_SECRET),
                                    runmeta.ENV_S3_ACCESS_KEY: digest(S3_ACCESS),
                                    runmeta.ENV_S3_SECRET_KEY: digest(S3_SECRET)}
    assert not any(s in " ".join(result["argv"]) for s in SECRETS)
    assert result["pyspark_python"] == sys.executable
    assert result["listed_objects"] == 3 and result["compute_candidates_seconds"] >= 0


def test_delete_is_a_no_op_reporting_zero_in_mark_only(tmp_path, connections):
    op = _spark_dag(tmp_path, binary="/bin/false").get_task("delete")  # would fail if started
    meta = {**base_meta(tmp_path), "mode": "mark_only"}
    result = op.execute(context({"prepare_run": meta, "compute_candidates": {"candidates": 9}}))
    assert result["deleted"] == 0 and result["delete_failed"] == 0
    assert not Path(meta["work_dir"], "_control").exists()


def test_failed_job_fails_the_task_without_leaking_secrets(tmp_path, connections):
    from airflow.sdk.exceptions import AirflowException

    op = _spark_dag(tmp_path, binary=str(fake_spark_submit(tmp_path, exit_code=3))).get_task("delete")
    with pytest.raises(AirflowException) as e:
        op.execute(context({"prepare_run": base_meta(tmp_path)}))
    assert "Error code is: 3" in str(e.value)
    assert not any(s in str(e.value) for s in SECRETS)


def test_job_without_result_file_fails_and_stale_results_are_not_reused(tmp_path, connections):
    from airflow.sdk.exceptions import AirflowException

    meta = base_meta(tmp_path)
    stale = Path(meta["work_dir"], "_control", "list_slices.result.json")
    stale.parent.mkdir(parents=True)
    stale.write_text('{"listed_objects": 999}')
    op = _spark_dag(tmp_path, binary=str(fake_spark_submit(tmp_path, write_result=False))).get_task("list_slices")
    with pytest.raises(AirflowException, match="wrote no result file"):
        op.execute(context({"prepare_run": meta}))


# ---------------------------------------------------------------------------------------------
# PrepareRunOperator / MarkUncommittedOperator (lakeFS client stood in for)

# the sweep Params as Jinja renders them (strings)
RENDERED_SWEEP = {"mark_id": "", "dry_run": "False", "confirm_after_seconds": "-1", "max_delete_share": "0.5",
                  "max_delete_count": "10000000", "mark_max_age_seconds": "604800", "delete_rate": "3000.0",
                  "delete_concurrency": "2", "delete_batch_size": "1000"}


class _Client:
    def __init__(self, *a, **kw):
        pass

    def get_repository(self, repo):
        import lakefs_sdk

        return lakefs_sdk.Repository(id=repo, creation_date=0, default_branch="main",
                                     storage_namespace="s3://bucket/sample-repo", storage_id="")

    def blockstore_type(self, storage_id=None):
        return "s3"

    def require_gc_rules(self, repo):
        return None

    def grace_period_seconds(self):
        return 86400

    def prepare_uncommitted_all(self, repo):
        return "runid", ["s3://bucket/sample-repo/_lakefs/retention/gc/uncommitted/runid/uncommitted/"], 3


@pytest.fixture
def fake_client(monkeypatch, connections):
    import lakefs_gc.lakefs_api as api

    monkeypatch.setattr(api, "LakeFSClient", _Client)


def test_prepare_run_fixes_the_clock_and_the_run_dir(fake_client, monkeypatch, tmp_path):
    monkeypatch.setenv("LAKEFS_GC_WORK_DIR", str(tmp_path))
    op = dag_module().build_gc_dag(repo_config()).get_task("prepare_run")
    op.mode, op.min_age_seconds, op.unsafe_min_age_override = "mark_only", "90000", "False"  # as rendered by Jinja
    op.sweep_params = RENDERED_SWEEP
    meta = op.execute(context({}, run_id="manual__2024-05-01T00:00:00+00:00"))
    assert meta["work_dir"] == f"{tmp_path}/sample-repo/manual__2024-05-01T00_00_00_00_00"
    assert (meta["mode"], meta["min_age_seconds"], meta["unsafe_min_age_override"]) == ("mark_only", 90000, False)
    assert (meta["storage_namespace"], meta["blockstore_type"], meta["grace_period_seconds"]) == \
        ("s3://bucket/sample-repo", "s3", 86400)
    assert (meta["s3_endpoint_url"], meta["s3_region"]) == ("http://127.0.0.1:5000", "us-east-1")
    assert meta["lakefs_endpoint"] == "http://127.0.0.1:8000/api/v1"
    assert meta["start_time"] > meta["cutoff_time"]
    assert meta["parallelism"] == 2  # from the entry's spark.parallelism
    assert not any(s in json.dumps(meta) for s in SECRETS)


def test_prepare_run_refuses_min_age_below_grace_naming_the_override(fake_client):
    from airflow.sdk.exceptions import AirflowFailException

    op = dag_module().build_gc_dag(repo_config()).get_task("prepare_run")
    op.mode, op.min_age_seconds, op.unsafe_min_age_override = "mark_and_sweep", "60", "False"
    op.sweep_params = RENDERED_SWEEP
    with pytest.raises(AirflowFailException, match="unsafe_min_age_override"):
        op.execute(context({}))
    op.unsafe_min_age_override = "True"
    meta = op.execute(context({}))
    assert meta["unsafe_min_age_override"] is True and meta["effective_min_age_seconds"] == 60


def test_mark_uncommitted_returns_every_location(fake_client):
    op = dag_module().build_gc_dag(repo_config()).get_task("mark_uncommitted")
    out = op.execute(context({"prepare_run": {"repository": "sample-repo"}}))
    assert (out["run_id"], out["uncommitted_pages"], len(out["uncommitted_locations"])) == ("runid", 3, 1)


def test_prepare_run_refuses_a_repository_without_gc_rules(fake_client, monkeypatch):
    from airflow.sdk.exceptions import AirflowFailException

    from lakefs_gc.lakefs_api import NoGCRulesError

    def no_rules(self, repo):
        raise NoGCRulesError(f"repository {repo!r} has no GC rules; set them with lakectl gc set-config")

    monkeypatch.setattr(_Client, "require_gc_rules", no_rules)
    op = dag_module().build_gc_dag(repo_config()).get_task("prepare_run")
    op.mode, op.min_age_seconds, op.unsafe_min_age_override = "mark_and_sweep", "90000", "False"
    with pytest.raises(AirflowFailException, match="has no GC rules.*set-config"):
        op.execute(context({}))
