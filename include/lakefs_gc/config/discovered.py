"""
The discovery refresh's record (``discover.state_file``): its one reader and writer.

The refresh (DAG ``lakefs_gc_discover``, :func:`refresh`) asks each ``discover`` source's lakeFS
for its repositories and writes what it found here; the DAG files, the GC page and ``lakefs-gc
config check`` read it (:func:`discovered_entries`) and never call lakeFS at parse time. The file
keeps every repository each connection listed, so a changed pattern takes effect at the next
parse; a new repository needs one refresh.

A repository that a source matched and lakeFS no longer lists is recorded as removed (with the
refresh that first found it gone) for :data:`REMOVED_DAYS`: its DAG is no longer built, and the
GC page says so.

The refresh also records, per inventory location the entries read (``listing.source:
inventory``), which inventory there is newest and whether it verified for each repository reading
it (:class:`InventoryRecord`, checked by :mod:`lakefs_gc.listing.fleet`): the GC page shows it.
A run verifies its inventory itself all the same (docs/inventory.md, "One inventory for a fleet").

And, per connection listed, each repository's storage namespace (first and last seen), and the
namespaces orphaned by a repository gone from lakeFS, with their sizes (:mod:`lakefs_gc.listing.orphans`).

The file::

    {"format": 1, "refreshed_at": "...",
     "connections": {"lakefs_default": {"repositories": ["a", "b"], "refreshed_at": "...", "endpoint": "..."}},
     "sizes": {"lakefs_default": {"a": 1200}},          # objects the newest run listed
     "removed": {"lakefs_default": {"c": "2026-11-28T08:00:00+00:00"}},
     "inventories": [{"location": "s3://inv/reports/bucket/gc", "name": "", "storage_conn_id": "aws_default",
                      "checked_at": "...", "inventory_id": "s3://.../manifest.json", "inventory_time": "...",
                      "verified": true, "reason": null,
                      "repositories": {"a": {"inventory_id": "...", "inventory_time": "...", "reason": null}}}],
     "namespaces": {"lakefs_default": {"a": {"namespace": "s3://bucket/a", "first_seen": "...", "last_seen": "..."}}},
     "orphans": [{"namespace": "s3://bucket/c", "lakefs_conn_id": "lakefs_default", "repository": "c",
                  "first_seen": "...", "last_seen": "...", "orphaned_at": "...", "objects": 1200, "bytes": 3400,
                  "complete": true, "measured_at": "...", "size_problem": null,
                  "held_by": null}]}                     # held: a repository above or under it, not orphaned yet
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from lakefs_gc.config.model import ConfigError, DiscoverySettings, RemovedRepository, RepoConfig
from lakefs_gc.listing.orphans import Listed, Orphan, Seen, track
from lakefs_gc.words import plural

log = logging.getLogger(__name__)

FORMAT = 1
REMOVED_DAYS = 30  # how long the page names a removed repository


@dataclass(frozen=True)
class InventoryReader:
    """What a run of one repository would list from, as the refresh found it: an inventory, or why none."""

    inventory_id: str | None = None  # the newest inventory that verified for its namespace (the manifest's URI)
    inventory_time: str | None = None  # its T_inv
    reason: str | None = None  # none verified: why (a refusal, or the store's error)

    @classmethod
    def from_doc(cls, doc: Any) -> InventoryReader:
        return cls(**{k: _str_or_none(doc.get(k), k) for k in ("inventory_id", "inventory_time", "reason")})


@dataclass(frozen=True)
class InventoryRecord:
    """
    One inventory location the entries read, as the refresh found it.

    ``inventory_id`` / ``inventory_time``: the newest inventory there that verified for a repository
    reading it (None: for none); ``verified``: it verified for every repository reading it, else
    ``reason`` says for which not and why; ``repositories``: each reader's own outcome.
    """

    location: str
    name: str  # Azure: the rule's name; GCS: the report configuration's id ("" for none)
    storage_conn_id: str | None
    checked_at: str
    inventory_id: str | None
    inventory_time: str | None
    verified: bool
    reason: str | None
    repositories: dict[str, InventoryReader]

    def to_doc(self) -> dict[str, Any]:
        return {**asdict(self), "repositories": {r: asdict(v) for r, v in sorted(self.repositories.items())}}

    def line(self) -> str:
        """Return what the refresh found here, in one line (its log)."""
        where = f"inventory {self.location}" + (f" ({self.name})" if self.name else "")
        readers = plural(len(self.repositories), "repository", "repositories")
        if self.inventory_id is None:
            return f"{where}: none usable for its {readers}: {self.reason}"
        line = f"{where}: newest {self.inventory_id} (T_inv {self.inventory_time})"
        return line + (
            f", verified for its {readers}" if self.verified else f"; not for all its {readers}: {self.reason}"
        )

    @classmethod
    def from_doc(cls, doc: Any) -> InventoryRecord:
        if not isinstance(doc["verified"], bool):
            raise TypeError(f"inventories: 'verified' must be true or false, got {doc['verified']!r}")
        return cls(
            location=str(doc["location"]),
            name=str(doc.get("name") or ""),
            storage_conn_id=_str_or_none(doc.get("storage_conn_id"), "storage_conn_id"),
            checked_at=str(doc["checked_at"]),
            inventory_id=_str_or_none(doc.get("inventory_id"), "inventory_id"),
            inventory_time=_str_or_none(doc.get("inventory_time"), "inventory_time"),
            verified=doc["verified"],
            reason=_str_or_none(doc.get("reason"), "reason"),
            repositories={str(r): InventoryReader.from_doc(v) for r, v in doc["repositories"].items()},
        )


def _str_or_none(value: Any, name: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"inventories: {name!r} must be a string or null, got {value!r}")
    return value


@dataclass
class Discovered:
    """What the refresh recorded (empty before its first run)."""

    refreshed_at: str | None = None
    connections: dict[str, dict[str, Any]] = field(default_factory=dict)  # conn -> {repositories, refreshed_at}
    sizes: dict[str, dict[str, int]] = field(default_factory=dict)  # conn -> repo -> objects listed
    removed: dict[str, dict[str, str]] = field(default_factory=dict)  # conn -> repo -> when found gone
    inventories: list[InventoryRecord] = field(default_factory=list)  # per inventory location the entries read
    namespaces: dict[str, dict[str, Seen]] = field(default_factory=dict)  # conn -> repo -> its namespace
    orphans: list[Orphan] = field(default_factory=list)  # namespaces whose repository is gone

    def to_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "format": FORMAT,
            "refreshed_at": self.refreshed_at,
            "connections": self.connections,
            "sizes": self.sizes,
            "removed": self.removed,
        }
        if self.inventories:
            doc["inventories"] = [r.to_doc() for r in self.inventories]
        if self.namespaces:
            doc["namespaces"] = {c: {r: asdict(s) for r, s in v.items()} for c, v in self.namespaces.items()}
        if self.orphans:
            doc["orphans"] = [o.to_doc() for o in self.orphans]
        return doc

    def inventory_of(self, repository: str) -> InventoryRecord | None:
        """Return the record of the inventory location ``repository`` reads; None when the refresh recorded none."""
        return next((r for r in self.inventories if repository in r.repositories), None)


def read_discovered(path: Path) -> Discovered:
    """Return the refresh's record; empty when the refresh has not run yet. Unreadable is :class:`ConfigError`."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return Discovered()
    except OSError as e:
        raise ConfigError(
            f"{path}: cannot read the discovered repositories ({e.strerror or e}); check discover.state_file"
        ) from e
    try:
        doc = json.loads(text)
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ValueError(f"not a format-{FORMAT} record")
        conns = {
            str(c): {
                "repositories": [str(r) for r in v["repositories"]],
                "refreshed_at": v.get("refreshed_at"),
                **({"endpoint": str(v["endpoint"])} if v.get("endpoint") else {}),
            }
            for c, v in (doc.get("connections") or {}).items()
        }
        sizes = {str(c): {str(r): int(n) for r, n in v.items()} for c, v in (doc.get("sizes") or {}).items()}
        removed = {str(c): {str(r): str(t) for r, t in v.items()} for c, v in (doc.get("removed") or {}).items()}
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise ConfigError(
            f"{path}: the discovered repositories do not read ({e}); delete the file and run the DAG "
            f"lakefs_gc_discover again"
        ) from None
    try:
        inventories = [InventoryRecord.from_doc(r) for r in doc.get("inventories") or []]
    except (TypeError, KeyError, AttributeError) as e:  # what the page shows never costs the fleet its DAGs
        log.warning("%s: the inventories recorded do not read (%s); the next refresh records them again", path, e)
        inventories = []
    namespaces, orphans = _read_namespaces(doc, path)
    return Discovered(
        refreshed_at=doc.get("refreshed_at"),
        connections=conns,
        sizes=sizes,
        removed=removed,
        inventories=inventories,
        namespaces=namespaces,
        orphans=orphans,
    )


def _read_namespaces(doc: Mapping[str, Any], path: Path) -> tuple[dict[str, dict[str, Seen]], list[Orphan]]:
    """Return the namespaces and orphans recorded; what does not read is recorded again (none called orphaned meanwhile)."""
    try:
        namespaces = {
            str(c): {str(r): Seen(str(s["namespace"]), str(s["first_seen"]), str(s["last_seen"])) for r, s in v.items()}
            for c, v in (doc.get("namespaces") or {}).items()
        }
        orphans = [Orphan.from_doc(o) for o in doc.get("orphans") or []]
    except (TypeError, KeyError, AttributeError) as e:  # never costs the fleet its DAGs
        log.warning("%s: the namespaces recorded do not read (%s); the next refresh records them again", path, e)
        return {}, []
    return namespaces, orphans


def write_discovered(path: Path, found: Discovered) -> None:
    """Write the record atomically (a reader sees the old file or the new one, never half of one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(found.to_doc(), f, indent=1, sort_keys=True)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def priority_weight(objects_listed: int | None) -> int:
    """Return the Spark steps' priority from the last run's size: about 10 per tenfold (1 for an unknown or empty one)."""
    if not objects_listed or objects_listed < 1:
        return 1
    return 1 + round(10 * math.log10(1 + objects_listed))


def discovered_entries(
    discovery: DiscoverySettings,
    listed: set[str],
    parse: Callable[[Mapping[str, Any], int, str], RepoConfig],
) -> tuple[list[RepoConfig], list[str], tuple[RemovedRepository, ...], str | None]:
    """
    Return (entries, bad entries' messages, removed repositories, last refresh) from the refresh's record.

    Each repository a source's connection listed and its patterns match is an entry: the file's
    ``defaults``, then the source's, then its override, then its id and connection. A repository
    listed by name in ``repositories`` (``listed``), or matched by an earlier source, is left to it.
    ``parse(entry, i, where)``: the entry of source ``i``, or :class:`ConfigError` naming its problems.
    """
    found = read_discovered(discovery.state_file)
    entries: list[RepoConfig] = []
    errors: list[str] = []
    taken = set(listed)
    for i, src in enumerate(discovery.sources):
        conn = found.connections.get(src.lakefs_conn_id) or {}
        overrides = {k: dict(v) for k, v in src.overrides}
        for repo in sorted(conn.get("repositories") or []):
            if repo in taken or not src.matches(repo):
                continue
            entry = {
                **dict(src.defaults),
                **overrides.get(repo, {}),
                "repository": repo,
                "lakefs_conn_id": src.lakefs_conn_id,
            }
            try:
                cfg = parse(entry, i, f"discover.sources[{i}] ({repo})")
            except ConfigError as e:
                errors.append(str(e))
                continue
            taken.add(repo)
            size = found.sizes.get(src.lakefs_conn_id, {}).get(repo)
            entries.append(replace(cfg, discovered=True, priority_weight=priority_weight(size)))
    removed = tuple(
        RemovedRepository(repository=r, lakefs_conn_id=c, removed_at=t)
        for c, repos in sorted(found.removed.items())
        for r, t in sorted(repos.items())
        if r not in taken and any(s.lakefs_conn_id == c and s.matches(r) for s in discovery.sources)
    )
    return entries, errors, removed, found.refreshed_at


def refresh(
    discovery: DiscoverySettings, list_repositories: Callable[[str], list[str] | Listed], now: datetime | None = None
) -> tuple[Discovered, list[str]]:
    """
    List each source's lakeFS, record it, and return (the new record, one line per change).

    ``list_repositories(conn_id)``: every repository id of that lakeFS; a
    :class:`~lakefs_gc.listing.orphans.Listed` (with their namespaces): the namespaces are recorded
    and those of repositories gone are orphaned (:func:`~lakefs_gc.listing.orphans.track`). The sizes recorded for
    repositories still matched are kept (:func:`record_sizes` updates them once the entries are
    built). A connection that cannot be listed raises: the record is left as it was (a refresh
    never removes a DAG because lakeFS did not answer).
    """
    now = now or datetime.now(UTC)
    stamp = now.isoformat()
    old = read_discovered(discovery.state_file)
    new = Discovered(refreshed_at=stamp, inventories=old.inventories)  # until record_inventories replaces them
    changes: list[str] = []
    listings: dict[str, Listed] = {}
    for conn in sorted({s.lakefs_conn_id for s in discovery.sources}):
        sources = [s for s in discovery.sources if s.lakefs_conn_id == conn]
        listed = list_repositories(conn)
        repos = sorted(set(listed))
        new.connections[conn] = {"repositories": repos, "refreshed_at": stamp}
        if isinstance(listed, Listed):  # with their namespaces: the orphaned ones are tracked
            listings[conn] = listed
            if listed.endpoint:
                new.connections[conn]["endpoint"] = listed.endpoint
        before = set((old.connections.get(conn) or {}).get("repositories") or [])
        matched = [r for r in repos if any(s.matches(r) for s in sources)]
        for r in matched:
            if r not in before:
                changes.append(f"{conn}: new repository {r}: its GC DAG lakefs_gc__{r} is built at the next parse")
        gone = {
            r: t
            for r, t in (old.removed.get(conn) or {}).items()
            if r not in repos and datetime.fromisoformat(t) > now - timedelta(days=REMOVED_DAYS)
        }
        for r in sorted(before - set(repos)):
            if any(s.matches(r) for s in sources) and r not in gone:
                gone[r] = stamp
                changes.append(
                    f"{conn}: repository {r} is gone from lakeFS: its GC DAG lakefs_gc__{r} is no longer built"
                )
        if gone:
            new.removed[conn] = gone
        sizes = {r: n for r, n in (old.sizes.get(conn) or {}).items() if r in matched}
        if sizes:
            new.sizes[conn] = sizes
    endpoints = {c: v.get("endpoint") for c, v in old.connections.items()}
    new.namespaces, new.orphans, orphaned = track(old.namespaces, old.orphans, endpoints, listings, stamp)
    changes += orphaned
    write_discovered(discovery.state_file, new)
    return new, changes


def record_sizes(discovery: DiscoverySettings, sizes: Mapping[tuple[str, str], int]) -> None:
    """Record the newest runs' sizes ((connection, repository) -> objects listed) in the refresh's record."""
    found = read_discovered(discovery.state_file)
    for (conn, repo), n in sizes.items():
        found.sizes.setdefault(conn, {})[repo] = int(n)
    write_discovered(discovery.state_file, found)


def record_inventories(discovery: DiscoverySettings, records: list[InventoryRecord]) -> None:
    """Record what the refresh found at each inventory location the entries read (replacing the last refresh's)."""
    found = read_discovered(discovery.state_file)
    found.inventories = sorted(records, key=lambda r: (r.location, r.name, r.storage_conn_id or ""))
    write_discovered(discovery.state_file, found)


def record_orphans(discovery: DiscoverySettings, orphans: list[Orphan]) -> list[Orphan]:
    """
    Record the orphans as measured (:func:`lakefs_gc.listing.orphans.measure_orphans`); return those still orphaned.

    A namespace a complete listing found empty (removed by hand) is no longer recorded.
    """
    found = read_discovered(discovery.state_file)
    by = {o.namespace: o for o in orphans}
    measured = [by.get(o.namespace, o) for o in found.orphans]
    found.orphans = [o for o in measured if not (o.complete and o.objects == 0)]
    write_discovered(discovery.state_file, found)
    return [o for o in found.orphans if o.orphaned]


def forget_orphan(path: Path, namespace: str) -> bool:
    """Remove a reclaimed namespace from the orphans recorded in ``path``; whether it was there."""
    found = read_discovered(path)
    kept = [o for o in found.orphans if o.namespace != namespace]
    if len(kept) == len(found.orphans):
        return False
    found.orphans = kept
    write_discovered(path, found)
    return True
