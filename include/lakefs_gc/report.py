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
        "num_deleted_objects": deleted if meta.get("mode") != "mark_only" else int(meta.get("candidates") or 0),
    }
    for k in OUR_FIELDS:
        if k in meta:
            summary[k] = meta[k]
    summary["reclaimed_bytes"] = int(meta.get("candidate_bytes") or 0) if meta.get("mode") != "mark_only" and \
        not meta.get("delete_failed") else 0
    return summary


def save_summary(storage, meta: dict[str, Any], success: bool = True) -> str:
    """Write summary.json last; returns its URI."""
    summary = build_summary(meta, success)
    key = REPORT_DIR.format(run_id=meta["run_id"]) + "summary.json"
    storage.put(key, json.dumps(summary, sort_keys=False).encode())
    return storage.full_uri(key)
