"""
The run contract: what GC tasks hand each other, typed.

One run of one repository is seven tasks. ``prepare_run`` writes the :class:`RunContext` once
(the repository, where its storage is, the run clock and the validated :class:`RunSettings`);
every later task returns its own result type and reads only the results it needs, by task id
(:data:`STEP_INPUTS`). Nothing is overwritten and nothing is merged: ``save_report`` builds the
report from the typed results.

On the wire (XCom, and the JSON file a Spark job reads) every value is a small dict made by
:func:`to_wire` and read back by :func:`from_wire`, which refuses unknown or missing fields:
a task never guesses what an earlier one meant. No address lists and no secrets travel here;
secrets reach Spark jobs in a file only their user can read, or the environment
(:mod:`lakefs_gc.spark.runtime`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, Union

from lakefs_gc.errors import ContractError, Refusal, SettingsError

MODES = ("mark_and_sweep", "mark_only", "sweep_only")
FLOWS = ("auto", "clean", "incremental")  # lakefs_gc.gc.flow
STAGED_CHECKS = ("candidates", "full")  # lakefs_gc.listing.staged
SCHEDULABLE_MODES = ("mark_and_sweep", "mark_only")  # sweep_only needs a mark id: a manual run's Param


# ---------------------------------------------------------------------------------------------
# Settings: the Params of one run, validated once
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RunSettings:
    """The knobs of one run. The defaults here are the only defaults (config, Params, jobs)."""

    mode: str = "mark_and_sweep"
    flow: str = "auto"                         # clean | incremental | auto (lakefs_gc.gc.flow.choose_flow)
    min_age_seconds: int = 86400
    unsafe_min_age_override: bool = False
    dry_run: bool = False
    mark_id: str = ""                          # sweep_only (required there, ignored elsewhere): the mark to sweep
    confirm_after_seconds: int = 0             # resolved: never -1 here (see settings_from_params)
    max_delete_share: float = 0.5              # blast-radius guard: share of listed objects
    max_delete_count: int = 10_000_000         # ... and absolute count
    mark_max_age_seconds: int = 7 * 86400      # sweep_only refuses older marks
    delete_rate: float = 3000.0                # deletes per second in total; 0 = unlimited
    delete_concurrency: int = 2                # delete tasks at once
    delete_batch_size: int = 1000              # keys per DeleteObjects request (S3: at most 1,000)
    delete_max_attempts: int = 8               # per key, including the first
    # local:// only: move swept files into the sweep's quarantine folder for this many days instead
    # of deleting them (lakefs-gc restore brings them back; a later sweep purges them); 0: delete
    quarantine_days: int = 0
    prepare_commits_timeout_seconds: int = 1200  # lakeFS's async prepare_commits task
    # The defence against live staged entries lakeFS's uncommitted mark lacks (lakefs_gc.listing.staged):
    # "candidates" asks lakeFS only about the candidates that could be one; "full" lists every branch
    # against its HEAD commit (two listings per branch: the cost follows the repository's size).
    staged_check: str = "candidates"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise SettingsError(f"Param 'mode' must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.flow not in FLOWS:
            raise SettingsError(f"Param 'flow' must be one of {', '.join(FLOWS)}, got {self.flow!r}")
        if self.staged_check not in STAGED_CHECKS:
            raise SettingsError(f"Param 'staged_check' must be one of {', '.join(STAGED_CHECKS)}, "
                                f"got {self.staged_check!r}")
        for name, (lo, hi) in BOUNDS.items():
            _check_range(name, getattr(self, name), lo, hi)


PARAM_NAMES = tuple(f.name for f in dataclasses.fields(RunSettings))
AUTO = -1  # confirm_after_seconds: one schedule interval for scheduled and backfill runs, 0 for manual
# The range of every numeric setting (upper bound None: none). RunSettings refuses a value outside it;
# the run form gives Airflow the same range to refuse at trigger time (lakefs_gc_airflow.params).
BOUNDS: dict[str, tuple[float, float | None]] = {
    "min_age_seconds": (0, None),
    "confirm_after_seconds": (0, None),       # the Param also takes AUTO
    "max_delete_share": (0.0, 1.0),
    "max_delete_count": (0, None),
    "mark_max_age_seconds": (0, None),
    "delete_rate": (0.0, None),
    "delete_concurrency": (1, None),
    "delete_batch_size": (1, 1000),
    "delete_max_attempts": (1, None),
    "quarantine_days": (0, 3650),
    "prepare_commits_timeout_seconds": (1, None),
}


def _check_range(name: str, value: Any, lo: float, hi: float | None = None) -> None:
    if value < lo or (hi is not None and value > hi):
        bound = f"between {lo} and {hi}" if hi is not None else f">= {lo}"
        raise SettingsError(f"Param {name!r} must be {bound}, got {value!r}")


def _coerce(name: str, value: Any, kind: type) -> Any:
    """
    A Param value as ``kind``. Airflow validates Params against their JSON schema; this guards
    hand-made runs (``airflow dags trigger --conf``) and jobs started by hand.
    """
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise SettingsError(f"Param {name!r} must be true or false, got {value!r}")
    if kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise SettingsError(f"Param {name!r} must be a whole number, got {value!r}")
    if kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise SettingsError(f"Param {name!r} must be a number, got {value!r}")
    if not isinstance(value, str):
        raise SettingsError(f"Param {name!r} must be a string, got {value!r}")
    return value.strip()


def settings_from_params(params: Mapping[str, Any], *, run_type: str = "manual",
                         schedule_interval_seconds: int = 0) -> RunSettings:
    """
    The run's settings from its validated Params (``context["params"]``): one pure function.

    Params this contract does not know are ignored (a DAG may carry others); a missing or null Param
    (an optional field left empty, like ``mark_id``) takes the :class:`RunSettings` default.
    ``confirm_after_seconds`` of -1 resolves to one schedule interval for scheduled and backfill runs
    and 0 for manual ones.
    """
    hints = typing.get_type_hints(RunSettings)
    values: dict[str, Any] = {}
    for name in PARAM_NAMES:
        if name in params and params[name] is not None:
            values[name] = _coerce(name, params[name], hints[name])
    confirm = values.get("confirm_after_seconds", AUTO)
    if confirm == AUTO:
        kind = run_type.split(".")[-1].lower()
        values["confirm_after_seconds"] = schedule_interval_seconds if kind in ("scheduled", "backfill") else 0
    elif confirm < AUTO:
        raise SettingsError(f"Param 'confirm_after_seconds' must be >= -1 (-1: one schedule interval), got {confirm}")
    return RunSettings(**values)


# ---------------------------------------------------------------------------------------------
# The run context: written once by prepare_run
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StorageLocation:
    """Where the repository's objects are, without secrets (those come from the connection)."""

    namespace: str                       # as lakeFS reports it: s3://bucket/repo, local://repo, gs://, https://
    blockstore_type: str                 # s3 | local | azure | gs
    endpoint_url: str | None = None      # S3-compatible endpoint (None: AWS), Azure account URL, GCS API endpoint
    s3_region: str | None = None
    local_root: str | None = None        # lakeFS's blockstore.local.path, for local:// namespaces


@dataclass(frozen=True)
class LakeFSRetries:
    """
    How every task and job retries lakeFS (5xx, 429, dropped connections): the lakeFS
    connection's extras ``max_retries``, ``backoff_base``, ``backoff_max``, ``connect_timeout``.
    """

    max_retries: int = 5
    backoff_base: float = 0.5
    backoff_max: float = 20.0
    connect_timeout: float = 10.0


@dataclass(frozen=True)
class MarkRef:
    """sweep_only: the earlier mark being swept, as its summary.json describes it."""

    mark_id: str
    start_time: str
    cutoff_time: str
    listed_objects: int                  # what the blast-radius guard compares against
    to_delete: int


@dataclass(frozen=True)
class PartsDir:
    """
    A folder of address parts a run kept for later runs, and how many parts it wrote there: a
    later run refuses a folder holding another number (a part lost would lose its addresses).
    """

    dir: str
    parts: int


@dataclass(frozen=True)
class IncrementalBase:
    """
    An incremental run: the earlier run it builds on, as that run's ``incremental_state`` in its
    summary.json describes it (lakefs_gc.report.summary). Keys are namespace-relative.
    """

    mark_id: str
    start_time: str
    mode: str                            # the base run's mode; its deleted/ is gone only after a real sweep
    dry_run: bool
    last_slice: str                      # the newest slice it listed ("": none)
    uncommitted_dir: PartsDir            # its staged addresses
    committed_dirs: tuple[PartsDir, ...]  # every committed address read since the chain's clean run
    identity_dirs: tuple[PartsDir, ...]   # every committed entry's (size, checksum, path) read since then
    read_file: str                       # the commit and range ids read since the chain's clean run
    clean_run_id: str
    clean_start_time: str
    clean_listed_objects: int            # what the chain's clean run listed (the blast-radius guard's base)
    runs_in_chain: int                   # the clean run and the incremental runs since


@dataclass(frozen=True)
class RunContext:
    repository: str
    lakefs_endpoint: str                 # http://host:8000/api/v1
    storage: StorageLocation
    grace_period_seconds: int
    start_time: str                      # ISO 8601 UTC, fixed once per run
    cutoff_time: str                     # objects modified at or after it are never candidates
    effective_min_age_seconds: int
    work_dir: str                        # Spark-writable place for intermediate Parquet
    airflow_run_id: str
    settings: RunSettings
    parallelism: int | None = None       # partitions the jobs list and delete with; None: Spark's
    sweep_mark: MarkRef | None = None    # sweep_only
    lakefs_retries: LakeFSRetries = field(default_factory=LakeFSRetries)
    flow: str = "clean"                  # clean | incremental: what prepare_run chose (lakefs_gc.gc.flow)
    flow_reason: str = ""
    gc_rules: str = ""                   # fingerprint of the repository's GC rules (lakefs_gc.gc.flow)
    base: IncrementalBase | None = None  # incremental: the run it builds on

    @property
    def mode(self) -> str:
        return self.settings.mode


# ---------------------------------------------------------------------------------------------
# One result type per step
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class UncommittedResult:
    """mark_uncommitted: lakeFS wrote the staged addresses; its run id names this mark."""

    run_id: str
    locations: tuple[str, ...]           # every non-empty page location (hazard H2)
    pages: int
    seconds: float = 0.0
    # the staged entries read through the API (lakefs_gc.listing.uncommitted.api_staged)
    staged_branches: int = 0             # branches read, each against its HEAD commit
    staged_entries_checked: int = 0      # entries a branch reads at an address its HEAD commit lacks
    staged_addresses_lakefs_omitted: int = 0  # live staged addresses lakeFS's mark lacked: kept
    staged_file: str | None = None       # key of the Parquet holding those (lakeFS's uncommitted format)
    staged_objects_listed: int = 0       # objects listed to find them (branches and HEAD commits)
    staged_branches_gone: tuple[str, ...] = ()  # deleted during the run (their staged entries are garbage)
    staged_check: str = "full"           # RunSettings.staged_check as this step ran it
    lakefs_seconds: float = 0.0          # of seconds: lakeFS's own mark (prepare_uncommited, every page)
    heads_file: str | None = None        # candidates: every branch's HEAD before and after lakeFS's mark
    branches_moved: int = 0              # candidates: HEAD moved during lakeFS's mark (listed in full)


@dataclass(frozen=True, kw_only=True)
class SparkStepResult:
    """
    What every Spark step's result has: ``incomplete`` says why the task fails although the
    step ran to its end (delete: keys left as dead letters); None when it did all its work.
    """

    incomplete: str | None = None


@dataclass(frozen=True)
class CommittedResult(SparkStepResult):
    committed_dir: PartsDir              # the addresses read now, each once: the mark's state/committed/
    commits_csv: str
    active_commits: int
    metaranges: int
    ranges: int
    committed_addresses: int
    documented_commits: int = 0          # kept by the documented rules, walked from the API (gc/retention.py)
    commits_lakefs_lacked: int = 0       # of which commits.csv did not list: kept anyway
    seconds: float = 0.0
    new_commits: int = 0                 # commits read now (incremental: not read since the chain's clean run)
    ranges_known: int = 0                # incremental: ranges of new commits read before (skipped)
    read_file: str = ""                  # key: the commit and range ids read since the chain's clean run
    identity_dir: PartsDir | None = None  # (size, checksum, path) of every entry of the ranges read now


@dataclass(frozen=True)
class SlicesResult(SparkStepResult):
    listed_dir: str                      # Parquet: address, size, last_modified_ms, checksum
    first_slice: str
    slices_listed: int
    slices_skipped: int
    listed_objects: int
    listed_bytes: int
    seconds: float = 0.0
    slices_before_base: int = 0          # incremental: older than the base's newest slice, not listed
    root_listed: bool = True             # the namespace root and loose data/ objects (clean runs only)


@dataclass(frozen=True)
class CandidatesResult(SparkStepResult):
    report_dir: str
    uncommitted_files: int
    candidates: int
    candidate_bytes: int
    to_delete: int                       # after delayed confirmation
    to_delete_bytes: int
    held_back: int
    confirm_after_seconds: int
    held_back_reason: str | None = None
    confirmed_by_mark: str | None = None
    unreadable_marks: tuple[str, ...] = ()   # earlier marks not used for confirmation, with the reason
    seconds: float = 0.0
    uncommitted_dir: PartsDir | None = None  # this run's staged addresses, kept for later runs
    carried_checked: int = 0             # incremental: earlier staged or held-back addresses checked again
    carried_candidates: int = 0          # ... of which candidates now
    # the staged check on the candidates (lakefs_gc.listing.staged), when it ran here
    staged_check: str = "full"
    staged_suspicious: int = 0           # candidates a staged entry could read (size and checksum of an entry)
    staged_stats: int = 0                # statObject calls made for them
    staged_kept: int = 0                 # candidates a branch reads now: kept, never deleted
    commits_since: int = 0               # commits made since list_committed read them, read now
    committed_since_kept: int = 0        # candidates those commits reference: kept
    staged_check_seconds: float = 0.0


@dataclass(frozen=True)
class DeleteCounts:
    """The deleter's counters: one shape for a part, a task and a run."""

    keys: int = 0             # keys asked for: deleted + already_gone + failed
    deleted: int = 0          # removed by this sweep (dry run: would be removed)
    already_gone: int = 0     # not there when the sweep asked (storage said "not found")
    retried: int = 0          # key-attempts retried
    requests: int = 0
    failed: int = 0           # still failing after retries: dead letters
    parts: int = 0
    resumed_parts: int = 0    # parts a retry found already done

    def __add__(self, other: DeleteCounts) -> DeleteCounts:
        return DeleteCounts(**{f.name: getattr(self, f.name) + getattr(other, f.name)
                               for f in dataclasses.fields(self)})


@dataclass(frozen=True)
class Restorability:
    """
    Whether, and until when, the store keeps what a sweep deleted (read from the store at sweep
    time: lakefs_gc.sweeping.restore.retention). ``restorable`` None: unknown (the credential may
    not read the setting); ``until`` None: no end the GC knows of, or not restorable.
    """

    how: str = "none"          # s3 versioning | azure soft delete | gcs soft delete | local quarantine | none
    restorable: bool | None = None
    until: str | None = None
    detail: str = ""


@dataclass(frozen=True)
class DeleteResult(SparkStepResult):
    counts: DeleteCounts = field(default_factory=DeleteCounts)
    skipped: str | None = None           # why nothing ran (mark_only)
    dry_run: bool = False                # counts.deleted is then what would have gone
    concurrency: int = 0
    rate: float = 0.0
    sweep_dir: str | None = None
    dead_letters: str | None = None
    seconds: float = 0.0
    soft_delete_days: int | None = None  # Azure: days the account keeps deleted blobs (0: off; None: not Azure/unknown)
    restorable: Restorability | None = None  # whether lakefs-gc restore can bring this sweep's deletions back
    quarantine_purged: int = 0           # local://: quarantined files of earlier sweeps purged (their days passed)


@dataclass(frozen=True)
class ReportResult:
    summary_uri: str
    seconds: float = 0.0
    summary: str = ""                    # the run in a few lines (lakefs_gc.report.summary.summary_text)
    report_url: str | None = None        # a URL a browser can open for summary_uri, when there is one
    lakefs_url: str | None = None        # the repository in lakeFS's UI


REFUSED, FAILED = "refused", "failed"
FAILURE_KINDS = (REFUSED, FAILED)


@dataclass(frozen=True)
class StepFailure:
    """
    Why a Spark job failed, in its result file instead of a result: ``{"failure": {...}}``.

    ``refused``: a :class:`lakefs_gc.errors.Refusal`, the same on every retry (the task fails at
    once); ``failed``: anything else (Airflow retries the task). See :mod:`lakefs_gc.errors`.
    """

    kind: str
    type: str                            # the exception's class name
    message: str

    def __post_init__(self) -> None:
        if self.kind not in FAILURE_KINDS:
            raise ValueError(f"failure kind must be one of {', '.join(FAILURE_KINDS)}, got {self.kind!r}")


def failure_of(exc: BaseException) -> StepFailure:
    return StepFailure(REFUSED if isinstance(exc, Refusal) else FAILED, type(exc).__name__, str(exc))


def read_failure(doc: Any) -> StepFailure | None:
    """The failure a job's result file records, or None when it holds a result."""
    if isinstance(doc, Mapping) and set(doc) == {"failure"}:
        return from_wire(StepFailure, doc["failure"], "failure in a job's result file")
    return None


@dataclass(frozen=True)
class Step:
    """
    One task of the GC DAG, as every place that runs, builds, submits or shows tasks reads it.

    ``inputs``: the results it reads, by task id (besides the context, which every task reads);
    ``skipped_in``: the run modes in which it does nothing; ``spark``: a Spark step (a spark-submit
    job, ``lakefs_gc/spark/jobs/<task_id>.py``, or the task itself for a small input); ``hands_over``:
    why such a task handed a small input over to spark-submit after all (``{n}``: its limit,
    ``spark.in_process_max_keys``); ``timed``: the report records its seconds (``<task_id>_seconds``).
    """

    task_id: str
    result: type
    inputs: tuple[str, ...] = ()
    skipped_in: tuple[str, ...] = ()
    spark: bool = False
    hands_over: str | None = None
    timed: bool = False


_MARKING = ("sweep_only",)
# The one table of the DAG's tasks, in the order they run
STEP_TABLE: tuple[Step, ...] = (
    Step("prepare_run", RunContext),
    Step("mark_uncommitted", UncommittedResult, skipped_in=_MARKING, timed=True),
    Step("list_committed", CommittedResult, ("mark_uncommitted",), _MARKING, spark=True, timed=True,
         hands_over="the ranges to read hold more than {n} entries, or do not say how many"),
    Step("list_slices", SlicesResult, (), _MARKING, spark=True, timed=True,
         hands_over="more than {n} objects to list, or a work location that is not a local folder"),
    Step("compute_candidates", CandidatesResult, ("mark_uncommitted", "list_committed", "list_slices"), _MARKING,
         spark=True, timed=True,
         hands_over="more than {n} listed objects or staged addresses, or parts too large to read here"),
    Step("delete", DeleteResult, ("mark_uncommitted", "list_slices", "compute_candidates"), ("mark_only",),
         spark=True, timed=True, hands_over="the mark has more than {n} key(s)"),
    Step("save_report", ReportResult,
         ("mark_uncommitted", "list_committed", "list_slices", "compute_candidates", "delete")),
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
    What a step returns in a mode where it does nothing: a ``DeleteResult`` saying why for
    ``delete`` (the report counts 0), None for the marking steps.
    """
    return DeleteResult(skipped=mode) if step == "delete" else None


def required_inputs(step: str, mode: str) -> tuple[str, ...]:
    """The results ``step`` cannot run without in ``mode`` (those of steps that ran in it)."""
    return tuple(k for k in STEP_INPUTS[step] if not skipped(k, mode))


@dataclass(frozen=True)
class StepInputs:
    """Everything a step reads: the context and the results it names in :data:`STEP_INPUTS`."""

    context: RunContext
    results: Mapping[str, Any] = field(default_factory=dict)

    def get(self, step: str, required: bool = True) -> Any:
        value = self.results.get(step)
        if value is None and required:
            raise ContractError(f"the result of task {step!r} is missing (mode {self.context.mode}); "
                                f"re-run the whole DAG run")
        return value

    def mark_id(self) -> str:
        """The mark this run writes (its uncommitted run id) or sweeps (sweep_only)."""
        if self.context.sweep_mark is not None:
            return self.context.sweep_mark.mark_id
        return self.get("mark_uncommitted").run_id

    def listed_objects(self) -> int:
        """
        What the mark listed (the blast-radius guard's denominator); for an incremental run, what
        its chain's clean run listed and what it listed itself (it lists only new slices).
        """
        ctx = self.context
        if ctx.sweep_mark is not None:
            return ctx.sweep_mark.listed_objects
        base = ctx.base.clean_listed_objects if ctx.flow == "incremental" and ctx.base is not None else 0
        return base + self.get("list_slices").listed_objects


# ---------------------------------------------------------------------------------------------
# The wire: small dicts
# ---------------------------------------------------------------------------------------------

T = TypeVar("T")


def to_wire(obj: Any) -> Any:
    """A dataclass as a JSON-ready dict (tuples become lists); None stays None."""
    if obj is None:
        return None
    if dataclasses.is_dataclass(obj):
        return {f.name: to_wire(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (tuple, list)):
        return [to_wire(x) for x in obj]
    return obj


def from_wire(cls: type[T], data: Any, where: str = "") -> T:
    """
    Read ``cls`` back from :func:`to_wire`'s dict; unknown, missing or mistyped fields raise
    :class:`ContractError` naming them.
    """
    where = where or cls.__name__
    if not isinstance(data, Mapping):
        raise ContractError(f"{where}: expected an object, got {type(data).__name__}")
    names = {f.name: f for f in dataclasses.fields(cls)}
    unknown = set(data) - set(names)
    if unknown:
        raise ContractError(f"{where}: unknown field(s) {sorted(unknown)}")
    hints = typing.get_type_hints(cls)
    values = {}
    for name, f in names.items():
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ContractError(f"{where}: missing field {name!r}")
            continue
        values[name] = _value(hints[name], data[name], f"{where}.{name}")
    try:
        return cls(**values)
    except (TypeError, ValueError) as e:
        raise ContractError(f"{where}: {e}") from e


def _value(tp: Any, v: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if v is None:
            return None
        return _value(args[0], v, where)
    if origin is tuple:
        if not isinstance(v, (list, tuple)):
            raise ContractError(f"{where}: expected a list, got {type(v).__name__}")
        (item,) = {a for a in typing.get_args(tp) if a is not Ellipsis}
        return tuple(_value(item, x, where) for x in v)
    if dataclasses.is_dataclass(tp):
        return from_wire(tp, v, where)
    if tp is float and isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    if tp is Any or (isinstance(tp, type) and isinstance(v, tp) and not (tp is int and isinstance(v, bool))):
        return v
    raise ContractError(f"{where}: expected {getattr(tp, '__name__', tp)}, got {v!r}")


def read_result(step: str, value: Any) -> Any:
    """A task's XCom value as its result type (None for a step that did not run)."""
    if value is None:
        return None
    return from_wire(RESULT_TYPES[step], value, f"result of task {step!r}")


def inputs_to_wire(inputs: StepInputs) -> dict[str, Any]:
    return {"context": to_wire(inputs.context),
            "results": {k: to_wire(v) for k, v in inputs.results.items()}}


def inputs_from_wire(doc: Any) -> StepInputs:
    if not isinstance(doc, Mapping) or set(doc) != {"context", "results"}:
        raise ContractError("a step's input must be an object with exactly 'context' and 'results'")
    results = doc["results"]
    if not isinstance(results, Mapping):
        raise ContractError("'results' must be an object keyed by task id")
    unknown = set(results) - set(RESULT_TYPES)
    if unknown:
        raise ContractError(f"results of unknown task(s) {sorted(unknown)}")
    return StepInputs(from_wire(RunContext, doc["context"], "context"),
                      {k: read_result(k, v) for k, v in results.items()})


def write_json(doc: Any, path: str | os.PathLike) -> None:
    """Write atomically (a reader never sees half a file)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(doc, sort_keys=True))
    tmp.replace(p)


def read_json(path: str | os.PathLike) -> Any:
    return json.loads(Path(path).read_text())
