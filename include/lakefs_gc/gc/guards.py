"""
The guards a sweep passes before it deletes anything.

The mark it sweeps must exist, have completed and be recent (sweep_only), and its size must stay
inside the blast radius.

Each raises :class:`~lakefs_gc.errors.SweepRefused` naming the Param that changes the decision;
nothing has been deleted when they refuse.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING

from lakefs_gc.errors import SweepRefused
from lakefs_gc.report.layout import UNIFIED, report_dir
from lakefs_gc.report.marks import MarkSummary, read_mark
from lakefs_gc.timestamps import iso

if TYPE_CHECKING:
    from lakefs_gc.storage.base import Storage


def check_mark(storage: Storage, mark_id: str, now: datetime, max_age_seconds: int) -> MarkSummary:
    """Return the summary of a mark a sweep-only run may use; else raise :class:`SweepRefused` saying why."""
    if not mark_id or "/" in mark_id or mark_id in (".", ".."):
        raise SweepRefused(
            f"mode sweep_only needs the Param mark_id: the run id of an earlier successful mark "
            f"(the folder name under {storage.full_uri(UNIFIED)}), got {mark_id!r}"
        )
    summary = read_mark(storage, mark_id)
    where = storage.full_uri(report_dir(mark_id))
    if summary is None:
        raise SweepRefused(
            f"mark {mark_id!r} does not exist (no summary.json at {where}); check the Param mark_id. "
            f"Nothing was deleted"
        )
    if not summary.success:
        raise SweepRefused(
            f"mark {mark_id!r} did not complete (summary.json has success: "
            f"{summary.success!r} at {where}); run a new mark. Nothing was deleted"
        )
    try:
        started = summary.started()
    except ValueError:
        raise SweepRefused(
            f"mark {mark_id!r}: summary.json at {where} has no valid start_time; nothing was deleted"
        ) from None
    age = (now - started).total_seconds()
    if age > max_age_seconds:
        raise SweepRefused(
            f"mark {mark_id!r} started at {iso(started)}, {age:.0f}s ago, older than "
            f"mark_max_age_seconds={max_age_seconds} (Param mark_max_age_seconds): what it found "
            f"may be stale. Run a new mark, or raise the Param. Nothing was deleted"
        )
    return summary


def blast_radius(mark_id: str, to_delete: int, listed: int, max_share: float, max_count: int | None) -> None:
    """Refuse a sweep whose size exceeds the share of listed objects or the absolute count."""
    if max_count is not None and to_delete > max_count:
        raise SweepRefused(
            f"refusing to sweep mark {mark_id}: {to_delete:,} objects to delete exceed "
            f"max_delete_count={max_count:,}. Nothing was deleted. If this is expected, trigger the "
            f"run again with the Param max_delete_count >= {to_delete}"
        )
    if to_delete and (listed <= 0 or to_delete / listed > max_share):
        share = to_delete / listed if listed > 0 else 1.0
        raise SweepRefused(
            f"refusing to sweep mark {mark_id}: {to_delete:,} objects to delete are {share:.1%} of "
            f"{listed:,} listed objects, above max_delete_share={max_share}. Nothing was deleted. "
            f"If this is expected, trigger the run again with the Param max_delete_share >= "
            f"{min(1.0, math.ceil(share * 1000) / 1000):.3f}"
        )
