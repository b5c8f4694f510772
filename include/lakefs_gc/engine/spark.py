"""
The engine of a Spark job: DataFrames joined on executors, work items as Spark tasks.

It decides where each piece of work runs, from its :class:`lakefs_gc.placement.Placement`: a
small decision on its driver (:meth:`SparkEngine.placed`, the driver's engine a
:class:`lakefs_gc.engine.local.LocalEngine` that hands back what it cannot do), few ranges read on
the driver, few candidates matched on the driver.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, cast

from lakefs_gc.engine.base import EngineBase, range_addresses, staged_addresses, still_garbage
from lakefs_gc.engine.local import LocalEngine
from lakefs_gc.gc.decision import ADDRESS_SCHEMA, DataFrames, deletable
from lakefs_gc.listing import matching, slices as listing
from lakefs_gc.listing.holders import spark_groups
from lakefs_gc.progress import watch
from lakefs_gc.report import layout
from lakefs_gc.report.marks import candidate_parts, parquet_parts
from lakefs_gc.spark.addresses import (
    NeedsSpark,
    clear,
    read_parts,
    write_distinct_parts,
    write_parts,
    write_parts_here,
)
from lakefs_gc.spark.runtime import StorageRef, parallelism, partitions, storage_ref
from lakefs_gc.storage import requests
from lakefs_gc.storage.native import LISTED_DDL
from lakefs_gc.storage.requests import Requests

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import Accumulator
    from pyspark.sql import DataFrame, SparkSession

    from lakefs_gc.contract import IncrementalBase, PartsDir, RunContext, SlicesResult
    from lakefs_gc.engine.protocol import Engine, ListingTask
    from lakefs_gc.listing.inventory import InventoryRead
    from lakefs_gc.listing.slices import ListedCounter
    from lakefs_gc.placement import Placement
    from lakefs_gc.sweeping.shared_rate import AdaptiveRate, RateSource

__all__ = ["SparkEngine"]

log = logging.getLogger(__name__)

T = TypeVar("T")
U = TypeVar("U")
TASK_SCHEMA = "prefix string, recursive boolean, after string, up_to string"  # a ListingTask


def _list(
    sref: StorageRef, cutoff_s: float, task_batches: Iterable[pa.RecordBatch], listed: ListedCounter | None = None
) -> Iterator[pa.RecordBatch]:
    """Turn the listing tasks of a partition (Arrow batches of prefix, recursive, after, up_to) into the listing's batches."""
    tasks = [tuple(t.values()) for b in task_batches for t in b.to_pylist()]
    return listing.list_batches(sref.open(), cutoff_s, tasks, listed)


class SparkEngine(EngineBase):
    """:class:`lakefs_gc.engine.Engine` on a Spark job: executors, and its driver for small inputs."""

    def __init__(self, spark: SparkSession, sref: StorageRef | Callable[[], StorageRef], n: int, placement: Placement):
        super().__init__(sref, n, placement)
        self.spark = spark
        self._rel = DataFrames()

    @property
    def rel(self) -> DataFrames:
        return self._rel

    @property
    def sref(self) -> StorageRef:
        """The namespace's storage, counting its requests into this job's accumulator (driver and executors)."""
        sref = super().sref
        if sref.requests is None:
            acc = self.spark.sparkContext.accumulator(Requests(), cast("Any", requests.RequestsParam()))
            self._sref = sref = replace(sref, requests=acc)
        return sref

    def requests_sent(self) -> Requests:
        """Return what the storages opened through :attr:`sref` sent, on the driver and every executor."""
        acc = self._sref.requests if isinstance(self._sref, StorageRef) else None
        return Requests(acc.value.items()) if acc is not None else Requests()

    @classmethod
    def for_run(
        cls, spark: SparkSession, ctx: RunContext, environ: Mapping[str, str] | None, placement: Placement
    ) -> SparkEngine:
        """Return the engine of a run's Spark job: the run's storage and parallelism."""
        return cls(spark, partial(storage_ref, ctx, environ), parallelism(spark, ctx), placement)

    def on_driver(self) -> LocalEngine:
        """Return the engine deciding on this job's driver, for inputs of at most ``driver_max_addresses`` rows."""
        return LocalEngine(self.sref, self.n, self.placement, self.placement.driver_max_addresses, self.spark, self)

    def admit(self, what: str, count: int) -> None:
        return None  # executors take any input

    def placed(self, what: str, size: int, fn: Callable[[Engine[Any, Any]], T]) -> T:
        limit = self.placement.driver_max_addresses
        if limit > 0 and size <= limit:
            log.info("%s: deciding on the driver: %d listed object(s) (driver_max_addresses: %d)", what, size, limit)
            try:
                return fn(self.on_driver())
            except NeedsSpark as e:
                log.info("%s: the driver hands over: %s", what, e)
        log.info("%s: deciding on executors: %d listed object(s) (driver_max_addresses: %d)", what, size, limit)
        return fn(self)

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
        with watch(self.spark, what, unit, total=total) as progress:
            return (
                self.spark.sparkContext.parallelize(items, concurrency)
                .mapPartitions(lambda part: fn(part, progress))
                .collect()
            )

    def at_once(self, tasks: int) -> int:
        return min(tasks, self.spark.sparkContext.defaultParallelism)

    def serve_rate(self, rate: AdaptiveRate, fallback: float) -> AbstractContextManager[RateSource]:
        """Serve ``rate`` from this driver (:mod:`lakefs_gc.sweeping.rate_server`), on its host: 127.0.0.1 in local mode."""
        from lakefs_gc.sweeping.rate_server import serve

        sc = self.spark.sparkContext
        if (sc.master or "").startswith("local"):
            return serve(rate, "127.0.0.1", fallback)
        host = sc.getConf().get("spark.driver.host") or "127.0.0.1"
        return serve(rate, sc.getConf().get("spark.driver.bindAddress") or host, fallback, advertise=host)

    def list_into(self, out_dir: str, tasks: Sequence[ListingTask], cutoff_s: float) -> tuple[int, int]:
        from pyspark.sql import functions as F

        spark, sref = self.spark, self.sref
        with watch(spark, "list_slices", "objects listed") as listed:
            task_df = spark.createDataFrame(
                spark.sparkContext.parallelize(list(tasks), partitions(len(tasks), self.n * 4)), TASK_SCHEMA
            )
            task_df.mapInArrow(lambda ts: _list(sref, cutoff_s, ts, listed), LISTED_DDL).write.mode(
                "overwrite"
            ).parquet(out_dir)
        agg = spark.read.parquet(out_dir).agg(F.count("*").alias("n"), F.sum("size").alias("b")).collect()[0]
        return int(agg["n"]), int(agg["b"] or 0)

    def read_inventory_into(
        self, out_dir: str, inventory: InventoryRead, tasks: Sequence[ListingTask], cutoff_s: float
    ) -> tuple[int, int, int, int]:
        from pyspark.sql import functions as F

        spark, sref = self.spark, self.sref
        keys = [(f.key,) for f in inventory.files]
        rows_read, deferred = spark.sparkContext.accumulator(0), spark.sparkContext.accumulator(0)
        log.info("list_slices: reading %d inventory data file(s) on executors", len(keys))
        with watch(spark, "list_slices", "objects listed") as listed:
            files = spark.createDataFrame(
                spark.sparkContext.parallelize(keys, partitions(len(keys), self.n * 4)), "key string"
            )
            frame = files.mapInArrow(
                lambda bs: inventory.batches((k for b in bs for k in b.column(0).to_pylist()), rows_read, deferred),
                LISTED_DDL,
            )
            if tasks:
                task_df = spark.createDataFrame(
                    spark.sparkContext.parallelize(list(tasks), partitions(len(tasks), self.n * 4)), TASK_SCHEMA
                )
                frame = frame.unionByName(task_df.mapInArrow(lambda ts: _list(sref, cutoff_s, ts, listed), LISTED_DDL))
            frame.write.mode("overwrite").parquet(out_dir)
        agg = spark.read.parquet(out_dir).agg(F.count("*").alias("n"), F.sum("size").alias("b")).collect()[0]
        return int(agg["n"]), int(agg["b"] or 0), int(rows_read.value), int(deferred.value)

    def read_ranges(
        self, range_keys: Sequence[str], ranges: int, entries: int | None, state_dir: str, identities_dir: str
    ) -> tuple[int, PartsDir, int]:
        sref = self.sref
        clear(sref, state_dir)  # what an earlier attempt left
        clear(sref, identities_dir)
        # a Spark job's fixed cost is most of the time of a few ranges (an incremental run's new ones)
        if entries is not None and entries <= self.placement.driver_read_max_entries:
            count, kept = write_parts_here(
                range_addresses(sref, identities_dir, 0, range_keys), sref.open(), state_dir, self.n
            )
            return count, kept, 1
        rdd = self.spark.sparkContext.parallelize(list(range_keys), partitions(len(range_keys), self.n))
        with watch(self.spark, "list_committed", "ranges read", total=ranges) as ranges_read:
            addresses = rdd.mapPartitionsWithIndex(
                lambda i, keys: range_addresses(sref, identities_dir, i, keys, ranges_read)
            )
            count, kept = write_distinct_parts(addresses, sref, state_dir, self.n)
        return count, kept, rdd.getNumPartitions()

    def staged(self, files: Sequence[str]) -> DataFrame:
        sref = self.sref
        rdd = self.spark.sparkContext.parallelize(files, partitions(len(files), self.n))
        return self.spark.createDataFrame(
            rdd.mapPartitions(lambda ks: staged_addresses(sref, ks)), ADDRESS_SCHEMA
        ).distinct()

    def listed(self, slices: SlicesResult) -> DataFrame:
        return self.spark.read.parquet(slices.listed_dir)

    def committed(self, dirs: Sequence[PartsDir], listed: DataFrame, carried: DataFrame | None) -> DataFrame:
        return read_parts(self.spark, self.sref, dirs, self.n)

    def carried(self, base: IncrementalBase) -> DataFrame:
        st = self.sref.open()
        carried = read_parts(
            self.spark, self.sref, [base.uncommitted_dir], self.n, keys=candidate_parts(st, base.mark_id)
        )
        if base.mode == "mark_and_sweep" and not base.dry_run:
            swept = parquet_parts(st, layout.deleted_dir(base.mark_id))
            carried = carried.join(
                read_parts(self.spark, self.sref, [], self.n, keys=swept), on="address", how="left_anti"
            )
        return carried.distinct()

    def still_garbage(self, addresses: DataFrame, cutoff_s: float) -> DataFrame:
        sref = self.sref
        return self.spark.createDataFrame(
            addresses.rdd.mapPartitions(lambda rows: still_garbage(sref.open(), cutoff_s, (r[0] for r in rows))),
            "address string, size long, checksum string",
        )

    def earlier_candidates(self, rows: DataFrame, mark_id: str | None) -> DataFrame:
        if mark_id is None:
            return rows.limit(0)
        earlier = read_parts(self.spark, self.sref, [], self.n, keys=candidate_parts(self.sref.open(), mark_id))
        return rows.join(earlier, on="address", how="left_semi")

    def union(self, a: DataFrame, b: DataFrame) -> DataFrame:
        return a.unionByName(b)

    def count(self, rows: DataFrame) -> int:
        return int(rows.count())

    def _addresses(self, addresses: Collection[str]) -> DataFrame:
        return self.spark.createDataFrame([(a,) for a in sorted(addresses)], ADDRESS_SCHEMA)

    def among(self, rows: DataFrame, addresses: Collection[str]) -> DataFrame:
        return rows.join(self._addresses(addresses), on="address", how="left_semi").select("address")

    def without(self, rows: DataFrame, addresses: Collection[str]) -> DataFrame:
        if not addresses:
            return rows
        return rows.join(self._addresses(addresses), on="address", how="left_anti")

    def union_addresses(self, a: DataFrame, b: DataFrame) -> DataFrame:
        return a.select("address").unionByName(b.select("address")).distinct()

    def sample_undeletable(self, rows: DataFrame, k: int) -> list[str]:
        from pyspark.sql import functions as F

        return [r[0] for r in rows.where(~deletable(F.col("address"))).limit(k).collect()]

    def write(self, rows: DataFrame, part_dir: str, *more_dirs: str) -> tuple[int, int, PartsDir]:
        return write_parts(rows, self.sref, part_dir, self.n, *more_dirs)

    def hold(self, rows: T) -> AbstractContextManager[T]:
        return _Cached(rows)

    def identities(self, dirs: Sequence[PartsDir]) -> matching.Identities:
        return matching.Identities(self.spark, self.sref, tuple(dirs), self.n, placement=self.placement)

    def suspicious(self, rows: DataFrame, identities: matching.Identities, link_flow: bool) -> matching.Suspicious:
        # few candidates are matched on the driver: the identities filtered where read, one scan
        cap = self.placement.driver_check_max
        few = [tuple(r) for r in rows.select("address", "size", "checksum").limit(cap + 1).collect()]
        if len(few) <= cap:
            return matching.suspicious_rows(self.sref, few, identities, link_flow)
        return matching.suspicious_frame(self.spark, self.sref, rows, identities, self.n, link_flow)

    def space_groups(
        self,
        ranges: Mapping[str, int],
        staged: Mapping[str, int],
        slices: SlicesResult,
        deleted_keys: Sequence[str],
        cutoff_ms: int,
        tag_bits: int,
    ) -> dict[tuple[int, str | None], tuple[int, int]]:
        listed = self.listed(slices).select("address", "size", "last_modified_ms")
        deleted = read_parts(self.spark, self.sref, [], self.n, keys=deleted_keys)
        return spark_groups(self.spark, self.sref, ranges, staged, listed, deleted, cutoff_ms, tag_bits, self.n)


class _Cached(AbstractContextManager[Any]):
    """A DataFrame cached while the block runs; anything else as it is."""

    def __init__(self, rows: Any):
        self.rows = rows.cache() if hasattr(rows, "cache") else rows

    def __enter__(self) -> Any:
        return self.rows

    def __exit__(self, *exc: object) -> None:
        if hasattr(self.rows, "unpersist"):
            self.rows.unpersist()
