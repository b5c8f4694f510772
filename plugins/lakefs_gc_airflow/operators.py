"""GC operators: thin shells around the ``lakefs_gc`` package and the Spark jobs in ``jobs/``.

Every operator receives the merged run-metadata dict of all its upstream tasks (pulled from XCom in
topological order, see :func:`upstream_meta`) and returns only the keys it adds (plus
``<task_id>_seconds``, its wall time, for the report). Hooks and clients are built in ``execute``;
``__init__`` only stores arguments. Secrets never enter the metadata, argv or logs.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import BaseOperator, BaseHook
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowNotFoundException

from lakefs_gc import runmeta
from lakefs_gc.config import SweepSettings, resolve_work_dir
from lakefs_gc_airflow.hooks import LakeFSHook, storage_settings

if TYPE_CHECKING:
    from airflow.sdk import Context

SPARK_STEPS = ("list_committed", "list_slices", "compute_candidates", "delete")
# Params (rendered by Jinja) that prepare_run validates into the run metadata.
SWEEP_PARAMS = ("mark_id", "dry_run", "confirm_after_seconds", "max_delete_share", "max_delete_count",
                "mark_max_age_seconds", "delete_rate", "delete_concurrency", "delete_batch_size")


# ----------------------------------------------------------------------------------------------
# helpers (no I/O except where named)

def upstream_meta(task: BaseOperator, context: Context) -> dict[str, Any]:
    """Merge the XCom dicts of every task upstream of ``task`` (transitively), oldest first."""
    ancestors = task.get_flat_relative_ids(upstream=True)
    if not ancestors:
        return {}
    order = [t.task_id for t in task.dag.topological_sort() if t.task_id in ancestors]
    merged: dict[str, Any] = {}
    values = context["ti"].xcom_pull(task_ids=order)
    for tid, value in zip(order, values or []):
        if value is None:
            continue
        if not isinstance(value, dict):
            raise AirflowException(f"upstream task {tid!r} returned {type(value).__name__}, "
                                   "expected a run-metadata dict")
        merged.update(value)
    return merged


def as_bool(value: Any, name: str) -> bool:
    """A bool from a Param value, native or rendered by Jinja (``"True"``/``"False"``)."""
    if isinstance(value, bool):
        return value
    s = str(value).strip().lower()
    if s in ("true", "1", "yes", "on"):
        return True
    if s in ("false", "0", "no", "off", "", "none"):
        return False
    raise AirflowFailException(f"Param {name!r} must be a boolean, got {value!r}")


def as_int(value: Any, name: str, minimum: int | None = None) -> int:
    if isinstance(value, bool):
        raise AirflowFailException(f"Param {name!r} must be an integer, got {value!r}")
    try:
        n = int(str(value).strip()) if not isinstance(value, int) else value
    except ValueError:
        raise AirflowFailException(f"Param {name!r} must be an integer, got {value!r}") from None
    if minimum is not None and n < minimum:
        raise AirflowFailException(f"Param {name!r} must be >= {minimum}, got {n}")
    return n


def safe_name(s: str) -> str:
    """A run id usable as one path component (``manual__2024-01-01T00:00:00+00:00`` -> ``manual__2024-01-01T00_00_00_00_00``)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", s)


def local_dir(uri: str) -> Path | None:
    """The local path of a work location (plain path, ``file://`` or ``local://``), else None."""
    for prefix in ("file://", "local://"):
        if uri.startswith(prefix):
            return Path(uri[len(prefix):])
    if "://" in uri:
        return None
    return Path(uri)


def default_spark_binary() -> str:
    """``spark-submit`` next to the running Python (the project venv), else from PATH."""
    candidate = Path(sys.executable).parent / "spark-submit"
    return str(candidate) if candidate.exists() else "spark-submit"


# ----------------------------------------------------------------------------------------------
# Python steps

class PrepareRunOperator(BaseOperator):
    """Resolve the repository (namespace, blockstore type), lakeFS's grace period, and fix the run clock.

    Refuses (without retry) a minimum age below the grace period unless
    ``unsafe_min_age_override`` is set: ``lakefs_gc.plan.make_run_plan`` decides and names the Param.
    """

    template_fields: Sequence[str] = ("repository", "lakefs_conn_id", "storage_conn_id", "mode",
                                      "min_age_seconds", "unsafe_min_age_override", "work_dir", "sweep_params")
    ui_color = "#d7ecff"

    def __init__(self, *, repository: str, lakefs_conn_id: str = LakeFSHook.default_conn_name,
                 storage_conn_id: str | None = "aws_default", mode: str = "mark_and_sweep",
                 min_age_seconds: int | str = 86400, unsafe_min_age_override: bool | str = False,
                 work_dir: str | None = None, parallelism: int | None = None,
                 sweep_params: dict[str, Any] | None = None, schedule_interval_seconds: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.parallelism = parallelism
        self.sweep_params = dict(sweep_params or {})
        self.schedule_interval_seconds = schedule_interval_seconds
        self.repository = repository
        self.lakefs_conn_id = lakefs_conn_id
        self.storage_conn_id = storage_conn_id
        self.mode = mode
        self.min_age_seconds = min_age_seconds
        self.unsafe_min_age_override = unsafe_min_age_override
        self.work_dir = work_dir

    def execute(self, context: Context) -> dict[str, Any]:
        from lakefs_gc.lakefs_api import NoGCRulesError
        from lakefs_gc.plan import PlanError, make_run_plan

        t0 = time.monotonic()
        mode = str(self.mode)
        if mode not in runmeta.MODES:
            raise AirflowFailException(f"Param 'mode' must be one of {', '.join(runmeta.MODES)}, got {mode!r}")
        min_age = as_int(self.min_age_seconds, "min_age_seconds", minimum=0)
        override = as_bool(self.unsafe_min_age_override, "unsafe_min_age_override")

        hook = LakeFSHook(lakefs_conn_id=self.lakefs_conn_id)
        client = hook.get_conn()
        repo = client.get_repository(self.repository)
        try:
            client.require_gc_rules(self.repository)  # fail before any Spark job starts
        except NoGCRulesError as e:
            raise AirflowFailException(str(e)) from e
        blockstore = client.blockstore_type(getattr(repo, "storage_id", None) or "")
        grace = int(client.grace_period_seconds())
        try:
            plan = make_run_plan(datetime.now(timezone.utc), min_age, grace, override)
        except PlanError as e:
            raise AirflowFailException(str(e)) from e
        if override:
            self.log.warning("unsafe_min_age_override is set: cutoff %s uses min age %ss below the "
                             "grace period %ss; this is recorded in the report",
                             plan.get("cutoff_time"), min_age, grace)

        ns = repo.storage_namespace
        storage = storage_settings(self.storage_conn_id) if ns.startswith("s3://") else None
        local_root = self._local_root(hook, ns)
        sweep = self._sweep_meta(context)
        run_id = context["run_id"]
        base = resolve_work_dir(self.work_dir).rstrip("/")
        meta: dict[str, Any] = {
            "repository": self.repository,
            "lakefs_endpoint": hook.endpoint,
            "storage_namespace": ns,
            "blockstore_type": blockstore,
            "s3_endpoint_url": storage.endpoint_url if storage else None,
            "s3_region": storage.region if storage else None,
            "local_blockstore_root": local_root,
            "grace_period_seconds": grace,
            "min_age_seconds": min_age,
            "unsafe_min_age_override": override,
            "mode": mode,
            "work_dir": f"{base}/{self.repository}/{safe_name(run_id)}",
            "airflow_run_id": run_id,
        }
        if self.parallelism:
            meta["parallelism"] = int(self.parallelism)  # partitions the jobs use for listing/deleting
        meta.update(plan)
        meta.update(sweep)
        if local_root:
            self._check_namespace(_open_namespace(ns, storage, meta), ns)
        if mode == "sweep_only":
            meta.update(self._check_mark(_open_namespace(ns, storage, meta), sweep["mark_id"],
                                         sweep["mark_max_age_seconds"], plan))
        meta[f"{self.task_id}_seconds"] = round(time.monotonic() - t0, 3)
        self.log.info("run %s on %s (%s): mode %s, start %s, cutoff %s, work dir %s", run_id,
                      self.repository, ns, mode, meta.get("start_time"), meta.get("cutoff_time"),
                      meta["work_dir"])
        return meta


    def _local_root(self, hook: LakeFSHook, ns: str) -> str | None:
        """lakeFS's blockstore.local.path for a ``local://`` namespace (lakeFS resolves the namespace
        under it); missing is an error: guessing the directory could list someone else's files."""
        if not ns.startswith("local://"):
            return None
        from lakefs_gc.storage import LOCAL_ROOT_HELP, parse_namespace

        root = hook.local_blockstore_root()
        if not root:
            raise AirflowFailException(f"repository {self.repository!r} has namespace {ns!r}: {LOCAL_ROOT_HELP} "
                                       f"(connection {self.lakefs_conn_id!r})")
        try:
            parse_namespace(ns, root)
        except ValueError as e:
            raise AirflowFailException(str(e)) from e
        return root

    def _check_namespace(self, storage, ns: str) -> None:
        """A local namespace must hold lakeFS's marker (``_lakefs/dummy``, or ``dummy`` in old
        repositories) under the configured root: otherwise the GC would be looking at the wrong
        directory and could take someone else's files for garbage."""
        try:
            found = storage.exists("_lakefs/dummy") or storage.exists("dummy")
        except Exception as e:  # noqa: BLE001 - any storage error here means we cannot trust the place
            raise AirflowFailException(f"cannot read storage namespace {ns!r} ({storage.uri}): "
                                       f"{type(e).__name__}: {e}") from e
        if not found:
            where = getattr(storage, "root", None) or storage.uri
            raise AirflowFailException(
                f"storage namespace {ns!r} has no lakeFS marker (_lakefs/dummy) at {where}: the GC is not looking "
                f"where lakeFS keeps this repository. Check the storage connection (endpoint, bucket) or, for "
                f"local://, the lakeFS connection's \"local_blockstore_root\"; nothing was deleted")

    def _sweep_meta(self, context: Context) -> dict[str, Any]:
        p = self.sweep_params
        get = p.get
        confirm = as_int(get("confirm_after_seconds", -1), "confirm_after_seconds", minimum=-1)
        if confirm < 0:  # auto: one schedule interval for scheduled and backfill runs, none for manual runs
            run_type = str(getattr(context.get("dag_run"), "run_type", "manual") or "manual")
            confirm = self.schedule_interval_seconds if run_type.split(".")[-1].lower() in ("scheduled", "backfill") \
                else 0
        d = SweepSettings()
        out = {
            "mark_id": str(get("mark_id") or "").strip(),
            "dry_run": as_bool(get("dry_run", False), "dry_run"),
            "confirm_after_seconds": confirm,
            "max_delete_share": as_float(get("max_delete_share", d.max_delete_share), "max_delete_share", 0.0, 1.0),
            "max_delete_count": as_int(get("max_delete_count", d.max_delete_count), "max_delete_count", minimum=0),
            "mark_max_age_seconds": as_int(get("mark_max_age_seconds", d.mark_max_age_seconds), "mark_max_age_seconds",
                                           minimum=0),
            "delete_rate": as_float(get("delete_rate", d.rate), "delete_rate", 0.0, None),
            "delete_concurrency": as_int(get("delete_concurrency", self.parallelism or 2), "delete_concurrency",
                                         minimum=1),
            "delete_batch_size": as_int(get("delete_batch_size", d.batch_size), "delete_batch_size", minimum=1),
        }
        if out["delete_batch_size"] > 1000:
            raise AirflowFailException("Param 'delete_batch_size' must be <= 1000 (S3 DeleteObjects limit)")
        return out

    def _check_mark(self, st, mark_id: str, max_age: int, plan: dict[str, Any]) -> dict[str, Any]:
        """sweep_only: the mark must exist, have completed, and be recent enough; else fail, deleting nothing."""
        from lakefs_gc.marks import SweepRefused, check_mark
        from lakefs_gc.plan import parse_iso

        try:
            summary = check_mark(st, mark_id, parse_iso(plan["start_time"]), max_age)
        except SweepRefused as e:
            raise AirflowFailException(str(e)) from e
        # the sweep runs against the mark: its id, its listing size (blast-radius guard), its times
        return {"run_id": mark_id, "listed_objects": int(summary.get("listed_objects") or 0),
                "mark_start_time": summary.get("start_time"), "mark_cutoff_time": summary.get("cutoff_time"),
                "candidates": summary.get("candidates"), "to_delete": summary.get("to_delete", summary.get("candidates"))}


def _open_namespace(ns: str, storage, meta: dict[str, Any] | None = None):
    """The namespace's storage; for s3:// with the connection's settings (``storage``), falling back
    to the endpoint and region recorded in the run metadata; for local:// under the run's
    ``local_blockstore_root``."""
    from lakefs_gc.storage import S3Options, open_storage

    s3 = None
    meta = meta or {}
    if storage is not None:
        s3 = S3Options(endpoint_url=storage.endpoint_url or meta.get("s3_endpoint_url"),
                       access_key_id=storage.access_key_id, secret_access_key=storage.secret_access_key,
                       session_token=storage.session_token,
                       region=storage.region or meta.get("s3_region") or "us-east-1")
    return open_storage(ns, s3, meta.get("local_blockstore_root"))


def as_float(value: Any, name: str, minimum: float, maximum: float | None) -> float:
    try:
        x = float(str(value).strip()) if not isinstance(value, (int, float)) or isinstance(value, bool) else float(value)
    except ValueError:
        raise AirflowFailException(f"Param {name!r} must be a number, got {value!r}") from None
    if x < minimum or (maximum is not None and x > maximum):
        raise AirflowFailException(f"Param {name!r} must be between {minimum} and {maximum}, got {x}")
    return x


class MarkUncommittedOperator(BaseOperator):
    """Page lakeFS's ``prepare_uncommited`` to the end; keep every non-empty location (hazard H2)."""

    template_fields: Sequence[str] = ("lakefs_conn_id",)
    ui_color = "#d7ecff"

    def __init__(self, *, lakefs_conn_id: str = LakeFSHook.default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lakefs_conn_id = lakefs_conn_id

    def execute(self, context: Context) -> dict[str, Any]:
        t0 = time.monotonic()
        meta = upstream_meta(self, context)
        if meta.get("mode") == "sweep_only":
            self.log.info("sweep_only: no new mark; sweeping mark %s", meta.get("run_id"))
            return {}
        client = LakeFSHook(lakefs_conn_id=self.lakefs_conn_id).get_conn()
        run_id, locations, pages = client.prepare_uncommitted_all(meta["repository"])
        self.log.info("uncommitted mark %s: %d location(s) over %d page(s)", run_id, len(locations), pages)
        return {"run_id": run_id, "uncommitted_locations": list(locations), "uncommitted_pages": int(pages),
                f"{self.task_id}_seconds": round(time.monotonic() - t0, 3)}


class SaveReportOperator(BaseOperator):
    """Write ``summary.json`` (lakeFS's fields plus ours, ``success: true``) last, via ``lakefs_gc.report``."""

    template_fields: Sequence[str] = ("storage_conn_id",)
    ui_color = "#d7ecff"

    def __init__(self, *, storage_conn_id: str | None = "aws_default", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.storage_conn_id = storage_conn_id

    def execute(self, context: Context) -> dict[str, Any]:
        from lakefs_gc.report import save_summary

        t0 = time.monotonic()
        meta = upstream_meta(self, context)
        meta.setdefault("airflow_run_id", context["run_id"])
        ns = meta["storage_namespace"]
        settings = storage_settings(self.storage_conn_id) if ns.startswith("s3://") else None
        uri = save_summary(_open_namespace(ns, settings, meta), meta, success=True)
        self.log.info("report for GC run %s written: %s", meta.get("run_id"), uri)
        return {"summary_uri": uri, f"{self.task_id}_seconds": round(time.monotonic() - t0, 3)}


# ----------------------------------------------------------------------------------------------
# Spark steps

class GCSparkSubmitOperator(SparkSubmitOperator):
    """``spark-submit [--py-files ZIP] jobs/<step>.py --meta META.json --result RESULT.json``.

    At execute time: merges the upstream run metadata, writes it to ``<work_dir>/_control/<step>.meta.json``
    (the job reads it), passes the lakeFS and S3 secrets as environment variables named in
    ``lakefs_gc.runmeta.SECRET_ENV`` (never argv), runs the job, and returns the job's result
    file (a small dict) as the XCom. ``skip_modes``: run modes in which the step is a no-op that
    returns ``skip_result`` without starting Spark (``delete`` in ``mark_only``).
    """

    template_fields: Sequence[str] = (*SparkSubmitOperator.template_fields, "step", "lakefs_conn_id",
                                      "storage_conn_id", "pyspark_python")
    ui_color = "#fde9c8"

    def __init__(self, *, step: str, jobs_dir: str, lakefs_conn_id: str = LakeFSHook.default_conn_name,
                 storage_conn_id: str | None = "aws_default", pyspark_python: str | None = None,
                 skip_modes: Sequence[str] = (), skip_result: dict[str, Any] | None = None,
                 **kwargs: Any) -> None:
        kwargs.setdefault("application", str(Path(jobs_dir) / f"{step}.py"))
        kwargs.setdefault("name", f"lakefs-gc-{step}")
        super().__init__(**kwargs)
        self.step = step
        self.lakefs_conn_id = lakefs_conn_id
        self.storage_conn_id = storage_conn_id
        self.pyspark_python = pyspark_python
        self.skip_modes = tuple(skip_modes)
        self.skip_result = dict(skip_result or {})
        self._base_args = list(self.application_args or [])

    def prepare_submit(self, meta: dict[str, Any]) -> tuple[Path, Path]:
        """Write the meta file and set argv/env for spark-submit; return (meta path, result path)."""
        try:
            BaseHook.get_connection(self._conn_id)
        except AirflowNotFoundException:
            raise AirflowFailException(
                f"Spark connection {self._conn_id!r} is not defined (without it spark-submit would "
                f"default to YARN). Define it, e.g. AIRFLOW_CONN_{self._conn_id.upper()}="
                '\'{"conn_type": "spark", "host": "local[*]"}\'') from None
        control = self._control_dir(meta)
        meta_path = control / f"{self.task_id}.meta.json"
        result_path = control / f"{self.task_id}.result.json"
        runmeta.write_meta(meta, meta_path)
        result_path.unlink(missing_ok=True)  # a retry must not read a previous attempt's result
        self.application_args = [*self._base_args, "--meta", str(meta_path), "--result", str(result_path)]
        self.env_vars = {**(self.env_vars or {}), **self._runtime_env(meta)}
        if not self._spark_binary:
            self._spark_binary = default_spark_binary()
        self._hook = None  # built from the fields above, lazily, by SparkSubmitOperator
        return meta_path, result_path

    def execute(self, context: Context) -> dict[str, Any]:
        t0 = time.monotonic()
        meta = upstream_meta(self, context)
        if meta.get("mode") in self.skip_modes:
            self.log.info("%s is a no-op in mode %s", self.step, meta.get("mode"))
            return {**self.skip_result, f"{self.task_id}_seconds": 0.0}
        _, result_path = self.prepare_submit(meta)
        super().execute(context)
        try:
            result = runmeta.read_meta(result_path)
        except FileNotFoundError:
            raise AirflowException(f"{self.step}: spark-submit succeeded but the job wrote no result "
                                   f"file {result_path}") from None
        if not isinstance(result, dict):
            raise AirflowException(f"{self.step}: result file {result_path} is not a JSON object")
        # The job reports its own compute time under the same key; keep it when present.
        result.setdefault(f"{self.task_id}_seconds", round(time.monotonic() - t0, 3))
        self.log.info("%s result: %s", self.step, {k: v for k, v in result.items() if not isinstance(v, list)})
        return result

    def _control_dir(self, meta: dict[str, Any]) -> Path:
        work = meta.get("work_dir")
        local = local_dir(work) if work else None
        if local is None:
            # A remote work location (s3://...): the small control files stay on this worker.
            local = Path(tempfile.gettempdir()) / "lakefs-gc-control" / safe_name(str(meta.get("airflow_run_id", "run")))
        path = local / "_control"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _runtime_env(self, meta: dict[str, Any]) -> dict[str, str]:
        python = self.pyspark_python or sys.executable
        env = {
            "PYSPARK_PYTHON": python,
            "PYSPARK_DRIVER_PYTHON": python,
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        }
        access, secret = LakeFSHook(lakefs_conn_id=self.lakefs_conn_id).credentials()
        env[runmeta.ENV_LAKEFS_ACCESS_KEY] = access
        env[runmeta.ENV_LAKEFS_SECRET_KEY] = secret
        if str(meta.get("storage_namespace", "")).startswith("s3://") or str(meta.get("work_dir", "")).startswith("s3://"):
            env.update(_storage_env(self.storage_conn_id))
        return env


def _storage_env(storage_conn_id: str | None) -> dict[str, str]:
    s = storage_settings(storage_conn_id)
    env: dict[str, str] = {}
    if s.access_key_id and s.secret_access_key:
        env[runmeta.ENV_S3_ACCESS_KEY] = s.access_key_id
        env[runmeta.ENV_S3_SECRET_KEY] = s.secret_access_key
        if s.session_token:
            env[runmeta.ENV_S3_SESSION_TOKEN] = s.session_token
    # Not secrets: also in the run metadata; set for code that reads S3Options.from_env().
    if s.endpoint_url:
        env["LAKEFS_GC_S3_ENDPOINT_URL"] = s.endpoint_url
    if s.region:
        env["LAKEFS_GC_S3_REGION"] = s.region
    return env
