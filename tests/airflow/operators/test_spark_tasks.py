"""The Spark tasks on a cluster's terms, and what a failing job means for its task.

Secrets: on every master (``local[*]``, ``yarn``, ``k8s://``, ``spark://``) no secret is in the
spark-submit command line, in the environment the provider gives spark-submit, or in a Spark
property; they are in a file only the job's user can read, removed after the job; cluster deploy
mode is refused before anything is written; the hooks hand every secret they read to Airflow's
``mask_secret``. Failures: a job's ``{"failure": ...}`` record of kind ``refused`` fails the task
with ``AirflowFailException`` (no retry), anything else raises ``AirflowException`` (retried). One
real spark-submit: the delete job's blast-radius guard, its Spark event log (what the Spark UI
shows) checked for secrets.
"""

from __future__ import annotations

import json
import sys

import pytest

from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY, SECRET_ENV
from lakefs_gc.storage.settings import ENV_ACCESS_KEY, ENV_SECRET_KEY, ENV_SESSION_TOKEN
from tests.airflow.conftest import LAKEFS_ACCESS, LAKEFS_SECRET, S3_ACCESS, S3_SECRET, conn_env
from tests.airflow.helpers import context, dag_module, fake_spark_submit, repo_config
from tests.airflow.operators.support import (
    CANDIDATES,
    COMMITTED,
    SLICES,
    UNCOMMITTED,
    base_ctx,
    base_inputs,
    wire,
)
from tests.support.jvm import java_options

S3_TOKEN = "s3-session-token-value-5e0c71"
SECRETS = (LAKEFS_ACCESS, LAKEFS_SECRET, S3_ACCESS, S3_SECRET, S3_TOKEN)
SPARK_STEPS = ("list_committed", "list_slices", "compute_candidates", "attribute_space", "delete")
K8S = "k8s://https://127.0.0.1:6443"
STANDALONE = "spark://127.0.0.1:7077"


@pytest.fixture
def cluster_connections(monkeypatch, connections):
    """The test connections, the storage one with a session token too."""
    monkeypatch.setenv(
        *conn_env(
            "aws_default",
            conn_type="aws",
            login=S3_ACCESS,
            password=S3_SECRET,
            extra={"endpoint_url": "http://127.0.0.1:5000", "region_name": "us-east-1", "aws_session_token": S3_TOKEN},
        )
    )


def _spark_conn(monkeypatch, master: str, deploy_mode: str | None = None) -> None:
    extra = {"deploy-mode": deploy_mode} if deploy_mode else {}
    monkeypatch.setenv(*conn_env("spark_default", conn_type="spark", host=master, extra=extra))


# ---------------------------------------------------------------------------------------------
# secrets on every master


@pytest.mark.parametrize(
    ("master", "deploy_mode"),
    [
        ("local[*]", None),
        ("yarn", None),
        ("yarn", "client"),
        (K8S, None),
        (K8S, "client"),
        (STANDALONE, None),
        (STANDALONE, "client"),
    ],
)
def test_no_secret_in_argv_environment_or_spark_properties_on_any_master(
    tmp_path, cluster_connections, monkeypatch, master, deploy_mode
):
    _spark_conn(monkeypatch, master, deploy_mode)
    op = dag_module().build_gc_dag(repo_config()).get_task("list_committed")
    op.prepare_submit(base_inputs(tmp_path, "list_committed"))
    path = op.secrets_file
    try:
        hook = op._get_hook()
        cmd = hook._build_spark_submit_command(op.application)
        assert cmd[cmd.index("--master") + 1] == master
        assert (cmd[cmd.index("--deploy-mode") + 1] if "--deploy-mode" in cmd else None) == deploy_mode
        line = " ".join(cmd)
        assert not any(s in line for s in SECRETS), line
        assert not any(name in line for name in SECRET_ENV), line  # no property even names a secret
        # what the provider turns env_vars into on YARN and Kubernetes: only the non-secret ones
        if master == "yarn":
            assert f"spark.yarn.appMasterEnv.PYSPARK_PYTHON={sys.executable}" in cmd
        if master == K8S:
            assert f"spark.kubernetes.driverEnv.PYSPARK_PYTHON={sys.executable}" in cmd
        # the environment the provider gives spark-submit
        assert not any(s in json.dumps(hook._env or {}) for s in SECRETS)
        # the secrets file: its path in argv, owner-only, every secret by the name the job reads
        assert cmd[cmd.index("--secrets") + 1] == str(path)
        assert (path.stat().st_mode & 0o777, path.parent.stat().st_mode & 0o777) == (0o600, 0o700)
        assert json.loads(path.read_text()) == {
            ENV_LAKEFS_ACCESS_KEY: LAKEFS_ACCESS,
            ENV_LAKEFS_SECRET_KEY: LAKEFS_SECRET,
            ENV_ACCESS_KEY: S3_ACCESS,
            ENV_SECRET_KEY: S3_SECRET,
            ENV_SESSION_TOKEN: S3_TOKEN,
        }
    finally:
        op.remove_secrets()
    assert not path.exists()
    assert not path.parent.exists()


@pytest.mark.parametrize(
    ("master", "deploy_mode", "conf"),
    [
        ("yarn", "cluster", {}),
        (K8S, "cluster", {}),
        (STANDALONE, "cluster", {}),
        ("yarn", None, {"spark.submit.deployMode": "cluster"}),
    ],
)
def test_cluster_deploy_mode_is_refused_before_anything_is_written(
    tmp_path, cluster_connections, monkeypatch, master, deploy_mode, conf
):
    from airflow.sdk.exceptions import AirflowFailException

    from lakefs_gc.config import SparkSettings

    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    _spark_conn(monkeypatch, master, deploy_mode)
    op = dag_module().build_gc_dag(repo_config(spark=SparkSettings(conf=conf))).get_task("delete")
    where = (
        "the conf spark.submit.deployMode" if conf else "the extra 'deploy-mode' of Spark connection 'spark_default'"
    )
    with pytest.raises(
        AirflowFailException,
        match=rf"delete: {where} asks for deploy mode 'cluster'; the GC's "
        r"Spark steps run in client deploy mode only .*Set it to 'client'",
    ):
        op.prepare_submit(base_inputs(tmp_path, "delete"))
    assert op.secrets_file is None
    assert not any((tmp_path / "tmp").iterdir())
    assert not (tmp_path / "work").exists()


def test_every_secret_the_hooks_read_is_masked(cluster_connections, monkeypatch):
    from airflow.sdk.log import redact

    import lakefs_gc_airflow.hooks as hooks

    masked = []
    real = hooks.mask_secret
    monkeypatch.setattr(hooks, "mask_secret", lambda secret, *a, **kw: (masked.append(secret), real(secret, *a, **kw)))
    hooks.LakeFSHook().credentials()
    hooks.storage_options("aws_default")
    assert sorted(masked) == sorted([LAKEFS_SECRET, S3_SECRET, S3_TOKEN])
    text = redact(f"lakeFS {LAKEFS_SECRET} s3 {S3_SECRET} token {S3_TOKEN}")
    assert not any(s in text for s in (LAKEFS_SECRET, S3_SECRET, S3_TOKEN)), text


# ---------------------------------------------------------------------------------------------
# a job's failure record -> the task's fate (a stand-in spark-submit: real subprocess, no JVM)

ALL_RESULTS = {
    "mark_uncommitted": UNCOMMITTED,
    "list_committed": COMMITTED,
    "list_slices": SLICES,
    "compute_candidates": CANDIDATES,
}


def _execute(tmp_path, step, binary):
    from lakefs_gc.config import SparkSettings

    op = (
        dag_module()
        .build_gc_dag(repo_config(spark=SparkSettings(binary=str(binary), in_process_max_keys=0, fast_start=False)))
        .get_task(step)
    )
    try:
        return op, op.execute(context(wire(base_ctx(tmp_path), **ALL_RESULTS)))
    finally:
        assert op.secrets_file is None  # removed however the job ended


@pytest.mark.parametrize("step", SPARK_STEPS)
def test_a_refusal_the_job_records_fails_the_task_without_retry(tmp_path, connections, capfd, step):
    from airflow.sdk.exceptions import AirflowFailException

    message = f"refusing in {step}: trigger the run again with the Param max_delete_share >= 0.760"
    binary = fake_spark_submit(
        tmp_path, failures={step: {"kind": "refused", "type": "SweepRefused", "message": message}}
    )
    with pytest.raises(AirflowFailException) as e:
        _execute(tmp_path, step, binary)
    assert str(e.value) == f"{step} refused: {message}"
    out = "".join(capfd.readouterr())
    assert f"lakefs-gc {step}: REFUSED: SweepRefused: {message}" in out  # the job's own line, in the task log
    # the reason under a headline, in lines short enough for the log view (task_io.log_reason)
    assert f"{step} refused (no retry):" in out
    assert f"    {message}" in out


@pytest.mark.parametrize("step", ("list_slices", "delete"))
def test_a_failure_that_may_pass_is_retried(tmp_path, connections, capfd, step):
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    message = "s3://bucket/repo/data/: 503 SlowDown after 5 attempts"
    binary = fake_spark_submit(
        tmp_path, failures={step: {"kind": "failed", "type": "StorageError", "message": message}}
    )
    with pytest.raises(AirflowException) as e:
        _execute(tmp_path, step, binary)
    assert not isinstance(e.value, AirflowFailException)
    assert str(e.value) == f"{step} failed: StorageError: {message}"
    assert f"lakefs-gc {step}: FAILED: StorageError: {message}" in "".join(capfd.readouterr())


@pytest.mark.parametrize("case", ("no record", "unreadable record"))
def test_a_job_that_dies_without_a_readable_record_is_retried(tmp_path, connections, case):
    """Killed, out of memory, never started: spark-submit's own failure, retried."""
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    if case == "no record":
        binary = fake_spark_submit(tmp_path, exit_code=137, write_result=False)
    else:
        binary = fake_spark_submit(tmp_path, exit_code=1, result={"failure": {"kind": "gave up"}})
    with pytest.raises(AirflowException) as e:
        _execute(tmp_path, "compute_candidates", binary)
    assert not isinstance(e.value, AirflowFailException)
    assert "Cannot execute" in str(e.value)


def test_a_failure_record_fails_the_task_even_when_spark_submit_exits_zero(tmp_path, connections):
    from airflow.sdk.exceptions import AirflowFailException

    binary = fake_spark_submit(
        tmp_path,
        result={"failure": {"kind": "refused", "type": "ContractError", "message": "a context of another version"}},
    )
    with pytest.raises(AirflowFailException, match="list_slices refused: a context of another version"):
        _execute(tmp_path, "list_slices", binary)


# ---------------------------------------------------------------------------------------------
# the delete job for real: spark-submit, its blast-radius guard, the Spark event log


@pytest.mark.spark
def test_the_delete_jobs_refusal_through_spark_submit_fails_the_task_once_and_leaks_no_secret(
    tmp_path, connections, capfd, monkeypatch
):
    from airflow.sdk.exceptions import AirflowFailException

    from lakefs_gc.config import SparkSettings
    from tests.spark.test_job_failures import delete_inputs

    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))  # where the secrets file goes
    monkeypatch.setenv("LAKEFS_GC_CACHE_DIR", str(tmp_path / "py-files"))  # the package's zip: not a secret, elsewhere
    (tmp_path / "tmp").mkdir()
    inputs = delete_inputs(tmp_path, listed=4, max_delete_share=0.5)
    events = tmp_path / "spark-events"
    events.mkdir()
    spark = SparkSettings(
        driver_memory="1g",
        parallelism=2,
        in_process_max_keys=0,
        conf={
            "spark.ui.enabled": "false",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.extraJavaOptions": java_options(),
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": events.as_uri(),
            "spark.eventLog.compress": "false",
        },
    )
    op = dag_module().build_gc_dag(repo_config(spark=spark)).get_task("delete")
    ctx = context(
        wire(
            inputs.context, **{k: v for k, v in inputs.results.items() if v is not None}, compute_candidates=CANDIDATES
        )
    )
    with pytest.raises(AirflowFailException) as e:
        op.execute(ctx)
    message = "3 objects to delete are 75.0% of 4 listed objects, above max_delete_share=0.5. Nothing was deleted"
    assert message in str(e.value)
    assert str(e.value).startswith("delete refused: refusing to sweep mark")
    out = "".join(capfd.readouterr())
    assert "lakefs-gc delete: REFUSED: SweepRefused: refusing to sweep mark" in out  # the job's line, via spark-submit
    assert all((tmp_path / "ns" / "repo" / f"data/s1/c{i}").exists() for i in range(3))  # nothing deleted
    assert op.secrets_file is None
    assert not any((tmp_path / "tmp").iterdir())  # the secrets file is gone
    # what the Spark UI's Environment tab (and the history server) shows: the event log
    logs = [p for p in events.rglob("*") if p.is_file() and not p.name.endswith(".crc")]
    assert logs, "no Spark event log written"
    text = "".join(p.read_text() for p in logs)
    assert '"Event":"SparkListenerEnvironmentUpdate"' in text
    assert '"sun.java.command"' in text  # argv is there
    assert not any(s in text for s in (LAKEFS_ACCESS, LAKEFS_SECRET)), "a secret in the Spark event log"
    assert not any(name in text for name in SECRET_ENV)
    assert not any(s in out for s in (LAKEFS_ACCESS, LAKEFS_SECRET))


@pytest.mark.parametrize(("conf", "level"), [({}, "WARN"), ({"spark.log.level": "INFO"}, "INFO")])
def test_spark_logs_at_warn_unless_the_entry_sets_its_level(tmp_path, connections, conf, level):
    """The job's own lines stay at INFO; Spark's from the SparkContext's start are at WARN
    (``spark.log.level``), unless the entry's ``spark.conf`` asks for another level."""
    from lakefs_gc.config import SparkSettings

    op = dag_module().build_gc_dag(repo_config(spark=SparkSettings(conf=conf))).get_task("list_slices")
    op.prepare_submit(base_inputs(tmp_path, "list_slices"))
    try:
        cmd = op._get_hook()._build_spark_submit_command(op.application)
    finally:
        op.remove_secrets()
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "--conf" and cmd[i + 1].startswith("spark.log.level=")] == [
        f"spark.log.level={level}"
    ]
