"""
The Spark steps' operator: ``GCSparkSubmitOperator``.

The Spark provider's ``SparkSubmitOperator`` running one GC job (``lakefs_gc/jobs/<step>.py``),
its inputs and secrets in files, its result read back typed.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowNotFoundException

from lakefs_gc import contract
from lakefs_gc.errors import ContractError
from lakefs_gc.report.layout import CONTROL, safe_name
from lakefs_gc_airflow.hooks import LakeFSHook
from lakefs_gc_airflow.lineage import OpenLineageMixin
from lakefs_gc_airflow.task_io import (
    default_spark_binary,
    failure_exception,
    local_dir,
    namespace_options,
    records_failure,
    step_inputs,
)

if TYPE_CHECKING:
    from airflow.sdk import Connection, Context


# why a step its task runs in its own process for a small input (lakefs_gc.steps.run_in_task) was
# handed over to spark-submit
IN_PROCESS_STEPS = {s.task_id: s.hands_over for s in contract.STEP_TABLE if s.hands_over}
# the step that waits for lakeFS (its commits preparation) before its work: deferrable
WAITS_FOR_LAKEFS = "list_committed"


class GCSparkSubmitOperator(OpenLineageMixin, SparkSubmitOperator):
    """
    One GC step as a Spark job, submitted with ``spark-submit``.

    ``spark-submit --py-files ZIP .../lakefs_gc/jobs/gc_step.py <step> --input INPUT.json
    --result RESULT.json --secrets SECRETS.json``.

    The job is the entry point inside the installed ``lakefs_gc`` package unless ``jobs_dir`` is
    given (``<jobs_dir>/gc_step.py``); ``py_files`` defaults to a zip of the installed package,
    built on first use and cached (``lakefs_gc.spark.bundle``), so no checkout of the repository
    is needed on the worker.

    At execute time: writes the step's typed inputs to ``<work_dir>/_control/<step>.input.json``
    and the lakeFS and S3 secrets to a file only this user can read, runs the job, and returns the
    job's result file, read back as the step's result type. In a mode where the step does nothing
    (``contract.skipped``) it returns without starting Spark.

    A job that fails records why in its result file (``lakefs_gc.spark.shell``): a refusal (the
    blast-radius guard, no GC rules, a bad Param: the same answer on every retry) fails the task
    at once with ``AirflowFailException``, its message in the task log; any other failure, and a
    job that died without a record, raises ``AirflowException`` and Airflow retries the task.

    Secrets never travel in ``env_vars``: on YARN and Kubernetes the Spark provider turns them into
    ``--conf spark.yarn.appMasterEnv.K=V`` / ``spark.kubernetes.driverEnv.K=V`` (argv, the Spark
    UI's Environment tab, the event log), and standalone cluster mode refuses them. The task writes
    them to a file (mode 0600 from its creation, in a new 0700 temporary directory:
    ``lakefs_gc.spark.runtime.write_secrets``), passes its path as ``--secrets`` (a path, not a
    secret) and removes it when spark-submit returns, fails or is killed. The driver reads it and
    hands the keys to executors inside the closures of its Spark tasks, never as Spark properties.
    That needs the driver on this worker: client deploy mode, the default, on every master
    (``local``, ``yarn``, ``k8s://``, ``spark://``); executors run on the cluster as usual. Cluster
    deploy mode is refused before anything is written: the driver would run on another host, where
    neither this file nor the step's input and result files are; shipping the secrets with
    ``--files`` would upload them to the cluster's staging storage (YARN's staging directory, or on
    Kubernetes ``spark.kubernetes.file.upload.path``, a shared bucket), out of this task's reach to
    remove.

    Deferrable (``deferrable``): ``list_committed`` starts lakeFS's commits preparation itself and
    looks a few seconds for its end; if lakeFS is not done, the task defers to
    :class:`lakefs_gc_airflow.triggers.LakeFSPrepareCommitsTrigger` and resumes in
    :meth:`execute_complete`, which runs the step as :meth:`execute` would, with lakeFS's answer
    handed in (``StepInputs.prepared_commits``: the step, or its Spark job, does not ask lakeFS
    again). A retry starts over from :meth:`execute` (a new lakeFS task). Spark's own wait needs no
    trigger: cluster deploy mode is refused, and in client mode spark-submit runs the job's driver here.

    :param step: the Spark step (task id) this task runs: one of ``lakefs_gc.contract.SPARK_STEPS``.
    :param jobs_dir: a folder holding the entry point ``gc_step.py`` (default: the installed package's).
    :param lakefs_conn_id: the lakeFS connection (its keys reach the job in the secrets file).
    :param storage_conn_id: the connection that serves the storage namespace (None: ``local://``).
    :param pyspark_python: the Python of the executors (``PYSPARK_PYTHON``; default: the worker's).
    :param conn_id: the Spark connection (master, deploy mode, queue...).
    :param deploy_mode: ``client`` (the default; ``cluster`` is refused, see above).
    :param spark_binary: the ``spark-submit`` to run (default: the one beside the worker's Python).
    :param fast_start: start the driver's JVM with the client compiler only and Spark's classes from a
        class-data-sharing archive (lakefs_gc.spark.jvm): seconds less per spark-submit.
    :param in_process_max_keys: run the step in this task's own process, without Spark, when it has
        at most this many keys to handle (0: always spark-submit); the engine decides
        (:class:`lakefs_gc.placement.Placement`).
    :param deferrable: ``list_committed`` waits for lakeFS's commits preparation in Airflow's
        triggerer, holding no worker or pool slot (the other steps have no wait to defer); default:
        Airflow's ``[operators] default_deferrable``. Not deferrable: the step waits in the task.
    :param kwargs: the arguments of ``SparkSubmitOperator`` (``conf``, ``application_args``...).
    """

    template_fields: Sequence[str] = (
        *SparkSubmitOperator.template_fields,
        "step",
        "lakefs_conn_id",
        "storage_conn_id",
        "pyspark_python",
    )
    ui_color = "#fde9c8"
    secrets_file: Path | None = None  # from prepare_submit until the job is over

    def __init__(
        self,
        *,
        step: str,
        jobs_dir: str | None = None,
        lakefs_conn_id: str = LakeFSHook.default_conn_name,
        storage_conn_id: str | None = "aws_default",
        pyspark_python: str | None = None,
        conn_id: str = "spark_default",
        deploy_mode: str | None = None,
        spark_binary: str | None = None,
        fast_start: bool = True,
        in_process_max_keys: int = 0,
        deferrable: bool | None = None,
        **kwargs: Any,
    ) -> None:
        from lakefs_gc.spark.bundle import JOB, job_args, job_path

        kwargs.setdefault("application", str(Path(jobs_dir) / JOB) if jobs_dir else str(job_path()))
        kwargs.setdefault("name", f"lakefs-gc-{step}")
        spark_binary = spark_binary or default_spark_binary()
        # SparkSubmitOperator keeps these three private: given to it, and kept here as they were given
        super().__init__(conn_id=conn_id, deploy_mode=deploy_mode, spark_binary=spark_binary, **kwargs)
        self.spark_conn_id = conn_id
        self.deploy_mode = deploy_mode
        self.spark_binary = spark_binary
        self.step = step
        self.lakefs_conn_id = lakefs_conn_id
        self.storage_conn_id = storage_conn_id
        self.pyspark_python = pyspark_python
        self.fast_start = fast_start
        if in_process_max_keys and step not in IN_PROCESS_STEPS:
            raise ValueError(f"in_process_max_keys is for the steps {', '.join(IN_PROCESS_STEPS)} only, not {step!r}")
        self.in_process_max_keys = in_process_max_keys
        from lakefs_gc_airflow.triggers import default_deferrable

        self.deferrable = default_deferrable() if deferrable is None else deferrable
        self._base_args = [*job_args(step), *(self.application_args or [])]
        self.application_args = list(self._base_args)  # the one entry point, told the step first

    def prepare_submit(self, inputs: contract.StepInputs) -> tuple[Path, Path]:
        """
        Write the input and secrets files and set argv/env for spark-submit; return (input path, result path).

        The secrets file is removed by :meth:`remove_secrets`.
        """
        from lakefs_gc.spark.runtime import write_secrets
        from lakefs_gc.spark.shell import DEFAULT_SPARK_LOG_LEVEL, LOG_LEVEL_CONF

        try:
            conn = BaseHook.get_connection(self.spark_conn_id)
        except AirflowNotFoundException:
            raise AirflowFailException(
                f"Spark connection {self.spark_conn_id!r} is not defined (without it spark-submit would "
                f"default to YARN). Define it, e.g. AIRFLOW_CONN_{self.spark_conn_id.upper()}="
                '\'{"conn_type": "spark", "host": "local[*]"}\''
            ) from None
        self._refuse_cluster_mode(conn)
        secrets = self._job_secrets(inputs.context)
        input_path = self._write_input(inputs)
        result_path = input_path.with_name(f"{self.task_id}.result.json")
        result_path.unlink(missing_ok=True)  # a retry must not read a previous attempt's result
        self.remove_secrets()
        self.secrets_file = write_secrets(secrets)
        self.application_args = [
            *self._base_args,
            "--input",
            str(input_path),
            "--result",
            str(result_path),
            "--secrets",
            str(self.secrets_file),
        ]
        self.env_vars = {**(self.env_vars or {}), **self._runtime_env()}
        # Spark at WARN from the SparkContext's start (our own lines stay at INFO); the entry's
        # spark.conf may set another level
        self.conf = {LOG_LEVEL_CONF: DEFAULT_SPARK_LOG_LEVEL, **(self.conf or {})}
        if self.fast_start:  # the driver JVM's start-up: C1 only, Spark's classes from an archive
            from lakefs_gc.spark.jvm import driver_java_options, with_driver_options

            self.conf = with_driver_options(
                self.conf, driver_java_options(self.spark_binary, self.pyspark_python or sys.executable)
            )
        if not self.py_files:
            from lakefs_gc.spark.bundle import py_files

            self.py_files = str(py_files())
        return input_path, result_path  # SparkSubmitOperator.execute builds its hook from the fields above

    def _write_input(self, inputs: contract.StepInputs) -> Path:
        """Write the step's input file, ``<work_dir>/_control/<task>.input.json`` (no secrets); return its path."""
        path = self._control_dir(inputs.context) / f"{self.task_id}.input.json"
        contract.write_json(contract.inputs_to_wire(inputs), path)
        return path

    # the provider's execute returns nothing; this one returns the step's result, the task's XCom
    # (BaseOperator.execute returns Any)
    @records_failure
    def execute(self, context: Context) -> dict[str, Any] | None:  # type: ignore[override]
        inputs = step_inputs(self.step, context)
        mode = inputs.context.mode
        if contract.skipped(self.step, mode):
            self.log.info("%s is a no-op in mode %s", self.step, mode)
            return contract.to_wire(contract.skip_result(self.step, mode))
        if self.deferrable and self.step == WAITS_FOR_LAKEFS:
            inputs = self._prepared_or_defer(inputs)
        return self._run_step(inputs, context)

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """
        Resume after :class:`~lakefs_gc_airflow.triggers.LakeFSPrepareCommitsTrigger`: the step, with lakeFS's answer.

        The inputs are read again from XCom (this is a new process); a failed or timed-out wait
        fails the task as the step's own wait would (no GC rules: a refusal, not retried).
        """
        from lakefs_gc_airflow.task_io import record_failure
        from lakefs_gc_airflow.triggers import event_outcome

        try:  # (records_failure's wrapper takes the context only)
            outcome = event_outcome(event)
            if isinstance(outcome, contract.StepFailure):
                raise self._failure_exception(outcome)
            self.log.info("lakeFS prepared the commits (%s): %s", outcome.run_id, outcome.gc_commits_location)
            inputs = dataclasses.replace(step_inputs(self.step, context), prepared_commits=outcome)
            return self._run_step(inputs, context)
        except Exception as exc:
            record_failure(context, exc)
            raise

    def _prepared_or_defer(self, inputs: contract.StepInputs) -> contract.StepInputs:
        """
        Start lakeFS's commits preparation and wait a few seconds here; defer to the triggerer if it is not done.

        Return ``inputs`` with lakeFS's answer (``prepared_commits``), or raise ``TaskDeferred``.
        """
        from lakefs_gc_airflow.triggers import Pending, defer_args, prepare_commits_briefly

        ctx = inputs.context
        timeout = float(ctx.settings.prepare_commits_timeout_seconds)
        try:
            with LakeFSHook(lakefs_conn_id=self.lakefs_conn_id).get_conn() as client:
                got = prepare_commits_briefly(client, ctx.repository, timeout)
        except Exception as exc:  # as the step's own wait fails: a refusal or a retried failure
            raise self._failure_exception(contract.failure_of(exc)) from exc
        if not isinstance(got, Pending):
            return dataclasses.replace(inputs, prepared_commits=got)
        self.log.info(
            "lakeFS is preparing the commits of %s (task %s): deferring to the triggerer (at most %ds)",
            ctx.repository,
            got.task_id,
            timeout,
        )
        self.defer(**defer_args(self.lakefs_conn_id, ctx.repository, got, timeout), method_name="execute_complete")

    def _run_step(self, inputs: contract.StepInputs, context: Context) -> dict[str, Any] | None:
        """Run the step: in this process for a small input, else by spark-submit; return its result (the XCom)."""
        if self.in_process_max_keys > 0:
            done = self._run_in_task(inputs)
            if done is not None:
                return done
        _, result_path = self.prepare_submit(inputs)
        try:
            super().execute(context)
        except AirflowException:
            failure = self._job_failure(result_path)
            if failure is None:  # no record: killed, out of memory, never started... retried
                raise
            raise self._failure_exception(failure) from None
        finally:
            self.remove_secrets()
        try:
            raw = contract.read_json(result_path)
        except FileNotFoundError:
            raise AirflowException(
                f"{self.step}: spark-submit succeeded but the job wrote no result file {result_path}"
            ) from None
        try:
            failure = contract.read_failure(raw)
            if failure is not None:
                raise self._failure_exception(failure)
            result = contract.read_result(self.step, raw)
        except ContractError as e:
            raise AirflowException(f"{self.step}: result file {result_path}: {e}") from e
        from lakefs_gc.report.render import step_line

        self.log.info("%s", step_line(self.step, result))
        return contract.to_wire(result)

    def _run_in_task(self, inputs: contract.StepInputs) -> dict[str, Any] | None:
        """
        Run the step in this task's process, without Spark, when its input is at most ``in_process_max_keys`` keys.

        :data:`IN_PROCESS_STEPS`: the same guard, reading, writing and result. Return its result, or
        None when the input is larger (then spark-submit runs it).
        """
        from lakefs_gc.report.render import step_line
        from lakefs_gc.spark.shell import StepFailed
        from lakefs_gc.steps import run_in_task  # here, not at the DAG file's parse

        environ = {**os.environ, **self._job_secrets(inputs.context)}
        self._write_input(inputs)  # kept, as for a job: the step can be re-run by hand
        t0 = time.monotonic()
        try:
            result = run_in_task(self.step, inputs, environ, self.in_process_max_keys)
            if result is not None and getattr(result, "incomplete", None):
                raise StepFailed(result.incomplete)
        except Exception as exc:
            raise self._failure_exception(contract.failure_of(exc)) from exc
        if result is None:
            self.log.info(
                "%s: %s (in_process_max_keys): run by spark-submit",
                self.step,
                IN_PROCESS_STEPS[self.step].format(n=self.in_process_max_keys),
            )
            return None
        result = dataclasses.replace(result, seconds=round(time.monotonic() - t0, 3))
        self.log.info(
            "%s: run in this task's process, without Spark (at most %d key(s): in_process_max_keys)",
            self.step,
            self.in_process_max_keys,
        )
        self.log.info("%s", step_line(self.step, result))
        return contract.to_wire(result)

    def on_kill(self) -> None:
        try:
            super().on_kill()
        finally:
            self.remove_secrets()

    def remove_secrets(self) -> None:
        """Remove the job's secrets file, if any (after the job, on failure, on kill)."""
        from lakefs_gc.spark.runtime import remove_secrets

        if self.secrets_file is not None:
            remove_secrets(self.secrets_file)
            self.secrets_file = None

    def _job_failure(self, result_path: Path) -> contract.StepFailure | None:
        """Return the failure the job recorded in its result file, or None (no file, or not a record)."""
        try:
            return contract.read_failure(contract.read_json(result_path))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, ContractError) as e:
            self.log.warning("%s: unreadable failure record in %s (%s)", self.step, result_path, e)
            return None

    def _failure_exception(self, failure: contract.StepFailure) -> AirflowException:
        """Return the task's exception for ``failure``: a refusal without retry, any other failure retried."""
        return failure_exception(self.log, self.step, failure)

    def _refuse_cluster_mode(self, conn: Connection) -> None:
        """Refuse cluster deploy mode: the steps run in client deploy mode only (see the class docstring)."""
        asked = {
            "the task's deploy_mode": self.deploy_mode,
            f"the extra 'deploy-mode' of Spark connection {self.spark_conn_id!r}": (conn.extra_dejson or {}).get(
                "deploy-mode"
            ),
            "the conf spark.submit.deployMode": (self.conf or {}).get("spark.submit.deployMode"),
        }
        where = [k for k, v in asked.items() if str(v or "").strip().lower() == "cluster"]
        if where:
            raise AirflowFailException(
                f"{self.step}: {' and '.join(where)} asks for deploy mode 'cluster'; the GC's Spark steps run in "
                f"client deploy mode only (the driver reads its input and secrets files and writes its result "
                f"file on the Airflow worker; executors still run on the cluster). Set it to 'client' or remove it"
            )

    def _control_dir(self, ctx: contract.RunContext) -> Path:
        local = local_dir(ctx.work_dir)
        if local is None:
            # A remote work location (s3://...): the small control files stay on this worker.
            local = Path(tempfile.gettempdir()) / "lakefs-gc-control" / safe_name(ctx.airflow_run_id)
        path = local / CONTROL
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _runtime_env(self) -> dict[str, str]:
        """Return the job's environment besides the secrets (none of it secret: it may reach argv)."""
        python = self.pyspark_python or sys.executable
        return {
            "PYSPARK_PYTHON": python,
            "PYSPARK_DRIVER_PYTHON": python,
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        }

    def _job_secrets(self, ctx: contract.RunContext) -> dict[str, str]:
        """
        Return the lakeFS keys and the storage connection's credentials, by the names the job reads.

        The credentials: S3 keys, Azure key, SAS or token, GCS token; endpoints travel in the run context.
        """
        from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY, SECRET_ENV

        access, secret = LakeFSHook(lakefs_conn_id=self.lakefs_conn_id).credentials()
        secrets = {ENV_LAKEFS_ACCESS_KEY: access, ENV_LAKEFS_SECRET_KEY: secret}
        options = namespace_options(ctx, self.storage_conn_id)
        if options is not None:
            secrets.update({k: v for k, v in options.to_env().items() if k in SECRET_ENV})
        return secrets
