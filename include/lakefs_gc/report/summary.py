"""
The run report, ``summary.json``, built from the typed step results (:mod:`lakefs_gc.contract`).

lakeFS's fields (reference 3.5) come first and keep their meaning; ours are added beside them.
``success`` is true only when the whole run (mark, and sweep unless mark-only) completed: the
mark's in-progress summary (:func:`mark_started`) says ``false`` until ``save_report`` rewrites it.
How a person reads it is :mod:`lakefs_gc.report.render`; the URLs it links to, :mod:`lakefs_gc.report.links`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from lakefs_gc.contract import (
    TIMED_STEPS,
    CandidatesResult,
    CommittedResult,
    DeleteResult,
    IncrementalBase,
    RunContext,
    SlicesResult,
    SpaceResult,
    StepInputs,
    UncommittedResult,
    from_wire,
    to_wire,
)
from lakefs_gc.report.layout import summary_key, sweep_summary_key
from lakefs_gc.report.links import lakefs_ui_url, report_url
from lakefs_gc.report.render import human_bytes, step_line, summary_rows, summary_text

if TYPE_CHECKING:
    from lakefs_gc.storage.base import Storage

__all__ = [
    "FIGURES",
    "NOT_COVERED",
    "SPACE_FIGURES",
    "STATE_FORMAT",
    "build_summary",
    "held_back_until",
    "incremental_base",
    "mark_started",
    "run_figures",
    "space_fields",
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


STATE_FORMAT = 2  # the format of ``incremental_state`` in summary.json (read by lakefs_gc.gc.flow)


def mark_started(ctx: RunContext, mark_id: str, first_slice: str) -> dict[str, Any]:
    """
    Return the summary a mark writes before its first part.

    lakeFS tooling sees a failed mark until the run completes.
    """
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
    space: SpaceResult | None = inputs.results.get("attribute_space")
    mark = ctx.sweep_mark
    counts = dele.counts if dele else None
    swept = bool(dele and not dele.skipped and not dele.dry_run)
    deleted = counts.deleted if swept and counts is not None else 0
    marked = cand.to_delete if cand else (mark.to_delete if mark else 0)
    out: dict[str, Any] = {
        # lakeFS's fields, with lakeFS's meaning: num_deleted_objects counts the addresses the mark
        # listed for deletion (its deleted/ list), in every mode; what a sweep removed is "deleted".
        "run_id": inputs.mark_id(),
        "success": bool(success),
        "first_slice": sl.first_slice if sl else "",
        "start_time": ctx.start_time,
        "cutoff_time": ctx.cutoff_time,
        "num_deleted_objects": marked,
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
                    "staged_objects_listed": unc.staged_objects_listed, "staged_check": unc.staged_check,
                    "branches_moved": unc.branches_moved, "lakefs_mark_seconds": unc.lakefs_seconds})
        if unc.staged_file:
            out["staged_file"] = unc.staged_file
        if unc.staged_branches_gone:
            out["staged_branches_gone"] = list(unc.staged_branches_gone)
    if com:
        out.update({"active_commits": com.active_commits, "metaranges": com.metaranges, "ranges": com.ranges,
                    "committed_addresses": com.committed_addresses, "documented_commits": com.documented_commits,
                    "commits_lakefs_lacked": com.commits_lakefs_lacked, "list_committed_seconds": com.seconds,
                    "commits_csv": com.commits_csv})
    if sl:
        out.update({"slices_listed": sl.slices_listed, "slices_skipped": sl.slices_skipped,
                    "listed_objects": sl.listed_objects, "listed_bytes": sl.listed_bytes,
                    "list_slices_seconds": sl.seconds})
    if cand:
        out.update({"uncommitted_files": cand.uncommitted_files, "candidates": cand.candidates,
                    "candidate_bytes": cand.candidate_bytes, "confirm_after_seconds": cand.confirm_after_seconds,
                    "to_delete": cand.to_delete, "to_delete_bytes": cand.to_delete_bytes,
                    "held_back": cand.held_back, "compute_candidates_seconds": cand.seconds})
        if cand.staged_check == "candidates":
            out.update({"staged_suspicious": cand.staged_suspicious, "staged_stats": cand.staged_stats,
                        "staged_kept": cand.staged_kept, "commits_since": cand.commits_since,
                        "committed_since_kept": cand.committed_since_kept,
                        "staged_check_seconds": cand.staged_check_seconds})
        for k in ("held_back_reason", "confirmed_by_mark"):
            if getattr(cand, k) is not None:
                out[k] = getattr(cand, k)
        if cand.held_back:
            out["held_back_until"] = held_back_until(ctx.start_time, cand.confirm_after_seconds)
        if cand.unreadable_marks:
            out["unreadable_marks"] = list(cand.unreadable_marks)
    if dele:
        c = dele.counts
        out.update({"deleted": deleted, "already_gone": c.already_gone if swept else 0, "delete_failed": c.failed,
                    "delete_keys": c.keys, "delete_retried": c.retried, "delete_requests": c.requests,
                    "delete_parts": c.parts, "delete_resumed_parts": c.resumed_parts,
                    "delete_concurrency": dele.concurrency, "delete_rate": dele.rate, "delete_seconds": dele.seconds})
        if dele.dry_run:
            out["would_delete"] = c.deleted
        for k in ("sweep_dir", "dead_letters", "soft_delete_days"):
            if getattr(dele, k) is not None:
                out[k] = getattr(dele, k)
        if dele.restorable is not None and not dele.skipped:
            out["restorable"] = to_wire(dele.restorable)
        if dele.quarantine_purged:
            out["quarantine_purged"] = dele.quarantine_purged
        if dele.skipped:
            out["delete_skipped"] = dele.skipped
    if space:
        out.update(space_fields(space))
    reclaimable = cand.to_delete_bytes if cand else 0
    out["reclaimed_bytes"] = reclaimable if swept and counts is not None and not counts.failed else 0
    if ctx.mode != "sweep_only":
        out.update(_flow_fields(ctx, inputs.mark_id(), com, sl, cand))
    return out


def space_fields(space: SpaceResult) -> dict[str, Any]:
    """Return the attribution's totals for the summary (``space_*``; the whole of it in ``space.json``)."""
    if space.skipped:
        return {"space_skipped": space.skipped}
    return {"space_file": space.space_key, "space_objects": space.objects, "space_bytes": space.bytes,
            "space_head_bytes": space.head_bytes, "space_retention_bytes": space.retention_bytes,
            "space_staged_bytes": space.staged_bytes, "space_deleted_bytes": space.deleted_bytes,
            "space_held_back_bytes": space.held_back_bytes, "space_young_bytes": space.young_bytes,
            "space_branches": space.branches, "stale_branches": space.stale_branches,
            "stale_alone_bytes": space.stale_alone_bytes, "attribute_space_seconds": space.seconds}


# What an incremental run leaves to clean runs (written into its report).
NOT_COVERED = ("objects at the namespace root and directly under data/ (legacy layouts), objects written late "
               "into slices older than the base run's newest slice, and objects only commits that expired "
               "since the chain's clean run referenced: the next clean run collects them")


def _flow_fields(ctx: RunContext, mark_id: str, com: CommittedResult | None, sl: SlicesResult | None,
                 cand: CandidatesResult | None) -> dict[str, Any]:
    """
    Which flow ran, what it read and why; and the state later incremental runs build on.

    That state is ``incremental_state``, read back by :func:`incremental_base`.
    """
    base = ctx.base if ctx.flow == "incremental" else None
    out: dict[str, Any] = {"flow": ctx.flow, "flow_reason": ctx.flow_reason}
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
    committed = [*(to_wire(d) for d in base.committed_dirs), to_wire(com.committed_dir)] if base else [to_wire(com.committed_dir)]
    identities = [*(to_wire(d) for d in base.identity_dirs), to_wire(com.identity_dir)] if base else [to_wire(com.identity_dir)]
    out["incremental_state"] = {
        "format": STATE_FORMAT, "namespace": ctx.storage.namespace, "gc_rules": ctx.gc_rules,
        "clean_run_id": base.clean_run_id if base else mark_id,
        "clean_start_time": base.clean_start_time if base else ctx.start_time,
        "clean_listed_objects": base.clean_listed_objects if base else sl.listed_objects,
        "runs_in_chain": base.runs_in_chain + 1 if base else 1,
        "last_slice": sl.first_slice, "uncommitted_dir": to_wire(cand.uncommitted_dir),
        "committed_dirs": committed, "identity_dirs": identities, "read_file": com.read_file,
    }
    return out


def incremental_base(mark_id: str, summary: dict[str, Any]) -> IncrementalBase:
    """
    Return the base of an incremental run: the ``incremental_state`` of run ``mark_id``'s summary.

    :func:`lakefs_gc.gc.flow.choose_flow` checked it is there and of this format.
    """
    st = summary["incremental_state"]
    return from_wire(IncrementalBase, {
        "mark_id": mark_id, "start_time": summary["start_time"], "mode": summary.get("mode", ""),
        "dry_run": bool(summary.get("dry_run", False)), "last_slice": st["last_slice"],
        "uncommitted_dir": st["uncommitted_dir"], "committed_dirs": st["committed_dirs"],
        "identity_dirs": st["identity_dirs"], "read_file": st["read_file"],
        "clean_run_id": st["clean_run_id"], "clean_start_time": st["clean_start_time"],
        "clean_listed_objects": st.get("clean_listed_objects", 0), "runs_in_chain": st["runs_in_chain"],
    }, f"the incremental_state of run {mark_id}")


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


def write_summary(storage: Storage, key: str, summary: dict[str, Any]) -> str:
    """Write a summary.json file (the only writer of them); return the URI written."""
    storage.put(key, json.dumps(summary, sort_keys=False).encode())
    return storage.full_uri(key)


# The run's figures as metrics and Asset events name them -> the summary.json field they are.
FIGURES: dict[str, str] = {
    "objects_listed": "listed_objects", "candidates": "candidates", "deleted": "deleted",
    "already_gone": "already_gone", "held_back": "held_back", "dead_letters": "delete_failed",
    "bytes_reclaimed": "reclaimed_bytes",
}
# where the bytes go (attribute_space, clean runs) -> the summary.json field
SPACE_FIGURES: dict[str, str] = {
    "head": "space_head_bytes", "retention": "space_retention_bytes", "staged": "space_staged_bytes",
    "deleted": "space_deleted_bytes", "held_back": "space_held_back_bytes", "young": "space_young_bytes",
}


def run_figures(summary: dict[str, Any]) -> dict[str, float]:
    """
    Return the run's numbers by the names the metrics and the Asset events carry, from its summary.

    ``FIGURES`` (0 when the run did not reach the step), ``seconds.<step>`` for each timed step that
    ran, ``space_bytes.<class>`` when the run attributed its namespace.
    """
    out: dict[str, float] = {name: summary.get(key) or 0 for name, key in FIGURES.items()}
    for step in TIMED_STEPS:
        if summary.get(f"{step}_seconds") is not None:
            out[f"seconds.{step}"] = float(summary[f"{step}_seconds"])
    if summary.get("space_file"):
        for name, key in SPACE_FIGURES.items():
            out[f"space_bytes.{name}"] = summary.get(key) or 0
    return out
