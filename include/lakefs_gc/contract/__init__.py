"""
The run contract: what GC tasks hand each other, typed.

One run of one repository is eight tasks. ``prepare_run`` writes the :class:`RunContext` once
(the repository, where its storage is, the run clock and the validated :class:`RunSettings`);
every later task returns its own result type and reads only the results it needs, by task id
(:data:`STEP_INPUTS`). Nothing is overwritten and nothing is merged: ``save_report`` builds the
report from the typed results.

On the wire (XCom, and the JSON file a Spark job reads) every value is a small dict made by
:func:`to_wire` and read back by :func:`from_wire`, which refuses unknown or missing fields:
a task never guesses what an earlier one meant. No address lists and no secrets travel here;
secrets reach Spark jobs in a file only their user can read, or the environment
(:mod:`lakefs_gc.spark.runtime`).

The contract is a package of small modules, each name imported from here:
:mod:`~lakefs_gc.contract.settings` (the Params), :mod:`~lakefs_gc.contract.context` (the run
context), :mod:`~lakefs_gc.contract.results` (one result type per step),
:mod:`~lakefs_gc.contract.steps` (the step table) and :mod:`~lakefs_gc.contract.wire` (the codec).
"""

from __future__ import annotations

from lakefs_gc.contract.approval import APPROVAL_TASK, DECISIONS, Approval, ApprovalRule
from lakefs_gc.contract.context import (
    IncrementalBase,
    LakeFSRetries,
    MarkRef,
    PartsDir,
    RunContext,
    StorageLocation,
)
from lakefs_gc.contract.cost import GB, PRICES_AS_OF, REQUEST_KINDS, STORES, Prices, RequestCount, StorePrices
from lakefs_gc.contract.keep import BranchKeep, KeepRules, KeptByRule
from lakefs_gc.contract.results import (
    FREED_LATER,
    FREED_NOW,
    STILL_BILLED,
    CandidatesResult,
    CommittedResult,
    DeleteCounts,
    DeleteResult,
    FreedOn,
    Freeing,
    ReportResult,
    Restorability,
    SlicesResult,
    SpaceResult,
    SparkStepResult,
    UncommittedResult,
    Uploads,
)
from lakefs_gc.contract.settings import (
    AUTO,
    BOUNDS,
    FLOWS,
    INVENTORY_FALLBACKS,
    LISTING_SOURCES,
    MODES,
    PARAM_NAMES,
    SCHEDULABLE_MODES,
    STAGED_CHECKS,
    RunSettings,
    settings_from_params,
)
from lakefs_gc.contract.steps import (
    RESULT_TYPES,
    SKIPPED_IN,
    SPARK_STEPS,
    STEP,
    STEP_INPUTS,
    STEP_TABLE,
    STEPS,
    TIMED_STEPS,
    PreparedCommits,
    Step,
    StepInputs,
    required_inputs,
    skip_result,
    skipped,
)
from lakefs_gc.contract.wire import (
    FAILED,
    FAILURE_KINDS,
    REFUSED,
    StepFailure,
    failure_of,
    from_wire,
    inputs_from_wire,
    inputs_to_wire,
    read_failure,
    read_json,
    read_result,
    rest_field,
    to_wire,
    write_json,
)

__all__ = [
    "APPROVAL_TASK",
    "DECISIONS",
    "Approval",
    "ApprovalRule",
    "BranchKeep",
    "KeepRules",
    "KeptByRule",
    "GB",
    "PRICES_AS_OF",
    "REQUEST_KINDS",
    "STORES",
    "Prices",
    "RequestCount",
    "StorePrices",
    "AUTO",
    "BOUNDS",
    "CandidatesResult",
    "CommittedResult",
    "DeleteCounts",
    "DeleteResult",
    "FREED_LATER",
    "FREED_NOW",
    "STILL_BILLED",
    "FreedOn",
    "Freeing",
    "FAILED",
    "FAILURE_KINDS",
    "FLOWS",
    "IncrementalBase",
    "LakeFSRetries",
    "MODES",
    "INVENTORY_FALLBACKS",
    "LISTING_SOURCES",
    "MarkRef",
    "PARAM_NAMES",
    "PartsDir",
    "REFUSED",
    "RESULT_TYPES",
    "ReportResult",
    "Restorability",
    "Uploads",
    "RunContext",
    "RunSettings",
    "SCHEDULABLE_MODES",
    "SKIPPED_IN",
    "SPARK_STEPS",
    "STAGED_CHECKS",
    "STEP",
    "STEPS",
    "STEP_INPUTS",
    "STEP_TABLE",
    "SlicesResult",
    "SpaceResult",
    "SparkStepResult",
    "PreparedCommits",
    "Step",
    "StepFailure",
    "StepInputs",
    "StorageLocation",
    "TIMED_STEPS",
    "UncommittedResult",
    "failure_of",
    "from_wire",
    "inputs_from_wire",
    "inputs_to_wire",
    "read_failure",
    "read_json",
    "read_result",
    "required_inputs",
    "rest_field",
    "settings_from_params",
    "skip_result",
    "skipped",
    "to_wire",
    "write_json",
]
