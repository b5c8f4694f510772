"""Spark step ``compute_candidates``: the GC decision, and the mark in lakeFS's report layout.

candidates = listed - committed - uncommitted (:func:`lakefs_gc.gc.decision.compute_candidates`),
written as ``candidates/``; with delayed confirmation only those an earlier mark also found go to
``deleted/`` (lakeFS's list, what the sweep deletes). The mark's summary says ``success: false``
until ``save_report`` completes the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from lakefs_gc.contract import CandidatesResult, StepInputs
from lakefs_gc.errors import LakeFSGCError
from lakefs_gc.gc.clock import iso, parse_iso
from lakefs_gc.gc.confirmation import confirming_mark
from lakefs_gc.gc.decision import ADDRESS_SCHEMA, compute_candidates, deletable
from lakefs_gc.listing import uncommitted
from lakefs_gc.report import formats, layout
from lakefs_gc.report.marks import candidate_parts, iter_marks
from lakefs_gc.report.summary import mark_started, write_summary
from lakefs_gc.spark.runtime import StorageRef, cutoff_seconds, parallelism, partitions, storage_ref


def _uncommitted_addresses(sref: StorageRef, keys):
    st, roots = sref.open(), sref.roots
    for key in keys:
        for address in uncommitted.file_addresses(st, key, roots):
            yield (address,)


def _write_report_part(sref: StorageRef, part_dir: str, index: int, rows):
    addresses, total = [], 0
    for r in rows:
        addresses.append(r[0])
        total += r[1] or 0
    formats.write_addresses(sref.open(), part_dir + layout.part_name(index), addresses)
    yield (len(addresses), total)


def _read_addresses(sref: StorageRef, keys):
    st = sref.open()
    for key in keys:
        for a in formats.read_addresses(st, key):
            yield (a,)


def _write_parts(df, sref: StorageRef, part_dir: str, n: int) -> tuple[int, int]:
    parts = (df.repartition(max(1, n))
             .rdd.mapPartitionsWithIndex(lambda i, rows: _write_report_part(sref, part_dir, i, rows))
             .collect())
    return sum(c for c, _ in parts), sum(b for _, b in parts)


def run(spark, inputs: StepInputs, environ: Mapping[str, str] | None = None) -> CandidatesResult:
    from pyspark.sql import functions as F

    ctx = inputs.context
    unc, committed, slices = inputs.get("mark_uncommitted"), inputs.get("list_committed"), inputs.get("list_slices")
    mark_id = unc.run_id
    sref = storage_ref(ctx, environ)
    st = sref.open()
    sc = spark.sparkContext
    n = parallelism(spark, ctx)
    files = uncommitted.uncommitted_files(st, sref.roots, mark_id, unc.locations)
    if unc.staged_file:  # live staged addresses lakeFS's mark lacked (mark_uncommitted)
        if not st.exists(unc.staged_file):
            raise LakeFSGCError(f"the staged addresses lakeFS's mark lacked ({st.full_uri(unc.staged_file)}) are "
                                f"gone; re-run the whole DAG run")
        files.append(unc.staged_file)
    staged = spark.createDataFrame(
        sc.parallelize(files, partitions(len(files), n)).mapPartitions(lambda ks: _uncommitted_addresses(sref, ks)),
        ADDRESS_SCHEMA)
    cands = compute_candidates(spark.read.parquet(slices.listed_dir), spark.read.parquet(committed.committed_dir),
                               staged, int(cutoff_seconds(ctx) * 1000))
    bad = cands.where(~deletable(F.col("address"))).limit(5).collect()
    if bad:  # cannot happen by construction; checked anyway before anything is written
        raise LakeFSGCError(f"refusing: candidates outside data/ or the namespace root: {[r[0] for r in bad]}")
    # a retried attempt must not leave parts of an earlier attempt behind
    for part_dir in (layout.candidates_dir(mark_id), layout.deleted_dir(mark_id)):
        for o in list(st.list(part_dir, recursive=True)):
            st.delete(o.key)
    write_summary(st, layout.summary_key(mark_id), mark_started(ctx, mark_id, slices.first_slice))
    cands = cands.cache()
    total, total_bytes = _write_parts(cands, sref, layout.candidates_dir(mark_id), n)
    confirm = ctx.settings.confirm_after_seconds
    reason = confirmed_by = None
    unreadable: list[str] = []
    if confirm <= 0:
        to_delete = cands
    else:
        before = parse_iso(ctx.start_time) - timedelta(seconds=confirm)
        prev, unreadable = confirming_mark(iter_marks(st), before, exclude=mark_id)
        if prev is None:
            to_delete = cands.limit(0)
            reason = f"no successful mark started at or before {iso(before)}"
        else:
            parts = candidate_parts(st, prev[0])
            earlier = spark.createDataFrame(
                sc.parallelize(parts, partitions(len(parts), n)).mapPartitions(lambda ks: _read_addresses(sref, ks)),
                ADDRESS_SCHEMA) if parts else spark.createDataFrame([], ADDRESS_SCHEMA)
            to_delete = cands.join(earlier, on="address", how="left_semi")
            confirmed_by = prev[0]
            reason = f"not yet a candidate in mark {prev[0]} (started {prev[1].start_time})"
    count, nbytes = _write_parts(to_delete, sref, layout.deleted_dir(mark_id), n)
    cands.unpersist()
    return CandidatesResult(report_dir=st.full_uri(layout.report_dir(mark_id)), uncommitted_files=len(files),
                            candidates=total, candidate_bytes=total_bytes, to_delete=count, to_delete_bytes=nbytes,
                            held_back=total - count, confirm_after_seconds=confirm, held_back_reason=reason,
                            confirmed_by_mark=confirmed_by, unreadable_marks=tuple(unreadable))
