"""
Delayed confirmation: which earlier mark may confirm this run's candidates (a pure function).

An object is deleted only when this run and an earlier successful mark, started at least
``confirm_after_seconds`` before this one, both found it unreferenced: a reference that one run
missed (a race with a commit, a lagging listing) must be missed twice, far apart, to cost data.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from lakefs_gc.report.marks import MarkSummary

if TYPE_CHECKING:
    from lakefs_gc.report.run_summary import RunSummary


def confirming_mark(
    marks: Iterable[tuple[str, RunSummary | None, str | None]], before: datetime, exclude: str = ""
) -> tuple[tuple[str, MarkSummary] | None, list[str]]:
    """
    Return the most recent successful mark (not a sweep) started at or before ``before``.

    Also the marks that could not be considered, each with its reason. ``marks``: (id, summary,
    problem) as :func:`lakefs_gc.report.marks.iter_marks` yields them.
    """
    best: tuple[datetime, str, MarkSummary] | None = None
    unreadable: list[str] = []
    for mark_id, summary, problem in marks:
        if mark_id == exclude:
            continue
        if summary is None:
            unreadable.append(f"{mark_id}: {problem}")
            continue
        mark = MarkSummary.of(summary)
        if not mark.success or mark.mode == "sweep_only":
            continue
        try:
            started = mark.started()
        except ValueError:
            unreadable.append(f"{mark_id}: summary.json has no valid start_time ({mark.start_time!r})")
            continue
        if started <= before and (best is None or started > best[0]):
            best = (started, mark_id, mark)
    return ((best[1], best[2]) if best else None), unreadable
