"""
``summary.json`` as a type: :class:`RunSummary`, written and read only through the contract's wire codec.

lakeFS's fields come first and keep lakeFS's meaning (reference 3.5); ours follow. The fields'
order is the file's: readers of the JSON see the keys in the order they always had. Every field
is optional, None when the file does not have it: a mark in progress, a run that did not reach a
step, or a summary of another version has fewer. The fields a file has that this version does not
name are kept verbatim in ``extra`` and written back, so a summary round-trips whatever version
wrote it. A known field of the wrong type is a
:class:`~lakefs_gc.errors.ContractError` naming it; lakeFS's ``success`` alone is read as lakeFS
tooling reads it, true only for a JSON ``true``.

Building it from the step results is :mod:`lakefs_gc.report.summary`, showing it
:mod:`lakefs_gc.report.render`, its figures as metrics :mod:`lakefs_gc.report.figures`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from lakefs_gc.contract import (
    TIMED_STEPS,
    Approval,
    FreedOn,
    Freeing,
    IncrementalBase,
    KeptByRule,
    PartsDir,
    RequestCount,
    Restorability,
    Uploads,
    from_wire,
    rest_field,
    to_wire,
)
from lakefs_gc.errors import ContractError

STATE_FORMAT = 2  # the format of ``incremental_state`` (read by lakefs_gc.gc.flow)


@dataclass(frozen=True)
class IncrementalState:
    """
    What a marking run keeps for the incremental runs after it: ``incremental_state`` in its summary.

    Its fields are optional so that a state of another format still reads (``gc.flow`` then says
    why it cannot serve as a base); the folders are namespace-relative.
    """

    wire_omit_none: ClassVar[bool] = True
    # what an incremental run needs of its base (lakefs_gc.gc.flow refuses a state without one)
    NEEDED: ClassVar[tuple[str, ...]] = (
        "clean_run_id",
        "clean_start_time",
        "runs_in_chain",
        "last_slice",
        "uncommitted_dir",
        "committed_dirs",
        "identity_dirs",
        "read_file",
    )

    format: int | None = None
    namespace: str | None = None  # the storage namespace the state's keys are in
    gc_rules: str | None = None  # fingerprint of the GC rules it ran under (lakefs_gc.gc.flow)
    clean_run_id: str | None = None
    clean_start_time: str | None = None
    clean_listed_objects: int | None = None  # the blast-radius guard's base for the chain
    runs_in_chain: int | None = None  # the clean run and the incremental runs since, this one included
    last_slice: str | None = None  # the newest slice listed ("": none)
    uncommitted_dir: PartsDir | None = None
    committed_dirs: tuple[PartsDir, ...] | None = None
    identity_dirs: tuple[PartsDir, ...] | None = None
    read_file: str | None = None  # the commit and range ids read since the chain's clean run
    extra: Mapping[str, Any] = rest_field()

    def lacks(self) -> str | None:
        """Return the first field an incremental run needs that this state does not have; None: it has them all."""
        return next((name for name in self.NEEDED if getattr(self, name) is None), None)


@dataclass(frozen=True)
class RunSummary:
    """One GC run's report, as ``summary.json`` holds it (the module's doc says how it is read)."""

    wire_omit_none: ClassVar[bool] = True

    # lakeFS's fields: num_deleted_objects counts the addresses the mark listed for deletion (its
    # deleted/ list) in every mode; what a sweep removed is "deleted"
    run_id: str | None = None
    success: bool | None = None  # true only once the whole run completed
    first_slice: str | None = None
    start_time: str | None = None
    cutoff_time: str | None = None
    num_deleted_objects: int | None = None
    note: str | None = None  # a mark's summary until the run completes (mark_started)
    # the run and its settings
    repository: str | None = None
    storage_namespace: str | None = None
    mode: str | None = None
    airflow_run_id: str | None = None
    min_age_seconds: int | None = None
    grace_period_seconds: int | None = None
    effective_min_age_seconds: int | None = None
    unsafe_min_age_override: bool | None = None
    dry_run: bool | None = None
    max_delete_share: float | None = None
    max_delete_count: int | None = None
    delete_batch_size: int | None = None
    # sweep_only: the mark swept
    mark_id: str | None = None
    mark_start_time: str | None = None
    mark_cutoff_time: str | None = None
    # mark_uncommitted
    uncommitted_pages: int | None = None
    mark_uncommitted_seconds: float | None = None
    staged_branches: int | None = None
    staged_entries_checked: int | None = None
    staged_addresses_lakefs_omitted: int | None = None
    staged_objects_listed: int | None = None
    staged_check: str | None = None
    branches_moved: int | None = None
    lakefs_mark_seconds: float | None = None
    staged_file: str | None = None
    staged_branches_gone: tuple[str, ...] | None = None
    # list_committed
    active_commits: int | None = None
    metaranges: int | None = None
    ranges: int | None = None
    committed_addresses: int | None = None
    documented_commits: int | None = None
    commits_lakefs_lacked: int | None = None
    kept_by_rules: tuple[KeptByRule, ...] | None = None  # the config's keep rules, what each kept (issue 55)
    list_committed_seconds: float | None = None
    commits_csv: str | None = None
    # list_slices (listed_objects and to_delete: a sweep_only run's are its mark's)
    slices_listed: int | None = None
    slices_skipped: int | None = None
    listed_objects: int | None = None
    listed_bytes: int | None = None
    list_slices_seconds: float | None = None
    # list_slices from an inventory (absent from a run that listed with LIST and was not asked otherwise)
    listing_source: str | None = None  # list | inventory
    inventory_id: str | None = None  # the manifest's URI
    inventory_time: str | None = None  # its T_inv
    inventory_age_seconds: int | None = None  # how old it was at the run's start
    inventory_rows: int | None = None  # rows read from its data files
    inventory_files: int | None = None  # its data files
    slices_topped_up: int | None = None  # slices created after T_inv, listed by LIST
    listing_fallback: str | None = None  # the inventory was asked for, the run listed: why
    inventory_deferred: int | None = None  # its rows not older than the cutoff, left for a later run
    # compute_candidates
    uncommitted_files: int | None = None
    candidates: int | None = None
    candidate_bytes: int | None = None
    confirm_after_seconds: int | None = None
    to_delete: int | None = None
    to_delete_bytes: int | None = None
    held_back: int | None = None
    compute_candidates_seconds: float | None = None
    staged_suspicious: int | None = None  # the staged check on the candidates, when it ran there
    staged_stats: int | None = None
    staged_kept: int | None = None
    commits_since: int | None = None
    committed_since_kept: int | None = None
    staged_check_seconds: float | None = None
    held_back_reason: str | None = None
    confirmed_by_mark: str | None = None
    held_back_until: str | None = None
    unreadable_marks: tuple[str, ...] | None = None
    # delete
    deleted: int | None = None
    already_gone: int | None = None
    delete_failed: int | None = None
    delete_keys: int | None = None
    delete_retried: int | None = None
    delete_requests: int | None = None
    delete_parts: int | None = None
    delete_resumed_parts: int | None = None
    delete_concurrency: int | None = None
    delete_rate: float | None = None
    delete_seconds: float | None = None
    would_delete: int | None = None
    sweep_dir: str | None = None
    dead_letters: str | None = None
    soft_delete_days: int | None = None
    restorable: Restorability | None = None
    quarantine_purged: int | None = None
    delete_skipped: str | None = None
    uploads: Uploads | None = None  # incomplete multipart uploads the sweep aborted or reported (sweeping.uploads)
    approval: Approval | None = None  # a person's answer to the sweep (sweep.confirm / approval_above)
    # attribute_space: why not, or its totals (the whole attribution is in space_file)
    space_skipped: str | None = None
    space_file: str | None = None
    space_objects: int | None = None
    space_bytes: int | None = None
    space_head_bytes: int | None = None
    space_retention_bytes: int | None = None
    space_staged_bytes: int | None = None
    space_deleted_bytes: int | None = None
    space_held_back_bytes: int | None = None
    space_young_bytes: int | None = None
    space_branches: int | None = None
    stale_branches: int | None = None
    stale_alone_bytes: int | None = None
    attribute_space_seconds: float | None = None
    reclaimed_bytes: int | None = None
    # the bill: reclaimed_bytes split by what a delete does on this store (the delete step's; absent
    # before issue 54 and where the bytes are not known): freed now, on dates, still billed
    freeing: Freeing | None = None
    freed_now_bytes: int | None = None
    freed_later: tuple[FreedOn, ...] | None = None
    still_billed_bytes: int | None = None
    # the flow: which ran, why, what it read, and the state later incremental runs build on
    flow: str | None = None
    flow_reason: str | None = None
    guard_objects: int | None = None  # the blast-radius guard's denominator (read back by sweep_only)
    new_commits: int | None = None
    ranges_known: int | None = None
    slices_before_base: int | None = None
    base_run: str | None = None
    clean_run: str | None = None
    not_covered: str | None = None
    carried_checked: int | None = None
    carried_candidates: int | None = None
    incremental_state: IncrementalState | None = None
    # save_report: the GC's own leftovers expired (lakefs_gc.report.leftovers; a dry run: would be)
    leftovers_removed_marks: int | None = None
    leftovers_removed_work: int | None = None  # run work folders
    leftovers_removed_objects: int | None = None
    leftovers_removed_bytes: int | None = None
    leftovers_kept: tuple[str, ...] | None = None  # "3 marks: within retention", by reason
    leftovers_note: str | None = None  # not expired (switched off, failed), or what went wrong
    # the run's cost (lakefs_gc.report.cost): every step's storage requests by store and kind, their
    # price, and what the bytes freed now save a month (saving_bytes; US dollars, the prices of prices_as_of)
    requests: tuple[RequestCount, ...] | None = None
    request_cost_usd: float | None = None
    saving_bytes: int | None = None
    monthly_saving_usd: float | None = None
    prices_as_of: str | None = None  # the date of the public list prices used, or "config"
    # summaries of version 0.1 name already_gone so; the report still shows it
    delete_missing: int | None = None
    extra: Mapping[str, Any] = rest_field()

    def to_doc(self) -> dict[str, Any]:
        """Return the summary.json document (the fields it has, then ``extra``)."""
        doc: dict[str, Any] = to_wire(self)
        return doc

    @classmethod
    def from_doc(cls, doc: Any) -> RunSummary:
        """
        Read a summary.json document of any version.

        A document that is not an object, or a known field of the wrong type, is :class:`ContractError`.
        """
        if not isinstance(doc, Mapping):
            raise ContractError(f"summary.json: expected an object, got {type(doc).__name__}")
        if "success" in doc and not isinstance(doc["success"], bool):
            doc = {**doc, "success": False}  # lakeFS's: true only for a JSON true
        return from_wire(cls, doc, "summary.json")

    def step_seconds(self) -> dict[str, float]:
        """Return the seconds of every timed step the run recorded, by task id (``<task_id>_seconds``)."""
        out: dict[str, float] = {}
        for step in TIMED_STEPS:
            seconds = getattr(self, f"{step}_seconds")
            if seconds is not None:
                out[step] = seconds
        return out

    def incremental_base(self, mark_id: str) -> IncrementalBase:
        """
        Return the base an incremental run builds on: this summary of run ``mark_id`` and its ``incremental_state``.

        :func:`lakefs_gc.gc.flow.choose_flow` checked the state is there and of this format; a field
        missing is :class:`ContractError`.
        """
        where = f"the incremental_state of run {mark_id}"
        if self.incremental_state is None:
            raise ContractError(f"{where}: the summary has none")
        state: dict[str, Any] = to_wire(self.incremental_state)
        base = {f.name for f in dataclasses.fields(IncrementalBase)}
        return from_wire(
            IncrementalBase,
            {
                **{k: v for k, v in state.items() if k in base},
                "mark_id": mark_id,
                "start_time": self.start_time,
                # a sweep a person rejected deleted nothing: its deleted/ list is still garbage, as a mark_only run's
                "mode": "mark_only" if self.delete_skipped == "rejected" else self.mode or "",
                "dry_run": bool(self.dry_run),
                "clean_listed_objects": self.incremental_state.clean_listed_objects or 0,
            },
            where,
        )
