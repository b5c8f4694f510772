"""
### lakeFS garbage collection

One DAG per repository listed in `config/gc_repositories.yaml` (path: `$LAKEFS_GC_CONFIG`).
A run marks and (unless `mode` is `mark_only`) sweeps objects that no retained commit and no
staged entry references and that are older than the cutoff:

| task | what it does |
|---|---|
| `prepare_run` | resolves the repository, its namespace and blockstore type, lakeFS's grace period; fixes start time and cutoff = start - max(min age, grace period) |
| `mark_uncommitted` | pages lakeFS's uncommitted preparation to the end (before `list_committed`) |
| `list_committed` | Spark: addresses of every retained commit (metaranges, ranges) |
| `list_slices` | Spark: objects under `data/` (and legacy root objects) older than the cutoff |
| `compute_candidates` | Spark: listed - committed - uncommitted; writes lakeFS's report layout |
| `delete` | Spark: deletes the candidates (a no-op reporting 0 in `mark_only`) |
| `save_report` | writes `_lakefs/retention/gc/unified/<run_id>/summary.json`, last |

**Params**: `mode` (`mark_and_sweep` or `mark_only`), `min_age_seconds` (>= 0; below lakeFS's
grace period it is refused unless `unsafe_min_age_override` is true, which is then recorded in the
report). Connections: `lakefs` (type lakeFS), `aws` (S3 keys, extra `endpoint_url`), `spark`.
"""

# This file must not be named like a package it imports: Airflow puts the dags folder on sys.path,
# and `airflow dags test` failed with "'lakefs_gc' is not a package" when it was dags/lakefs_gc.py.
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from airflow.sdk import DAG, Param

from lakefs_gc.config import RepoConfig, load_config
from lakefs_gc.runmeta import MODES
from lakefs_gc_airflow.operators import (
    GCSparkSubmitOperator,
    MarkUncommittedOperator,
    PrepareRunOperator,
    SaveReportOperator,
)

PROJECT_ROOT = Path(__file__).resolve().parents[1]
START_DATE = datetime(2024, 1, 1, tzinfo=timezone.utc)


def _project_path(value: str | None, default: str) -> str:
    p = Path(value or default)
    return str(p if p.is_absolute() else PROJECT_ROOT / p)


def build_gc_dag(cfg: RepoConfig) -> DAG:
    """Wire the seven GC tasks for one configured repository."""
    spark = cfg.spark
    with DAG(
        dag_id=cfg.dag_id,
        description=f"lakeFS garbage collection for repository {cfg.repository}",
        doc_md=__doc__,
        schedule=cfg.schedule,
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,
        tags=["lakefs", "gc", cfg.repository, *cfg.tags],
        params={
            "mode": Param(cfg.mode, type="string", enum=list(MODES), title="Run mode",
                          description="mark_and_sweep deletes the candidates; mark_only only writes the report."),
            "min_age_seconds": Param(cfg.min_age_seconds, type="integer", minimum=0, title="Minimum object age (s)",
                                     description="Objects younger than max(this, lakeFS grace period) are kept."),
            "unsafe_min_age_override": Param(False, type="boolean", title="Unsafe minimum-age override",
                                             description="Allow a minimum age below lakeFS's grace period "
                                                         "(tests and emergencies only; recorded in the report)."),
        },
        default_args={"owner": "lakefs-gc", "retries": 0},
    ) as dag:
        common = {"lakefs_conn_id": cfg.lakefs_conn_id, "storage_conn_id": cfg.storage_conn_id}
        spark_kwargs = {
            **common,
            "jobs_dir": _project_path(spark.jobs_dir, "jobs"),
            "py_files": _project_path(spark.py_files, "build/lakefs_gc.zip"),
            "conn_id": cfg.spark_conn_id,
            "conf": spark.spark_conf(),
            "driver_memory": spark.driver_memory,
            "executor_memory": spark.executor_memory,
            "spark_binary": spark.binary,
            "pyspark_python": spark.python,
        }
        prepare_run = PrepareRunOperator(
            task_id="prepare_run", repository=cfg.repository, work_dir=cfg.work_dir, parallelism=spark.parallelism,
            mode="{{ params.mode }}", min_age_seconds="{{ params.min_age_seconds }}",
            unsafe_min_age_override="{{ params.unsafe_min_age_override }}", **common)
        mark_uncommitted = MarkUncommittedOperator(task_id="mark_uncommitted", lakefs_conn_id=cfg.lakefs_conn_id)
        list_committed = GCSparkSubmitOperator(task_id="list_committed", step="list_committed", **spark_kwargs)
        list_slices = GCSparkSubmitOperator(task_id="list_slices", step="list_slices", **spark_kwargs)
        compute_candidates = GCSparkSubmitOperator(task_id="compute_candidates", step="compute_candidates",
                                                   **spark_kwargs)
        delete = GCSparkSubmitOperator(task_id="delete", step="delete", skip_modes=("mark_only",),
                                       skip_result={"deleted": 0, "delete_failed": 0}, **spark_kwargs)
        save_report = SaveReportOperator(task_id="save_report", storage_conn_id=cfg.storage_conn_id)

        # mark_uncommitted strictly before list_committed: an object committed between the two is
        # then seen by one of them.
        prepare_run >> mark_uncommitted >> list_committed
        prepare_run >> list_slices
        [list_committed, list_slices] >> compute_candidates >> delete >> save_report
    return dag


for _cfg in load_config().repositories:
    globals()[_cfg.dag_id.replace("-", "_")] = build_gc_dag(_cfg)
