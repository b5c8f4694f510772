"""
``list_slices`` from a storage inventory: the newest complete one, its rows as the listing's.

The run's settings (``listing_source: inventory``, ``inventory_*``) name where the reports are;
:func:`choose` finds the newest inventory that verifies for the namespace at the run's start
(:func:`lakefs_gc.inventory.newest_complete`), or, when none can serve, refuses the run with the
reason (:class:`~lakefs_gc.inventory.InventoryRefused`) unless ``inventory_fallback`` is ``list``:
then the run lists with LIST calls and its report says why.

:class:`InventoryRead` is one work item's whole knowledge (picklable, for Spark's executors): it
turns the inventory's data files into batches of the listing's columns
(:data:`lakefs_gc.storage.native.LISTED_COLUMNS`), exactly as the LIST path writes them:
``address`` namespace-relative (``data/<slice>/<object>``), ``size``, ``last_modified_ms`` (the
inventory's last-modified time, in whole milliseconds), ``checksum`` (S3: the ETag, as a LIST
gives it; Azure, GCS: null, as their native listings give). It keeps only the rows

- under the namespace's ``data/`` prefix (the root's legacy objects are listed by LIST, as before);
- older than the cutoff, by the same comparison as a listing (``last_modified_ms < floor(cutoff*1000)``);
- not in a slice created after the cutoff (skipped, as the listing skips them), nor in a slice
  created after T_inv (less :data:`TOP_UP_MARGIN` for the clocks): those are listed by LIST, the
  *top-up* (:func:`topped_up`).

Objects written after T_inv into an older slice (or loose under ``data/``) are absent from the
inventory: never candidates, so never deleted by this run; the next run whose inventory was taken
after them lists them (docs/safety.md, "Listing from an inventory"). Where the work runs is the
engine's choice (:meth:`lakefs_gc.engine.Engine.read_inventory_into`); this module is the one body.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from lakefs_gc.errors import SettingsError
from lakefs_gc.inventory import ChosenInventory, InventoryRefused, InventorySource, newest_complete
from lakefs_gc.inventory.manifest import DataFile, InventoryManifest, refuse
from lakefs_gc.inventory.rows import RowCounter, iter_rows, readable
from lakefs_gc.lakefs import xid
from lakefs_gc.listing.slices import created_after
from lakefs_gc.spark.runtime import StorageRef
from lakefs_gc.storage.namespace import AZURE, LOCAL, parse_namespace, scheme_of
from lakefs_gc.timestamps import parse_iso

if TYPE_CHECKING:
    import pyarrow as pa

    from lakefs_gc.contract import RunContext, RunSettings

log = logging.getLogger(__name__)

# A slice created less than this before T_inv is listed by LIST too: the slice's id is lakeFS's
# clock, T_inv the provider's. (Either way nothing unsafe: an object the inventory lacks is kept.)
TOP_UP_MARGIN = timedelta(minutes=10)
DATA = "data/"


@dataclass(frozen=True)
class InventoryRead:
    """
    An inventory to read into the listing: what every work item needs (picklable; secrets hidden in its ``destination``).

    ``data_prefix``: the namespace's ``data/`` as the inventory names objects (S3:
    ``<ns prefix>/data/``; Azure: ``<container>/<ns prefix>/data/``); ``top_up_after_s``: slices
    created after this (epoch seconds) are the top-up's, their rows left out.
    """

    destination: StorageRef  # the destination's root: the bucket or container the reports are in
    manifest: InventoryManifest
    data_prefix: str
    cutoff_s: float
    top_up_after_s: float
    unchecked_md5: tuple[str, ...] = ()  # data files whose MD5 the store does not vouch for: hashed when read

    @property
    def files(self) -> tuple[DataFile, ...]:
        return self.manifest.files

    def bytes(self) -> int:
        """Return the data files' total size (asked of the store where the manifest does not say: GCS)."""
        unknown = [f.key for f in self.files if f.size is None]
        st = self.destination.open() if unknown else None
        sizes = {k: (info.size if (info := st.stat(k)) is not None else 0) for k in unknown} if st else {}
        return sum(f.size if f.size is not None else sizes[f.key] for f in self.files)

    def batches(
        self, keys: Iterable[str], read: RowCounter | None = None, deferred: RowCounter | None = None
    ) -> Iterator[pa.RecordBatch]:
        """
        Yield the listing's batches of the data files ``keys`` (each file hashed first when its MD5 is unchecked).

        ``read`` counts every row read; ``deferred`` the rows left out as not older than the cutoff (:meth:`listed`).
        """
        st = self.destination.open()
        files = {f.key: f for f in self.files}
        for key in keys:
            data = files[key]
            rows = iter_rows(
                self.manifest,
                st,
                data,
                self.data_prefix,
                checksum=True,
                read=read,
                check_md5=key in self.unchecked_md5,
            )
            for batch in rows:
                out = self.listed(batch, deferred)
                if out.num_rows:
                    yield out

    def from_inventory(self, slice_id: str) -> bool:
        """Whether the inventory lists slice ``slice_id`` for this run (else: too young, or the top-up's)."""
        return not (created_after(slice_id, self.cutoff_s) or topped_up(slice_id, self.top_up_after_s))

    def listed(self, batch: pa.RecordBatch, deferred: RowCounter | None = None) -> pa.RecordBatch:
        """
        Turn rows (key, size, last_modified, checksum) under ``data_prefix`` into the listing's (address, ...).

        ``deferred`` counts the rows of the slices this inventory lists (and the loose ones) that are
        left out because they are not older than the cutoff: the objects a later run considers.
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        from lakefs_gc.storage.native import listed_schema

        address = pc.utf8_slice_codeunits(batch.column(0), len(self.data_prefix) - len(DATA))
        modified = batch.column(2).cast(pa.int64())
        older = pc.less(modified, math.floor(self.cutoff_s * 1000))
        parts = pc.split_pattern(address, "/", max_splits=2)
        in_slice = pc.equal(pc.list_value_length(parts), 3)  # data/<slice>/<object>; else loose under data/
        slice_ids = pc.list_element(parts, 1)
        seen = pc.unique(pc.filter(slice_ids, in_slice)).to_pylist()
        dropped = [s for s in seen if not self.from_inventory(s)]
        ours = (
            pc.invert(pc.and_(in_slice, pc.is_in(slice_ids, value_set=pa.array(dropped))))
            if dropped
            else pa.scalar(True)
        )
        keep = pc.fill_null(pc.and_(older, ours), False)
        if deferred is not None:
            deferred.add(int(pc.sum(pc.fill_null(pc.and_(pc.invert(older), ours), False)).as_py() or 0))
        return pa.RecordBatch.from_arrays(
            [pc.filter(c, keep) for c in (address, batch.column(1), modified, batch.column(3))], schema=listed_schema()
        )


def topped_up(slice_id: str, after_s: float) -> bool:
    """Whether slice ``slice_id`` was created after ``after_s`` (T_inv less the margin): LIST lists it."""
    return xid.is_xid(slice_id) and xid.descending_time(slice_id) > after_s


@dataclass(frozen=True)
class InventoryChoice:
    """What :func:`choose` decided: the inventory to read, or why the run lists instead (``fallback: list``)."""

    read: InventoryRead | None
    chosen: ChosenInventory | None = None
    fallback: str | None = None  # the refusal's line, when the run lists instead


def source_of(settings: RunSettings, sref: StorageRef) -> tuple[InventorySource, StorageRef]:
    """
    Return where the inventory reports are (``inventory_location``, ``inventory_name``), and the destination's root.

    The destination is reached with the namespace's storage connection. A location that is not a
    URI of S3, Azure Blob or GCS is a :class:`SettingsError`; one on another kind of store than the
    namespace's is refused (:class:`InventoryRefused`).
    """
    return source_at(settings.inventory_location, settings.inventory_name, sref)


def source_at(location: str, name: str, sref: StorageRef) -> tuple[InventorySource, StorageRef]:
    """:func:`source_of` for an inventory ``location`` and ``name`` (the Params' or an entry's ``listing.inventory``)."""
    location = location.strip()
    try:
        loc = parse_namespace(location) if scheme_of(location) != LOCAL else None
    except ValueError as e:
        raise SettingsError(
            f"Param 'inventory_location' {location!r} is not where an inventory is delivered: {e}"
        ) from None
    if loc is None:
        raise SettingsError(
            f"Param 'inventory_location' {location!r} is local://: no store writes inventories there "
            "(give an s3://, gs:// or Azure container URL)"
        )
    kind = scheme_of(sref.namespace)
    if loc.scheme != kind:
        raise InventoryRefused(
            f"inventory {location}: it is on {loc.scheme}, the namespace {sref.namespace} on {kind}: an inventory "
            "lists the store it is delivered to; give the location of an inventory of the namespace's bucket"
        )
    root = f"https://{loc.host}/{loc.bucket}" if loc.scheme == AZURE else f"{loc.scheme}://{loc.bucket}"
    dest = StorageRef(root, sref.options, None, requests=sref.requests, inventory=True)  # its reads: INVENTORY
    return InventorySource(loc.scheme, dest.open(), loc.prefix, name.strip()), dest


def choose(ctx: RunContext, sref: StorageRef) -> InventoryChoice:
    """
    Return the inventory to list the namespace from, verified at the run's start, or why the run lists instead.

    Refuses (:class:`InventoryRefused`, one line) when none can serve and ``inventory_fallback`` is
    ``none``; storage errors propagate (the task is retried).
    """
    s = ctx.settings
    now = parse_iso(ctx.start_time)
    try:
        source, dest = source_of(s, sref)
        chosen = newest_complete(
            source,
            ctx.storage.namespace,
            now,
            max_age=timedelta(days=s.inventory_max_age_days),
            source_prefix=s.inventory_source_prefix,
        )
        m = chosen.inventory.manifest
        if readable(m) is not None:
            raise refuse(m.id, f"its {m.format} data files are not read yet: configure the inventory as CSV or Parquet")
    except InventoryRefused as e:
        if s.inventory_fallback != "list":
            raise
        log.warning("list_slices: the inventory cannot serve, listing with LIST instead (fallback: list): %s", e)
        return InventoryChoice(None, None, str(e))
    log.info("list_slices: listing from %s", chosen.summary())
    inv = chosen.inventory
    read = InventoryRead(
        destination=dest,
        manifest=m,
        data_prefix=inv.data_prefix,
        cutoff_s=parse_iso(ctx.cutoff_time).timestamp(),
        top_up_after_s=(m.snapshot_time - TOP_UP_MARGIN).timestamp(),
        unchecked_md5=inv.unchecked_md5,
    )
    return InventoryChoice(read, chosen)


def summary_fields(
    choice: InventoryChoice, start_time: str, rows_read: int, topped: int, deferred: int = 0
) -> dict[str, Any]:
    """
    Return what :class:`~lakefs_gc.contract.SlicesResult` records of the inventory ``choice`` (its report fields).

    ``deferred``: its rows left out as not older than the cutoff (:meth:`InventoryRead.listed`).
    """
    from lakefs_gc.timestamps import iso

    if choice.read is None:
        return {"listing_source": "list", "listing_fallback": choice.fallback}
    m = choice.read.manifest
    return {
        "listing_source": "inventory",
        "inventory_id": m.id,
        "inventory_time": iso(m.snapshot_time),
        "inventory_age_seconds": int((parse_iso(start_time) - m.snapshot_time).total_seconds()),
        "inventory_rows": rows_read,
        "inventory_files": len(m.files),
        "slices_topped_up": topped,
        "inventory_deferred": deferred,
    }
