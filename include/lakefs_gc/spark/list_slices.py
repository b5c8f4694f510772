"""Spark step ``list_slices``: every object of the namespace that GC may consider, older than the
cutoff, written as Parquet (address, size, last_modified_ms) under the work location.

Slices (``data/<slice>/``) are listed in parallel, one task per group of slices; a slice whose
descending xid says it was created after the cutoff is skipped unlisted (reference 2.2). Legacy
objects at the namespace root (older repositories keep every object there) are listed in parallel
too, by key range; ``_lakefs/`` and the ``dummy`` marker are never listed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from lakefs_gc.contract import SlicesResult, StepInputs
from lakefs_gc.gc.decision import LISTED_SCHEMA
from lakefs_gc.lakefs import xid
from lakefs_gc.progress import watch
from lakefs_gc.spark.runtime import StorageRef, cutoff_seconds, parallelism, partitions, storage_ref

# Root keys are split into key ranges (lo, hi] at these boundaries, one listing task each: legacy
# lakeFS addresses are hex, so the ranges come out even.
ROOT_BOUNDARIES = tuple("123456789abcdef")


def plan_slices(storage, cutoff_s: float) -> tuple[list[str], list[str]]:
    """Slice prefixes (``data/<slice>/``) to list, and slice ids skipped because their id says they
    were created after the cutoff (descending xids; reference 2.2). Non-xid children are listed."""
    to_list, skipped = [], []
    for p in storage.list_prefixes("data/"):
        sid = p[len("data/"):].rstrip("/")
        if xid.is_xid(sid) and xid.descending_time(sid) > cutoff_s:
            skipped.append(sid)
        else:
            to_list.append(p)
    return to_list, skipped


def listing_tasks(slices: list[str]) -> list[tuple[str, bool, str | None, str | None]]:
    """(prefix, recursive, after, up_to) of every listing task: each slice, the loose objects
    directly under ``data/``, and the root's key ranges."""
    tasks: list[tuple[str, bool, str | None, str | None]] = [(p, True, None, None) for p in slices]
    tasks.append(("data/", False, None, None))
    bounds: list[str | None] = [None, *ROOT_BOUNDARIES, None]
    tasks += [("", False, lo, hi) for lo, hi in zip(bounds, bounds[1:])]
    return tasks


def _list(sref: StorageRef, cutoff_s: float, tasks, listed=None):
    st = sref.open()
    n = 0
    for prefix, recursive, after, up_to in tasks:
        for o in st.list(prefix, recursive=recursive, start_after=after):
            if up_to is not None and o.key > up_to:
                break
            n += 1
            if prefix == "" and o.key == "dummy":
                continue
            if o.last_modified < cutoff_s:
                yield (o.key, o.size, int(o.last_modified * 1000))
    if listed is not None:
        listed.add(n)


def run(spark, inputs: StepInputs, environ: Mapping[str, str] | None = None) -> SlicesResult:
    from pyspark.sql import functions as F

    ctx = inputs.context
    sref = storage_ref(ctx, environ)
    cutoff_s = cutoff_seconds(ctx)
    to_list, skipped = plan_slices(sref.open(), cutoff_s)
    tasks = listing_tasks(to_list)
    n = parallelism(spark, ctx)
    out_dir = os.path.join(ctx.work_dir, "listed")
    with watch(spark, "list_slices", "objects listed") as listed:
        rdd = spark.sparkContext.parallelize(tasks, partitions(len(tasks), n * 4)).mapPartitions(
            lambda ts: _list(sref, cutoff_s, ts, listed))
        spark.createDataFrame(rdd, LISTED_SCHEMA).write.mode("overwrite").parquet(out_dir)
    agg = spark.read.parquet(out_dir).agg(F.count("*").alias("n"), F.sum("size").alias("b")).collect()[0]
    xids = [s for s in (p[len("data/"):].rstrip("/") for p in to_list) if xid.is_xid(s)]
    return SlicesResult(listed_dir=out_dir, first_slice=min(xids) if xids else "", slices_listed=len(to_list),
                        slices_skipped=len(skipped), listed_objects=int(agg["n"]), listed_bytes=int(agg["b"] or 0))
