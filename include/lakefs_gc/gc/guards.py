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
from lakefs_gc.words import plural

if TYPE_CHECKING:
    from lakefs_gc.contract import Approval, ApprovalRule, RunSettings
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


def blast_radius_problem(
    mark_id: str, to_delete: int, listed: int, max_share: float, max_count: int | None
) -> str | None:
    """Return why the blast-radius guard refuses a sweep of this size (the share of listed objects, the count), else None."""
    if max_count is not None and to_delete > max_count:
        return (
            f"refusing to sweep mark {mark_id}: {to_delete:,} objects to delete exceed "
            f"max_delete_count={max_count:,}. Nothing was deleted. If this is expected, trigger the "
            f"run again with the Param max_delete_count >= {to_delete}"
        )
    if to_delete and (listed <= 0 or to_delete / listed > max_share):
        share = to_delete / listed if listed > 0 else 1.0
        return (
            f"refusing to sweep mark {mark_id}: {to_delete:,} objects to delete are {share:.1%} of "
            f"{listed:,} listed objects, above max_delete_share={max_share}. Nothing was deleted. "
            f"If this is expected, trigger the run again with the Param max_delete_share >= "
            f"{min(1.0, math.ceil(share * 1000) / 1000):.3f}"
        )
    return None


def blast_radius(mark_id: str, to_delete: int, listed: int, max_share: float, max_count: int | None) -> None:
    """Refuse a sweep whose size exceeds the share of listed objects or the absolute count."""
    problem = blast_radius_problem(mark_id, to_delete, listed, max_share, max_count)
    if problem:
        raise SweepRefused(problem)


def approval_reason(rule: ApprovalRule, mark_id: str, to_delete: int, listed: int, settings: RunSettings) -> str | None:
    """
    Return why this sweep waits for a person's approval under ``rule``, else None.

    Nothing to delete, a dry run (it deletes nothing) and mark_only never wait.
    """
    if not rule.active or to_delete == 0 or settings.dry_run or settings.mode == "mark_only":
        return None
    if rule.always:
        return f"every sweep of this repository waits for a person's approval ({rule.describe()})"
    share = to_delete / listed if listed > 0 else 1.0
    size = f"{plural(to_delete, 'object')} to delete, {share:.1%} of {plural(listed, 'listed object')}"
    if rule.above_guard:
        problem = blast_radius_problem(mark_id, to_delete, listed, settings.max_delete_share, settings.max_delete_count)
        return f"{size}: the blast-radius guard would refuse it ({rule.describe()})" if problem else None
    if rule.above_share is not None and share > rule.above_share:
        return f"{size}, above {rule.describe()}"
    if rule.above_count is not None and to_delete > rule.above_count:
        return f"{size}, above {rule.describe()}"
    return None


def sweep_guard(
    mark_id: str, to_delete: int, listed: int, settings: RunSettings, rule: ApprovalRule, approval: Approval | None
) -> None:
    """
    Refuse a sweep unless it may delete: the one body of that decision, for every engine.

    Without an approval rule: the blast radius. With one: the answer of ``approve_sweep`` must be for
    this very mark and size (what the person was shown); "approved" lifts the blast radius for it (the
    person saw the share), "not_needed" holds only if the rule indeed does not ask (then the blast
    radius applies), anything else (rejected, timed out, no answer) deletes nothing.
    """
    if not rule.active:
        blast_radius(mark_id, to_delete, listed, settings.max_delete_share, settings.max_delete_count)
        return
    if approval is None:
        raise SweepRefused(
            f"refusing to sweep mark {mark_id}: this repository's sweeps wait for a person's approval "
            f"({rule.describe()}) and the run has no answer from its task approve_sweep. Nothing was deleted; "
            f"re-run the whole DAG run"
        )
    if approval.mark_id != mark_id or approval.to_delete != to_delete:
        raise SweepRefused(
            f"refusing to sweep mark {mark_id} of {plural(to_delete, 'object')}: the answer of approve_sweep is "
            f"for mark {approval.mark_id or '(none)'} of {plural(approval.to_delete, 'object')}, not what would be "
            f"deleted now. Nothing was deleted; re-run the whole DAG run"
        )
    if approval.decision == "approved":
        return
    if approval.decision == "not_needed":
        needed = approval_reason(rule, mark_id, to_delete, listed, settings)
        if needed:
            raise SweepRefused(
                f"refusing to sweep mark {mark_id}: approve_sweep recorded that no approval was needed, but "
                f"{needed}. Nothing was deleted"
            )
        blast_radius(mark_id, to_delete, listed, settings.max_delete_share, settings.max_delete_count)
        return
    who = f" by {approval.by}" if approval.by else ""
    raise SweepRefused(f"refusing to sweep mark {mark_id}: the sweep was {approval.decision}{who}. Nothing was deleted")
