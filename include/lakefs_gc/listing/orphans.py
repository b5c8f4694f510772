"""
Orphaned storage namespaces: the data a deleted repository leaves in the store.

lakeFS's ``deleteRepository`` removes a repository's metadata and leaves its storage namespace's
objects where they are (treeverse/lakeFS 5566, 7434); no GC run of that repository comes again, so
no GC ever sees them. The discovery refresh (DAG ``lakefs_gc_discover``) records, per lakeFS
connection it lists, each repository's namespace with when it was first and last seen
(:func:`track`). A recorded repository that a complete listing of its lakeFS no longer has
(deleted, or re-created on another namespace) leaves its namespace **orphaned** from that refresh
on (``orphaned_at``), unless a repository of any lakeFS the refresh lists uses that namespace, one
above it or one under it (:func:`overlapping`): deleting it would delete theirs.

Never on a failed or partial listing: namespaces come only from a :class:`Listed`, every page of
``listRepositories`` (:meth:`lakefs_gc.lakefs.reads.LakeFSReads.repository_namespaces`), and a
lakeFS that does not answer fails the refresh before anything is written. A connection whose
endpoint changed since its namespaces were recorded is another lakeFS: its earlier repositories
are forgotten, none called orphaned.

Each orphan's size is one LIST pass of the namespace stopped at :data:`MEASURE_LIMIT` objects (the
size is then "at least"), made when it is first found and again when the last one is a day old
(:func:`measure_orphans`). ``lakefs-gc reclaim-namespace`` (:mod:`lakefs_gc.cli_reclaim`) removes one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from lakefs_gc.words import plural

if TYPE_CHECKING:
    from lakefs_gc.storage.base import Storage

DEFAULT_GRACE_DAYS = 30  # reclaim-namespace --grace-days
MEASURE_LIMIT = 100_000  # objects one measure lists at most (100 LIST pages on S3)
REMEASURE = timedelta(days=1)


class Listed(dict[str, str]):
    """
    Every repository one lakeFS lists (every page), with its storage namespace; and that lakeFS's endpoint.

    Iterating it gives the repository ids, as the refresh's plain listings do.
    """

    def __init__(self, namespaces: Mapping[str, str], endpoint: str | None = None) -> None:
        super().__init__(namespaces)
        self.endpoint = endpoint


def normal(namespace: str) -> str:
    """Return the namespace as compared: without its trailing slashes."""
    return namespace.strip().rstrip("/")


def overlapping(namespace: str, used: Iterable[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """Return the (connection, repository, namespace) of ``used`` on ``namespace``, above it or under it."""
    ns = normal(namespace)
    return [(c, r, u) for c, r, u in used if (n := normal(u)) == ns or ns.startswith(n + "/") or n.startswith(ns + "/")]


@dataclass(frozen=True)
class Seen:
    """A repository's namespace, as the refreshes listed it."""

    namespace: str
    first_seen: str
    last_seen: str


@dataclass(frozen=True)
class Orphan:
    """
    A namespace whose repository is gone from lakeFS, and that no listed repository uses.

    ``first_seen`` / ``last_seen``: the repository, on it; ``orphaned_at``: the first refresh that
    found it gone. The size: ``objects`` / ``bytes`` as one bounded listing found them at
    ``measured_at`` (``complete`` False: it stopped at :data:`MEASURE_LIMIT`, the size is at
    least that), or why it could not be measured (``size_problem``).
    """

    namespace: str
    lakefs_conn_id: str
    repository: str
    first_seen: str
    last_seen: str
    orphaned_at: str
    objects: int | None = None
    bytes: int | None = None
    complete: bool = False
    measured_at: str | None = None
    size_problem: str | None = None
    held_by: str | None = None  # a repository on a namespace above it or under it: not orphaned while it is

    @property
    def orphaned(self) -> bool:
        """Whether it is orphaned now (reported, measured, reclaimable): no repository holds it."""
        return self.held_by is None

    def size_text(self) -> str:
        """Return its size in words: "12 objects, 3,400 bytes", "at least ...", or why it is not known."""
        if self.objects is None or self.bytes is None:
            return f"size not known ({self.size_problem or 'not measured yet'})"
        size = f"{plural(self.objects, 'object')}, {plural(self.bytes, 'byte')}"
        return size if self.complete else f"at least {size} (the listing stopped at {MEASURE_LIMIT:,} objects)"

    def line(self) -> str:
        """Return what the refresh says of it, in one line (its log)."""
        return (
            f"orphaned namespace {self.namespace}: repository {self.repository} ({self.lakefs_conn_id}) "
            f"gone since {self.orphaned_at}; {self.size_text()}"
        )

    def to_doc(self) -> dict[str, Any]:
        return asdict(self)

    def brief(self) -> dict[str, Any]:
        """Return what it is and its size (the refresh's XCom)."""
        keys = ("namespace", "lakefs_conn_id", "repository", "orphaned_at", "objects", "bytes", "complete")
        return {k: getattr(self, k) for k in keys}

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> Orphan:
        names = {f.name for f in fields(cls)}
        orphan = cls(**{k: v for k, v in doc.items() if k in names})
        for name in ("namespace", "lakefs_conn_id", "repository", "first_seen", "last_seen", "orphaned_at"):
            if not isinstance(getattr(orphan, name), str):
                raise TypeError(f"orphans: {name!r} must be a string, got {getattr(orphan, name)!r}")
        if not isinstance(orphan.complete, bool):
            raise TypeError(f"orphans: 'complete' must be true or false, got {orphan.complete!r}")
        return orphan


def track(
    namespaces: Mapping[str, Mapping[str, Seen]],
    orphans: Sequence[Orphan],
    endpoints: Mapping[str, str | None],
    listings: Mapping[str, Listed],
    stamp: str,
) -> tuple[dict[str, dict[str, Seen]], list[Orphan], list[str]]:
    """
    Return (namespaces per connection and repository, orphans, one line per change) after a refresh.

    ``namespaces``, ``orphans``, ``endpoints``: what the last refresh recorded; ``listings``: this
    refresh's complete listings (connection -> :class:`Listed`). A connection not listed now keeps
    its record as it was, and its namespaces still count as used. A gone repository's namespace
    that a listed repository is above or under stays recorded, held (``held_by``), and is orphaned
    from the refresh that finds it free; one a listed repository is on again is that one's.
    """
    new: dict[str, dict[str, Seen]] = {c: dict(v) for c, v in namespaces.items() if c not in listings}
    gone: list[Orphan] = []
    changes: list[str] = []
    for conn, listed in sorted(listings.items()):
        before = dict(namespaces.get(conn) or {})
        was = endpoints.get(conn)
        if before and was and listed.endpoint and was != listed.endpoint:
            changes.append(
                f"{conn}: now {listed.endpoint} (was {was}): its "
                f"{plural(len(before), 'repository', 'repositories')} recorded there are forgotten, none called orphaned"
            )
            before = {}
        now: dict[str, Seen] = {}
        for repo, ns in sorted(listed.items()):
            old = before.get(repo)
            first = old.first_seen if old is not None and old.namespace == normal(ns) else stamp
            now[repo] = Seen(normal(ns), first, stamp)
        for repo, old in sorted(before.items()):
            if repo not in now or now[repo].namespace != old.namespace:
                gone.append(Orphan(old.namespace, conn, repo, old.first_seen, old.last_seen, stamp))
        new[conn] = now
    used = [(c, r, s.namespace) for c, repos in sorted(new.items()) for r, s in sorted(repos.items())]
    kept: list[Orphan] = []
    for found in [*orphans, *gone]:
        o = found
        if any(k.namespace == o.namespace for k in kept):
            continue
        users = overlapping(o.namespace, used)
        recorded = found in orphans
        if users:
            c, r, u = users[0]
            if o.orphaned:
                changes.append(
                    f"namespace {o.namespace} (of repository {o.repository}, {o.lakefs_conn_id}) "
                    + ("is in use again" if recorded else f"is left by {o.repository}, but it is in use")
                    + f": by repository {r} ({c}) on {u}; not orphaned while it is"
                )
            if all(normal(n) != o.namespace for _, _, n in users):  # above or under it: held until they go
                kept.append(replace(o, held_by=f"repository {r} ({c}) on {u}", orphaned_at=stamp))
            continue
        if not recorded or not o.orphaned:
            o = replace(o, held_by=None, orphaned_at=stamp)
            changes.append(
                f"{o.lakefs_conn_id}: repository {o.repository} is gone: its namespace {o.namespace} is orphaned "
                f"(`lakefs-gc reclaim-namespace` removes it after {DEFAULT_GRACE_DAYS} days at the earliest)"
            )
        kept.append(o)
    return new, kept, changes


def measure(storage: Storage, limit: int = MEASURE_LIMIT) -> tuple[int, int, bool]:
    """Return (objects, bytes, complete) of the namespace: one listing, stopped after ``limit`` objects."""
    n = size = 0
    for info in storage.list(""):
        if n >= limit:
            return n, size, False
        n += 1
        size += info.size
    return n, size, True


def needs_measure(orphan: Orphan, now: datetime) -> bool:
    """Whether the refresh measures it now: never measured, its measure failed, or a day old."""
    if orphan.measured_at is None or orphan.size_problem is not None:
        return True
    return datetime.fromisoformat(orphan.measured_at) <= now - REMEASURE


def measure_orphans(
    orphans: Sequence[Orphan],
    open_storage: Callable[[Orphan], Storage],
    now: datetime,
    limit: int = MEASURE_LIMIT,
) -> list[Orphan]:
    """Return the orphans with their sizes: those :func:`needs_measure` says, listed (a failure is their ``size_problem``)."""
    out: list[Orphan] = []
    for o in orphans:
        if not o.orphaned or not needs_measure(o, now):
            out.append(o)
            continue
        try:
            objects, size, complete = measure(open_storage(o), limit)
        except Exception as e:  # the store did not answer: said, and measured again at the next refresh
            out.append(replace(o, measured_at=now.isoformat(), size_problem=f"{type(e).__name__}: {e}"))
            continue
        out.append(
            replace(o, objects=objects, bytes=size, complete=complete, measured_at=now.isoformat(), size_problem=None)
        )
    return out
