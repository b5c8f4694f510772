"""
The steps: one record per task, and the inputs a task reads.

Part of :mod:`lakefs_gc.contract` (import from there).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lakefs_gc.contract.context import RunContext
from lakefs_gc.contract.results import (
    CandidatesResult,
    CommittedResult,
    DeleteResult,
    ReportResult,
    SlicesResult,
    SpaceResult,
    UncommittedResult,
)
from lakefs_gc.errors import ContractError


@dataclass(frozen=True)
class Step:
    """
    One task of the GC DAG, as every place that runs, builds, submits or shows tasks reads it.

    ``inputs``: the results it reads, by task id (besides the context, which every task reads);
    ``skipped_in``: the run modes in which it does nothing; ``spark``: a Spark step (a spark-submit
    job, ``lakefs_gc/jobs/<task_id>.py``, or the task itself for a small input); ``hands_over``:
    why such a task handed a small input over to spark-submit after all (``{n}``: its limit,
    ``spark.in_process_max_keys``); ``timed``: the report records its seconds (``<task_id>_seconds``);
    ``after``: tasks it runs after without reading their results (delete after attribute_space:
    the attribution sees the namespace as the mark found it, before the sweep).
    """

    task_id: str
    result: type
    inputs: tuple[str, ...] = ()
    skipped_in: tuple[str, ...] = ()
    spark: bool = False
    hands_over: str | None = None
    timed: bool = False
    after: tuple[str, ...] = ()


_MARKING = ("sweep_only",)
# The one table of the DAG's tasks, in the order they run
STEP_TABLE: tuple[Step, ...] = (
    Step("prepare_run", RunContext),
    Step("mark_uncommitted", UncommittedResult, skipped_in=_MARKING, timed=True),
    Step(
        "list_committed",
        CommittedResult,
        ("mark_uncommitted",),
        _MARKING,
        spark=True,
        timed=True,
        hands_over="the ranges to read hold more than {n} entries, or do not say how many",
    ),
    Step(
        "list_slices",
        SlicesResult,
        (),
        _MARKING,
        spark=True,
        timed=True,
        hands_over="more than {n} objects to list, or a work location that is not a local folder",
    ),
    Step(
        "compute_candidates",
        CandidatesResult,
        ("mark_uncommitted", "list_committed", "list_slices"),
        _MARKING,
        spark=True,
        timed=True,
        hands_over="more than {n} listed objects or staged addresses, or parts too large to read here",
    ),
    Step(
        "attribute_space",
        SpaceResult,
        ("mark_uncommitted", "list_committed", "list_slices", "compute_candidates"),
        _MARKING,
        spark=True,
        timed=True,
        hands_over="more than {n} listed objects or entries of kept commits' ranges",
    ),
    Step(
        "delete",
        DeleteResult,
        ("mark_uncommitted", "list_slices", "compute_candidates"),
        ("mark_only",),
        after=("attribute_space",),
        spark=True,
        timed=True,
        hands_over="the mark has more than {n} key(s)",
    ),
    Step(
        "save_report",
        ReportResult,
        ("mark_uncommitted", "list_committed", "list_slices", "compute_candidates", "attribute_space", "delete"),
    ),
)
STEP = {s.task_id: s for s in STEP_TABLE}
STEPS = tuple(STEP)
# views of the table, by task id
RESULT_TYPES: dict[str, type] = {s.task_id: s.result for s in STEP_TABLE}
STEP_INPUTS: dict[str, tuple[str, ...]] = {s.task_id: s.inputs for s in STEP_TABLE}
SKIPPED_IN: dict[str, tuple[str, ...]] = {s.task_id: s.skipped_in for s in STEP_TABLE if s.skipped_in}
SPARK_STEPS = tuple(s.task_id for s in STEP_TABLE if s.spark)
TIMED_STEPS = tuple(s.task_id for s in STEP_TABLE if s.timed)


def skipped(step: str, mode: str) -> bool:
    """Whether ``step`` is a no-op in run mode ``mode`` (the one definition of it)."""
    return mode in SKIPPED_IN.get(step, ())


def skip_result(step: str, mode: str) -> Any:
    """
    Return what a step returns in a mode where it does nothing.

    A ``DeleteResult`` saying why for ``delete`` (the report counts 0), None for the marking steps.
    """
    return DeleteResult(skipped=mode) if step == "delete" else None


def required_inputs(step: str, mode: str) -> tuple[str, ...]:
    """Return the results ``step`` cannot run without in ``mode`` (those of steps that ran in it)."""
    return tuple(k for k in STEP_INPUTS[step] if not skipped(k, mode))


@dataclass(frozen=True)
class PreparedCommits:
    """lakeFS's answer to its commits preparation (``prepareGarbageCollectionCommits``): its run and ``commits.csv``."""

    run_id: str
    gc_commits_location: str


@dataclass(frozen=True)
class StepInputs:
    """
    Everything a step reads: the context and the results it names in :data:`STEP_INPUTS`.

    ``prepared_commits``: lakeFS's commits preparation, when the task waited for it before the
    step ran (in Airflow's triggerer: ``lakefs_gc_airflow.triggers``); ``list_committed`` then reads
    that ``commits.csv`` instead of asking lakeFS again. None: the step asks lakeFS itself.
    """

    context: RunContext
    results: Mapping[str, Any] = field(default_factory=dict)
    prepared_commits: PreparedCommits | None = None

    def get(self, step: str, required: bool = True) -> Any:
        value = self.results.get(step)
        if value is None and required:
            raise ContractError(
                f"the result of task {step!r} is missing (mode {self.context.mode}); re-run the whole DAG run"
            )
        return value

    def mark_id(self) -> str:
        """Return the mark this run writes (its uncommitted run id) or sweeps (sweep_only)."""
        if self.context.sweep_mark is not None:
            return self.context.sweep_mark.mark_id
        uncommitted: UncommittedResult = self.get("mark_uncommitted")
        return uncommitted.run_id

    def listed_objects(self) -> int:
        """
        Return what the mark listed (the blast-radius guard's denominator).

        For an incremental run, what its chain's clean run listed and what it listed itself (it
        lists only new slices).
        """
        ctx = self.context
        if ctx.sweep_mark is not None:
            return ctx.sweep_mark.listed_objects
        base = ctx.base.clean_listed_objects if ctx.flow == "incremental" and ctx.base is not None else 0
        slices: SlicesResult = self.get("list_slices")
        return base + slices.listed_objects
