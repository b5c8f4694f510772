"""Earlier marks in the report layout, and the checks a sweep makes before it deletes anything.

A mark is ``_lakefs/retention/gc/unified/<mark_id>/``: ``summary.json`` (``success`` true only once
the run that wrote it completed), ``candidates/`` (every candidate of that run) and ``deleted/``
(the ones it decided to delete; equal to ``candidates/`` without delayed confirmation).
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any

from lakefs_gc.lakefs_api import LakeFSGCError
from lakefs_gc.plan import iso, parse_iso
from lakefs_gc.report import REPORT_DIR

UNIFIED = "_lakefs/retention/gc/unified/"


class SweepRefused(LakeFSGCError):
    """A sweep must not start (the message says why and which Param changes it); nothing was deleted."""


def read_summary(storage, mark_id: str) -> dict[str, Any] | None:
    key = REPORT_DIR.format(run_id=mark_id) + "summary.json"
    if not storage.exists(key):
        return None
    try:
        return json.loads(storage.get(key))
    except ValueError as e:
        raise SweepRefused(f"mark {mark_id}: {storage.full_uri(key)} is not valid JSON ({e}); nothing was deleted") from None


def check_mark(storage, mark_id: str, now: datetime, max_age_seconds: int) -> dict[str, Any]:
    """The summary of a mark a sweep-only run may use; else :class:`SweepRefused` saying why."""
    if not mark_id or "/" in mark_id or mark_id in (".", ".."):
        raise SweepRefused(f"mode sweep_only needs the Param mark_id: the run id of an earlier successful mark "
                           f"(the folder name under {storage.full_uri(UNIFIED)}), got {mark_id!r}")
    summary = read_summary(storage, mark_id)
    where = storage.full_uri(REPORT_DIR.format(run_id=mark_id))
    if summary is None:
        raise SweepRefused(f"mark {mark_id!r} does not exist (no summary.json at {where}); check the Param mark_id. "
                           f"Nothing was deleted")
    if summary.get("success") is not True:
        raise SweepRefused(f"mark {mark_id!r} did not complete (summary.json has success: "
                           f"{summary.get('success')!r} at {where}); run a new mark. Nothing was deleted")
    try:
        started = parse_iso(summary["start_time"])
    except (KeyError, ValueError):
        raise SweepRefused(f"mark {mark_id!r}: summary.json at {where} has no valid start_time; nothing was deleted") from None
    age = (now - started).total_seconds()
    if age > max_age_seconds:
        raise SweepRefused(f"mark {mark_id!r} started at {iso(started)}, {age:.0f}s ago, older than "
                           f"mark_max_age_seconds={max_age_seconds} (Param mark_max_age_seconds): what it found "
                           f"may be stale. Run a new mark, or raise the Param. Nothing was deleted")
    return summary


def latest_mark_before(storage, before: datetime, exclude: str = "") -> tuple[str, dict[str, Any]] | None:
    """The most recent successful mark that started at or before ``before`` (delayed confirmation)."""
    best: tuple[datetime, str, dict] | None = None
    for prefix in storage.list_prefixes(UNIFIED):
        mark_id = prefix[len(UNIFIED):].rstrip("/")
        if not mark_id or mark_id == exclude:
            continue
        summary = read_summary(storage, mark_id)
        if not summary or summary.get("success") is not True or summary.get("mode") == "sweep_only":
            continue
        try:
            started = parse_iso(summary["start_time"])
        except (KeyError, ValueError):
            continue
        if started <= before and (best is None or started > best[0]):
            best = (started, mark_id, summary)
    return (best[1], best[2]) if best else None


def candidate_parts(storage, mark_id: str) -> list[str]:
    """The Parquet parts listing every candidate of a mark (``candidates/``, else ``deleted/``)."""
    base = REPORT_DIR.format(run_id=mark_id)
    for sub in ("candidates/", "deleted/"):
        keys = sorted(o.key for o in storage.list(base + sub, recursive=True) if o.key.endswith(".parquet"))
        if keys:
            return keys
    return []


def blast_radius(mark_id: str, to_delete: int, listed: int, max_share: float, max_count: int | None) -> None:
    """Refuse a sweep whose size exceeds the share of listed objects or the absolute count."""
    if max_count is not None and to_delete > max_count:
        raise SweepRefused(f"refusing to sweep mark {mark_id}: {to_delete:,} objects to delete exceed "
                           f"max_delete_count={max_count:,}. Nothing was deleted. If this is expected, trigger the "
                           f"run again with the Param max_delete_count >= {to_delete}")
    if to_delete and (listed <= 0 or to_delete / listed > max_share):
        share = to_delete / listed if listed > 0 else 1.0
        raise SweepRefused(f"refusing to sweep mark {mark_id}: {to_delete:,} objects to delete are {share:.1%} of "
                           f"{listed:,} listed objects, above max_delete_share={max_share}. Nothing was deleted. "
                           f"If this is expected, trigger the run again with the Param max_delete_share >= "
                           f"{min(1.0, math.ceil(share * 1000) / 1000):.3f}")
