"""
The documented retention, computed from lakeFS's API: a cross-check of ``commits.csv``.

lakeFS's documentation promises, for every branch, to keep each commit within the branch's
retention plus the first commit older than it (its "HEAD as of N days ago"). lakeFS's server-side
walk (``pkg/graveler/retention/active_commits.go``) stops at a commit another starting point
already visited with a retention at least as long, even when that walk did not keep it, so a
short-retention branch's "HEAD as of N days ago" can be missing from ``commits.csv``. The GC keeps
the union of lakeFS's list and this walk; the report counts what lakeFS's list lacked.

The walk is cheap: per branch it reads the first-parent log only back to the window's edge.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lakefs_gc.lakefs.client import LakeFSClient

DAY = 86400


def branch_window(log: Iterable[Any], threshold: float) -> Iterator[Any]:
    """
    Yield the commits of one branch to keep.

    Its HEAD, and each first parent of a commit created after ``threshold`` (the window plus the
    first commit before it). ``log``: the branch's first-parent log, newest first.
    """
    for commit in log:
        yield commit
        if not commit.creation_date > threshold:
            return


def documented_commits(client: LakeFSClient, repo: str, default_days: int, branch_days: Mapping[str, int],
                       now: float) -> dict[str, str]:
    """{commit id: metarange id} of every commit the documented rules keep on the live branches."""
    kept: dict[str, str] = {}
    for branch, head in client.branches(repo):
        if not head:
            continue
        threshold = now - branch_days.get(branch, default_days) * DAY
        for commit in branch_window(client.first_parent_log(repo, head, page=100), threshold):
            kept[commit.id] = commit.meta_range_id or ""
    return kept
