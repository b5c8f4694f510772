"""
The engines the Spark steps run on: one interface, Spark's executors or one process.

A Spark step (``compute_candidates``, ``delete``, ...) is written once, against :class:`Engine`:
the decision's relational operations (:class:`lakefs_gc.gc.decision.Relations`), reading and
writing address parts, and mapping a function over work items. Two engines serve it:

- :class:`SparkEngine`: DataFrames and Spark tasks (a spark-submit job, or the tests' session);
- :class:`LocalEngine`: Python rows and threads, on a Spark job's driver (``spark`` given: scans too
  large for the driver still run as Spark jobs) or in the Airflow task's own process (``spark``
  None). Past its ``limit``, or asked for a scan only Spark can do, it raises :class:`NeedsSpark`
  before the step has written anything, and the caller hands the step to Spark.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from lakefs_gc.gc.decision import ADDRESS_SCHEMA, DataFrames, Rows, deletable, is_deletable, row_address
from lakefs_gc.listing import uncommitted
from lakefs_gc.listing.slices import in_slice_created_after, local_folder, read_listed_here
from lakefs_gc.progress import watch
from lakefs_gc.report import layout
from lakefs_gc.report.marks import candidate_parts, parquet_parts
from lakefs_gc.spark.addresses import (
    NeedsSpark,
    addresses_among,
    read_parts,
    read_parts_here,
    write_parts,
    write_parts_here,
)
from lakefs_gc.spark.runtime import StorageRef, parallelism, partitions, storage_ref

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from lakefs_gc.contract import IncrementalBase, PartsDir, RunContext, SlicesResult
    from lakefs_gc.storage.base import Storage

__all__ = ["Engine", "LocalEngine", "NeedsSpark", "SparkEngine"]

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")
CARRIED_THREADS = 16  # stat calls of an incremental run's carried addresses, on the driver


def _staged_addresses(sref: StorageRef, keys: Iterable[str]) -> Iterator[tuple[str]]:
    st, roots = sref.open(), sref.roots
    for key in keys:
        for address in uncommitted.file_addresses(st, key, roots):
            yield (address,)


def _still_garbage(st: Storage, cutoff_s: float, addresses: Iterable[str]) -> Iterator[tuple[str, int, str | None]]:
    """
    Return (address, size, checksum) of each address still in storage and older than the cutoff.

    Addresses in a slice created after the cutoff are left out, as the listing skips those;
    ``st``: the namespace's storage.
    """
    for address in addresses:
        if in_slice_created_after(address, cutoff_s):
            continue
        info = st.stat(address)
        if info is not None and info.last_modified < cutoff_s:
            yield (address, info.size, info.checksum)


class Engine:
    """
    What a Spark step needs of where it runs.

    ``spark``: the session (None: the task's own process); ``sref``: the namespace's storage;
    ``n``: the run's parallelism; ``rel``: the decision's relational operations.
    """

    rel: Any
    spark: SparkSession | None

    def __init__(self, spark: SparkSession | None, sref: StorageRef | Callable[[], StorageRef], n: int):
        self.spark = spark
        self._sref = sref
        self.n = n

    @property
    def sref(self) -> StorageRef:
        """Return the namespace's storage (made when first asked: a step's own error when it cannot be)."""
        if not isinstance(self._sref, StorageRef):
            self._sref = self._sref()
        return self._sref

    def map(self, what: str, unit: str, items: Sequence[T], fn: Callable[[Iterable[T], Any], Iterator[R]],
            concurrency: int, total: int | None = None) -> list[R]:
        """Return ``fn(some items, progress)`` over every item, ``concurrency`` at a time, collected."""
        raise NotImplementedError

    def at_once(self, tasks: int) -> int:
        """Return how many of ``tasks`` work items :meth:`map` runs at once."""
        return tasks

    def staged(self, files: Sequence[str]) -> Any:
        """Return the staged addresses in mark_uncommitted's files."""
        raise NotImplementedError

    def listed(self, slices: SlicesResult) -> Any:
        """Return list_slices' listing: (address, size, last_modified_ms, checksum)."""
        raise NotImplementedError

    def committed(self, dirs: Sequence[PartsDir], listed: Any, carried: Any) -> Any:
        """Return the addresses the committed folders ``dirs`` hold (at least those ``listed`` or ``carried`` hold)."""
        raise NotImplementedError

    def carried(self, base: IncrementalBase) -> Any:
        """
        Return what an incremental run checks again besides the slices it lists.

        The base run's staged addresses (staged then, maybe garbage now) and its candidates it
        did not delete (held back by delayed confirmation, or marked by a mark-only or dry run).
        """
        raise NotImplementedError

    def still_garbage(self, addresses: Any, cutoff_s: float) -> Any:
        """Return (address, size, checksum) of ``addresses`` still in storage and older than the cutoff."""
        raise NotImplementedError

    def earlier_candidates(self, rows: Any, mark_id: str | None) -> Any:
        """Return which of ``rows`` the candidates of the mark ``mark_id`` hold (none when None)."""
        raise NotImplementedError

    def union(self, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def space_groups(self, ranges: Mapping[str, int], staged: Mapping[str, int], slices: SlicesResult,
                     deleted_keys: Sequence[str], cutoff_ms: int, tag_bits: int) -> dict[tuple[int, str | None], tuple[int, int]]:
        """
        Return the listed objects summed by (holder set, what an unreferenced one is): attribute_space.

        ``ranges``: range key -> its holder set; ``staged``: address -> its holder set;
        ``deleted_keys``: the part files of this run's ``deleted/`` list
        (:func:`lakefs_gc.listing.holders.groups`).
        """
        raise NotImplementedError

    def count(self, rows: Any) -> int:
        raise NotImplementedError

    def union_addresses(self, a: Any, b: Any) -> Any:
        """Return the addresses in ``a`` or ``b``, each once."""
        raise NotImplementedError

    def sample_undeletable(self, rows: Any, k: int) -> list[str]:
        """Return at most ``k`` addresses of ``rows`` GC may never delete (none, by construction)."""
        raise NotImplementedError

    def write(self, rows: Any, part_dir: str, *more_dirs: str) -> tuple[int, int, PartsDir]:
        """Write ``rows`` as address parts under ``part_dir`` (and the same parts in ``more_dirs``)."""
        raise NotImplementedError

    def hold(self, rows: Any) -> AbstractContextManager[Any]:
        """Keep ``rows`` computed while the block runs (Spark: cached); yields them."""
        return nullcontext(rows)


class SparkEngine(Engine):
    """:class:`Engine` on Spark's executors: DataFrames joined, work items as Spark tasks."""

    rel = DataFrames()
    spark: SparkSession

    def __init__(self, spark: SparkSession, sref: StorageRef | Callable[[], StorageRef], n: int):
        super().__init__(spark, sref, n)

    @classmethod
    def for_run(cls, spark: SparkSession, ctx: RunContext, environ: Mapping[str, str] | None) -> SparkEngine:
        """Return the engine of a run's Spark job: the run's storage and parallelism."""
        return cls(spark, partial(storage_ref, ctx, environ), parallelism(spark, ctx))

    def on_driver(self, limit: int) -> LocalEngine:
        """Return the engine deciding on this job's driver, for inputs of at most ``limit`` rows."""
        return LocalEngine(self.sref, self.n, limit, self.spark)

    def map(self, what: str, unit: str, items: Sequence[T], fn: Callable[[Iterable[T], Any], Iterator[R]],
            concurrency: int, total: int | None = None) -> list[R]:
        if not items:
            return []
        with watch(self.spark, what, unit, total=total) as progress:
            return self.spark.sparkContext.parallelize(items, concurrency).mapPartitions(
                lambda part: fn(part, progress)).collect()

    def at_once(self, tasks: int) -> int:
        return min(tasks, self.spark.sparkContext.defaultParallelism)

    def staged(self, files: Sequence[str]) -> DataFrame:
        sref = self.sref
        rdd = self.spark.sparkContext.parallelize(files, partitions(len(files), self.n))
        return self.spark.createDataFrame(rdd.mapPartitions(lambda ks: _staged_addresses(sref, ks)),
                                          ADDRESS_SCHEMA).distinct()

    def listed(self, slices: SlicesResult) -> DataFrame:
        return self.spark.read.parquet(slices.listed_dir)

    def committed(self, dirs: Sequence[PartsDir], listed: Any, carried: Any) -> DataFrame:
        return read_parts(self.spark, self.sref, dirs, self.n)

    def carried(self, base: IncrementalBase) -> DataFrame:
        st = self.sref.open()
        carried = read_parts(self.spark, self.sref, [base.uncommitted_dir], self.n,
                             keys=candidate_parts(st, base.mark_id))
        if base.mode == "mark_and_sweep" and not base.dry_run:
            swept = parquet_parts(st, layout.deleted_dir(base.mark_id))
            carried = carried.join(read_parts(self.spark, self.sref, [], self.n, keys=swept), on="address",
                                   how="left_anti")
        return carried.distinct()

    def still_garbage(self, addresses: DataFrame, cutoff_s: float) -> DataFrame:
        sref = self.sref
        return self.spark.createDataFrame(
            addresses.rdd.mapPartitions(lambda rows: _still_garbage(sref.open(), cutoff_s, (r[0] for r in rows))),
            "address string, size long, checksum string")

    def earlier_candidates(self, rows: DataFrame, mark_id: str | None) -> DataFrame:
        if mark_id is None:
            return rows.limit(0)
        earlier = read_parts(self.spark, self.sref, [], self.n, keys=candidate_parts(self.sref.open(), mark_id))
        return rows.join(earlier, on="address", how="left_semi")

    def union(self, a: DataFrame, b: DataFrame) -> DataFrame:
        return a.unionByName(b)

    def space_groups(self, ranges: Mapping[str, int], staged: Mapping[str, int], slices: SlicesResult,
                     deleted_keys: Sequence[str], cutoff_ms: int, tag_bits: int) -> dict[tuple[int, str | None], tuple[int, int]]:
        from lakefs_gc.listing.holders import spark_groups

        listed = self.listed(slices).select("address", "size", "last_modified_ms")
        deleted = read_parts(self.spark, self.sref, [], self.n, keys=deleted_keys)
        return spark_groups(self.spark, self.sref, ranges, staged, listed, deleted, cutoff_ms, tag_bits, self.n)

    def count(self, rows: DataFrame) -> int:
        return int(rows.count())

    def union_addresses(self, a: DataFrame, b: DataFrame) -> DataFrame:
        return a.select("address").unionByName(b.select("address")).distinct()

    def sample_undeletable(self, rows: DataFrame, k: int) -> list[str]:
        from pyspark.sql import functions as F

        return [r[0] for r in rows.where(~deletable(F.col("address"))).limit(k).collect()]

    def write(self, rows: DataFrame, part_dir: str, *more_dirs: str) -> tuple[int, int, PartsDir]:
        return write_parts(rows, self.sref, part_dir, self.n, *more_dirs)

    def hold(self, rows: DataFrame) -> AbstractContextManager[DataFrame]:
        return _Cached(rows)


class _Cached(AbstractContextManager["DataFrame"]):
    def __init__(self, df: DataFrame):
        self.df = df.cache()

    def __enter__(self) -> DataFrame:
        return self.df

    def __exit__(self, *exc: object) -> None:
        self.df.unpersist()


class LocalEngine(Engine):
    """
    :class:`Engine` in one process: Python rows, threads for work items.

    Inputs of more than ``limit`` rows, or parts too large to scan here without ``spark``, raise
    :class:`NeedsSpark` (nothing written yet).
    """

    rel = Rows()

    def __init__(self, sref: StorageRef | Callable[[], StorageRef], n: int, limit: int,
                 spark: SparkSession | None = None):
        super().__init__(spark, sref, n)
        self.limit = limit

    @classmethod
    def in_task(cls, ctx: RunContext, environ: Mapping[str, str] | None, limit: int) -> LocalEngine:
        """Return the engine of a step its Airflow task runs itself, for inputs of at most ``limit``."""
        return cls(partial(storage_ref, ctx, environ), parallelism(None, ctx), limit)

    def bounded(self, what: str, items: Iterable[T]) -> list[T]:
        """Return ``items`` as a list; :class:`NeedsSpark` when there are more than ``limit``."""
        out = []
        for item in items:
            out.append(item)
            if len(out) > self.limit:
                raise NeedsSpark(f"more than {self.limit:,} {what}")
        return out

    def map(self, what: str, unit: str, items: Sequence[T], fn: Callable[[Iterable[T], Any], Iterator[R]],
            concurrency: int, total: int | None = None) -> list[R]:
        if not items:
            return []
        with ThreadPoolExecutor(max(1, concurrency), thread_name_prefix=what) as pool:
            return [r for rs in pool.map(lambda item: list(fn([item], None)), items) for r in rs]

    def staged(self, files: Sequence[str]) -> set[str]:
        st, roots = self.sref.open(), self.sref.roots
        return set(self.bounded("staged addresses",
                                (a for k in files for a in uncommitted.file_addresses(st, k, roots))))

    def listed(self, slices: SlicesResult) -> list[tuple[Any, ...]]:
        # the step gives this engine at most its limit of listed objects (list_slices' count)
        if self.spark is not None:
            return [tuple(r) for r in self.spark.read.parquet(slices.listed_dir)
                    .select("address", "size", "last_modified_ms", "checksum").collect()]
        folder = local_folder(slices.listed_dir)
        rows = read_listed_here(folder) if folder is not None else None
        if rows is None:
            raise NeedsSpark(f"the listing {slices.listed_dir} is not a finished local folder")
        if len(rows) != slices.listed_objects:
            raise NeedsSpark(f"the listing {slices.listed_dir} holds {len(rows)} row(s) here, list_slices "
                             f"counted {slices.listed_objects}")
        return rows

    def committed(self, dirs: Sequence[PartsDir], listed: list[tuple[Any, ...]], carried: list[str] | None) -> set[str]:
        # only the listed and carried addresses come back, filtered where the parts are read: no shuffle
        among = self.rel.addresses(listed) | set(carried or ())
        return addresses_among(self.spark, self.sref, dirs, self.n, among=among)

    def carried(self, base: IncrementalBase) -> list[str]:
        st = self.sref.open()
        here = read_parts_here(self.sref, [base.uncommitted_dir], candidate_parts(st, base.mark_id))
        swept: set[str] | None = set()
        if here is not None and base.mode == "mark_and_sweep" and not base.dry_run:
            swept = read_parts_here(self.sref, [], parquet_parts(st, layout.deleted_dir(base.mark_id)))
        if here is not None and swept is not None:
            return self.bounded("carried addresses", sorted(here - swept))
        if self.spark is None:
            raise NeedsSpark("the base run's staged and held-back parts are not small")
        rows = SparkEngine(self.spark, self.sref, self.n).carried(base).limit(self.limit + 1).collect()
        return self.bounded("carried addresses", sorted(r[0] for r in rows))

    def still_garbage(self, addresses: list[str], cutoff_s: float) -> list[tuple[str, int, str | None]]:
        st = self.sref.open()
        if not addresses:
            return []
        with ThreadPoolExecutor(CARRIED_THREADS, thread_name_prefix="carried") as pool:
            return [r for rs in pool.map(lambda a: list(_still_garbage(st, cutoff_s, [a])), addresses) for r in rs]

    def earlier_candidates(self, rows: list[tuple[Any, ...]], mark_id: str | None) -> list[tuple[Any, ...]]:
        if mark_id is None:
            return []
        found = addresses_among(self.spark, self.sref, [], self.n, among={r[0] for r in rows},
                                keys=candidate_parts(self.sref.open(), mark_id))
        return [r for r in rows if r[0] in found]

    def union(self, a: list[Any], b: list[Any]) -> list[Any]:
        return [*a, *b]

    def space_groups(self, ranges: Mapping[str, int], staged: Mapping[str, int], slices: SlicesResult,
                     deleted_keys: Sequence[str], cutoff_ms: int, tag_bits: int) -> dict[tuple[int, str | None], tuple[int, int]]:
        from lakefs_gc.listing.holders import groups, masks_of_ranges

        listed = [(r[0], r[1], r[2]) for r in self.listed(slices)]
        among = {r[0] for r in listed}
        # the ranges' entries, read here: bounded like every input of this engine
        masks = masks_of_ranges(self.sref.open(), self.sref.roots, ranges, among, self.limit, dict(staged))
        deleted = addresses_among(self.spark, self.sref, [], self.n, among=among, keys=deleted_keys)
        return groups(listed, masks, tag_bits, deleted, cutoff_ms)

    def count(self, rows: Sequence[Any]) -> int:
        return len(rows)

    def union_addresses(self, a: set[str], b: set[str]) -> set[str]:
        return a | b

    def sample_undeletable(self, rows: Iterable[Any], k: int) -> list[str]:
        return [a for a in map(row_address, rows) if not is_deletable(a)][:k]

    def write(self, rows: Iterable[Any], part_dir: str, *more_dirs: str) -> tuple[int, int, PartsDir]:
        rows = list(rows)
        addresses = [row_address(r) for r in rows]
        nbytes = sum((r[1] or 0) for r in rows if not isinstance(r, str) and len(r) > 1)
        count, kept = write_parts_here(addresses, self.sref.open(), part_dir, self.n, *more_dirs)
        return count, nbytes, kept

