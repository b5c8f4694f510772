"""
The run report, ``summary.json``, built from the typed step results (:mod:`lakefs_gc.contract`).

:func:`build_summary` makes the :class:`~lakefs_gc.report.run_summary.RunSummary` (the type and
its codec); ``success`` is true only when the whole run (mark, and sweep unless mark-only)
completed: the mark's in-progress summary (:func:`mark_started`) says ``false`` until
``save_report`` rewrites it. How a person reads it is :mod:`lakefs_gc.report.render`; the URLs it
links to, :mod:`lakefs_gc.report.links`; its figures as metrics, :mod:`lakefs_gc.report.figures`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypedDict

from lakefs_gc.report.cost import with_cost
from lakefs_gc.report.layout import summary_key, sweep_summary_key
from lakefs_gc.report.links import lakefs_ui_url, report_url
from lakefs_gc.report.render import human_bytes, step_line, summary_rows, summary_text
from lakefs_gc.report.run_summary import STATE_FORMAT, IncrementalState, RunSummary

if TYPE_CHECKING:
    from lakefs_gc.contract import (
        CandidatesResult,
        CommittedResult,
        DeleteResult,
        RunContext,
        SlicesResult,
        SpaceResult,
        StepInputs,
        UncommittedResult,
    )
    from lakefs_gc.storage.base import Storage

__all__ = [
    "NOT_COVERED",
    "build_summary",
    "held_back_until",
    "mark_started",
    "summary_location",
    "write_summary",
    # defined in render and links; the tests of the whole report import them from here with the building
    "human_bytes",
    "lakefs_ui_url",
    "report_url",
    "step_line",
    "summary_rows",
    "summary_text",
]


def mark_started(ctx: RunContext, mark_id: str, first_slice: str) -> RunSummary:
    """
    Return the summary a mark writes before its first part.

    lakeFS tooling sees a failed mark until the run completes.
    """
    return RunSummary(
        run_id=mark_id,
        success=False,
        first_slice=first_slice,
        start_time=ctx.start_time,
        cutoff_time=ctx.cutoff_time,
        num_deleted_objects=0,
        note="mark in progress or failed",
    )


def build_summary(inputs: StepInputs, success: bool = True) -> RunSummary:
    """
    Return the run's summary from its context and the results of the steps that ran.

    A field of a step that did not run (the mode skipped it, or the run did not reach it) is None:
    absent from the file.
    """
    ctx = inputs.context
    s = ctx.settings
    unc: UncommittedResult | None = inputs.results.get("mark_uncommitted")
    com: CommittedResult | None = inputs.results.get("list_committed")
    sl: SlicesResult | None = inputs.results.get("list_slices")
    cand: CandidatesResult | None = inputs.results.get("compute_candidates")
    dele: DeleteResult | None = inputs.results.get("delete")
    space: SpaceResult | None = inputs.results.get("attribute_space")
    mark = ctx.sweep_mark
    c = dele.counts if dele else None
    swept = bool(dele and not dele.skipped and not dele.dry_run)
    checked = cand if cand and cand.staged_check == "candidates" else None  # the staged check ran on the candidates
    attributed = space if space and not space.skipped else None
    reclaimable = cand.to_delete_bytes if cand else 0
    flow = _flow(ctx, inputs.mark_id(), com, sl, cand)
    summary = RunSummary(
        run_id=inputs.mark_id(),
        success=bool(success),
        first_slice=sl.first_slice if sl else "",
        start_time=ctx.start_time,
        cutoff_time=ctx.cutoff_time,
        num_deleted_objects=cand.to_delete if cand else (mark.to_delete if mark else 0),
        repository=ctx.repository,
        storage_namespace=ctx.storage.namespace,
        mode=ctx.mode,
        airflow_run_id=ctx.airflow_run_id,
        min_age_seconds=s.min_age_seconds,
        grace_period_seconds=ctx.grace_period_seconds,
        effective_min_age_seconds=ctx.effective_min_age_seconds,
        unsafe_min_age_override=s.unsafe_min_age_override,
        dry_run=s.dry_run,
        max_delete_share=s.max_delete_share,
        max_delete_count=s.max_delete_count,
        delete_batch_size=s.delete_batch_size,
        mark_id=mark.mark_id if mark else None,
        mark_start_time=mark.start_time if mark else None,
        mark_cutoff_time=mark.cutoff_time if mark else None,
        uncommitted_pages=unc.pages if unc else None,
        mark_uncommitted_seconds=unc.seconds if unc else None,
        staged_branches=unc.staged_branches if unc else None,
        staged_entries_checked=unc.staged_entries_checked if unc else None,
        staged_addresses_lakefs_omitted=unc.staged_addresses_lakefs_omitted if unc else None,
        staged_objects_listed=unc.staged_objects_listed if unc else None,
        staged_check=unc.staged_check if unc else None,
        branches_moved=unc.branches_moved if unc else None,
        lakefs_mark_seconds=unc.lakefs_seconds if unc else None,
        staged_file=unc.staged_file if unc and unc.staged_file else None,
        staged_branches_gone=unc.staged_branches_gone if unc and unc.staged_branches_gone else None,
        active_commits=com.active_commits if com else None,
        metaranges=com.metaranges if com else None,
        ranges=com.ranges if com else None,
        committed_addresses=com.committed_addresses if com else None,
        documented_commits=com.documented_commits if com else None,
        commits_lakefs_lacked=com.commits_lakefs_lacked if com else None,
        kept_by_rules=com.kept_by_rules if com and com.kept_by_rules else None,
        list_committed_seconds=com.seconds if com else None,
        commits_csv=com.commits_csv if com else None,
        slices_listed=sl.slices_listed if sl else None,
        slices_skipped=sl.slices_skipped if sl else None,
        listed_objects=sl.listed_objects if sl else (mark.listed_objects if mark else None),
        listed_bytes=sl.listed_bytes if sl else None,
        list_slices_seconds=sl.seconds if sl else None,
        **_listing(sl),
        uncommitted_files=cand.uncommitted_files if cand else None,
        candidates=cand.candidates if cand else None,
        candidate_bytes=cand.candidate_bytes if cand else None,
        confirm_after_seconds=cand.confirm_after_seconds if cand else None,
        to_delete=cand.to_delete if cand else (mark.to_delete if mark else None),
        to_delete_bytes=cand.to_delete_bytes if cand else None,
        held_back=cand.held_back if cand else None,
        compute_candidates_seconds=cand.seconds if cand else None,
        staged_suspicious=checked.staged_suspicious if checked else None,
        staged_stats=checked.staged_stats if checked else None,
        staged_kept=checked.staged_kept if checked else None,
        commits_since=checked.commits_since if checked else None,
        committed_since_kept=checked.committed_since_kept if checked else None,
        staged_check_seconds=checked.staged_check_seconds if checked else None,
        held_back_reason=cand.held_back_reason if cand else None,
        confirmed_by_mark=cand.confirmed_by_mark if cand else None,
        held_back_until=held_back_until(ctx.start_time, cand.confirm_after_seconds)
        if cand and cand.held_back
        else None,
        unreadable_marks=cand.unreadable_marks if cand and cand.unreadable_marks else None,
        deleted=(c.deleted if swept else 0) if c else None,
        already_gone=(c.already_gone if swept else 0) if c else None,
        delete_failed=c.failed if c else None,
        delete_keys=c.keys if c else None,
        delete_retried=c.retried if c else None,
        delete_requests=c.requests if c else None,
        delete_parts=c.parts if c else None,
        delete_resumed_parts=c.resumed_parts if c else None,
        delete_concurrency=dele.concurrency if dele else None,
        delete_rate=dele.rate if dele else None,
        delete_seconds=dele.seconds if dele else None,
        would_delete=c.deleted if dele and c and dele.dry_run else None,
        sweep_dir=dele.sweep_dir if dele else None,
        dead_letters=dele.dead_letters if dele else None,
        soft_delete_days=dele.soft_delete_days if dele else None,
        restorable=dele.restorable if dele and not dele.skipped else None,
        quarantine_purged=dele.quarantine_purged if dele and dele.quarantine_purged else None,
        delete_skipped=dele.skipped if dele and dele.skipped else None,
        uploads=dele.uploads if dele and not dele.skipped else None,
        approval=dele.approval if dele else None,
        space_skipped=space.skipped if space and space.skipped else None,
        space_file=attributed.space_key if attributed else None,
        space_objects=attributed.objects if attributed else None,
        space_bytes=attributed.bytes if attributed else None,
        space_head_bytes=attributed.head_bytes if attributed else None,
        space_retention_bytes=attributed.retention_bytes if attributed else None,
        space_staged_bytes=attributed.staged_bytes if attributed else None,
        space_deleted_bytes=attributed.deleted_bytes if attributed else None,
        space_held_back_bytes=attributed.held_back_bytes if attributed else None,
        space_young_bytes=attributed.young_bytes if attributed else None,
        space_branches=attributed.branches if attributed else None,
        stale_branches=attributed.stale_branches if attributed else None,
        stale_alone_bytes=attributed.stale_alone_bytes if attributed else None,
        attribute_space_seconds=attributed.seconds if attributed else None,
        reclaimed_bytes=reclaimable if swept and c is not None and not c.failed else 0,
        **_bill(dele),
        **flow,
    )
    return with_cost(inputs, summary)  # the run's requests, their cost, the monthly saving (issue 54)


def _bill(dele: DeleteResult | None) -> dict[str, Any]:
    """Return the sweep's bill figures (what its store did with the bytes it deleted); nothing when it has none."""
    if dele is None or dele.skipped or dele.freeing is None:
        return {}
    known = dele.freed_now_bytes is not None
    return {
        "freeing": dele.freeing,
        "freed_now_bytes": dele.freed_now_bytes,
        "freed_later": dele.freed_later if known else None,
        "still_billed_bytes": dele.still_billed_bytes,
    }


def _listing(sl: SlicesResult | None) -> dict[str, Any]:
    """Return what list_slices listed from, when an inventory was asked for (nothing for a run that listed as always)."""
    if sl is None or (sl.listing_source == "list" and sl.listing_fallback is None):
        return {}
    return {
        "listing_source": sl.listing_source,
        "inventory_id": sl.inventory_id,
        "inventory_time": sl.inventory_time,
        "inventory_age_seconds": sl.inventory_age_seconds,
        "inventory_rows": sl.inventory_rows,
        "inventory_files": sl.inventory_files,
        "slices_topped_up": sl.slices_topped_up,
        "listing_fallback": sl.listing_fallback,
        "inventory_deferred": sl.inventory_deferred,
    }


# What an incremental run leaves to clean runs (written into its report).
NOT_COVERED = (
    "objects at the namespace root and directly under data/ (legacy layouts), objects written late "
    "into slices older than the base run's newest slice, and objects only commits that expired "
    "since the chain's clean run referenced: the next clean run collects them"
)


class _Flow(TypedDict, total=False):
    """The flow's fields of a summary (:func:`_flow`); a sweep-only run has none."""

    flow: str
    flow_reason: str
    guard_objects: int
    new_commits: int
    ranges_known: int
    slices_before_base: int
    base_run: str
    clean_run: str
    not_covered: str
    carried_checked: int
    carried_candidates: int
    incremental_state: IncrementalState


def _flow(
    ctx: RunContext, mark_id: str, com: CommittedResult | None, sl: SlicesResult | None, cand: CandidatesResult | None
) -> _Flow:
    """
    Which flow ran, what it read and why; and the state later incremental runs build on.

    That state is ``incremental_state``, read back by :meth:`RunSummary.incremental_base`.
    """
    if ctx.mode == "sweep_only":
        return {}
    base = ctx.base if ctx.flow == "incremental" else None
    out: _Flow = {"flow": ctx.flow, "flow_reason": ctx.flow_reason}
    if sl:  # the blast-radius guard's denominator (a sweep-only run of this mark reads it back)
        out["guard_objects"] = sl.listed_objects + (base.clean_listed_objects if base else 0)
    if com:
        out.update({"new_commits": com.new_commits, "ranges_known": com.ranges_known})
    if sl:
        out["slices_before_base"] = sl.slices_before_base
    if base is not None:
        out.update({"base_run": base.mark_id, "clean_run": base.clean_run_id, "not_covered": NOT_COVERED})
        if cand:
            out.update({"carried_checked": cand.carried_checked, "carried_candidates": cand.carried_candidates})
    if not (com and com.read_file and com.identity_dir and sl and cand and cand.uncommitted_dir):
        return out  # a step kept nothing (a step run by hand without its mark): no base for later runs
    out["incremental_state"] = IncrementalState(
        format=STATE_FORMAT,
        namespace=ctx.storage.namespace,
        gc_rules=ctx.gc_rules,
        clean_run_id=base.clean_run_id if base else mark_id,
        clean_start_time=base.clean_start_time if base else ctx.start_time,
        clean_listed_objects=base.clean_listed_objects if base else sl.listed_objects,
        runs_in_chain=base.runs_in_chain + 1 if base else 1,
        last_slice=sl.first_slice,
        uncommitted_dir=cand.uncommitted_dir,
        committed_dirs=(*(base.committed_dirs if base else ()), com.committed_dir),
        identity_dirs=(*(base.identity_dirs if base else ()), com.identity_dir),
        read_file=com.read_file,
    )
    return out


def held_back_until(start_time: str, confirm_after_seconds: int) -> str:
    """
    When this mark's held-back candidates can go.

    A run that starts at or after this time may use this mark (once successful) to confirm them, if
    they are still unreferenced then.
    """
    start = datetime.strptime(start_time, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    return (start + timedelta(seconds=confirm_after_seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def summary_location(inputs: StepInputs) -> str:
    """
    Where the run's summary goes: the mark's ``summary.json``.

    A sweep-only run writes its own in its sweep folder and leaves the mark's untouched.
    """
    ctx = inputs.context
    if ctx.sweep_mark is not None:
        return sweep_summary_key(ctx.sweep_mark.mark_id, ctx.airflow_run_id)
    return summary_key(inputs.mark_id())


def write_summary(storage: Storage, key: str, summary: RunSummary) -> str:
    """Write a summary.json file (the only writer of them); return the URI written."""
    storage.put(key, json.dumps(summary.to_doc(), sort_keys=False).encode())
    return storage.full_uri(key)
