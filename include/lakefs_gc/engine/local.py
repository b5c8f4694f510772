"""
The engine of one process: Python rows, threads for work items.

On a Spark job's driver (a session given: scans too large for the driver still run as Spark jobs,
and the executors' engine takes what the driver cannot) or in the Airflow task's own process (no
session). Past its ``limit``, or asked for work only Spark can do, it raises :class:`NeedsSpark`
before the step has written anything.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from lakefs_gc.engine.base import EngineBase, range_addresses, still_garbage
from lakefs_gc.gc.decision import Rows, is_deletable, row_address
from lakefs_gc.listing import matching, slices as listing, uncommitted
from lakefs_gc.listing.holders import groups, masks_of_ranges
from lakefs_gc.report import layout
from lakefs_gc.report.marks import candidate_parts, parquet_parts
from lakefs_gc.spark.addresses import NeedsSpark, addresses_among, clear, read_parts_here, write_parts_here
from lakefs_gc.spark.runtime import StorageRef, parallelism, storage_ref

if TYPE_CHECKING:
    from pyspark import Accumulator
    from pyspark.sql import SparkSession

    from lakefs_gc.contract import IncrementalBase, PartsDir, RunContext, SlicesResult
    from lakefs_gc.engine.protocol import Engine, ListingTask
    from lakefs_gc.listing.inventory import InventoryRead
    from lakefs_gc.placement import Placement

__all__ = ["LocalEngine"]

T = TypeVar("T")
U = TypeVar("U")
Row = tuple[Any, ...]
CARRIED_THREADS = 16  # stat calls of an incremental run's carried addresses


class _Count:
    """Rows (read, left out), counted in this process."""

    n = 0

    def add(self, n: int) -> None:
        self.n += n


class LocalEngine(EngineBase):
    """
    :class:`lakefs_gc.engine.Engine` in one process, for inputs of at most ``limit`` rows.

    ``spark``: the job's session when on its driver; ``executors``: that job's engine, which
    takes what this one cannot read here.
    """

    def __init__(
        self,
        sref: StorageRef | Callable[[], StorageRef],
        n: int,
        placement: Placement,
        limit: int,
        spark: SparkSession | None = None,
        executors: Engine[Any, Any] | None = None,
    ):
        super().__init__(sref, n, placement)
        self.limit = limit
        self._spark = spark
        self._executors = executors
        self._rel = Rows()

    @property
    def rel(self) -> Rows:
        return self._rel

    @classmethod
    def in_task(cls, ctx: RunContext, environ: Mapping[str, str] | None, placement: Placement) -> LocalEngine:
        """Return the engine of a step its Airflow task runs itself (``placement.in_task_max_keys``)."""
        return cls(partial(storage_ref, ctx, environ), parallelism(None, ctx), placement, placement.in_task_max_keys)

    def admit(self, what: str, count: int) -> None:
        if count > self.limit:
            raise NeedsSpark(f"{count:,} {what}, more than {self.limit:,}")

    def placed(self, what: str, size: int, fn: Callable[[Engine[Any, Any]], T]) -> T:
        self.admit("listed object(s)", size)
        return fn(self)

    def bounded(self, what: str, items: Iterable[T]) -> list[T]:
        """Return ``items`` as a list; :class:`NeedsSpark` when there are more than ``limit``."""
        out = []
        for item in items:
            out.append(item)
            if len(out) > self.limit:
                raise NeedsSpark(f"more than {self.limit:,} {what}")
        return out

    def map(
        self,
        what: str,
        unit: str,
        items: Sequence[T],
        fn: Callable[[Iterable[T], Accumulator[int] | None], Iterator[U]],
        concurrency: int,
        total: int | None = None,
    ) -> list[U]:
        if not items:
            return []
        with ThreadPoolExecutor(max(1, concurrency), thread_name_prefix=what) as pool:
            return [r for rs in pool.map(lambda item: list(fn([item], None)), items) for r in rs]

    def list_into(self, out_dir: str, tasks: Sequence[ListingTask], cutoff_s: float) -> tuple[int, int]:
        return self._write_listing(out_dir, listing.list_batches(self.sref.open(), cutoff_s, tasks))

    def read_inventory_into(
        self, out_dir: str, inventory: InventoryRead, tasks: Sequence[ListingTask], cutoff_s: float
    ) -> tuple[int, int, int, int]:
        p = self.placement
        if listing.local_folder(out_dir) is None:
            raise NeedsSpark(f"the work location {out_dir} is not a local folder")
        files, size = len(inventory.files), inventory.bytes()
        if files > p.driver_scan_parts or size > p.driver_scan_bytes:
            raise NeedsSpark(
                f"an inventory of {files:,} data file(s), {size:,} bytes: more than {p.driver_scan_parts:,} "
                f"files or {p.driver_scan_bytes:,} bytes"
            )
        read, deferred = _Count(), _Count()
        from_inventory = inventory.batches([f.key for f in inventory.files], read, deferred)
        count, nbytes = self._write_listing(
            out_dir, itertools.chain(from_inventory, listing.list_batches(self.sref.open(), cutoff_s, tasks))
        )
        return count, nbytes, read.n, deferred.n

    def _write_listing(self, out_dir: str, found: Iterable[Any]) -> tuple[int, int]:
        """Write the listing's batches ``found`` here; :class:`NeedsSpark` (nothing written) past ``limit`` objects."""
        import pyarrow.compute as pc

        folder = listing.local_folder(out_dir)
        if folder is None:
            raise NeedsSpark(f"the work location {out_dir} is not a local folder")
        batches, count, nbytes = [], 0, 0
        for b in found:
            batches.append(b)
            count += len(b)
            if count > self.limit:
                raise NeedsSpark(f"more than {self.limit:,} object(s) to list")
            nbytes += pc.sum(b.column(1)).as_py() or 0
        listing.write_listed_here(folder, batches)
        return count, nbytes

    def read_ranges(
        self, range_keys: Sequence[str], ranges: int, entries: int | None, state_dir: str, identities_dir: str
    ) -> tuple[int, PartsDir, int]:
        if entries is None or entries > self.limit:
            raise NeedsSpark(f"{ranges} range(s) to read hold more than {self.limit:,} entries, or do not say how many")
        clear(self.sref, state_dir)  # what an earlier attempt left
        clear(self.sref, identities_dir)
        count, kept = write_parts_here(
            range_addresses(self.sref, identities_dir, 0, range_keys), self.sref.open(), state_dir, self.n
        )
        return count, kept, 1

    def staged(self, files: Sequence[str]) -> set[str]:
        st, roots = self.sref.open(), self.sref.roots
        return set(
            self.bounded("staged addresses", (a for k in files for a in uncommitted.file_addresses(st, k, roots)))
        )

    def listed(self, slices: SlicesResult) -> list[Row]:
        # the step gives this engine at most its limit of listed objects (list_slices' count)
        if self._spark is not None:
            return [
                tuple(r)
                for r in self._spark.read.parquet(slices.listed_dir)
                .select("address", "size", "last_modified_ms", "checksum")
                .collect()
            ]
        folder = listing.local_folder(slices.listed_dir)
        rows = listing.read_listed_here(folder) if folder is not None else None
        if rows is None:
            raise NeedsSpark(f"the listing {slices.listed_dir} is not a finished local folder")
        if len(rows) != slices.listed_objects:
            raise NeedsSpark(
                f"the listing {slices.listed_dir} holds {len(rows)} row(s) here, list_slices "
                f"counted {slices.listed_objects}"
            )
        return rows

    def committed(self, dirs: Sequence[PartsDir], listed: list[Row], carried: Collection[str] | None) -> set[str]:
        # only the listed and carried addresses come back, filtered where the parts are read: no shuffle
        among = self.rel.addresses(listed) | set(carried or ())
        return addresses_among(self._spark, self.sref, dirs, self.n, among=among, placement=self.placement)

    def carried(self, base: IncrementalBase) -> list[str]:
        st = self.sref.open()
        here = read_parts_here(
            self.sref, [base.uncommitted_dir], candidate_parts(st, base.mark_id), placement=self.placement
        )
        swept: set[str] | None = set()
        if here is not None and base.mode == "mark_and_sweep" and not base.dry_run:
            swept = read_parts_here(
                self.sref, [], parquet_parts(st, layout.deleted_dir(base.mark_id)), placement=self.placement
            )
        if here is not None and swept is not None:
            return self.bounded("carried addresses", sorted(here - swept))
        if self._executors is None:
            raise NeedsSpark("the base run's staged and held-back parts are not small")
        rows = self._executors.carried(base).limit(self.limit + 1).collect()
        return self.bounded("carried addresses", sorted(r[0] for r in rows))

    def still_garbage(self, addresses: Collection[str], cutoff_s: float) -> list[Row]:
        st = self.sref.open()
        if not addresses:
            return []
        with ThreadPoolExecutor(CARRIED_THREADS, thread_name_prefix="carried") as pool:
            return [r for rs in pool.map(lambda a: list(still_garbage(st, cutoff_s, [a])), addresses) for r in rs]

    def earlier_candidates(self, rows: list[Row], mark_id: str | None) -> list[Row]:
        if mark_id is None:
            return []
        found = addresses_among(
            self._spark,
            self.sref,
            [],
            self.n,
            among={r[0] for r in rows},
            keys=candidate_parts(self.sref.open(), mark_id),
            placement=self.placement,
        )
        return [r for r in rows if r[0] in found]

    def union(self, a: list[Row], b: list[Row]) -> list[Row]:
        return [*a, *b]

    def count(self, rows: Collection[Any]) -> int:
        return len(rows)

    def among(self, rows: Iterable[Any], addresses: Collection[str]) -> set[str]:
        return {a for a in map(row_address, rows) if a in addresses}

    def without(self, rows: Iterable[Any], addresses: Collection[str]) -> list[Any]:
        return self.rel.minus(rows, addresses)

    def union_addresses(self, a: Collection[str], b: Collection[str]) -> set[str]:
        return set(a) | set(b)

    def sample_undeletable(self, rows: Iterable[Any], k: int) -> list[str]:
        return [a for a in map(row_address, rows) if not is_deletable(a)][:k]

    def write(self, rows: Iterable[Any], part_dir: str, *more_dirs: str) -> tuple[int, int, PartsDir]:
        rows = list(rows)
        addresses = [row_address(r) for r in rows]
        nbytes = sum((r[1] or 0) for r in rows if not isinstance(r, str) and len(r) > 1)
        count, kept = write_parts_here(addresses, self.sref.open(), part_dir, self.n, *more_dirs)
        return count, nbytes, kept

    def identities(self, dirs: Sequence[PartsDir]) -> matching.Identities:
        return matching.Identities(self._spark, self.sref, tuple(dirs), self.n, placement=self.placement)

    def suspicious(self, rows: list[Row], identities: matching.Identities, link_flow: bool) -> matching.Suspicious:
        return matching.suspicious_rows(self.sref, rows, identities, link_flow)

    def space_groups(
        self,
        ranges: Mapping[str, int],
        staged: Mapping[str, int],
        slices: SlicesResult,
        deleted_keys: Sequence[str],
        cutoff_ms: int,
        tag_bits: int,
    ) -> dict[tuple[int, str | None], tuple[int, int]]:
        listed = [(r[0], r[1], r[2]) for r in self.listed(slices)]
        among = {r[0] for r in listed}
        # the ranges' entries, read here: bounded like every input of this engine
        masks = masks_of_ranges(self.sref.open(), self.sref.roots, ranges, among, self.limit, dict(staged))
        deleted = addresses_among(
            self._spark, self.sref, [], self.n, among=among, keys=deleted_keys, placement=self.placement
        )
        return groups(listed, masks, tag_bits, deleted, cutoff_ms)
