"""
Spark step ``compute_candidates``: the GC decision, and the mark in lakeFS's report layout.

candidates = listed - committed - uncommitted (:func:`lakefs_gc.gc.decision.compute_candidates`),
written as ``candidates/``; this run's staged addresses are kept in ``state/uncommitted/`` for later
runs. An incremental run (lakefs_gc.gc.flow) subtracts the committed addresses its whole chain
found, and also checks again what the base run left: its staged addresses and the candidates it
did not delete, each re-checked against this run's committed and staged sets and in storage
(still there, older than the cutoff); with delayed confirmation only those an earlier mark also found go to
``deleted/`` (lakeFS's list, what the sweep deletes). The mark's summary says ``success: false``
until ``save_report`` completes the run.

Two engines, one decision: a run with few listed, staged and carried addresses (:data:`FEW`, the
Spark property :data:`FEW_CONF`; an incremental run's) decides them on the driver, the committed
folders asked only for those by one scan (``addresses_among``); any other on executors, DataFrames
joined. Both write the same mark (tests/steps/test_compute_candidates.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from lakefs_gc.contract import CandidatesResult, IncrementalBase, PartsDir, StepInputs
from lakefs_gc.errors import ContractError, LakeFSGCError, SettingsError
from lakefs_gc.gc.confirmation import confirming_mark
from lakefs_gc.gc.decision import ADDRESS_SCHEMA, compute_candidates, deletable, is_deletable
from lakefs_gc.listing import staged as staged_check, uncommitted
from lakefs_gc.listing.slices import in_slice_created_after, local_folder, read_listed_here
from lakefs_gc.report import layout
from lakefs_gc.report.marks import candidate_parts, iter_marks, parquet_parts
from lakefs_gc.report.summary import mark_started, write_summary
from lakefs_gc.spark.addresses import (
    NeedsSpark,
    addresses_among,
    clear,
    read_parts,
    read_parts_here,
    write_parts,
    write_parts_here,
)
from lakefs_gc.spark.runtime import StorageRef, cutoff_seconds, lakefs_ref, parallelism, partitions, storage_ref
from lakefs_gc.timestamps import iso, parse_iso

log = logging.getLogger(__name__)


def _uncommitted_addresses(sref: StorageRef, keys):
    st, roots = sref.open(), sref.roots
    for key in keys:
        for address in uncommitted.file_addresses(st, key, roots):
            yield (address,)


def _check_carried(st, cutoff_s: float, rows):
    """
    (address, size, checksum) of each carried address still in storage and older than the cutoff (and
    not in a slice created after it, as the listing skips those); ``st``: the namespace's storage.
    """
    for (address,) in rows:
        if in_slice_created_after(address, cutoff_s):
            continue
        info = st.stat(address)
        if info is not None and info.last_modified < cutoff_s:
            yield (address, info.size, info.checksum)


def _carried(spark, sref: StorageRef, base: IncrementalBase, n: int):
    """
    What an incremental run checks again besides the slices it lists: the base run's staged
    addresses (staged then, maybe garbage now) and its candidates it did not delete (held back by
    delayed confirmation, or marked by a mark-only or dry run).
    """
    st = sref.open()
    carried = read_parts(spark, sref, [base.uncommitted_dir], n, keys=candidate_parts(st, base.mark_id))
    if base.mode == "mark_and_sweep" and not base.dry_run:
        swept = parquet_parts(st, layout.deleted_dir(base.mark_id))
        carried = carried.join(read_parts(spark, sref, [], n, keys=swept), on="address", how="left_anti")
    return carried.distinct()


def _carried_here(sref: StorageRef, base: IncrementalBase) -> set[str] | None:
    """:func:`_carried` read on the driver, when its parts are small (read_parts_here); else None."""
    st = sref.open()
    carried = read_parts_here(sref, [base.uncommitted_dir], candidate_parts(st, base.mark_id))
    if carried is None or not (base.mode == "mark_and_sweep" and not base.dry_run):
        return carried
    swept = read_parts_here(sref, [], parquet_parts(st, layout.deleted_dir(base.mark_id)))
    return None if swept is None else carried - swept


THREADS = 16
# listed objects, staged and carried addresses decided on the driver (an incremental run's: 1% churn of
# 10,000,000 objects is 100,000; at 20,000 the 3,000,000-object bench's incremental run went to executors
# and took 24 s of its 27 s there)
FEW = 100_000
FEW_CONF = "spark.lakefs_gc.driverMaxAddresses"  # a Spark property that sets FEW (0: always on executors)


def few(spark) -> int:
    """:data:`FEW`, or what the Spark property :data:`FEW_CONF` says."""
    raw = spark.conf.get(FEW_CONF, None)
    if raw is None:
        return FEW
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise SettingsError(f"Spark property {FEW_CONF}={raw!r} is not a whole number of addresses >= 0 (the most "
                            f"compute_candidates decides on the driver; 0: always on executors). Fix it in the Spark "
                            f"connection's or the task's conf, or remove it (default {FEW:,})")
    return value


def _bounded(items, limit: int) -> list | None:
    """``items`` as a list, or None when there are more than ``limit``."""
    out = []
    for item in items:
        out.append(item)
        if len(out) > limit:
            return None
    return out


def _inputs(ctx, st, sref: StorageRef, inputs: StepInputs, unc) -> tuple[list[str], IncrementalBase | None]:
    """The staged files to read and the base run, checked (fails closed on a missing input)."""
    files = uncommitted.uncommitted_files(st, sref.roots, unc.run_id, unc.locations)
    if unc.staged_file:  # live staged addresses lakeFS's mark lacked (mark_uncommitted)
        if not st.exists(unc.staged_file):
            raise LakeFSGCError(f"the staged addresses lakeFS's mark lacked ({st.full_uri(unc.staged_file)}) are "
                                f"gone; re-run the whole DAG run")
        files.append(unc.staged_file)
    base = ctx.base if ctx.flow == "incremental" else None
    if ctx.flow == "incremental" and base is None:
        raise ContractError("an incremental run's context has no base run")
    if ctx.settings.staged_check == "candidates" and unc.heads_file and (
            inputs.get("list_committed").identity_dir is None
            or (base is not None and len(base.identity_dirs) != len(base.committed_dirs))):
        raise LakeFSGCError("list_committed kept no identities of the entries it read; the staged check cannot run. "
                            "Nothing was deleted; re-run the whole DAG run (flow=clean)")
    return files, base


def run(spark, inputs: StepInputs, environ: Mapping[str, str] | None = None) -> CandidatesResult:
    ctx = inputs.context
    unc, slices = inputs.get("mark_uncommitted"), inputs.get("list_slices")
    sref = storage_ref(ctx, environ)
    st = sref.open()
    files, base = _inputs(ctx, st, sref, inputs, unc)
    limit = few(spark)
    if limit > 0 and slices.listed_objects <= limit:
        staged = _bounded((a for k in files for a in uncommitted.file_addresses(st, k, sref.roots)), limit)
        if staged is not None:
            log.info("deciding on the driver: %d listed object(s), %d staged address(es) (%s: %d)",
                     slices.listed_objects, len(staged), FEW_CONF, limit)
            done = _run_here(spark, inputs, environ, sref, files, set(staged), base, limit)
            if done is not None:
                return done
    log.info("deciding on executors: %d listed object(s) (%s: %d)", slices.listed_objects, FEW_CONF, limit)
    return _run_spark(spark, inputs, environ, sref, files, base)


def run_here(inputs: StepInputs, environ: Mapping[str, str] | None = None,
             max_keys: int = FEW) -> CandidatesResult | None:
    """
    The same decision in this process, without Spark, when the listed objects and the staged
    addresses are at most ``max_keys`` each and every part it reads is small (the task runs it
    itself instead of a spark-submit: ``spark.in_process_max_keys``); None otherwise, nothing
    written (spark-submit decides). The listed objects are read from the work location here: a
    listing this process cannot read whole (another file system, a count that differs from
    ``list_slices``'s) hands over too.
    """
    ctx = inputs.context
    unc, slices = inputs.get("mark_uncommitted"), inputs.get("list_slices")
    if max_keys <= 0 or slices.listed_objects > max_keys:
        return None
    sref = storage_ref(ctx, environ)
    st = sref.open()
    files, base = _inputs(ctx, st, sref, inputs, unc)
    staged = _bounded((a for k in files for a in uncommitted.file_addresses(st, k, sref.roots)), max_keys)
    if staged is None:
        return None
    try:
        return _run_here(None, inputs, environ, sref, files, set(staged), base, max_keys)
    except NeedsSpark as e:
        log.info("compute_candidates needs Spark: %s", e)
        return None


def _listed_here(slices) -> dict[str, tuple]:
    """
    list_slices' listing read in this process: (address, size, last_modified_ms, checksum) by
    address; :class:`NeedsSpark` unless it is a finished local folder holding exactly the objects
    ``list_slices`` counted.
    """
    folder = local_folder(slices.listed_dir)
    rows = read_listed_here(folder) if folder is not None else None
    if rows is None:
        raise NeedsSpark(f"the listing {slices.listed_dir} is not a finished local folder")
    if len(rows) != slices.listed_objects:
        raise NeedsSpark(f"the listing {slices.listed_dir} holds {len(rows)} row(s) here, list_slices counted "
                         f"{slices.listed_objects}")
    return {row[0]: row for row in rows}


def _run_here(spark, inputs: StepInputs, environ, sref: StorageRef, files: list[str], staged: set[str],
              base: IncrementalBase | None, limit: int) -> CandidatesResult | None:
    """
    The decision on the driver, for a run whose listed objects, staged addresses and carried
    addresses are :data:`FEW` each (an incremental run's): what lies in the committed parts of the run
    and its chain is found by scans that send back only those few addresses, no shuffle; the staged
    check on the driver too. None when the carried addresses are more than ``limit``: the caller decides
    on executors (nothing is written before either).
    """
    ctx = inputs.context
    unc, committed, slices = inputs.get("mark_uncommitted"), inputs.get("list_committed"), inputs.get("list_slices")
    st, n = sref.open(), parallelism(spark, ctx)
    cutoff_s = cutoff_seconds(ctx)
    carried: list[str] = []
    if base is not None:
        here = _carried_here(sref, base)  # small parts: on the driver, no Spark job (a shuffle)
        if here is None and spark is None:
            raise NeedsSpark("the base run's staged and held-back parts are not small")
        rows = sorted(here) if here is not None else [
            r[0] for r in _carried(spark, sref, base, n).limit(limit + 1).collect()]
        if len(rows) > limit:
            return None
        carried = rows
    listed = _listed_here(slices) if spark is None else {
        r[0]: r for r in spark.read.parquet(slices.listed_dir).select("address", "size", "last_modified_ms",
                                                                       "checksum").collect()}
    # what list_committed read now and, incremental, every address the chain's committed listings found
    committed_found = addresses_among(spark, sref, [committed.committed_dir, *(base.committed_dirs if base else ())],
                                      n, among=set(listed) | set(carried))
    cutoff_ms = int(cutoff_s * 1000)
    cands = [(a, size, checksum) for a, size, modified_ms, checksum in listed.values()
             if modified_ms is not None and modified_ms < cutoff_ms
             and a not in committed_found and a not in staged and is_deletable(a)]
    carried = [a for a in carried
               if a not in listed and a not in committed_found and a not in staged and is_deletable(a)]
    found: list[tuple] = []
    if carried:
        with ThreadPoolExecutor(THREADS, thread_name_prefix="carried") as pool:
            for rows in pool.map(lambda a: list(_check_carried(st, cutoff_s, [(a,)])), carried):
                found += rows
    cands += found
    check = None
    # the staged check on these rows, on the driver, however many (at most 2 x FEW): handing over to
    # executors redid the whole decision there (10,000,000 objects, 1% churn, 25,000 candidates: 161 s
    # of shuffles against 9,000,000 committed addresses and 10,000,000 identities; the identities
    # filtered where read, on the driver's side, take one scan)
    if ctx.settings.staged_check == "candidates" and unc.heads_file:
        identities = staged_check.Identities(spark, sref, _identity_dirs(committed, base), n)
        kept, check = staged_check.check(spark, ctx, sref, lakefs_ref(ctx, environ), cands, identities,
                                         committed.read_file, n)
        cands = [r for r in cands if r[0] not in kept]
        staged |= kept
    bad = [r[0] for r in cands if not is_deletable(r[0])][:5]
    if bad:  # cannot happen by construction; checked anyway before anything is written
        raise LakeFSGCError(f"refusing: candidates outside data/ or the namespace root: {bad}")
    sizes = {a: size or 0 for a, size, _ in cands}

    def write(addresses, part_dir: str, *more_dirs: str) -> tuple[int, int, PartsDir]:
        count, kept_dir = write_parts_here(addresses, st, part_dir, n, *more_dirs)
        return count, sum(sizes.get(a, 0) for a in addresses), kept_dir

    def confirmed(mark_id: str | None) -> set[str]:
        return addresses_among(spark, sref, [], n, among=sizes, keys=candidate_parts(st, mark_id)) if mark_id else set()

    return _save(ctx, sref, unc.run_id, slices, files, staged, set(sizes), write, confirmed, len(carried), len(found),
                 check)


def _run_spark(spark, inputs: StepInputs, environ, sref: StorageRef, files: list[str],
               base: IncrementalBase | None) -> CandidatesResult:
    """The decision on executors: DataFrames joined, whatever the sizes."""
    from pyspark.sql import functions as F

    ctx = inputs.context
    unc, committed, slices = inputs.get("mark_uncommitted"), inputs.get("list_committed"), inputs.get("list_slices")
    sc = spark.sparkContext
    n = parallelism(spark, ctx)
    staged = spark.createDataFrame(
        sc.parallelize(files, partitions(len(files), n)).mapPartitions(lambda ks: _uncommitted_addresses(sref, ks)),
        ADDRESS_SCHEMA).distinct().cache()
    cutoff_s = cutoff_seconds(ctx)
    listed = spark.read.parquet(slices.listed_dir)
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
        found = spark.createDataFrame(
            carried.rdd.mapPartitions(lambda rows: _check_carried(sref.open(), cutoff_s, rows)),
            "address string, size long, checksum string").cache()
        carried_found = found.count()
        cands = cands.unionByName(found)
    check = None
    if ctx.settings.staged_check == "candidates" and unc.heads_file:
        cands = cands.cache()
        t0 = time.monotonic()  # computed first, so that the check's seconds are the check's own
        log.info("%d candidate(s) before the staged check (%.1fs)", cands.count(), time.monotonic() - t0)
        identities = staged_check.Identities(spark, sref, _identity_dirs(committed, base), n)
        kept, check = staged_check.check(spark, ctx, sref, lakefs_ref(ctx, environ), cands, identities,
                                         committed.read_file, n)
        cands = cands.join(kept, on="address", how="left_anti")
        staged = staged.unionByName(kept).distinct()
    bad = cands.where(~deletable(F.col("address"))).limit(5).collect()
    if bad:  # cannot happen by construction; checked anyway before anything is written
        raise LakeFSGCError(f"refusing: candidates outside data/ or the namespace root: {[r[0] for r in bad]}")
    cands = cands.cache()

    def write(df, part_dir: str, *more_dirs: str) -> tuple[int, int, PartsDir]:
        return write_parts(df, sref, part_dir, n, *more_dirs)

    def confirmed(mark_id: str | None):
        if mark_id is None:
            return cands.limit(0)
        earlier = read_parts(spark, sref, [], n, keys=candidate_parts(sref.open(), mark_id))
        return cands.join(earlier, on="address", how="left_semi")

    try:
        return _save(ctx, sref, unc.run_id, slices, files, staged, cands, write, confirmed, carried_checked,
                     carried_found, check)
    finally:
        cands.unpersist()
        staged.unpersist()


def _save(ctx, sref: StorageRef, mark_id: str, slices, files: list[str], staged, cands, write, confirmed,
          carried_checked: int, carried_found: int, check) -> CandidatesResult:
    """
    The mark written, by either engine: ``staged`` and ``cands`` (of the engine's kind) through
    ``write(them, part_dir, *more_dirs) -> (rows, bytes, PartsDir)`` (the same parts in each folder);
    ``confirmed(mark_id or None)``: which of ``cands`` that earlier mark's candidates hold (delayed
    confirmation; None: no such mark).
    """
    st = sref.open()
    confirm = ctx.settings.confirm_after_seconds
    reason = confirmed_by = None
    unreadable: list[str] = []
    if confirm <= 0:  # decided before anything is written (the driver's scan may hand over: NeedsSpark)
        to_delete = cands
    else:
        before = parse_iso(ctx.start_time) - timedelta(seconds=confirm)
        prev, unreadable = confirming_mark(iter_marks(st), before, exclude=mark_id)
        to_delete = confirmed(prev[0] if prev else None)
        if prev is None:
            reason = f"no successful mark started at or before {iso(before)}"
        else:
            confirmed_by = prev[0]
            reason = f"not yet a candidate in mark {prev[0]} (started {prev[1].start_time})"
    # a retried attempt must not leave parts of an earlier attempt behind
    for part_dir in (layout.candidates_dir(mark_id), layout.deleted_dir(mark_id),
                     layout.state_uncommitted_dir(mark_id)):
        clear(sref, part_dir)
    write_summary(st, layout.summary_key(mark_id), mark_started(ctx, mark_id, slices.first_slice))
    _, _, kept_staged = write(staged, layout.state_uncommitted_dir(mark_id))  # for later runs
    if to_delete is cands:  # every candidate goes: one pass writes both folders
        total, total_bytes, _ = write(cands, layout.candidates_dir(mark_id), layout.deleted_dir(mark_id))
        count, nbytes = total, total_bytes
    else:
        total, total_bytes, _ = write(cands, layout.candidates_dir(mark_id))
        count, nbytes, _ = write(to_delete, layout.deleted_dir(mark_id))
    return CandidatesResult(report_dir=st.full_uri(layout.report_dir(mark_id)), uncommitted_files=len(files),
                            candidates=total, candidate_bytes=total_bytes, to_delete=count, to_delete_bytes=nbytes,
                            held_back=total - count, confirm_after_seconds=confirm, held_back_reason=reason,
                            confirmed_by_mark=confirmed_by, unreadable_marks=tuple(unreadable),
                            uncommitted_dir=kept_staged, carried_checked=carried_checked,
                            carried_candidates=carried_found, staged_check=ctx.settings.staged_check,
                            **(_check_fields(check) if check else {}))


def _identity_dirs(committed, base: IncrementalBase | None) -> tuple[PartsDir, ...]:
    return (committed.identity_dir, *(base.identity_dirs if base else ()))


def _check_fields(check) -> dict:
    return {"staged_suspicious": check.suspicious, "staged_stats": check.stats, "staged_kept": check.kept,
            "commits_since": check.commits_since, "committed_since_kept": check.committed_since_kept,
            "staged_check_seconds": check.seconds}
