"""The run report, in lakeFS's layout: ``_lakefs/retention/gc/unified/<run_id>/summary.json``.

lakeFS's fields (reference 3.5) come first and keep their meaning; ours are added beside them.
``success`` is true only when the whole run (mark, and sweep unless mark-only) completed.
"""

from __future__ import annotations

import json
from typing import Any

REPORT_DIR = "_lakefs/retention/gc/unified/{run_id}/"

OUR_FIELDS = (
    "repository", "storage_namespace", "mode", "airflow_run_id", "min_age_seconds", "grace_period_seconds",
    "effective_min_age_seconds", "unsafe_min_age_override", "uncommitted_pages", "uncommitted_files",
    "active_commits", "metaranges", "ranges", "committed_addresses", "slices_listed", "slices_skipped",
    "listed_objects", "listed_bytes", "candidates", "candidate_bytes", "deleted", "delete_failed",
    "list_committed_seconds", "list_slices_seconds", "compute_candidates_seconds", "delete_seconds",
    # delayed confirmation, guard, sweep
    "confirm_after_seconds", "to_delete", "to_delete_bytes", "held_back", "held_back_reason", "confirmed_by_mark",
    "max_delete_share", "max_delete_count", "dry_run", "would_delete", "delete_keys", "delete_missing",
    "delete_retried", "delete_requests", "delete_parts", "delete_resumed_parts", "delete_rate",
    "delete_concurrency", "delete_batch_size", "sweep_dir", "dead_letters", "mark_id",
)


def build_summary(meta: dict[str, Any], success: bool) -> dict[str, Any]:
    if not meta.get("run_id"):
        raise ValueError("run metadata has no run_id: the mark never started, there is no report to write")
    deleted = int(meta.get("deleted") or 0)
    summary: dict[str, Any] = {
        "run_id": meta["run_id"],
        "success": bool(success),
        "first_slice": meta.get("first_slice", ""),
        "start_time": meta["start_time"],
        "cutoff_time": meta["cutoff_time"],
        # lakeFS counts marked addresses here; we count what the sweep confirmed (marked in mark-only).
        "num_deleted_objects": deleted if meta.get("mode") != "mark_only" else
        int(meta.get("to_delete", meta.get("candidates")) or 0),
    }
    for k in OUR_FIELDS:
        if k in meta:
            summary[k] = meta[k]
    swept = meta.get("mode") != "mark_only" and not meta.get("delete_failed") and not meta.get("dry_run")
    summary["reclaimed_bytes"] = int(meta.get("to_delete_bytes", meta.get("candidate_bytes")) or 0) if swept else 0
    return summary


def save_summary(storage, meta: dict[str, Any], success: bool = True) -> str:
    """Write summary.json last; returns its URI. A sweep-only run writes its own summary in its
    sweep folder and leaves the mark's untouched."""
    summary = build_summary(meta, success)
    if meta.get("mode") == "sweep_only":
        from lakefs_gc.sweep import sweep_dir

        key = sweep_dir(meta["run_id"], str(meta.get("airflow_run_id") or "manual")) + "summary.json"
    else:
        key = REPORT_DIR.format(run_id=meta["run_id"]) + "summary.json"
    storage.put(key, json.dumps(summary, sort_keys=False).encode())
    return storage.full_uri(key)
