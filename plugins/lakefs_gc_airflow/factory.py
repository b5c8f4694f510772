"""
The DAG factory: the eight GC tasks of one configured repository, wired.

    prepare_run >> mark_uncommitted >> list_committed
    prepare_run >> list_slices
    [list_committed, list_slices] >> compute_candidates >> attribute_space >> delete >> save_report

``mark_uncommitted`` strictly before ``list_committed``: an object committed between the two is
then seen by one of them.

And ``lakefs_gc_restore``, one DAG for every configured repository: its one task undoes a GC run
(``lakefs-gc restore`` from the UI's trigger form).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, BaseOperator, Param

from lakefs_gc import contract
from lakefs_gc.config import GCConfig, RepoConfig, project_root, schedule_interval_seconds
from lakefs_gc_airflow.operators import (
    MarkUncommittedOperator,
    PrepareRunOperator,
    RepositoryConnections,
    RestoreOperator,
    SaveReportOperator,
)
from lakefs_gc_airflow.params import gc_params
from lakefs_gc_airflow.spark_submit import IN_PROCESS_STEPS, GCSparkSubmitOperator

START_DATE = datetime(2024, 1, 1, tzinfo=UTC)


def _project_path(value: str | None) -> str | None:
    """
    Return a configured path, relative ones taken from the project root.

    None (not configured) stays None: the operator then uses the jobs inside the package and a zip
    of the installed package.
    """
    if not value:
        return None
    p = Path(value)
    return str(p if p.is_absolute() else project_root() / p)


def upstream_tasks() -> dict[str, tuple[str, ...]]:
    """
    Return each task's direct upstream tasks in the GC DAG, from :data:`lakefs_gc.contract.STEP_TABLE`.

    A task waits for the first task (``prepare_run``, the run context), for every task whose
    result it reads and for those it runs ``after``; an edge another of those already implies is left out (the DAG's graph stays
    the chain a reader expects: list_committed and list_slices side by side).
    """
    first = contract.STEPS[0]
    before: dict[str, set[str]] = {}
    direct: dict[str, tuple[str, ...]] = {}
    for s in contract.STEP_TABLE:
        needs = set(s.inputs) | set(s.after) | ({first} if s.task_id != first else set())
        before[s.task_id] = needs | {a for n in needs for a in before[n]}
        direct[s.task_id] = tuple(n for n in contract.STEPS if n in needs and not any(n in before[m] for m in needs))
    return direct


UPSTREAM = upstream_tasks()
if set(contract.STEPS) - set(contract.SPARK_STEPS) != {PrepareRunOperator.step, MarkUncommittedOperator.step,
                                                         SaveReportOperator.step}:
    raise ImportError("lakefs_gc_airflow.factory: an operator for each Python step of lakefs_gc.contract.STEP_TABLE")


def build_gc_dag(cfg: RepoConfig, doc_md: str | None = None) -> DAG:
    """One DAG, ``lakefs_gc__<repository>``, for one config entry."""
    spark = cfg.spark
    interval = schedule_interval_seconds(cfg.schedule)
    with DAG(
        dag_id=cfg.dag_id,
        description=f"lakeFS garbage collection for repository {cfg.repository}",
        doc_md=doc_md,
        schedule=cfg.schedule,
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,  # two runs of one repository at once would race on its report folder
        tags=["lakefs", "gc", cfg.repository, *cfg.tags],
        params=gc_params(cfg, interval),
        default_args={"owner": "lakefs-gc"},
    ) as dag:
        def task(task_id: str) -> dict[str, Any]:
            """Per-task settings, a fresh dict each: retries for the idempotent steps, a timeout each."""
            t = cfg.tasks
            return {"task_id": task_id, "retries": t.retries, "retry_delay": timedelta(seconds=t.retry_delay_seconds),
                    "execution_timeout": timedelta(seconds=t.timeout(task_id))}

        common: dict[str, Any] = {"lakefs_conn_id": cfg.lakefs_conn_id, "storage_conn_id": cfg.storage_conn_id}
        spark_kwargs: dict[str, Any] = {
            **common,
            "jobs_dir": _project_path(spark.jobs_dir),
            "py_files": _project_path(spark.py_files),
            "conn_id": cfg.spark_conn_id,
            "conf": spark.spark_conf(),
            "driver_memory": spark.driver_memory,
            "executor_memory": spark.executor_memory,
            "spark_binary": spark.binary,
            "pyspark_python": spark.python,
            "fast_start": spark.fast_start,
        }
        in_process: dict[str, Any] = {"in_process_max_keys": spark.in_process_max_keys}
        python_tasks: dict[str, Callable[[], BaseOperator]] = {
            PrepareRunOperator.step: lambda: PrepareRunOperator(
                repository=cfg.repository, work_dir=cfg.work_dir, parallelism=spark.parallelism,
                schedule_interval_seconds=interval,
                clean_run_every={k: v for k, v in dataclasses.asdict(cfg.clean_run_every).items() if v is not None},
                **common, **task(PrepareRunOperator.step)),
            MarkUncommittedOperator.step: lambda: MarkUncommittedOperator(**common, **task(MarkUncommittedOperator.step)),
            SaveReportOperator.step: lambda: SaveReportOperator(storage_conn_id=cfg.storage_conn_id,
                                                                **task(SaveReportOperator.step)),
        }
        tasks = {step: python_tasks[step]() if step in python_tasks else
                 GCSparkSubmitOperator(step=step, **spark_kwargs, **task(step),
                                       **(in_process if step in IN_PROCESS_STEPS else {}))
                 for step in contract.STEPS}
        for step, upstream in UPSTREAM.items():
            for up in upstream:
                tasks[up] >> tasks[step]
    return dag


RESTORE_DAG_ID = "lakefs_gc_restore"
CONFIG_ERRORS_DAG_ID = "lakefs_gc_config_errors"


def _raise_config_errors(path: str, errors: list[str]) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    raise AirflowFailException(f"{path}: {len(errors)} bad repository entr{'y' if len(errors) == 1 else 'ies'}, "
                               "whose GC DAG is not built; fix the file (lakefs-gc config check FILE lists "
                               "every problem):\n" + "\n".join(errors))


def build_config_errors_dag(cfg: GCConfig) -> DAG | None:
    """
    ``lakefs_gc_config_errors`` while the repositories file has bad entries (None otherwise).

    Its description and docs name every bad entry and field, and its one task fails with them.
    """
    if not cfg.entry_errors:
        return None
    from airflow.providers.standard.operators.python import PythonOperator

    lines = cfg.entry_problems
    n = len(cfg.entry_errors)
    with DAG(
        dag_id=CONFIG_ERRORS_DAG_ID,
        description=f"{n} bad entr{'y' if n == 1 else 'ies'} in {cfg.path}: " + "; ".join(lines)[:400],
        doc_md="### Bad entries in the lakeFS GC repositories file\n\nTheir GC DAGs are not built; every other "
               "entry's DAG is. Fix them in `" + str(cfg.path) + "` (`lakefs-gc config check` lists the same):\n\n"
               + "\n".join(f"- `{line}`" for line in lines),
        schedule=None,
        start_date=START_DATE,
        catchup=False,
        tags=["lakefs", "gc", "config-error"],
        default_args={"owner": "lakefs-gc"},
    ) as dag:
        PythonOperator(task_id="report_config_errors", python_callable=_raise_config_errors,
                       op_args=[str(cfg.path), lines], retries=0)
    return dag


def build_restore_dag(cfgs: list[RepoConfig], doc_md: str | None = None) -> DAG | None:
    """
    ``lakefs_gc_restore``: bring back what one GC run of a configured repository deleted.

    Manual runs only, one at a time; its form names the repository (a choice), the run, and
    optionally the keys. None when no repository is configured.
    """
    if not cfgs:
        return None
    repos: dict[str, RepositoryConnections] = {
        c.repository: {"lakefs_conn_id": c.lakefs_conn_id, "storage_conn_id": c.storage_conn_id} for c in cfgs}
    with DAG(
        dag_id=RESTORE_DAG_ID,
        description="Undo a lakeFS GC run: bring back what it deleted, where the store keeps it",
        doc_md=doc_md,
        schedule=None,
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,
        tags=["lakefs", "gc", "restore"],
        params={
            "repository": Param(sorted(repos)[0], type="string", enum=sorted(repos), title="Repository"),
            "run_id": Param("", type="string", minLength=1, title="GC run to undo",
                            description="Its mark id, or the GC DAG's run id (the GC page and `lakefs-gc report "
                                        "NAMESPACE` list them)."),
            "keys": Param(None, type=["null", "array"], items={"type": "string"}, title="Only these keys",
                          description="Namespace-relative keys (data/...) or full URIs, one per line; empty: "
                                      "everything the run deleted."),
            "dry_run": Param(False, type="boolean", title="Dry run",
                             description="Say what would be restored; change nothing."),
        },
        default_args={"owner": "lakefs-gc"},
    ) as dag:
        RestoreOperator(task_id="restore", repositories=repos, retries=0)
    return dag
