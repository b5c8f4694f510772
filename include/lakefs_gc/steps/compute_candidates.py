"""Spark step ``compute_candidates``: the GC decision, and the mark in lakeFS's report layout.

candidates = listed - committed - uncommitted (:func:`lakefs_gc.gc.decision.compute_candidates`),
written as ``candidates/``; this run's staged addresses are kept in ``state/uncommitted/`` for later
runs. An incremental run (lakefs_gc.gc.flow) subtracts the committed addresses its whole chain
found, and also checks again what the base run left: its staged addresses and the candidates it
did not delete, each re-checked against this run's committed and staged sets and in storage
(still there, older than the cutoff); with delayed confirmation only those an earlier mark also found go to
``deleted/`` (lakeFS's list, what the sweep deletes). The mark's summary says ``success: false``
until ``save_report`` completes the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from lakefs_gc.contract import CandidatesResult, IncrementalBase, StepInputs
from lakefs_gc.errors import ContractError, LakeFSGCError
from lakefs_gc.gc.clock import iso, parse_iso
from lakefs_gc.gc.confirmation import confirming_mark
from lakefs_gc.gc.decision import ADDRESS_SCHEMA, compute_candidates, deletable
from lakefs_gc.listing import staged as staged_check
from lakefs_gc.listing import uncommitted
from lakefs_gc.listing.slices import in_slice_created_after
from lakefs_gc.report import layout
from lakefs_gc.report.marks import candidate_parts, iter_marks, parquet_parts
from lakefs_gc.report.summary import mark_started, write_summary
from lakefs_gc.spark.addresses import clear, read_identities, read_parts, write_parts
from lakefs_gc.spark.runtime import StorageRef, cutoff_seconds, lakefs_ref, parallelism, partitions, storage_ref


def _uncommitted_addresses(sref: StorageRef, keys):
    st, roots = sref.open(), sref.roots
    for key in keys:
        for address in uncommitted.file_addresses(st, key, roots):
            yield (address,)


def _check_carried(sref: StorageRef, cutoff_s: float, rows):
    """(address, size, checksum) of each carried address still in storage and older than the cutoff (and
    not in a slice created after it, as the listing skips those)."""
    st = sref.open()
    for (address,) in rows:
        if in_slice_created_after(address, cutoff_s):
            continue
        info = st.stat(address)
        if info is not None and info.last_modified < cutoff_s:
            yield (address, info.size, info.checksum)


def _carried(spark, sref: StorageRef, base: IncrementalBase, n: int):
    """What an incremental run checks again besides the slices it lists: the base run's staged
    addresses (staged then, maybe garbage now) and its candidates it did not delete (held back by
    delayed confirmation, or marked by a mark-only or dry run)."""
    st = sref.open()
    carried = read_parts(spark, sref, [base.uncommitted_dir], n, keys=candidate_parts(st, base.mark_id))
    if base.mode == "mark_and_sweep" and not base.dry_run:
        swept = parquet_parts(st, layout.deleted_dir(base.mark_id))
        carried = carried.join(read_parts(spark, sref, [], n, keys=swept), on="address", how="left_anti")
    return carried.distinct()


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
        ADDRESS_SCHEMA).distinct().cache()
    cutoff_s = cutoff_seconds(ctx)
    listed = spark.read.parquet(slices.listed_dir)
    base = ctx.base if ctx.flow == "incremental" else None
    if ctx.flow == "incremental" and base is None:
        raise ContractError("an incremental run's context has no base run")
    # what list_committed read now and, incremental, every address the chain's committed listings found
    committed_df = read_parts(spark, sref, [committed.committed_dir, *(base.committed_dirs if base else ())], n)
    cands = compute_candidates(listed, committed_df, staged, int(cutoff_s * 1000))
    carried_checked = carried_found = 0
    if base is not None:
        carried = (_carried(spark, sref, base, n)
                   .join(listed.select("address"), on="address", how="left_anti")
                   .join(committed_df, on="address", how="left_anti")
                   .join(staged, on="address", how="left_anti")
                   .where(deletable(F.col("address")))).cache()
        carried_checked = carried.count()
        found = spark.createDataFrame(carried.rdd.mapPartitions(lambda rows: _check_carried(sref, cutoff_s, rows)),
                                      "address string, size long, checksum string").cache()
        carried_found = found.count()
        cands = cands.unionByName(found)
    check = None
    if ctx.settings.staged_check == "candidates" and unc.heads_file:
        if committed.identity_dir is None or (base is not None and len(base.identity_dirs) != len(base.committed_dirs)):
            raise LakeFSGCError("list_committed kept no identities of the entries it read; the staged check cannot run. "
                                "Nothing was deleted; re-run the whole DAG run (flow=clean)")
        cands = cands.cache()
        identities = read_identities(spark, sref, [committed.identity_dir, *(base.identity_dirs if base else ())], n)
        kept, check = staged_check.check(spark, ctx, sref, lakefs_ref(ctx, environ), cands, identities,
                                         committed.read_file, n)
        cands = cands.join(kept, on="address", how="left_anti")
        staged = staged.unionByName(kept).distinct()
    bad = cands.where(~deletable(F.col("address"))).limit(5).collect()
    if bad:  # cannot happen by construction; checked anyway before anything is written
        raise LakeFSGCError(f"refusing: candidates outside data/ or the namespace root: {[r[0] for r in bad]}")
    # a retried attempt must not leave parts of an earlier attempt behind
    for part_dir in (layout.candidates_dir(mark_id), layout.deleted_dir(mark_id), layout.state_uncommitted_dir(mark_id)):
        clear(sref, part_dir)
    write_summary(st, layout.summary_key(mark_id), mark_started(ctx, mark_id, slices.first_slice))
    _, _, kept_staged = write_parts(staged, sref, layout.state_uncommitted_dir(mark_id), n)  # for later runs
    cands = cands.cache()
    total, total_bytes, _ = write_parts(cands, sref, layout.candidates_dir(mark_id), n)
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
            earlier = read_parts(spark, sref, [], n, keys=candidate_parts(st, prev[0]))
            to_delete = cands.join(earlier, on="address", how="left_semi")
            confirmed_by = prev[0]
            reason = f"not yet a candidate in mark {prev[0]} (started {prev[1].start_time})"
    count, nbytes, _ = write_parts(to_delete, sref, layout.deleted_dir(mark_id), n)
    cands.unpersist()
    staged.unpersist()
    return CandidatesResult(report_dir=st.full_uri(layout.report_dir(mark_id)), uncommitted_files=len(files),
                            candidates=total, candidate_bytes=total_bytes, to_delete=count, to_delete_bytes=nbytes,
                            held_back=total - count, confirm_after_seconds=confirm, held_back_reason=reason,
                            confirmed_by_mark=confirmed_by, unreadable_marks=tuple(unreadable),
                            uncommitted_dir=kept_staged, carried_checked=carried_checked,
                            carried_candidates=carried_found, staged_check=ctx.settings.staged_check,
                            **(_check_fields(check) if check else {}))


def _check_fields(check) -> dict:
    return {"staged_suspicious": check.suspicious, "staged_stats": check.stats, "staged_kept": check.kept,
            "commits_since": check.commits_since, "committed_since_kept": check.committed_since_kept,
            "staged_check_seconds": check.seconds}
