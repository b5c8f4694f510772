"""
Where the bytes go: every listed object of a namespace attributed to what holds it.

A *holder* is a branch's HEAD, a branch's retention window (the kept commits that are not its
HEAD, with the rule that keeps them), a branch's staged entries, or a tag's commit. lakeFS's GC
keeps no commit for a tag (treeverse/lakeFS#7621): an object only a tag's commit reads is collected
like any unreferenced one, and is attributed to the tag only to say so.

How an object is counted: once in every total, in the first class that holds it (a HEAD, else a
retention window, else staged entries, else unreferenced). Within that class it is *alone* for a
branch when no other branch holds it in any way (HEAD, window or staged), and *shared* otherwise:
then it is counted in the shared figure of every branch of that class that holds it, so the
branches' shared figures add up to more than the class's total, and the totals do not.

The holders of an address are a set of small integers (:class:`Holders` numbers each holder), so a
whole namespace is summed by distinct holder sets (:func:`attribute`): an engine groups the listed
objects by their set, and only the groups reach this module.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from lakefs_gc.gc.retention import branch_windows
from lakefs_gc.words import plural

if TYPE_CHECKING:
    from lakefs_gc.lakefs.client import LakeFSClient

HEAD, RETENTION, STAGED, TAG = "head", "retention", "staged", "tag"
CLASSES = (HEAD, RETENTION, STAGED)  # in the order an object is counted in
# what an unreferenced object is at this run
DELETED, HELD_BACK, YOUNG = "deleted", "held_back", "young"
UNREFERENCED = (DELETED, HELD_BACK, YOUNG)

C = TypeVar("C")  # a condition: a bool, or a Spark column
V = TypeVar("V", covariant=True)  # a fate: a str or None, or a Spark column


class FateOps(Protocol, Generic[C, V]):
    """What :func:`fate` is written in: Python values here (:data:`PYTHON_FATES`), Spark columns on executors."""

    def not_older(self, modified: Any, cutoff_ms: int) -> C:
        """Return whether an object modified at ``modified`` (ms; None: unknown) is not older than the cutoff."""

    def first(self, cases: Sequence[tuple[C, str | None]], otherwise: str) -> V:
        """Return the value of the first case whose condition holds, else ``otherwise``."""


def fate(ops: FateOps[C, V], referenced: C, in_deleted: C | None, modified: Any, cutoff_ms: int) -> V:
    """
    Return what a listed object is at this run: None (a holder keeps it), or why it is unreferenced.

    The one statement of the attribution's classification, on every engine. ``referenced``: a
    holder other than a tag holds it; ``in_deleted``: it is in this run's ``deleted/`` list (None:
    no run's list given, as ``lakefs-gc space`` counts: every old unreferenced object goes). An
    unreferenced object not deleted is young (modified at or after the cutoff, or at an unknown
    time: no run deletes it) or held back (delayed confirmation, the staged check).
    """
    young = ops.not_older(modified, cutoff_ms)
    if in_deleted is None:
        return ops.first([(referenced, None), (young, YOUNG)], DELETED)
    return ops.first([(referenced, None), (in_deleted, DELETED), (young, YOUNG)], HELD_BACK)


class _PythonFates:
    def not_older(self, modified: Any, cutoff_ms: int) -> bool:
        return modified is None or modified >= cutoff_ms

    def first(self, cases: Sequence[tuple[bool, str | None]], otherwise: str) -> str | None:
        return next((value for holds, value in cases if holds), otherwise)


PYTHON_FATES: FateOps[bool, str | None] = _PythonFates()


@dataclass(frozen=True, order=True)
class Holder:
    """What keeps an object: ``kind`` (head, retention, staged, tag) of a branch or tag ``name``."""

    kind: str
    name: str


@dataclass
class Space:
    """Objects and their bytes."""

    objects: int = 0
    bytes: int = 0

    def add(self, objects: int, size: int) -> None:
        self.objects += objects
        self.bytes += size

    def as_dict(self) -> dict[str, int]:
        return {"objects": self.objects, "bytes": self.bytes}


@dataclass
class BranchSpace:
    """What one branch holds: per class, alone and shared with other branches."""

    alone: dict[str, Space] = field(default_factory=lambda: {c: Space() for c in CLASSES})
    shared: dict[str, Space] = field(default_factory=lambda: {c: Space() for c in CLASSES})

    def alone_total(self) -> Space:
        """Return what the branch alone holds, every class (what deleting it would release, old enough)."""
        out = Space()
        for s in self.alone.values():
            out.add(s.objects, s.bytes)
        return out

    def as_dict(self) -> dict[str, dict[str, dict[str, int]]]:
        return {
            "alone": {c: s.as_dict() for c, s in self.alone.items()},
            "shared": {c: s.as_dict() for c, s in self.shared.items()},
        }


@dataclass
class Attribution:
    """The namespace's listed objects by what holds them; every total counts an object once."""

    total: Space = field(default_factory=Space)
    classes: dict[str, Space] = field(default_factory=lambda: {c: Space() for c in (*CLASSES, *UNREFERENCED)})
    branches: dict[str, BranchSpace] = field(default_factory=dict)
    tags: dict[str, Space] = field(default_factory=dict)  # unreferenced objects a tag's commit alone reads

    def branch(self, name: str) -> BranchSpace:
        return self.branches.setdefault(name, BranchSpace())

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Attribution:
        """Read :meth:`as_dict`'s output back (``space.json``)."""

        def space(d: Mapping[str, Any]) -> Space:
            return Space(int(d["objects"]), int(d["bytes"]))

        out = cls(total=space(doc["total"]))
        out.classes.update({c: space(v) for c, v in doc["classes"].items()})
        for b, held in doc["branches"].items():
            bs = out.branch(b)
            bs.alone.update({c: space(v) for c, v in held["alone"].items()})
            bs.shared.update({c: space(v) for c, v in held["shared"].items()})
        out.tags = {t: space(v) for t, v in doc["tags"].items()}
        return out

    def as_dict(self) -> dict[str, object]:
        return {
            "total": self.total.as_dict(),
            "classes": {c: s.as_dict() for c, s in self.classes.items()},
            "branches": {b: s.as_dict() for b, s in sorted(self.branches.items())},
            "tags": {t: s.as_dict() for t, s in sorted(self.tags.items())},
            "sharing": "each object once in every total, in its first class (head, retention, staged, "
            "unreferenced); alone for a branch when no other branch holds it, else in the shared "
            "figure of every branch of that class holding it",
        }


DAY = 86400


@dataclass(frozen=True)
class StaleBranch:
    """A branch whose HEAD is older than the threshold, and what it alone holds."""

    branch: str
    head_age_days: float
    alone: Space

    def as_dict(self) -> dict[str, Any]:
        return {"branch": self.branch, "head_age_days": round(self.head_age_days, 3), "alone": self.alone.as_dict()}


def stale_branches(
    attribution: Attribution, head_times: Mapping[str, float], now: float, older_than_days: float
) -> list[StaleBranch]:
    """Return the branches whose HEAD commit is older than ``older_than_days``, most bytes alone first."""
    out = []
    for branch, created in head_times.items():
        age = (now - created) / DAY
        if age > older_than_days:
            held = attribution.branches.get(branch)
            out.append(StaleBranch(branch, age, held.alone_total() if held else Space()))
    return sorted(out, key=lambda s: (-s.alone.bytes, s.branch))


def bit_numbers(mask: int) -> list[int]:
    """Return the holder numbers of a holder set."""
    out, i = [], 0
    while mask:
        if mask & 1:
            out.append(i)
        mask >>= 1
        i += 1
    return out


class Holders:
    """Numbers the holders of a run (bit ``i`` of a holder set is ``holders[i]``)."""

    def __init__(self, holders: Iterable[Holder] = ()):
        self.holders: list[Holder] = []
        self.index: dict[Holder, int] = {}
        for h in holders:
            self.bit(h)

    def bit(self, holder: Holder) -> int:
        """Return the holder's bit (numbered on first sight)."""
        i = self.index.get(holder)
        if i is None:
            i = self.index[holder] = len(self.holders)
            self.holders.append(holder)
        return 1 << i

    def mask(self, holders: Iterable[Holder]) -> int:
        out = 0
        for h in holders:
            out |= self.bit(h)
        return out

    def of(self, mask: int) -> list[Holder]:
        """Return the holders of a set."""
        return [self.holders[i] for i in bit_numbers(mask)]


@dataclass(frozen=True)
class Change:
    """
    A change ``lakefs-gc whatif`` prices: a branch deleted, or a retention rule set to ``days``.

    ``branch`` None with ``days``: the default rule.
    """

    delete_branch: str | None = None
    branch: str | None = None
    days: int | None = None

    def __post_init__(self) -> None:
        if (self.delete_branch is None) == (self.days is None):
            raise ValueError("a what-if changes one thing: a branch to delete, or a rule's days")
        if self.days is not None and self.days < 0:
            raise ValueError(f"a retention rule is a number of days >= 0, got {self.days}")

    def rules(self, default_days: int, branch_days: Mapping[str, int]) -> tuple[int, dict[str, int]]:
        """Return the retention rules after the change: (default days, {branch: days})."""
        days = dict(branch_days)
        if self.days is not None and self.branch is not None:
            days[self.branch] = self.days
        return (self.days if self.days is not None and self.branch is None else default_days), days

    def describe(self) -> str:
        if self.delete_branch is not None:
            return f"branch {self.delete_branch!r} deleted"
        rule = f"the rule of branch {self.branch!r}" if self.branch is not None else "the default rule"
        return f"{rule} set to {plural(self.days or 0, 'day')}"


def commit_holders(
    client: LakeFSClient,
    repo: str,
    default_days: int,
    branch_days: Mapping[str, int],
    now: float,
    tags: bool = True,
    without: str | None = None,
) -> dict[str, set[Holder]]:
    """
    {commit id: its holders} of every commit the documented rules keep, and of every tag's commit.

    A branch's HEAD holds as ``head``, the rest of its window (:func:`lakefs_gc.gc.retention.branch_window`)
    as ``retention``; a tag's commit as ``tag`` (which keeps nothing, but names the tag).
    ``without``: that branch left out, as if deleted.
    """
    out: dict[str, set[Holder]] = {}
    for branch, i, commit in branch_windows(client, repo, default_days, branch_days, now, without):
        out.setdefault(commit.id, set()).add(Holder(HEAD if i == 0 else RETENTION, branch))
    if tags:
        for tag, commit_id in client.tags(repo):
            out.setdefault(commit_id, set()).add(Holder(TAG, tag))
    return out


def attribute(groups: Iterable[tuple[int, str | None, int, int]], holders: Holders) -> Attribution:
    """
    Sum the namespace by holder sets.

    ``groups``: (holder set, what an unreferenced object is at this run (None when held), objects,
    bytes), one per distinct pair.
    """
    out = Attribution()
    for mask, state, objects, size in groups:
        out.total.add(objects, size)
        held = holders.of(mask)
        by_kind: dict[str, set[str]] = {}
        for h in held:
            by_kind.setdefault(h.kind, set()).add(h.name)
        cls = next((c for c in CLASSES if c in by_kind), None)
        if cls is None:
            out.classes[state or DELETED].add(objects, size)
            tags = by_kind.get(TAG, set())
            for t in tags:
                out.tags.setdefault(t, Space()).add(objects, size)
            continue
        out.classes[cls].add(objects, size)
        owners = set().union(*(by_kind.get(c, set()) for c in CLASSES))
        for b in by_kind[cls]:
            (out.branch(b).alone if owners == {b} else out.branch(b).shared)[cls].add(objects, size)
    return out
