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

**Params** (a form in the UI): `mode` (`mark_and_sweep`, `mark_only`, or `sweep_only` with
`mark_id`: delete what an earlier successful mark listed), `dry_run`, `min_age_seconds` (below
lakeFS's grace period it is refused unless `unsafe_min_age_override`, which the report records),
`confirm_after_seconds` (delayed confirmation: only what an earlier mark at least this old also
found is deleted; -1 = one schedule interval for scheduled runs, 0 for manual ones),
`max_delete_share` / `max_delete_count` (the blast-radius guard), `mark_max_age_seconds`, and the
deleter's knobs `delete_rate` (deletes/s in total), `delete_concurrency`, `delete_batch_size`.
Pausing the DAG stops new runs. Connections: `lakefs` (type lakeFS), `aws` (S3 keys, extra
`endpoint_url`), `spark`.
"""

# This file must not be named like a package it imports: Airflow puts the dags folder on sys.path,
# and `airflow dags test` failed with "'lakefs_gc' is not a package" when it was dags/lakefs_gc.py.
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from airflow.sdk import DAG, Param

from lakefs_gc.config import RepoConfig, load_config, schedule_interval_seconds
from lakefs_gc.runmeta import MODES
from lakefs_gc_airflow.operators import (
    SWEEP_PARAMS,
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
    sw = cfg.sweep
    interval = schedule_interval_seconds(cfg.schedule)
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
                          description="mark_and_sweep: mark, then delete; mark_only: only write the report; "
                                      "sweep_only: delete what the earlier mark `mark_id` listed."),
            "mark_id": Param("", type="string", title="Mark id (sweep_only)",
                             description="Run id of an earlier successful mark (its folder under "
                                         "_lakefs/retention/gc/unified/)."),
            "dry_run": Param(False, type="boolean", title="Dry run",
                             description="Follow the real code path with a no-op deleter; report what would go."),
            "min_age_seconds": Param(cfg.min_age_seconds, type="integer", minimum=0, title="Minimum object age (s)",
                                     description="Objects younger than max(this, lakeFS grace period) are kept."),
            "unsafe_min_age_override": Param(False, type="boolean", title="Unsafe minimum-age override",
                                             description="Allow a minimum age below lakeFS's grace period "
                                                         "(tests and emergencies only; recorded in the report)."),
            "confirm_after_seconds": Param(sw.confirm_after_seconds if sw.confirm_after_seconds is not None else -1,
                                           type="integer", minimum=-1, title="Delayed confirmation (s)",
                                           description="Delete only what an earlier successful mark at least this "
                                                       "old also found. -1: one schedule interval "
                                                       f"({interval}s) for scheduled and backfill runs, 0 for manual."),
            "max_delete_share": Param(sw.max_delete_share, type="number", minimum=0, maximum=1,
                                      title="Blast-radius guard: max share",
                                      description="Refuse a sweep deleting more than this share of listed objects."),
            "max_delete_count": Param(sw.max_delete_count, type="integer", minimum=0,
                                      title="Blast-radius guard: max count",
                                      description="Refuse a sweep deleting more than this many objects."),
            "mark_max_age_seconds": Param(sw.mark_max_age_seconds, type="integer", minimum=0,
                                          title="Max mark age for sweep_only (s)"),
            "delete_rate": Param(sw.rate, type="number", minimum=0, title="Deletes per second (0: no limit)",
                                 description="Global rate, split across the delete tasks (S3 allows ~3,500/s "
                                             "per prefix)."),
            "delete_concurrency": Param(sw.concurrency or spark.parallelism or 2, type="integer", minimum=1,
                                        title="Delete tasks at once"),
            "delete_batch_size": Param(sw.batch_size, type="integer", minimum=1, maximum=1000,
                                       title="Keys per DeleteObjects request"),
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
            unsafe_min_age_override="{{ params.unsafe_min_age_override }}",
            sweep_params={k: "{{ params.%s }}" % k for k in SWEEP_PARAMS}, schedule_interval_seconds=interval,
            **common)
        mark_uncommitted = MarkUncommittedOperator(task_id="mark_uncommitted", lakefs_conn_id=cfg.lakefs_conn_id)
        marking = {"skip_modes": ("sweep_only",)}  # a sweep-only run reuses an earlier mark
        list_committed = GCSparkSubmitOperator(task_id="list_committed", step="list_committed", **marking,
                                               **spark_kwargs)
        list_slices = GCSparkSubmitOperator(task_id="list_slices", step="list_slices", **marking, **spark_kwargs)
        compute_candidates = GCSparkSubmitOperator(task_id="compute_candidates", step="compute_candidates",
                                                   **marking, **spark_kwargs)
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
