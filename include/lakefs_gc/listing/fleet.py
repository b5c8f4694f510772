"""
One inventory for a fleet: which inventory is newest at each location the entries read, and for whom it verifies.

Repositories whose namespaces share a bucket read the same inventory: each run keeps only its own
namespace's rows (:mod:`lakefs_gc.listing.inventory`). The discovery refresh (DAG
``lakefs_gc_discover``) calls :func:`check_fleet` with every entry whose ``listing.source`` is
``inventory``; per location (with its rule or report name, and the storage connection that reaches
it) it finds, for each repository reading it, the inventory its run would read now
(:func:`lakefs_gc.inventory.newest_complete` at the refresh's time, with the entry's ``max_age_days``
and ``source_prefix``), or why none. The destination's reads are made once per location, however
many namespaces read it (:class:`_Once`): one HEAD per data file, not one per repository. What it
found is recorded (:func:`lakefs_gc.config.discovered.record_inventories`) for the GC page.

A run still verifies its inventory itself, at its own start. The refresh's verdict is not a
proof for a later run: the data files can be removed or rewritten between the two (a lifecycle
rule on the destination), the run's clock and ``max_age`` (a Param) may differ, and a newer
inventory may have landed. Verifying costs a run a GET of the manifest and its checksum and a HEAD
per data file, little beside reading the rows.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from lakefs_gc.config.discovered import InventoryReader, InventoryRecord
from lakefs_gc.errors import SettingsError
from lakefs_gc.inventory import InventoryRefused, InventorySource, newest_complete
from lakefs_gc.inventory.rows import readable
from lakefs_gc.listing.inventory import source_at
from lakefs_gc.spark.runtime import StorageRef
from lakefs_gc.timestamps import iso

if TYPE_CHECKING:
    from lakefs_gc.storage.base import Storage
    from lakefs_gc.storage.info import ObjectInfo

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FleetReader:
    """
    One entry that reads an inventory: its repository, its namespace and the entry's ``listing.inventory``.

    ``namespace``: the namespace opened with the entry's storage connection (the destination is
    reached with it); None when it could not be found, ``problem`` saying why.
    """

    repository: str
    location: str
    name: str
    storage_conn_id: str | None
    max_age: timedelta
    source_prefix: str | None
    namespace: StorageRef | None
    problem: str | None = None

    @property
    def where(self) -> tuple[str, str, str]:
        """The inventory it reads: its location, its name, the connection that reaches it."""
        return self.location.strip().rstrip("/"), self.name.strip(), self.storage_conn_id or ""


class _Once:
    """A destination's storage whose reads are made once: each namespace's check asks the same files."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self._seen: dict[tuple[Any, ...], Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._storage, name)

    def _once(self, key: tuple[Any, ...], read: Any) -> Any:
        if key not in self._seen:
            self._seen[key] = read()
        return self._seen[key]

    def get(self, key: str) -> bytes:
        return cast("bytes", self._once(("get", key), lambda: self._storage.get(key)))

    def exists(self, key: str) -> bool:
        return cast("bool", self._once(("exists", key), lambda: self._storage.exists(key)))

    def stat(self, key: str) -> ObjectInfo | None:
        return cast("ObjectInfo | None", self._once(("stat", key), lambda: self._storage.stat(key)))

    def content_md5(self, key: str) -> str | None:
        return cast("str | None", self._once(("md5", key), lambda: self._storage.content_md5(key)))

    def list_prefixes(self, prefix: str = "") -> Iterator[str]:
        return iter(self._once(("prefixes", prefix), lambda: list(self._storage.list_prefixes(prefix))))

    def list(self, prefix: str = "", recursive: bool = True, start_after: str | None = None) -> Iterator[ObjectInfo]:
        key = ("list", prefix, recursive, start_after)
        return iter(self._once(key, lambda: list(self._storage.list(prefix, recursive, start_after))))


def check_fleet(readers: Sequence[FleetReader], now: datetime) -> list[InventoryRecord]:
    """Return, per inventory location ``readers`` read, the newest inventory there and for which of them it verified."""
    groups: dict[tuple[str, str, str], list[FleetReader]] = {}
    for r in readers:
        groups.setdefault(r.where, []).append(r)
    return [_check_location(where, group, now) for where, group in sorted(groups.items())]


def _check_location(where: tuple[str, str, str], readers: list[FleetReader], now: datetime) -> InventoryRecord:
    location, name, conn = where
    source: InventorySource | None = None
    found: dict[str, InventoryReader] = {}
    for r in sorted(readers, key=lambda r: r.repository):
        if r.namespace is None:
            found[r.repository] = InventoryReader(reason=f"its namespace was not found: {r.problem}")
            continue
        try:
            if source is None:
                opened, _ = source_at(location, name, r.namespace)
                source = replace(opened, storage=cast("Storage", _Once(opened.storage)))
            chosen = newest_complete(
                source, r.namespace.namespace, now, max_age=r.max_age, source_prefix=r.source_prefix
            )
            m = chosen.inventory.manifest
            unread = readable(m)
            found[r.repository] = (
                InventoryReader(reason=unread)
                if unread is not None
                else InventoryReader(inventory_id=m.id, inventory_time=iso(m.snapshot_time))
            )
        except (InventoryRefused, SettingsError) as e:
            found[r.repository] = InventoryReader(reason=str(e))
        except Exception as e:  # the store did not answer: recorded as such; the runs retry on their own
            log.warning("inventory %s for %s: cannot be checked: %s", location, r.repository, e)
            found[r.repository] = InventoryReader(reason=f"cannot be checked: {type(e).__name__}: {e}")
    chosen_ones = [f for f in found.values() if f.inventory_id is not None]
    newest = max(chosen_ones, key=lambda f: f.inventory_time or "", default=None)
    not_it = [(repo, f) for repo, f in found.items() if newest is None or f.inventory_id != newest.inventory_id]
    reason = None
    if not_it:
        repo, f = not_it[0]
        reason = f"{repo}: " + (f.reason or f"reads the older inventory {f.inventory_id}")
        if len(not_it) > 1:
            reason += f" (and {len(not_it) - 1} more)"
    return InventoryRecord(
        location=location,
        name=name,
        storage_conn_id=conn or None,
        checked_at=iso(now),
        inventory_id=newest.inventory_id if newest else None,
        inventory_time=newest.inventory_time if newest else None,
        verified=newest is not None and not not_it,
        reason=reason,
        repositories=found,
    )
