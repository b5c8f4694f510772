"""
lakeFS's server-side "active commits" computation (reference 4.7), as a pure function.

Port of ``pkg/graveler/retention/active_commits.go`` ``GetGarbageCollectionCommits`` plus the
starting-point iterator: starting points are every branch HEAD (hidden branches included) and every
"ancestry leaf" (a commit that is nobody's first parent), ordered by commit id; a commit that is both
a leaf and a HEAD is taken as a HEAD only. From each starting point the main-parent chain is walked:
a parent is active when its child was created after the threshold ``now - retention days``, so each
branch keeps everything inside its window plus the first commit before it; the longest retention
wins on shared history. Tags are not starting points (``GCStartingPointIterator`` merges branches and
ancestry leaves only), so a tagged commit is in ``commits.csv`` only when some walk keeps it; a merge
commit's main parent is its first, the destination's HEAD.

Kept on purpose, as lakeFS does it: the walk stops at a commit already *processed* with a threshold
not after its own, even if that earlier walk did not make the commit active. Starting points are
walked in commit-id order, so with equal retention the first walker through a shared ancestor
decides for all (e.g. a dangling leaf walked first can keep a branch's "first commit before the
window" out of the set). Real commit ids are hashes, so this depends on id order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

DAY = 86400


@dataclass(frozen=True, slots=True)
class CommitNode:
    """A commit as the retention walk sees it: id, parents, creation date, metarange, version."""

    id: str
    parents: tuple[str, ...]
    creation_date: float  # epoch seconds
    meta_range_id: str = ""
    version: int = 1

    @property
    def main_parent(self) -> str:
        """parents[0]; commits of version 0 (before the parent switch) use the last parent."""
        if not self.parents:
            return ""
        return self.parents[0] if self.version >= 1 else self.parents[-1]


@dataclass(frozen=True, slots=True)
class Rules:
    """Retention rules: the default number of days, and the branches with a number of their own."""

    default_retention_days: int
    branch_retention_days: dict[str, int] = field(default_factory=dict)


def ancestry_leaves(commits: Mapping[str, CommitNode]) -> set[str]:
    """Return the commits that are not the first parent of any commit."""
    first_parents = {c.parents[0] for c in commits.values() if c.parents}
    return {cid for cid in commits if cid not in first_parents}


def starting_points(commits: Mapping[str, CommitNode], branches: Mapping[str, str]) -> list[tuple[str, str]]:
    """(commit_id, branch_id or "" for a dangling leaf), sorted by commit id then branch id."""
    heads = {(cid, b) for b, cid in branches.items() if cid}
    head_commits = {cid for cid, _ in heads}
    leaves = {(cid, "") for cid in ancestry_leaves(commits) if cid not in head_commits}
    return sorted(heads | leaves)


def active_commits(
    commits: Mapping[str, CommitNode], branches: Mapping[str, str], rules: Rules, now: float
) -> dict[str, str]:
    """
    Return {active commit id: its metarange id}.

    ``branches`` maps every branch (hidden ones too) to its HEAD commit id. Raises KeyError for a
    parent missing from ``commits``.
    """
    processed: dict[str, float] = {}
    active: set[str] = set()
    for cid, branch in starting_points(commits, branches):
        days = rules.default_retention_days
        node = commits[cid]
        if branch == "":
            # a dangling commit: walk from a hypothetical child created at the same time
            walk_from = CommitNode("", (cid,), node.creation_date)
        else:
            days = rules.branch_retention_days.get(branch, days)
            active.add(cid)
            walk_from = node
        threshold = now - days * DAY
        if branch != "":
            processed[cid] = threshold
        while walk_from.main_parent:
            parent = walk_from.main_parent
            prev = processed.get(parent)
            if prev is not None and prev <= threshold:
                break  # already walked with a retention at least as long
            if walk_from.creation_date > threshold:
                active.add(parent)
            walk_from = commits[parent]
            processed[parent] = threshold
    return {c: commits[c].meta_range_id for c in active}
