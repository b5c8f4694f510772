"""
A person's approval of a sweep: when a run asks for one (:class:`ApprovalRule`) and what was answered (:class:`Approval`).

The repositories file's ``sweep.confirm: approval`` asks for every sweep, ``sweep.approval_above``
only for a sweep above a share of the listed objects, a count of keys, or ``guard`` (where the
blast-radius guard would refuse it). The task ``approve_sweep`` (``lakefs_gc_airflow.approval``)
asks in Airflow's own UI and records the answer; the delete step (:func:`lakefs_gc.gc.guards.sweep_guard`)
sweeps only a mark approved as it was shown: the same mark id and the same count of keys.

Part of :mod:`lakefs_gc.contract` (import from there).
"""

from __future__ import annotations

from dataclasses import dataclass

APPROVAL_TASK = "approve_sweep"  # the approval task's id (after a task group's prefix)
# what approve_sweep answered: a person approved or rejected, nobody had to (under the threshold, a dry
# run, mark_only), or nobody answered in time (the task then fails; this value is never swept)
DECISIONS = ("approved", "rejected", "not_needed", "timed_out")


@dataclass(frozen=True)
class ApprovalRule:
    """When a sweep waits for a person: always, or above a share, a count or the blast-radius guard."""

    always: bool = False
    above_share: float | None = None  # of the listed objects (the guard's denominator), 0 < x < 1
    above_count: int | None = None  # keys to delete
    above_guard: bool = False  # where the blast-radius guard (max_delete_share/count) would refuse
    timeout_seconds: int = 86400  # no answer within it: the run deletes nothing and fails

    @property
    def active(self) -> bool:
        return self.always or self.above_share is not None or self.above_count is not None or self.above_guard

    def describe(self) -> str:
        """Return the rule as the repositories file says it, for messages."""
        if self.always:
            return "sweep.confirm: approval"
        if self.above_guard:
            return "sweep.approval_above: guard"
        if self.above_share is not None:
            return f"sweep.approval_above: {self.above_share:g}"
        return f"sweep.approval_above: {self.above_count}"


@dataclass(frozen=True)
class Approval:
    """What ``approve_sweep`` recorded for a run's sweep (its XCom, read by the delete step and the report)."""

    decision: str  # one of DECISIONS
    mark_id: str = ""
    to_delete: int = 0  # the keys shown to the person: an approval covers exactly these
    listed: int = 0
    by: str = ""  # who answered (Airflow's user name), "" when nobody had to
    at: str = ""  # when (ISO 8601 UTC)
    reason: str = ""  # why it was asked, or why not
