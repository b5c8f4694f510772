"""Hook and operators: connections -> client, the spark-submit command line, secrets only in a
file only the job's user can read (more masters and the failure records: test_spark_tasks.py)."""

from __future__ import annotations

import json
import sys
import zipfile
from datetime import UTC
from pathlib import Path

import pytest

from lakefs_gc import contract
from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY
from lakefs_gc.storage.settings import ENV_ACCESS_KEY as ENV_S3_ACCESS_KEY, ENV_SECRET_KEY as ENV_S3_SECRET_KEY
from tests.airflow.conftest import LAKEFS_ACCESS, LAKEFS_SECRET, S3_ACCESS, S3_SECRET, conn_env
from tests.airflow.helpers import REPO, context, dag_module, digest, fake_spark_submit, repo_config
from tests.airflow.operators.support import (
    CANDIDATES,
    COMMITTED,
    SLICES,
    UNCOMMITTED,
    StoodInClient,
    base_ctx,
    base_inputs,
    wire,
)

SECRETS = (LAKEFS_ACCESS, LAKEFS_SECRET, S3_ACCESS, S3_SECRET)
SPARK_STEPS = ("list_committed", "list_slices", "compute_candidates", "attribute_space", "delete")


# ---------------------------------------------------------------------------------------------
# LakeFSHook


def test_lakefs_hook_builds_a_client_from_a_json_env_connection(monkeypatch, connections):
    from lakefs_gc.lakefs.client import LakeFSClient
    from lakefs_gc_airflow.hooks import LakeFSHook

    monkeypatch.setenv(
        *conn_env(
            "lakefs_test",
            conn_type="lakefs_gc",
            host="http://127.0.0.1:8123/",
            login="AKIATEST",
            password="sekret",
            extra={"max_retries": 2, "backoff_base": 0.01},
        )
    )
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
    import lakefs_gc.lakefs.client as api
    from lakefs_gc_airflow.hooks import LakeFSHook

    calls = []
    monkeypatch.setattr(api, "LakeFSClient", lambda *a, **kw: calls.append((a, kw)) or "client")
    assert LakeFSHook().get_conn() == "client"
    assert calls == [
        (
            ("http://127.0.0.1:8000/api/v1", LAKEFS_ACCESS, LAKEFS_SECRET),
            {"connection": "lakeFS connection 'lakefs_default'"},
        )
    ]


def test_lakefs_hook_errors_are_clear(monkeypatch):
    from lakefs_gc_airflow.hooks import LakeFSHook

    monkeypatch.setenv(*conn_env("lakefs_nokeys", conn_type="lakefs_gc", host="http://127.0.0.1:8000"))
    with pytest.raises(ValueError, match="'lakefs_nokeys' needs login .access key id. and password"):
        LakeFSHook(lakefs_conn_id="lakefs_nokeys").get_conn()
    monkeypatch.setenv(
        *conn_env(
            "lakefs_badextra", conn_type="lakefs_gc", host="h", login="a", password="b", extra={"max_retries": "many"}
        )
    )
    with pytest.raises(ValueError, match="extra 'max_retries' must be a int"):
        LakeFSHook(lakefs_conn_id="lakefs_badextra").get_conn()


@pytest.mark.parametrize(
    ("host", "port", "schema", "expected"),
    [
        ("http://127.0.0.1:8000", None, None, "http://127.0.0.1:8000/api/v1"),
        ("https://lakefs.example.com/api/v1/", None, None, "https://lakefs.example.com/api/v1"),
        ("http://lakefs", 8000, None, "http://lakefs:8000/api/v1"),
        ("lakefs", 8000, None, "http://lakefs:8000/api/v1"),
        ("lakefs", None, "prefix", "http://lakefs/prefix/api/v1"),
    ],
)
def test_lakefs_endpoint_normalisation(host, port, schema, expected):
    from lakefs_gc_airflow.hooks import lakefs_endpoint

    assert lakefs_endpoint(host, port, schema) == expected


def test_storage_options_from_the_aws_connection(connections, monkeypatch):
    from lakefs_gc_airflow.hooks import storage_options

    s = storage_options("aws_default")
    assert (s.endpoint_url, s.region, s.access_key_id, s.secret_access_key) == (
        "http://127.0.0.1:5000",
        "us-east-1",
        S3_ACCESS,
        S3_SECRET,
    )
    assert S3_SECRET not in repr(s)
    assert S3_ACCESS not in repr(s)
    assert storage_options("no_such_conn") is None  # absent: the caller decides (an error for s3://)


# ---------------------------------------------------------------------------------------------
# GCSparkSubmitOperator: the command line and the environment


@pytest.mark.parametrize("step", SPARK_STEPS)
def test_spark_submit_command_has_files_and_args_but_no_secrets(tmp_path, connections, step):
    dag = dag_module().build_gc_dag(repo_config())
    op = dag.get_task(step)
    inputs = base_inputs(tmp_path, step)
    meta_path, result_path = op.prepare_submit(inputs)
    hook = op._get_hook()
    cmd = hook._build_spark_submit_command(op.application)

    assert cmd[0] == str(Path(sys.executable).parent / "spark-submit")
    assert cmd[cmd.index("--master") + 1] == "local[*]"
    bundle = Path(cmd[cmd.index("--py-files") + 1])  # a zip of the imported package (lakefs_gc.spark.bundle)
    with zipfile.ZipFile(bundle) as z:
        names = set(z.namelist())
    assert {"lakefs_gc/__init__.py", "lakefs_gc/contract/__init__.py", "lakefs_gc/jobs/gc_step.py"} <= names
    assert not any(n.startswith(("lakefs_gc_airflow/", "lakefs_sandbox/")) or "__pycache__" in n for n in names)
    job = str(REPO / "include" / "lakefs_gc" / "jobs" / "gc_step.py")
    assert cmd[cmd.index(job) + 1 :] == [
        step,
        "--input",
        str(meta_path),
        "--result",
        str(result_path),
        "--secrets",
        str(op.secrets_file),
    ]
    assert "--driver-memory" in cmd
    assert "spark.ui.enabled=false" in cmd
    assert "spark.default.parallelism=2" in cmd
    line = " ".join(cmd)
    for secret in SECRETS:
        assert secret not in line
    # the input file is the typed context and the results this step reads, without secrets
    text = meta_path.read_text()
    assert contract.inputs_from_wire(json.loads(text)) == inputs
    for secret in SECRETS:
        assert secret not in text
    # secrets reach the job in a file only its user can read, never in spark-submit's environment
    env = hook._env
    assert env == op.env_vars
    assert set(env) == {"PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PATH"}
    assert env["PYSPARK_PYTHON"] == sys.executable
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)
    assert oct(op.secrets_file.stat().st_mode & 0o777) == "0o600"
    assert json.loads(op.secrets_file.read_text()) == {
        ENV_LAKEFS_ACCESS_KEY: LAKEFS_ACCESS,
        ENV_LAKEFS_SECRET_KEY: LAKEFS_SECRET,
        ENV_S3_ACCESS_KEY: S3_ACCESS,
        ENV_S3_SECRET_KEY: S3_SECRET,
    }
    path = op.secrets_file
    op.remove_secrets()
    assert not path.exists()
    assert not path.parent.exists()


def test_local_namespace_gets_no_s3_secrets(tmp_path, connections):
    op = dag_module().build_gc_dag(repo_config()).get_task("list_slices")
    op.prepare_submit(base_inputs(tmp_path, "list_slices", namespace="local://sample-repo"))
    secrets = json.loads(op.secrets_file.read_text())
    op.remove_secrets()
    assert ENV_S3_SECRET_KEY not in secrets
    assert secrets[ENV_LAKEFS_SECRET_KEY] == LAKEFS_SECRET


def test_s3_namespace_without_its_storage_connection_fails_naming_it(tmp_path, connections, monkeypatch):
    """Never a silent fall-back to whatever AWS credentials the worker has."""
    from airflow.sdk.exceptions import AirflowFailException

    monkeypatch.delenv("AIRFLOW_CONN_AWS_DEFAULT")
    op = dag_module().build_gc_dag(repo_config()).get_task("list_slices")
    with pytest.raises(AirflowFailException, match=r"storage connection 'aws_default' is not defined"):
        op.prepare_submit(base_inputs(tmp_path, "list_slices"))


def test_prepare_submit_twice_does_not_repeat_arguments(tmp_path, connections):
    op = dag_module().build_gc_dag(repo_config()).get_task("delete")
    try:
        op.prepare_submit(base_inputs(tmp_path, "delete"))
        first = op.secrets_file
        op.prepare_submit(base_inputs(tmp_path, "delete"))
        assert op.application_args.count("--input") == 1
        assert not first.exists()  # the first call's secrets file is gone, not left behind
        assert op.conf["spark.driver.extraJavaOptions"].count("-XX:TieredStopAtLevel=1") == 1
    finally:
        op.remove_secrets()


@pytest.mark.parametrize("fast_start", (True, False))
def test_the_drivers_fast_start_goes_before_the_entrys_java_options(tmp_path, connections, fast_start):
    from lakefs_gc.config import SparkSettings
    from lakefs_gc.spark import jvm

    spark = SparkSettings(fast_start=fast_start, conf={"spark.driver.extraJavaOptions": "-Dmine=1"})
    op = dag_module().build_gc_dag(repo_config(spark=spark)).get_task("list_slices")
    try:
        op.prepare_submit(base_inputs(tmp_path, "list_slices"))
    finally:
        op.remove_secrets()
    options = op.conf["spark.driver.extraJavaOptions"]
    if fast_start:  # the suite's class archive (tests/conftest.py), then the entry's own options
        assert options == f"{jvm.C1_ONLY} -XX:SharedArchiveFile={jvm.archive_path(op.spark_binary)} -Dmine=1"
    else:
        assert options == "-Dmine=1"


def test_missing_spark_connection_fails_clearly_instead_of_defaulting_to_yarn(tmp_path, connections, monkeypatch):
    from airflow.sdk.exceptions import AirflowFailException

    monkeypatch.delenv("AIRFLOW_CONN_SPARK_DEFAULT")
    op = dag_module().build_gc_dag(repo_config()).get_task("list_slices")
    with pytest.raises(AirflowFailException, match=r"'spark_default' is not defined.*AIRFLOW_CONN_SPARK_DEFAULT"):
        op.prepare_submit(base_inputs(tmp_path, "list_slices"))


# ---------------------------------------------------------------------------------------------
# GCSparkSubmitOperator.execute with a stand-in spark-submit (real subprocess, no JVM)


def _spark_dag(tmp_path, **spark):
    """The DAG with its Spark steps as spark-submits (a sweep too, however few its keys), no class archive
    made for a stand-in spark-submit."""
    from lakefs_gc.config import SparkSettings

    spark = {"in_process_max_keys": 0, "fast_start": False, **spark}
    return dag_module().build_gc_dag(repo_config(spark=SparkSettings(**spark)))


def test_execute_reads_its_inputs_by_task_id_runs_the_job_and_returns_its_typed_result(tmp_path, connections):
    dag = _spark_dag(tmp_path, binary=str(fake_spark_submit(tmp_path)))
    op = dag.get_task("compute_candidates")
    ctx_ = base_ctx(tmp_path)
    ctx = context(wire(ctx_, mark_uncommitted=UNCOMMITTED, list_committed=COMMITTED, list_slices=SLICES))
    result = op.execute(ctx)

    # pulled by task id: the context and exactly the results this step reads
    assert ctx["ti"].pulled == [["prepare_run", "mark_uncommitted", "list_committed", "list_slices"]]
    written = contract.inputs_from_wire(
        json.loads(Path(ctx_.work_dir, "_control", "compute_candidates.input.json").read_text())
    )
    assert written.results["list_committed"] == COMMITTED
    assert written.results["list_slices"].listed_objects == 7
    assert written.context == ctx_
    # the job read the secrets from its 0600 file, removed after it; none in argv or its environment
    seen = json.loads(Path(tmp_path, "fake-job-seen.json").read_text())
    assert seen["secrets_file"] == {
        ENV_LAKEFS_ACCESS_KEY: digest(LAKEFS_ACCESS),
        ENV_LAKEFS_SECRET_KEY: digest(LAKEFS_SECRET),
        ENV_S3_ACCESS_KEY: digest(S3_ACCESS),
        ENV_S3_SECRET_KEY: digest(S3_SECRET),
    }
    assert seen["secrets_mode"] == "0o600"
    assert seen["secret_env"] == {}
    assert not Path(seen["argv"][seen["argv"].index("--secrets") + 1]).exists()
    assert op.secrets_file is None
    assert not any(s in " ".join(seen["argv"]) for s in SECRETS)
    assert seen["pyspark_python"] == sys.executable
    assert contract.read_result("compute_candidates", result).candidates == 3


def test_a_result_of_the_wrong_shape_fails_the_task(tmp_path, connections):
    from airflow.sdk.exceptions import AirflowException

    op = _spark_dag(tmp_path, binary=str(fake_spark_submit(tmp_path, result={"listed_objects": 3}))).get_task(
        "list_slices"
    )
    with pytest.raises(AirflowException, match=r"list_slices: result file .*missing field 'listed_dir'"):
        op.execute(context(wire(base_ctx(tmp_path))))


def test_a_missing_upstream_result_fails_the_task_without_retry(tmp_path, connections):
    from airflow.sdk.exceptions import AirflowFailException

    op = _spark_dag(tmp_path, binary="/bin/false").get_task("compute_candidates")
    with pytest.raises(AirflowFailException, match="the result of task 'mark_uncommitted' is missing"):
        op.execute(context(wire(base_ctx(tmp_path), list_committed=COMMITTED, list_slices=SLICES)))


def test_delete_is_a_no_op_reporting_zero_in_mark_only(tmp_path, connections):
    op = _spark_dag(tmp_path, binary="/bin/false").get_task("delete")  # would fail if started
    ctx_ = base_ctx(tmp_path, mode="mark_only")
    result = contract.read_result("delete", op.execute(context(wire(ctx_))))
    assert result.skipped == "mark_only"
    assert result.counts.deleted == 0
    assert result.counts.failed == 0
    assert not Path(ctx_.work_dir, "_control").exists()


def test_failed_job_fails_the_task_without_leaking_secrets(tmp_path, connections):
    from airflow.sdk.exceptions import AirflowException

    op = _spark_dag(tmp_path, binary=str(fake_spark_submit(tmp_path, exit_code=3))).get_task("delete")
    with pytest.raises(AirflowException) as e:
        op.execute(
            context(
                wire(
                    base_ctx(tmp_path), mark_uncommitted=UNCOMMITTED, list_slices=SLICES, compute_candidates=CANDIDATES
                )
            )
        )
    assert "Error code is: 3" in str(e.value)
    assert not any(s in str(e.value) for s in SECRETS)


def test_job_without_result_file_fails_and_stale_results_are_not_reused(tmp_path, connections):
    from airflow.sdk.exceptions import AirflowException

    ctx_ = base_ctx(tmp_path)
    stale = Path(ctx_.work_dir, "_control", "list_slices.result.json")
    stale.parent.mkdir(parents=True)
    stale.write_text(json.dumps(contract.to_wire(SLICES)))
    op = _spark_dag(tmp_path, binary=str(fake_spark_submit(tmp_path, write_result=False))).get_task("list_slices")
    with pytest.raises(AirflowException, match="wrote no result file"):
        op.execute(context(wire(ctx_)))


# ---------------------------------------------------------------------------------------------
# PrepareRunOperator / MarkUncommittedOperator (lakeFS client stood in for)


def test_prepare_run_fixes_the_clock_and_the_run_dir(fake_client, monkeypatch, tmp_path):
    monkeypatch.setenv("LAKEFS_GC_WORK_DIR", str(tmp_path))
    op = dag_module().build_gc_dag(repo_config()).get_task("prepare_run")
    raw = op.execute(
        context(
            {},
            run_id="manual__2024-05-01T00:00:00+00:00",
            params={"mode": "mark_only", "min_age_seconds": 90000, "flow": "clean"},
        )
    )
    ctx = contract.from_wire(contract.RunContext, raw)
    assert (ctx.flow, ctx.flow_reason, ctx.base) == ("clean", "requested (flow=clean)", None)
    assert ctx.work_dir == f"{tmp_path}/sample-repo/manual__2024-05-01T00_00_00_00_00"
    assert (ctx.mode, ctx.settings.min_age_seconds, ctx.settings.unsafe_min_age_override) == ("mark_only", 90000, False)
    assert (ctx.storage.namespace, ctx.storage.blockstore_type, ctx.grace_period_seconds) == (
        "s3://bucket/sample-repo",
        "s3",
        86400,
    )
    assert (ctx.storage.endpoint_url, ctx.storage.s3_region) == ("http://127.0.0.1:5000", "us-east-1")
    assert ctx.lakefs_endpoint == "http://127.0.0.1:8000/api/v1"
    assert ctx.start_time > ctx.cutoff_time
    assert ctx.parallelism == 2  # from the entry's spark.parallelism
    assert ctx.settings.confirm_after_seconds == 0  # -1 (auto) resolves to 0 for a manual run
    assert not any(s in json.dumps(raw) for s in SECRETS)


def test_prepare_run_counts_the_cutoff_from_the_dag_runs_start_not_from_the_task(fake_client):
    """A run that waited (a busy worker, a slow DAG parse, a retried prepare_run) keeps what was
    written after the run started: the clock is the DAG run's start."""
    from datetime import datetime, timedelta
    from types import SimpleNamespace

    op = dag_module().build_gc_dag(repo_config()).get_task("prepare_run")
    started = datetime.now(UTC) - timedelta(minutes=20)
    c = context({}, params={"min_age_seconds": 90000, "flow": "clean"})
    ctx = contract.from_wire(contract.RunContext, op.execute({**c, "dag_run": SimpleNamespace(start_date=started)}))
    assert ctx.start_time == started.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert ctx.cutoff_time == (started - timedelta(seconds=90000)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    # no start recorded (or one in the future): the task's own clock
    ctx = contract.from_wire(contract.RunContext, op.execute({**c, "dag_run": SimpleNamespace(start_date=None)}))
    assert ctx.start_time > started.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_prepare_run_refuses_min_age_below_grace_naming_the_override(fake_client):
    from airflow.sdk.exceptions import AirflowFailException

    op = dag_module().build_gc_dag(repo_config()).get_task("prepare_run")
    with pytest.raises(AirflowFailException, match="unsafe_min_age_override"):
        op.execute(context({}, params={"min_age_seconds": 60}))
    ctx = contract.from_wire(
        contract.RunContext,
        op.execute(context({}, params={"min_age_seconds": 60, "unsafe_min_age_override": True, "flow": "clean"})),
    )
    assert ctx.settings.unsafe_min_age_override is True
    assert ctx.effective_min_age_seconds == 60


def test_prepare_run_refuses_an_s3_namespace_without_its_storage_connection(fake_client, monkeypatch):
    from airflow.sdk.exceptions import AirflowFailException

    monkeypatch.delenv("AIRFLOW_CONN_AWS_DEFAULT")
    op = dag_module().build_gc_dag(repo_config()).get_task("prepare_run")
    with pytest.raises(AirflowFailException, match=r"storage connection 'aws_default' is not defined"):
        op.execute(context({}))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"mode": "sweep_everything"}, r"Param 'mode' must be one of"),
        ({"delete_batch_size": 5000}, r"Param 'delete_batch_size' must be between 1 and 1000"),
        ({"dry_run": "yes"}, r"Param 'dry_run' must be true or false"),
        ({"confirm_after_seconds": -2}, r"Param 'confirm_after_seconds' must be >= -1"),
        # a run created with a value the form would have clamped (a hand-made conf, an old serialized DAG)
        ({"max_delete_share": 5}, r"Param 'max_delete_share' must be between 0.0 and 1.0, got 5.0"),
        ({"mode": "sweep_only", "mark_id": None}, r"mode sweep_only needs the Param mark_id"),
    ],
)
def test_prepare_run_refuses_bad_params_naming_them(fake_client, params, message):
    from airflow.sdk.exceptions import AirflowFailException

    op = dag_module().build_gc_dag(repo_config()).get_task("prepare_run")
    with pytest.raises(AirflowFailException, match=message):
        op.execute(context({}, params=params))


def test_mark_uncommitted_keeps_the_live_staged_addresses_lakefs_omits(lakefs_emulator, connections, monkeypatch):
    """The task against the emulator: a link-flow object staged on a local namespace (lakeFS's mark
    omits it) is counted in the result and logged once, by address."""
    import lakefs_sdk

    emu = lakefs_emulator
    monkeypatch.setenv(
        *conn_env(
            "lakefs_default",
            conn_type="lakefs_gc",
            host=emu.url,
            login=emu.access_key,
            password=emu.secret_key,
            extra={"local_blockstore_root": str(emu.root)},
        )
    )
    from lakefs_gc.storage import open_storage, parse_namespace
    from lakefs_sandbox.seed import link_object

    c, name = emu.client(), "op-mark"
    ns = emu.namespace(name)
    c.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=name, storage_namespace=ns, default_branch="main")
    )
    c.repositories_api.set_gc_rules(name, lakefs_sdk.GarbageCollectionRules(default_retention_days=1, branches=[]))
    linked = link_object(
        c, name, "main", "x.bin", b"x", open_storage(ns, None, emu.root), parse_namespace(ns, emu.root).roots()
    )
    c.objects_api.upload_object(name, "main", "plain.bin", content=b"p")
    dag = dag_module().build_gc_dag(repo_config(repository=name))
    ctx = dag.get_task("prepare_run").execute(context({}, params={"min_age_seconds": 90000, "staged_check": "full"}))
    import logging

    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("lakefs_gc.steps.mark_uncommitted")
    logger.addHandler(handler)
    try:
        out = contract.read_result(
            "mark_uncommitted", dag.get_task("mark_uncommitted").execute(context({"prepare_run": ctx}))
        )
    finally:
        logger.removeHandler(handler)
    assert (out.staged_branches, out.staged_entries_checked, out.staged_addresses_lakefs_omitted) == (1, 2, 1)
    address = "data/" + linked.rsplit("/data/", 1)[1]
    logged = [r.getMessage() for r in records if address in r.getMessage()]
    assert logged == [
        f"staged address {address} is live on a branch of {name} but lakeFS's uncommitted mark lacks it: kept"
    ], logged


def test_prepare_run_refuses_a_repository_without_gc_rules(fake_client, monkeypatch):
    from airflow.sdk.exceptions import AirflowFailException

    from lakefs_gc.errors import NoGCRulesError

    def no_rules(self, repo):
        raise NoGCRulesError(f"repository {repo!r} has no GC rules; set them with lakectl gc set-config")

    monkeypatch.setattr(StoodInClient, "require_gc_rules", no_rules)
    op = dag_module().build_gc_dag(repo_config()).get_task("prepare_run")
    with pytest.raises(AirflowFailException, match="has no GC rules.*set-config"):
        op.execute(context({}, params={"min_age_seconds": 90000}))


def test_the_lakefs_connections_retry_extras_reach_the_spark_jobs(fake_client, monkeypatch):
    """The jobs call lakeFS too (prepare_commits, ranges): they retry as the connection says."""
    from lakefs_gc.spark.runtime import lakefs_ref

    monkeypatch.setenv(
        *conn_env(
            "lakefs_default",
            conn_type="lakefs_gc",
            host="http://127.0.0.1:8000",
            login=LAKEFS_ACCESS,
            password=LAKEFS_SECRET,
            extra={"max_retries": 2, "backoff_base": 0.1},
        )
    )
    op = dag_module().build_gc_dag(repo_config()).get_task("prepare_run")
    ctx = contract.from_wire(
        contract.RunContext, op.execute(context({}, params={"min_age_seconds": 90000, "flow": "clean"}))
    )
    assert (ctx.lakefs_retries.max_retries, ctx.lakefs_retries.backoff_base, ctx.lakefs_retries.backoff_max) == (
        2,
        0.1,
        20.0,
    )
    ref = lakefs_ref(
        ctx, {"LAKEFS_GC_LAKEFS_ACCESS_KEY_ID": "AKIAXYZ", "LAKEFS_GC_LAKEFS_SECRET_ACCESS_KEY": "sekrit-77"}
    )
    assert ref.retries == ctx.lakefs_retries  # what LakeFSRef.client() builds its client with
    assert "sekrit-77" not in repr(ref)
    assert "AKIAXYZ" not in repr(ref)


# ---------------------------------------------------------------------------------------------
# a sweep of few keys in the delete task's own process (spark.in_process_max_keys), no spark-submit


def _sweep_task(tmp_path, max_keys: int = 10_000, **settings):
    from tests.spark.test_job_failures import delete_inputs

    inputs = delete_inputs(tmp_path, **settings)
    op = _spark_dag(tmp_path, binary="/bin/false", in_process_max_keys=max_keys).get_task("delete")
    ctx = context(
        wire(
            inputs.context, **{k: v for k, v in inputs.results.items() if v is not None}, compute_candidates=CANDIDATES
        )
    )
    return op, ctx, tmp_path / "ns" / "repo"


def test_a_sweep_of_few_keys_runs_in_the_task_without_spark_submit(tmp_path, connections, capfd):
    op, ctx, root = _sweep_task(tmp_path, listed=100)  # spark-submit is /bin/false: it would fail
    (root / "data/s1/live").write_bytes(b"live")
    result = contract.read_result("delete", op.execute(ctx))
    assert (result.counts.deleted, result.counts.failed, result.counts.keys) == (3, 0, 3)
    assert not any((root / f"data/s1/c{i}").exists() for i in range(3))
    assert (root / "data/s1/live").exists()
    out = "".join(capfd.readouterr())
    assert "delete: run in this task's process, without Spark (at most 10000 key(s): in_process_max_keys)" in out
    assert "deleted 3, already gone 0, dead letters 0 of 3 keys" in out
    assert not any(s in out for s in (LAKEFS_ACCESS, LAKEFS_SECRET))


def test_a_sweep_of_more_keys_than_in_process_max_keys_is_a_spark_submit(tmp_path, connections, capfd):
    from airflow.sdk.exceptions import AirflowException

    op, ctx, root = _sweep_task(tmp_path, max_keys=2, listed=100)
    with pytest.raises(AirflowException, match="Cannot execute"):  # /bin/false as spark-submit: it was started
        op.execute(ctx)
    assert "delete: the mark has more than 2 key(s) (in_process_max_keys): run by spark-submit" in "".join(
        capfd.readouterr()
    )
    assert all((root / f"data/s1/c{i}").exists() for i in range(3))


def test_a_refused_sweep_in_the_task_fails_it_without_retry_and_deletes_nothing(tmp_path, connections):
    from airflow.sdk.exceptions import AirflowFailException

    op, ctx, root = _sweep_task(tmp_path, listed=4, max_delete_share=0.5)
    with pytest.raises(AirflowFailException) as e:
        op.execute(ctx)
    assert str(e.value).startswith("delete refused: refusing to sweep mark")
    assert "3 objects to delete are 75.0% of 4 listed objects, above max_delete_share=0.5. Nothing was deleted" in str(
        e.value
    )
    assert all((root / f"data/s1/c{i}").exists() for i in range(3))


def test_dead_letters_of_a_sweep_in_the_task_fail_it_for_a_retry(tmp_path, connections):
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    op, ctx, root = _sweep_task(tmp_path, listed=100, delete_max_attempts=1)
    (root / "data/s1/c1").unlink()
    (root / "data/s1/c1").mkdir()  # an object that cannot be deleted: a dead letter
    (root / "data/s1/c1/x").write_bytes(b"x")
    with pytest.raises(AirflowException) as e:
        op.execute(ctx)
    assert not isinstance(e.value, AirflowFailException)  # retried: a later sweep of the mark retries the keys
    assert str(e.value).startswith("delete failed: StepFailed: 1 keys could not be deleted after retries")
    assert not (root / "data/s1/c0").exists()
    assert not (root / "data/s1/c2").exists()


def test_every_step_a_task_runs_itself_says_why_it_hands_over():
    from lakefs_gc.contract import SPARK_STEPS
    from lakefs_gc_airflow.spark_submit import IN_PROCESS_STEPS

    assert set(IN_PROCESS_STEPS) == set(SPARK_STEPS)  # each runs in its task (lakefs_gc.steps.run_in_task)
