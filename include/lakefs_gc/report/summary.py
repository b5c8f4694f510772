"""The run report, ``summary.json``, built from the typed step results (:mod:`lakefs_gc.contract`).

lakeFS's fields (reference 3.5) come first and keep their meaning; ours are added beside them.
``success`` is true only when the whole run (mark, and sweep unless mark-only) completed: the
mark's in-progress summary (:func:`mark_started`) says ``false`` until ``save_report`` rewrites it.
"""

from __future__ import annotations

import json
from typing import Any

from lakefs_gc.contract import (
    CandidatesResult,
    CommittedResult,
    DeleteResult,
    RunContext,
    SlicesResult,
    StepInputs,
    UncommittedResult,
)
from lakefs_gc.report.layout import summary_key, sweep_dir


def mark_started(ctx: RunContext, mark_id: str, first_slice: str) -> dict[str, Any]:
    """The summary a mark writes before its first part: lakeFS tooling sees a failed mark until
    the run completes."""
    return {"run_id": mark_id, "success": False, "first_slice": first_slice, "start_time": ctx.start_time,
            "cutoff_time": ctx.cutoff_time, "num_deleted_objects": 0, "note": "mark in progress or failed"}


def build_summary(inputs: StepInputs, success: bool = True) -> dict[str, Any]:
    ctx = inputs.context
    s = ctx.settings
    unc: UncommittedResult | None = inputs.results.get("mark_uncommitted")
    com: CommittedResult | None = inputs.results.get("list_committed")
    sl: SlicesResult | None = inputs.results.get("list_slices")
    cand: CandidatesResult | None = inputs.results.get("compute_candidates")
    dele: DeleteResult | None = inputs.results.get("delete")
    mark = ctx.sweep_mark
    counts = dele.counts if dele else None
    swept = bool(dele and not dele.skipped and not dele.dry_run)
    deleted = counts.deleted if swept else 0
    marked = cand.to_delete if cand else (mark.to_delete if mark else 0)
    out: dict[str, Any] = {
        # lakeFS's fields. lakeFS counts marked addresses in num_deleted_objects; we count what the
        # sweep confirmed gone (what was marked, in mark-only).
        "run_id": inputs.mark_id(),
        "success": bool(success),
        "first_slice": sl.first_slice if sl else "",
        "start_time": ctx.start_time,
        "cutoff_time": ctx.cutoff_time,
        "num_deleted_objects": deleted if ctx.mode != "mark_only" else marked,
        # ours
        "repository": ctx.repository,
        "storage_namespace": ctx.storage.namespace,
        "mode": ctx.mode,
        "airflow_run_id": ctx.airflow_run_id,
        "min_age_seconds": s.min_age_seconds,
        "grace_period_seconds": ctx.grace_period_seconds,
        "effective_min_age_seconds": ctx.effective_min_age_seconds,
        "unsafe_min_age_override": s.unsafe_min_age_override,
        "dry_run": s.dry_run,
        "max_delete_share": s.max_delete_share,
        "max_delete_count": s.max_delete_count,
        "delete_batch_size": s.delete_batch_size,
    }
    if mark:
        out.update({"mark_id": mark.mark_id, "mark_start_time": mark.start_time, "mark_cutoff_time": mark.cutoff_time,
                    "listed_objects": mark.listed_objects, "to_delete": mark.to_delete})
    if unc:
        out.update({"uncommitted_pages": unc.pages, "mark_uncommitted_seconds": unc.seconds,
                    "staged_branches": unc.staged_branches, "staged_entries_checked": unc.staged_entries_checked,
                    "staged_addresses_lakefs_omitted": unc.staged_addresses_lakefs_omitted,
                    "staged_objects_listed": unc.staged_objects_listed})
        if unc.staged_file:
            out["staged_file"] = unc.staged_file
        if unc.staged_branches_gone:
            out["staged_branches_gone"] = list(unc.staged_branches_gone)
    if com:
        out.update({"active_commits": com.active_commits, "metaranges": com.metaranges, "ranges": com.ranges,
                    "committed_addresses": com.committed_addresses, "documented_commits": com.documented_commits,
                    "commits_lakefs_lacked": com.commits_lakefs_lacked, "list_committed_seconds": com.seconds})
    if sl:
        out.update({"slices_listed": sl.slices_listed, "slices_skipped": sl.slices_skipped,
                    "listed_objects": sl.listed_objects, "listed_bytes": sl.listed_bytes,
                    "list_slices_seconds": sl.seconds})
    if cand:
        out.update({"uncommitted_files": cand.uncommitted_files, "candidates": cand.candidates,
                    "candidate_bytes": cand.candidate_bytes, "confirm_after_seconds": cand.confirm_after_seconds,
                    "to_delete": cand.to_delete, "to_delete_bytes": cand.to_delete_bytes,
                    "held_back": cand.held_back, "compute_candidates_seconds": cand.seconds})
        for k in ("held_back_reason", "confirmed_by_mark"):
            if getattr(cand, k) is not None:
                out[k] = getattr(cand, k)
        if cand.unreadable_marks:
            out["unreadable_marks"] = list(cand.unreadable_marks)
    if dele:
        c = dele.counts
        out.update({"deleted": deleted, "delete_failed": c.failed, "delete_keys": c.keys,
                    "delete_missing": c.missing, "delete_retried": c.retried, "delete_requests": c.requests,
                    "delete_parts": c.parts, "delete_resumed_parts": c.resumed_parts,
                    "delete_concurrency": dele.concurrency, "delete_rate": dele.rate, "delete_seconds": dele.seconds})
        if dele.dry_run:
            out["would_delete"] = c.deleted
        for k in ("sweep_dir", "dead_letters"):
            if getattr(dele, k) is not None:
                out[k] = getattr(dele, k)
        if dele.skipped:
            out["delete_skipped"] = dele.skipped
    reclaimable = cand.to_delete_bytes if cand else 0
    out["reclaimed_bytes"] = reclaimable if swept and counts is not None and not counts.failed else 0
    return out


def summary_location(inputs: StepInputs) -> str:
    """Where the run's summary goes: the mark's ``summary.json``; a sweep-only run writes its own
    in its sweep folder and leaves the mark's untouched."""
    ctx = inputs.context
    if ctx.sweep_mark is not None:
        return sweep_dir(ctx.sweep_mark.mark_id, ctx.airflow_run_id) + "summary.json"
    return summary_key(inputs.mark_id())


def write_summary(storage, key: str, summary: dict[str, Any]) -> str:
    """The only writer of summary.json files; returns the URI written."""
    storage.put(key, json.dumps(summary, sort_keys=False).encode())
    return storage.full_uri(key)
