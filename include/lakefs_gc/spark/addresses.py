"""
Address parts (:func:`lakefs_gc.report.formats.write_addresses`) from and to Spark.

Through the namespace's storage on executors: a DataFrame written as ``part-N.parquet`` files under
a folder, and folders of parts read back as one DataFrame of ``address``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, cast

from lakefs_gc.contract import PartsDir
from lakefs_gc.errors import LakeFSGCError
from lakefs_gc.gc.decision import ADDRESS_SCHEMA
from lakefs_gc.placement import DEFAULT
from lakefs_gc.report import formats, layout
from lakefs_gc.report.marks import parquet_parts
from lakefs_gc.spark.runtime import StorageRef, partitions

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import RDD
    from pyspark.sql import DataFrame, SparkSession

    from lakefs_gc.placement import Placement
    from lakefs_gc.storage.base import Storage

    # ``keep(batches) -> batches``: a filter of Arrow batches, run where the parts are read
    Keep = Callable[[Iterable[pa.RecordBatch]], Iterable[pa.RecordBatch]]


def _write_part(
    sref: StorageRef, part_dir: str, index: int, rows: Iterable[Sequence[Any]]
) -> Iterator[tuple[int, int]]:
    addresses: list[str] = []
    total = 0
    for r in rows:
        addresses.append(r[0])
        total += (r[1] or 0) if len(r) > 1 else 0
    formats.write_addresses(sref.open(), part_dir + layout.part_name(index), addresses)
    yield (len(addresses), total)


def _read(sref: StorageRef, keep: Keep | None, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """
    Yield Arrow batches of the addresses in the part files named by ``batches`` (column ``key``).

    Filtered by ``keep(batches) -> batches`` when given.
    """
    st = sref.open()
    for batch in batches:
        for key in batch.column(0).to_pylist():
            tables = formats.read_address_table(st, key).to_batches()
            yield from (keep(tables) if keep is not None else tables)


def clear(sref: StorageRef, part_dir: str) -> None:
    """Remove what an earlier attempt left under ``part_dir``."""
    st = sref.open()
    for o in list(st.list(part_dir, recursive=True)):
        st.delete(o.key)


PART_COUNTS = "rows long, bytes long"  # what each part written by write_parts reports


def _write_arrow_part(
    sref: StorageRef, part_dirs: tuple[str, ...], batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """
    Write one partition's (address[, size]) batches as the part of its index in each of ``part_dirs``.

    MapInArrow's function; it yields one row (rows, bytes).
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark import TaskContext

    index = cast("TaskContext", TaskContext.get()).partitionId()  # None only outside a Spark task
    chunks, total = [], 0
    for b in batches:
        chunks.append(b.column(0).cast(pa.string()))
        if b.num_columns > 1:
            total += pc.sum(b.column(1)).as_py() or 0
    addresses = pa.chunked_array(chunks, pa.string())
    st = sref.open()
    for part_dir in part_dirs:
        formats.write_addresses(st, part_dir + layout.part_name(index), addresses)
    yield pa.RecordBatch.from_pydict(
        {"rows": [len(addresses)], "bytes": [total]}, schema=pa.schema([("rows", pa.int64()), ("bytes", pa.int64())])
    )


def write_parts(df: DataFrame, sref: StorageRef, part_dir: str, n: int, *more_dirs: str) -> tuple[int, int, PartsDir]:
    """
    Write ``df`` (address[, size]) as ``n`` parts under ``part_dir``, and the same parts under each of ``more_dirs``.

    All in the same pass. Returns (rows, sum of sizes, ``part_dir`` and its number of parts, every
    part written even when empty). Arrow batches straight to Parquet, no Python object per row.
    """
    dirs = (part_dir, *more_dirs)
    parts = (
        df.repartition(max(1, n))
        .mapInArrow(lambda batches: _write_arrow_part(sref, dirs, batches), PART_COUNTS)
        .collect()
    )
    return _written([(r["rows"], r["bytes"]) for r in parts], part_dir)


def write_distinct_parts(addresses: RDD[str], sref: StorageRef, part_dir: str, n: int) -> tuple[int, PartsDir]:
    """
    Write an RDD of address strings as ``n`` parts under ``part_dir``, each address once.

    Returns (addresses, the folder and its number of parts). One Python shuffle, by address; no
    DataFrame (about half the time of a DataFrame's distinct for one string column: no rows converted
    to and from the JVM).
    """
    by_address = addresses.map(lambda a: (a, None)).reduceByKey(lambda a, _: a, max(1, n))
    parts = by_address.mapPartitionsWithIndex(
        lambda i, pairs: _write_part(sref, part_dir, i, ((a,) for a, _ in pairs))
    ).collect()
    count, _, kept = _written(parts, part_dir)
    return count, kept


def write_parts_here(
    addresses: Iterable[str], st: Storage, part_dir: str, n: int, *more_dirs: str
) -> tuple[int, PartsDir]:
    """
    Write what :func:`write_distinct_parts` writes, from this process (no Spark job).

    For a few addresses, where a job's fixed cost (tasks, Python workers, a shuffle) is most of the
    time; the same parts under each of ``more_dirs`` too (sorted once).
    """
    ordered = sorted(set(addresses))
    n = max(1, n)
    for i in range(n):
        for d in (part_dir, *more_dirs):
            formats.write_addresses(st, d + layout.part_name(i), ordered[i::n])
    return len(ordered), PartsDir(part_dir, n)


def _written(parts: list[tuple[int, int]], part_dir: str) -> tuple[int, int, PartsDir]:
    return sum(c for c, _ in parts), sum(b for _, b in parts), PartsDir(part_dir, len(parts))


def kept_parts(st: Storage, kept: PartsDir) -> list[str]:
    """
    Return the part files of a folder an earlier run kept.

    Fails closed when their number is not the number it wrote (a lost part would lose addresses
    that must be subtracted).
    """
    files = parquet_parts(st, kept.dir)
    if len(files) != kept.parts:
        raise LakeFSGCError(
            f"{st.full_uri(kept.dir)} holds {len(files)} address part(s), the run that wrote it "
            f"wrote {kept.parts}: an incremental run cannot trust it. Nothing was deleted; run with "
            f"the Param flow=clean"
        )
    return files


def _read_identities(
    sref: StorageRef, keep: Keep | None, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    st = sref.open()
    for batch in batches:
        for key in batch.column(0).to_pylist():
            tables = formats.read_identity_table(st, key).to_batches()
            yield from (keep(tables) if keep is not None else tables)


def read_identities(
    spark: SparkSession, sref: StorageRef, kept: Iterable[PartsDir], n: int, keep: Keep | None = None
) -> DataFrame:
    """
    Return every (size, checksum, path) in the identity folders ``kept`` (each checked complete), as one DataFrame.

    For lakefs_gc.listing.staged. ``keep(batches) -> batches``, when given, filters them where they
    are read (only what it keeps reaches the JVM).
    """
    st = sref.open()
    files = _part_files(st, kept)
    if not files:
        return spark.createDataFrame([], formats.IDENTITY_SCHEMA)
    keys = spark.createDataFrame(
        spark.sparkContext.parallelize([(k,) for k in files], partitions(len(files), n)), "key string"
    )
    return keys.mapInArrow(lambda batches: _read_identities(sref, keep, batches), formats.IDENTITY_SCHEMA)


def _among(values: pa.Array, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import pyarrow.compute as pc

    for b in batches:
        yield b.filter(pc.is_in(b.column(0), value_set=values))


THREADS = 8


class NeedsSpark(Exception):
    """
    Work asked of one process that only Spark can do (too large for the placement's bounds).

    Raised before the step has written anything: the engine or the caller hands the work to Spark.
    """


def _small(st: Storage, files: list[str], placement: Placement) -> bool:
    """Whether ``files`` are few and small enough to scan without a Spark job (``placement``'s ``driver_scan_*``)."""
    if len(files) > placement.driver_scan_parts:
        return False
    total = 0
    for key in files:
        info = st.stat(key)
        total += info.size if info is not None else 0  # a missing part fails where it is read
        if total > placement.driver_scan_bytes:
            return False
    return True


def _part_files(st: Storage, kept: Iterable[PartsDir], keys: Iterable[str] = ()) -> list[str]:
    """Return the part files ``keys`` and those of the folders ``kept`` (each checked complete)."""
    return [*keys, *(k for d in kept for k in kept_parts(st, d))]


def _scan_here(
    st: Storage, files: list[str], read_table: Callable[[Storage, str], Any], keep: Keep
) -> list[pa.RecordBatch]:
    """Return the Arrow batches ``keep`` keeps of each part, read on the driver (threads)."""

    def one(key: str) -> list[pa.RecordBatch]:
        batches = read_table(st, key).to_batches()
        return list(keep(batches))

    if not files:
        return []
    with ThreadPoolExecutor(min(THREADS, len(files)), thread_name_prefix="scan") as pool:
        return [b for batches in pool.map(one, files) for b in batches]


def read_parts_here(
    sref: StorageRef, kept: Iterable[PartsDir], keys: Iterable[str] = (), placement: Placement = DEFAULT
) -> set[str] | None:
    """
    Return every address in the folders ``kept`` (checked complete) and the part files ``keys``, read on the driver.

    What :func:`read_parts` gives, for parts small enough to scan here (``placement``); None when
    they are more (then :func:`read_parts`).
    """
    st = sref.open()
    files = _part_files(st, kept, keys)
    if not _small(st, files, placement):
        return None
    return {
        a
        for b in _scan_here(st, files, formats.read_address_table, lambda batches: batches)
        for a in b.column(0).to_pylist()
    }


def addresses_among(
    spark: SparkSession | None,
    sref: StorageRef,
    kept: Iterable[PartsDir],
    n: int,
    among: Iterable[str],
    keys: Iterable[str] = (),
    placement: Placement = DEFAULT,
) -> set[str]:
    """
    Return the addresses of ``among`` that the folders ``kept`` and the part files ``keys`` hold.

    ``among``: a few (they travel with every task); ``kept``: checked complete (:func:`kept_parts`).
    Filtered where the parts are read: by one Spark job (:func:`read_parts`), no shuffle, only what it
    finds coming back to the driver; or, parts small enough (``placement``), in this process.
    """
    import pyarrow as pa

    values = pa.array(sorted(set(among)), pa.string())
    if not len(values):
        return set()
    keep = lambda batches: _among(values, batches)
    st = sref.open()
    files = _part_files(st, kept, keys)
    if _small(st, files, placement):
        return {a for b in _scan_here(st, files, formats.read_address_table, keep) for a in b.column(0).to_pylist()}
    if spark is None:
        raise NeedsSpark(
            f"{len(files)} address part(s) over {placement.driver_scan_bytes:,} bytes or "
            f"{placement.driver_scan_parts} parts"
        )
    return {r[0] for r in read_parts(spark, sref, [], n, files, keep=keep).collect()}


def identities_matching(
    spark: SparkSession | None,
    sref: StorageRef,
    kept: Iterable[PartsDir],
    n: int,
    keep: Keep,
    placement: Placement = DEFAULT,
) -> list[tuple[int, str, str]]:
    """
    Return the (size, checksum, path) rows of the identity folders ``kept`` that ``keep(batches) -> batches`` keeps.

    Filtered where the parts are read: by one Spark job, or on the driver when the parts are small
    (as :func:`addresses_among`).
    """
    st = sref.open()
    files = _part_files(st, kept)
    if _small(st, files, placement):
        return [
            (r["size"], r["checksum"], r["path"])
            for b in _scan_here(st, files, formats.read_identity_table, keep)
            for r in b.to_pylist()
        ]
    if spark is None:
        raise NeedsSpark(
            f"{len(files)} identity part(s) over {placement.driver_scan_bytes:,} bytes or "
            f"{placement.driver_scan_parts} parts"
        )
    return [tuple(r) for r in read_identities(spark, sref, kept, n, keep).collect()]


def read_parts(
    spark: SparkSession,
    sref: StorageRef,
    kept: Iterable[PartsDir],
    n: int,
    keys: Iterable[str] = (),
    keep: Keep | None = None,
) -> DataFrame:
    """
    Return every address in the folders an earlier run ``kept`` and in the part files ``keys``, as one DataFrame.

    The folders checked complete (:func:`kept_parts`); ``keep(batches) -> batches``, when given,
    filters them where they are read.
    """
    st = sref.open()
    files = _part_files(st, kept, keys)
    if not files:
        return spark.createDataFrame([], ADDRESS_SCHEMA)
    key_rows = spark.createDataFrame(
        spark.sparkContext.parallelize([(k,) for k in files], partitions(len(files), n)), "key string"
    )
    return key_rows.mapInArrow(lambda batches: _read(sref, keep, batches), ADDRESS_SCHEMA)
