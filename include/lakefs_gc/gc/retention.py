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
from dataclasses import dataclass
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


def branch_windows(
    client: LakeFSClient,
    repo: str,
    default_days: int,
    branch_days: Mapping[str, int],
    now: float,
    without: str | None = None,
) -> Iterator[tuple[str, int, Any]]:
    """
    Yield (branch, position in its window (0: its HEAD), commit) of every commit the documented rules keep.

    On every live branch (``without``: that one left out, as if deleted), in its first-parent order.
    """
    for branch, head in client.branches(repo):
        if not head or branch == without:
            continue
        threshold = now - branch_days.get(branch, default_days) * DAY
        for i, commit in enumerate(branch_window(client.first_parent_log(repo, head, page=100), threshold)):
            yield branch, i, commit


def documented_commits(
    client: LakeFSClient, repo: str, default_days: int, branch_days: Mapping[str, int], now: float
) -> dict[str, str]:
    """{commit id: metarange id} of every commit the documented rules keep on the live branches."""
    return {
        commit.id: commit.meta_range_id or ""
        for _, _, commit in branch_windows(client, repo, default_days, branch_days, now)
    }


@dataclass(frozen=True, slots=True)
class Node:
    """A commit as lakeFS's retention walk sees it."""

    parents: tuple[str, ...]
    creation: float  # Unix seconds
    version: int = 1

    @property
    def main_parent(self) -> str:
        """Return the parent a branch retains: the first; the last for a commit of version 0."""
        if not self.parents:
            return ""
        return self.parents[0] if self.version >= 1 else self.parents[-1]


def _node(commit: Any) -> Node:
    version = getattr(commit, "version", None)
    return Node(tuple(commit.parents or ()), float(commit.creation_date), 1 if version is None else int(version))


def commit_graph(client: LakeFSClient, repo: str, heads: Iterable[str], more: Iterable[str] = ()) -> dict[str, Node]:
    """
    Return every commit the ``heads`` reach (lakeFS's log of each, all parents), and ``more``.

    ``more`` (e.g. dangling commits lakeFS keeps) with their main-parent chains, each read by id until
    a commit already read.
    """
    nodes: dict[str, Node] = {}
    for head in heads:
        if head and head not in nodes:
            for commit in client.log(repo, head):
                nodes.setdefault(commit.id, _node(commit))
    for start in more:
        c = start
        while c and c not in nodes:
            nodes[c] = node = _node(client.commit_node(repo, c))
            c = node.main_parent
    return nodes


def lakefs_walk(
    nodes: Mapping[str, Node],
    branches: Mapping[str, str],
    default_days: int,
    branch_days: Mapping[str, int],
    now: float,
) -> set[str]:
    """
    Return the commits lakeFS's own walk keeps (``commits.csv``), predicted from the commit graph.

    lakeFS's ``GetGarbageCollectionCommits`` (reference 4.7): starting points are the branch HEADs
    and the ancestry leaves (commits no commit has as its first parent; a dangling leaf walks from
    a child of its own time, with the default rule), in commit-id order; a walk marks a parent when
    its child was created after the threshold, and stops at a commit an earlier walk reached with
    a threshold not after its own. ``nodes``: at least every commit the starting points reach.
    """
    heads = {(cid, b) for b, cid in branches.items() if cid}
    head_ids = {cid for cid, _ in heads}
    firsts = {n.parents[0] for n in nodes.values() if n.parents}
    starts = sorted(heads | {(cid, "") for cid in nodes if cid not in firsts and cid not in head_ids})
    reached: dict[str, float] = {}
    kept: set[str] = set()
    for cid, branch in starts:
        if branch:
            threshold = now - branch_days.get(branch, default_days) * DAY
            kept.add(cid)
            reached[cid] = threshold
            child, parent = nodes[cid].creation, nodes[cid].main_parent
        else:
            threshold = now - default_days * DAY
            child, parent = nodes[cid].creation, cid
        while parent:
            earlier = reached.get(parent)
            if earlier is not None and earlier <= threshold:
                break
            if child > threshold:
                kept.add(parent)
            reached[parent] = threshold
            child, parent = nodes[parent].creation, nodes[parent].main_parent
    return kept
