"""
The staged check's matching: which candidates a staged entry of a committed identity could be.

Step 2 and 3 of :mod:`lakefs_gc.listing.staged` (read its docstring first): the candidates (address,
size, checksum) against the identities (size, checksum, path) of every committed entry the run
read. The same answer in one process (:func:`suspicious_here`, a few candidates; the identities
filtered where they are read) and on Spark's executors (:func:`suspicious`, one join); which runs
where is the engine's choice (:meth:`lakefs_gc.engine.Engine.suspicious`), and
tests/engine/test_placement.py holds the two to the same rows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakefs_gc.contract import PartsDir
from lakefs_gc.placement import DEFAULT, Placement
from lakefs_gc.report import formats
from lakefs_gc.spark.addresses import identities_matching, read_identities
from lakefs_gc.spark.runtime import StorageRef
from lakefs_gc.storage.base import MD5_HEX

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from lakefs_gc.storage.base import Storage

MD5_PATTERN = f"^{MD5_HEX.pattern}$"  # as a Spark (and pyarrow) pattern
THREADS = 16
LINK_SIGNATURE = ","  # catalog.LinkAddressSigningDelimiter: in every address getPhysicalAddress hands out


@dataclass(frozen=True)
class Suspicious:
    """
    What the matching of the candidates found (steps 2 and 3).

    ``count``: the suspicious candidates; ``paths``: the committed paths to ask on every branch;
    ``link_flow``: (address, size) of the candidates whose key carries lakeFS's link signature
    (asked for on a local namespace only).
    """

    count: int
    paths: tuple[str, ...]
    link_flow: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Identities:
    """
    The (size, checksum, path) of every committed entry the run read.

    The identity folders of the run and its chain (``state/identities/``) and the rows of the
    commits read since.
    """

    spark: Any  # the session, or None (the Airflow task's own process)
    sref: StorageRef
    dirs: tuple[PartsDir, ...]
    n: int
    rows: tuple[tuple[int, str, str], ...] = ()
    placement: Placement = DEFAULT  # where a scan of the folders runs

    def plus(self, rows: Iterable[tuple[int, str, str]]) -> Identities:
        return dataclasses.replace(self, rows=(*self.rows, *rows))

    def frame(self) -> DataFrame:
        """All of them, as one DataFrame (the executors' path)."""
        df: DataFrame = read_identities(self.spark, self.sref, self.dirs, self.n)
        return df.unionByName(self.spark.createDataFrame(list(self.rows), formats.IDENTITY_SCHEMA)) if self.rows else df

    def matching(self, keep: Callable[[Iterable[Any]], Iterable[Any]]) -> list[tuple[int, str, str]]:
        """
        Return the rows ``keep(batches) -> batches`` keeps, filtered where the parts are read.

        By one Spark job, or on the driver for small parts; only what it keeps comes back.
        """
        import pyarrow as pa

        found = (
            identities_matching(self.spark, self.sref, self.dirs, self.n, keep, placement=self.placement)
            if self.dirs
            else []
        )
        if self.rows:
            size, checksum, path = zip(*self.rows)
            batch = pa.record_batch(
                [pa.array(size, pa.int64()), pa.array(checksum, pa.string()), pa.array(path, pa.string())],
                names=["size", "checksum", "path"],
            )
            found += [(r["size"], r["checksum"], r["path"]) for b in keep([batch]) for r in b.to_pylist()]
        return found


def _content_md5s(st: Storage, keys: list[str]) -> list[str | None]:
    """
    Return the content MD5 each store object vouches for (``content_md5``), or None.

    Asked in threads where the store answers over HTTP (a HEAD on S3); where the store hashes the
    bytes itself (``hashes_locally``: ``local://``) in this thread, the files read one after the
    other (hashing small files in threads only contends for the GIL: 14.2 s against 6.0 s for
    100,000 files).
    """
    if st.hashes_locally:
        return [st.content_md5(k) for k in keys]
    with ThreadPoolExecutor(max(1, min(THREADS, len(keys))), thread_name_prefix="staged-md5") as pool:
        return list(pool.map(st.content_md5, keys))


def _vouched(sref: StorageRef, batches: Iterable[Any]) -> Iterator[Any]:
    """
    Each candidate batch (address, size, checksum) with ``vouched``.

    ``vouched``: the content MD5 its store vouches for, or null (:func:`_content_md5s`).
    """
    import pyarrow as pa

    st = sref.open()
    for b in batches:
        yield b.append_column("vouched", pa.array(_content_md5s(st, b.column(0).to_pylist()), pa.string()))


def suspicious(
    spark: SparkSession, sref: StorageRef, cands: DataFrame, identities: DataFrame, n: int
) -> tuple[DataFrame, DataFrame, DataFrame]:
    """
    (suspicious candidates, the paths to ask, the candidates at a size of an entry) as DataFrames.

    The suspicious candidates (address, size, checksum, vouched) and the candidates at a size of an
    entry come back cached; see the module's docstring, step 2. ``cands``: (address, size, checksum
    as listed); ``identities``: (size, checksum, path) of every committed entry read.

    The identities are read three times and shuffled once, whatever the candidates: their sizes
    (aggregated where read), the sizes of those whose checksum is not an MD5 (filtered where read),
    and one join of all of them with the candidates' keys. A candidate's keys are its vouched MD5 and
    its listed checksum: an entry matching the first matches "by content", the second "as listed"
    (an entry whose checksum equals a vouched MD5 but is not in lakeFS's form is at a size of the
    third kind, suspicious anyway).
    """
    from pyspark.sql import functions as F

    ident = identities.select("size", F.col("checksum").alias("icheck"), "path")
    other = ~F.col("icheck").rlike(MD5_PATTERN) | F.col("icheck").isNull()
    sized = cands.select("address", "size", "checksum").join(
        ident.select("size").distinct(), on="size", how="left_semi"
    )
    if not sref.open().listed_md5:  # the listing's word is not enough: ask the store, or read the file
        sized = sized.select("address", "size", "checksum").mapInArrow(
            lambda batches: _vouched(sref, batches), "address string, size long, checksum string, vouched string"
        )
    else:
        sized = sized.withColumn("vouched", F.col("checksum"))
    sized = sized.cache()
    keys = (
        sized.select("address", "size", F.col("vouched").alias("icheck"))
        .unionByName(sized.select("address", "size", F.col("checksum").alias("icheck")))
        .where(F.col("icheck").isNotNull())
    )
    by_key = keys.join(ident.select("size", "icheck"), on=["size", "icheck"], how="left_semi").select("address")
    by_size = sized.join(ident.where(other).select("size").distinct(), on="size", how="left_semi").select("address")
    unvouched = sized.where(F.col("vouched").isNull()).select("address")
    sus = (
        sized.join(unvouched.unionByName(by_key).unionByName(by_size).distinct(), on="address", how="left_semi")
        .select("address", "size", "checksum", "vouched")
        .cache()
    )
    paths = (
        ident.where(other)
        .join(sus.select("size").distinct(), on="size", how="left_semi")
        .select("path")
        .unionByName(
            ident.join(
                sus.where(F.col("vouched").isNull()).select("size").distinct(), on="size", how="left_semi"
            ).select("path")
        )
        .unionByName(
            ident.join(
                sus.select("size", F.col("vouched").alias("icheck")).distinct(), on=["size", "icheck"], how="left_semi"
            ).select("path")
        )
        .unionByName(
            ident.join(
                sus.select("size", F.col("checksum").alias("icheck")).distinct(), on=["size", "icheck"], how="left_semi"
            ).select("path")
        )
        .distinct()
    )
    return sus, paths, sized


def _sizes_present(batches: Iterable[Any], sizes: frozenset[int]) -> Iterator[Any]:
    """
    For each batch of identity rows (size, checksum, path), one row per distinct size of ``sizes`` it holds.

    Checksum and path null.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    sv = pa.array(sorted(sizes), pa.int64())
    for b in batches:
        present = pc.unique(pc.filter(b.column(0), pc.is_in(b.column(0), value_set=sv)))
        if len(present):
            yield pa.record_batch(
                [present, pa.nulls(len(present), pa.string()), pa.nulls(len(present), pa.string())],
                names=["size", "checksum", "path"],
            )


def _matching(
    batches: Iterable[Any], keys: frozenset[str], sizes: frozenset[int], unvouched_sizes: frozenset[int]
) -> Iterator[Any]:
    """
    Yield the identity rows (Arrow batches of size, checksum, path) a candidate could be.

    (size, checksum) in ``keys`` (as ``"size:checksum"``), a checksum not in lakeFS's MD5 form at
    one of ``sizes``, or any row at one of ``unvouched_sizes``.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    kv, sv = pa.array(sorted(keys), pa.string()), pa.array(sorted(sizes), pa.int64())
    uv = pa.array(sorted(unvouched_sizes), pa.int64())
    for b in batches:
        size, checksum = b.column(0), b.column(1)
        key = pc.binary_join_element_wise(pc.cast(size, pa.string()), pc.fill_null(checksum, ""), ":")
        other = pc.invert(pc.fill_null(pc.match_substring_regex(checksum, MD5_PATTERN), False))
        m = pc.or_(
            pc.or_(pc.is_in(key, value_set=kv), pc.is_in(size, value_set=uv)),
            pc.and_(pc.is_in(size, value_set=sv), other),
        )
        yield b.filter(pc.fill_null(m, False))


def suspicious_here(
    sref: StorageRef, rows: Iterable[Sequence[Any]], identities: Identities
) -> tuple[set[str], set[str]]:
    """
    :func:`suspicious` for a few candidates (``rows`` of address, size, checksum), on the driver.

    The store asked here, the identities filtered where they are read. (suspicious addresses, paths).
    """
    from collections import defaultdict

    st = sref.open()
    listed = {r[0]: (int(r[1]), r[2]) for r in rows}
    if not st.listed_md5:  # the listing's word is not enough: ask the store, or read the file
        # only a candidate at the size of some entry can be one: ask about those alone (one scan of
        # the identities for the sizes they hold, as the executors' path joins on size first)
        wanted = frozenset(size for size, _ in listed.values())
        present = {r[0] for r in identities.matching(lambda bs: _sizes_present(bs, wanted))}
        listed = {a: v for a, v in listed.items() if v[0] in present}
        vouched = dict(zip(listed, _content_md5s(st, list(listed))))
    else:
        vouched = {a: c for a, (_, c) in listed.items()}
    keys = frozenset(
        {f"{s}:{c}" for s, c in listed.values() if c} | {f"{listed[a][0]}:{v}" for a, v in vouched.items() if v}
    )
    sizes = frozenset(s for s, _ in listed.values())
    unvouched = frozenset(listed[a][0] for a, v in vouched.items() if not v)
    matched = identities.matching(lambda bs: _matching(bs, keys, sizes, unvouched))
    by_key: dict[str, set[str]] = defaultdict(set)
    by_size: dict[int, set[str]] = defaultdict(set)
    other: dict[int, set[str]] = defaultdict(set)
    for size, checksum, path in matched:
        by_size[size].add(path)
        by_key[f"{size}:{checksum}"].add(path)
        if not MD5_HEX.fullmatch(checksum or ""):
            other[size].add(path)
    # which groups each candidate hits, then each group's paths once: many candidates can share one
    # identity held by many paths (empty files: size 0, one MD5), and a copy per candidate is quadratic
    sus: set[str] = set()
    hit_keys: set[str] = set()
    hit_sizes: set[int] = set()
    hit_other: set[int] = set()
    for address, (size, checksum) in listed.items():
        v = vouched[address]
        groups = [] if v is None else [f"{size}:{v}"]
        if checksum:
            groups.append(f"{size}:{checksum}")
        hit = False
        if v is None and size in by_size:
            hit_sizes.add(size)
            hit = True
        for key in groups:
            if key in by_key:
                hit_keys.add(key)
                hit = True
        if size in other:
            hit_other.add(size)
            hit = True
        if hit:
            sus.add(address)
    paths: set[str] = set()
    for key in hit_keys:
        paths |= by_key[key]
    for size in hit_sizes:
        paths |= by_size[size]
    for size in hit_other:
        paths |= other[size]
    return sus, paths


def suspicious_rows(
    sref: StorageRef, rows: Sequence[Sequence[Any]], identities: Identities, link_flow: bool
) -> Suspicious:
    """Match a few candidates (``rows`` of address, size, checksum) in this process (:func:`suspicious_here`)."""
    sus, paths = suspicious_here(sref, rows, identities) if rows else (set(), set())
    linked = tuple((r[0], int(r[1])) for r in rows if LINK_SIGNATURE in r[0]) if link_flow else ()
    return Suspicious(len(sus), tuple(sorted(paths)), linked)


def suspicious_frame(
    spark: SparkSession, sref: StorageRef, cands: DataFrame, identities: Identities, n: int, link_flow: bool
) -> Suspicious:
    """Match many candidates (a DataFrame of address, size, checksum) on executors (:func:`suspicious`)."""
    sus, paths_df, sized = suspicious(spark, sref, cands, identities.frame(), n)
    try:
        count = sus.count()
        paths = tuple(sorted(r[0] for r in paths_df.collect())) if count else ()
    finally:
        sus.unpersist()
        sized.unpersist()
    linked = (
        tuple(
            (r[0], int(r[1]))
            for r in cands.where(cands.address.contains(LINK_SIGNATURE)).select("address", "size").collect()
        )
        if link_flow
        else ()
    )
    return Suspicious(count, paths, linked)
