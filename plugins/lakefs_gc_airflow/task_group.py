"""
The GC in your own DAG: :func:`lakefs_gc_task_group`, the GC's eight tasks as one ``TaskGroup``.

::

    from airflow.sdk import DAG, task
    from lakefs_gc_airflow.task_group import lakefs_gc_task_group

    with DAG("nightly_lake", schedule="@daily", start_date=...):
        gc = lakefs_gc_task_group("my-repo", storage_conn_id="aws_default", min_age_seconds=7 * 86400)
        export >> gc.group >> notify_finance(gc.summary)

The group is the GC DAG's own tasks (``build_gc_dag`` calls :func:`gc_tasks` without a group):
``prepare_run >> mark_uncommitted >> list_committed``, ``prepare_run >> list_slices``, both into
``compute_candidates >> attribute_space >> delete >> save_report``. ``gc.summary`` is the XCom of
``save_report``: ``{"summary_uri", "summary", "report_url", "lakefs_url", "seconds"}``.

The run's Params (``mode``, ``min_age_seconds``, ... the GC DAG's form) are set on the group's
``prepare_run`` from the arguments; a DAG run's conf overrides them by the same names, as Airflow's
``dag_run_conf_overrides_params`` does for any Param. Two groups in one DAG need two ``group_id``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import BaseOperator, TaskGroup, XComArg

from lakefs_gc import contract
from lakefs_gc.config import RepoConfig, project_root, schedule_interval_seconds
from lakefs_gc_airflow.notifiers import run_notifiers
from lakefs_gc_airflow.observability import events_alias
from lakefs_gc_airflow.operators import MarkUncommittedOperator, PrepareRunOperator, SaveReportOperator
from lakefs_gc_airflow.params import gc_params
from lakefs_gc_airflow.spark_submit import IN_PROCESS_STEPS, GCSparkSubmitOperator


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
if set(contract.STEPS) - set(contract.SPARK_STEPS) != {
    PrepareRunOperator.step,
    MarkUncommittedOperator.step,
    SaveReportOperator.step,
}:
    raise ImportError("lakefs_gc_airflow.task_group: an operator for each Python step of lakefs_gc.contract.STEP_TABLE")


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


@dataclass(frozen=True)
class GCTasks:
    """The GC's tasks of one repository, built in a DAG: by step name, in their group (None: at the DAG's top)."""

    repository: str
    tasks: Mapping[str, BaseOperator]
    group: TaskGroup | None = None

    @property
    def first(self) -> BaseOperator:
        return self.tasks[contract.STEPS[0]]

    @property
    def report(self) -> BaseOperator:
        """``save_report``, the run's last task."""
        return self.tasks[contract.STEPS[-1]]

    @property
    def summary(self) -> XComArg:
        """``save_report``'s result (``ReportResult`` on the wire): for a downstream task's argument."""
        return self.report.output


def gc_tasks(cfg: RepoConfig, *, params_on_task: bool = False) -> GCTasks:
    """
    Build one repository's GC tasks in the current DAG (and task group), wired, and return them.

    :param cfg: the repository's entry, parsed (:func:`lakefs_gc.config.parse_entry`).
    :param params_on_task: set the run's Params on ``prepare_run`` (a user's DAG, whose own Params
        are its own) rather than expecting them on the DAG (the GC DAG's form).
    """
    spark = cfg.spark
    interval = schedule_interval_seconds(cfg.schedule)
    failure = run_notifiers(cfg.notify.on_failure, cfg.repository, "on_failure")
    success = run_notifiers(cfg.notify.on_success, cfg.repository, "on_success")

    def task(step: str) -> dict[str, Any]:
        """Per-task settings, a fresh dict each: retries for the idempotent steps, a timeout each, the notifiers."""
        t = cfg.tasks
        out: dict[str, Any] = {
            "task_id": step,
            "retries": t.retries,
            "retry_delay": timedelta(seconds=t.retry_delay_seconds),
            "execution_timeout": timedelta(seconds=t.timeout(step)),
        }
        if failure:
            out["on_failure_callback"] = list(failure)
        return out

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
        # list_committed's wait for lakeFS's commits preparation on the triggerer (None: Airflow's
        # [operators] default_deferrable); the other Spark steps have no wait
        "deferrable": cfg.tasks.deferrable,
        # a few at a time: the Spark steps share the pool; the larger repository's go first
        "priority_weight": cfg.priority_weight,
        "weight_rule": "absolute",
        **({"pool": spark.pool} if spark.pool else {}),
    }
    in_process: dict[str, Any] = {"in_process_max_keys": spark.in_process_max_keys}
    approval = cfg.sweep.approval_rule()
    params: dict[str, Any] = {"params": gc_params(cfg, interval)} if params_on_task else {}
    python_tasks: dict[str, Callable[[], BaseOperator]] = {
        PrepareRunOperator.step: lambda: PrepareRunOperator(
            repository=cfg.repository,
            work_dir=cfg.work_dir,
            parallelism=spark.parallelism,
            schedule_interval_seconds=interval,
            clean_run_every={k: v for k, v in dataclasses.asdict(cfg.clean_run_every).items() if v is not None},
            prices=contract.to_wire(cfg.prices),
            keep=contract.to_wire(cfg.keep) if cfg.keep.active else None,
            approval=contract.to_wire(approval) if approval.active else None,
            **params,
            **common,
            **task(PrepareRunOperator.step),
        ),
        MarkUncommittedOperator.step: lambda: MarkUncommittedOperator(**common, **task(MarkUncommittedOperator.step)),
        SaveReportOperator.step: lambda: SaveReportOperator(
            storage_conn_id=cfg.storage_conn_id,
            outlets=[events_alias(cfg.repository)],
            **({"on_success_callback": list(success)} if success else {}),
            **task(SaveReportOperator.step),
        ),
    }
    tasks = {
        step: python_tasks[step]()
        if step in python_tasks
        else GCSparkSubmitOperator(
            step=step, **spark_kwargs, **task(step), **(in_process if step in IN_PROCESS_STEPS else {})
        )
        for step in contract.STEPS
    }
    for step, upstream in UPSTREAM.items():
        for up in upstream:
            tasks[up] >> tasks[step]
    if approval.active:  # a person approves the sweep: between what it is shown (the mark, the space) and the sweep
        from lakefs_gc_airflow.approval import SweepApprovalOperator

        wait = timedelta(seconds=approval.timeout_seconds)
        settings = task(contract.APPROVAL_TASK)
        ask = SweepApprovalOperator(
            storage_conn_id=cfg.storage_conn_id,
            response_timeout=wait,
            # a retry would ask again; before Airflow 3.3 a deferred task's execution_timeout also bounds
            # its wait on the triggerer: the question's own time plus the answer's
            **{**settings, "retries": 0, "execution_timeout": settings["execution_timeout"] + wait},
        )
        tasks["attribute_space"] >> ask >> tasks["delete"]
        tasks = {**tasks, contract.APPROVAL_TASK: ask}
    return GCTasks(repository=cfg.repository, tasks=tasks)


def lakefs_gc_task_group(
    repository: str,
    *,
    group_id: str = "lakefs_gc",
    lakefs_conn_id: str = "lakefs_default",
    storage_conn_id: str | None = None,
    spark_conn_id: str = "spark_default",
    min_age_seconds: int = 86400,
    mode: str = "mark_and_sweep",
    pool: str | None = None,
    settings: Mapping[str, Any] | None = None,
    prefix_group_id: bool = True,
) -> GCTasks:
    """
    Build the GC of one lakeFS repository as a ``TaskGroup`` in the DAG being defined; return its tasks.

    The arguments are the repositories file's entry fields (``settings``: any other field of an
    entry, e.g. ``{"sweep": {"max_delete_share": 0.2}, "spark": {"pool": "lakefs_gc_spark"}}``),
    checked by the same parser: a bad one raises ``ConfigError`` at parse time, naming it.
    ``schedule`` has no meaning here (the DAG's own schedule runs the group) and is refused.

    :param repository: the lakeFS repository to collect.
    :param group_id: the task group's id (two groups in one DAG need two).
    :param lakefs_conn_id: the lakeFS connection (type ``lakefs_gc``, or ``airflow-provider-lakefs``'s ``lakefs``).
    :param storage_conn_id: the connection that serves the repository's storage namespace (``aws``,
        ``wasb`` or ``google_cloud_platform``); None for a ``local://`` namespace.
    :param spark_conn_id: the Spark connection the Spark steps submit to.
    :param min_age_seconds: the run's minimum object age (below lakeFS's grace period a run is refused
        unless the Param ``unsafe_min_age_override`` is set).
    :param mode: ``mark_and_sweep`` or ``mark_only``.
    :param pool: the Airflow pool of the Spark steps (the entry's ``spark.pool``).
    :param settings: any other field of a repositories-file entry.
    :param prefix_group_id: prefix the tasks' ids with ``group_id``, as ``TaskGroup`` does.
    :return: the group's tasks; ``summary`` is ``save_report``'s result for a task after it.
    """
    from lakefs_gc.config import ConfigError, parse_entry

    extra = dict(settings or {})
    if "schedule" in extra or "repository" in extra:
        raise ConfigError(
            f"lakefs_gc_task_group({repository!r}): 'schedule' and 'repository' are not settings of "
            "a task group (the DAG's schedule runs it; the repository is its first argument)"
        )
    entry = {
        **extra,
        "repository": repository,
        "lakefs_conn_id": lakefs_conn_id,
        "storage_conn_id": storage_conn_id,
        "spark_conn_id": spark_conn_id,
        "min_age_seconds": min_age_seconds,
        "mode": mode,
    }
    if pool is not None:
        entry["spark"] = {**(extra.get("spark") or {}), "pool": pool}
    cfg = parse_entry(entry, f"lakefs_gc_task_group({repository!r})")
    with TaskGroup(
        group_id=group_id, prefix_group_id=prefix_group_id, tooltip=f"lakeFS garbage collection of {repository}"
    ) as group:
        built = gc_tasks(cfg, params_on_task=True)
    return dataclasses.replace(built, group=group)
