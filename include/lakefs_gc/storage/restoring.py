"""
What a store answers when a restore asks it to bring back a key a sweep deleted.

Each adapter keeps deleted data its own way and answers for itself (``Storage.restorability``,
``Storage.restore_key``); the flow (which keys, the report) is :mod:`lakefs_gc.sweeping.restore`'s.
Here: the outcomes every key gets, and what an adapter asks of the run whose sweeps deleted it
(:class:`SweptKeys`).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from lakefs_gc.timestamps import parse_iso

if TYPE_CHECKING:
    from lakefs_gc.storage.base import Storage

__all__ = [
    "ALREADY_RESTORED",
    "DELETED_AGAIN",
    "NOT_IN_RUN",
    "NO_VERSION",
    "OUTCOMES",
    "PRESENT",
    "RESTORED",
    "RETENTION_PASSED",
    "SweptKeys",
    "WOULD_RESTORE",
    "WRITTEN_SINCE",
    "parse_time",
]

RESTORED = "restored"
WOULD_RESTORE = "would restore"  # --dry-run
WRITTEN_SINCE = "written again since"  # never replaced: the newer object stays
PRESENT = "present"  # not deleted (a dead letter, a dry-run sweep): nothing to do
ALREADY_RESTORED = "already restored"  # brought back by an earlier restore of the run (its id in the detail)
NO_VERSION = "no version kept"  # the store kept nothing of it (versioning or soft delete off)
RETENTION_PASSED = "retention passed"  # kept once, purged or expired since
DELETED_AGAIN = "deleted again since"  # gone, but not by this run's sweep: not ours to bring back
NOT_IN_RUN = "not deleted by this run"  # --keys named a key the run did not delete
OUTCOMES = (
    RESTORED,
    WOULD_RESTORE,
    ALREADY_RESTORED,
    WRITTEN_SINCE,
    PRESENT,
    NO_VERSION,
    RETENTION_PASSED,
    DELETED_AGAIN,
    NOT_IN_RUN,
)


class SweptKeys(Protocol):
    """
    The run whose sweeps deleted the keys a store is asked to bring back.

    :class:`lakefs_gc.sweeping.restore.SweptRun`, which knows the run's report: the sweeps' window
    (a store's own deletion time is the sweep's when it falls inside) and, for a store whose sweeps
    quarantine what they delete (``Storage.quarantines``: ``local://``), each sweep's quarantine.
    """

    def in_window(self, t: datetime | None) -> bool:
        """Whether ``t`` falls in the sweeps' window, give or take the clocks' slack."""
        ...

    def window(self) -> tuple[str, str]:
        """Return the sweeps' window as ISO times."""
        ...

    def quarantines(self) -> list[tuple[str, str]]:
        """Return (sweep folder, its quarantine folder) of each sweep, in order."""
        ...

    def quarantine_ends(self, storage: Storage) -> list[str]:
        """Return the end (ISO) of each sweep's quarantine record that reads."""
        ...


def parse_time(s: str | None) -> datetime | None:
    """Return an ISO time, None when absent or not one."""
    try:
        return parse_iso(s) if s else None
    except ValueError:
        return None
