"""Address parts from and to Spark (``lakefs_gc.spark.addresses``): the two writers of a set of
addresses each once (a Spark job, and the driver itself for a few) write the same parts, which
``read_parts`` reads back through Arrow batches; a folder missing a part is refused."""

from __future__ import annotations

import pytest

from lakefs_gc.errors import LakeFSGCError
from lakefs_gc.report import formats, layout
from lakefs_gc.spark.addresses import read_parts, write_distinct_parts, write_parts_here
from lakefs_gc.spark.runtime import StorageRef
from lakefs_gc.storage import S3Options

pytestmark = pytest.mark.spark

ADDRESSES = [f"data/gslice{i % 7}/c{i:04d}" for i in range(500)]


def test_both_writers_keep_each_address_once_in_n_parts_read_back_whole(spark, tmp_path):
    sref = StorageRef(f"local://{tmp_path}/ns", S3Options(), str(tmp_path))
    st = sref.open()
    with_duplicates = ADDRESSES + ADDRESSES[::3] + ADDRESSES[:10]
    rdd = spark.sparkContext.parallelize(with_duplicates, 3)
    count_job, job = write_distinct_parts(rdd, sref, "state/job/", 4)
    count_here, here = write_parts_here(iter(with_duplicates), st, "state/here/", 4)
    assert count_job == count_here == len(ADDRESSES)
    assert (job.parts, here.parts) == (4, 4)
    for kept in (job, here):
        parts = [formats.read_addresses(st, kept.dir + layout.part_name(i)) for i in range(kept.parts)]
        assert sorted(a for p in parts for a in p) == sorted(ADDRESSES)  # each once, across all parts
        back = read_parts(spark, sref, [kept], 2)
        assert sorted(r.address for r in back.collect()) == sorted(ADDRESSES)
    # an empty set still writes every part (a later run checks their number)
    assert write_parts_here(iter(()), st, "state/empty/", 3) == (0, type(here)("state/empty/", 3))
    assert read_parts(spark, sref, [type(here)("state/empty/", 3)], 2).count() == 0
    st.delete(here.dir + layout.part_name(3))
    with pytest.raises(LakeFSGCError, match="holds 3 address part"):
        read_parts(spark, sref, [here], 2)


def test_the_driver_scan_and_the_spark_scan_find_the_same_addresses(spark, tmp_path, monkeypatch):
    """addresses_among and read_parts_here on the driver (small parts) and through a Spark job give the
    same answer, none of parts included (no part file at all: nothing found, no error)."""
    from lakefs_gc.placement import Placement
    from lakefs_gc.spark import addresses

    sref = StorageRef(f"local://{tmp_path}/ns", S3Options(), str(tmp_path))
    _, kept = write_parts_here(iter(ADDRESSES), sref.open(), "state/c/", 3)
    among = set(ADDRESSES[::50]) | {"data/elsewhere/x"}
    here = addresses.addresses_among(spark, sref, [kept], 2, among)
    assert addresses.addresses_among(spark, sref, [], 2, among) == set()
    assert addresses.read_parts_here(sref, [], []) == set()
    assert addresses.read_parts_here(sref, [kept]) == set(ADDRESSES)
    spark_only = Placement(driver_scan_bytes=0)  # every scan a Spark job
    assert (
        addresses.addresses_among(spark, sref, [kept], 2, among, placement=spark_only) == here == set(ADDRESSES[::50])
    )
    assert addresses.read_parts_here(sref, [kept], placement=spark_only) is None
