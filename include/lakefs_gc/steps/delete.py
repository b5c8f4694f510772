"""
Spark step ``delete``: the sweep. Deletes the mark's ``deleted/`` list, one report part per
Spark task, through :mod:`lakefs_gc.sweeping.parts` (rate-limited, retried, resumable), after the
blast-radius guard. Keys that still fail are dead letters: the result says so in ``incomplete``
and the shell fails the task.

A mark of few keys (:data:`IN_PROCESS_MAX_KEYS`) is swept by :func:`run_here` in the delete task's
own process, without Spark: a spark-submit costs 10 s or more before it deletes anything.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from lakefs_gc.contract import DeleteResult, Restorability, StepInputs
from lakefs_gc.errors import SweepRefused
from lakefs_gc.gc.guards import blast_radius
from lakefs_gc.progress import watch
from lakefs_gc.report import formats, layout
from lakefs_gc.report.marks import parquet_parts
from lakefs_gc.spark.runtime import StorageRef, parallelism, storage_ref
from lakefs_gc.sweeping.deleter import DeletePolicy
from lakefs_gc.sweeping.parts import add_counts, sweep_part
from lakefs_gc.sweeping.restore import purge_quarantine, restorability, start_quarantine

log = logging.getLogger(__name__)


def _sweep_parts(sref: StorageRef, sdir: str, policy: DeletePolicy, part_keys, swept=None, quarantine=False):
    st = sref.open()
    for key in part_keys:
        counts = sweep_part(st, key, sdir, policy, quarantine=quarantine)
        if swept is not None:
            swept.add(counts.keys)
        yield counts


def delete_policy(inputs: StepInputs, concurrent_tasks: int) -> DeletePolicy:
    """
    The deleter settings of a run; the global rate is split evenly across the delete tasks that
    can run at once, so together they never exceed it.
    """
    s = inputs.context.settings
    return DeletePolicy(rate=s.delete_rate / max(1, concurrent_tasks) if s.delete_rate > 0 else 0.0,
                        batch_size=s.delete_batch_size, max_attempts=s.delete_max_attempts, dry_run=s.dry_run)


def _planned(inputs: StepInputs, environ: Mapping[str, str] | None):
    """
    What the sweep deletes (the mark's ``deleted/`` parts and their key count), after the
    blast-radius guard; with ``quarantine_days`` (``local://``), its quarantine recorded first.
    """
    ctx = inputs.context
    s = ctx.settings
    mark_id = inputs.mark_id()
    sref = storage_ref(ctx, environ)
    st = sref.open()
    if not st.exists(layout.summary_key(mark_id)):
        raise SweepRefused(f"mark {mark_id} has no summary.json at {st.full_uri(layout.report_dir(mark_id))}: "
                           f"nothing to sweep")
    files = parquet_parts(st, layout.deleted_dir(mark_id))
    to_delete = sum(formats.count_rows(st, k) for k in files)
    blast_radius(mark_id, to_delete, inputs.listed_objects(), s.max_delete_share, s.max_delete_count)
    sdir = layout.sweep_dir(mark_id, ctx.airflow_run_id)
    if s.quarantine_days and not s.dry_run and files:
        start_quarantine(st, sdir, s.quarantine_days, datetime.now(UTC))
    return sref, st, files, to_delete, sdir


def run(spark, inputs: StepInputs, environ: Mapping[str, str] | None = None) -> DeleteResult:
    ctx = inputs.context
    s = ctx.settings
    sref, st, files, to_delete, sdir = _planned(inputs, environ)
    sc = spark.sparkContext
    concurrency = max(1, min(s.delete_concurrency or parallelism(spark, ctx), max(1, len(files))))
    policy = delete_policy(inputs, min(concurrency, sc.defaultParallelism))
    quarantine = bool(s.quarantine_days)
    with watch(spark, "delete", "keys swept", total=to_delete) as swept:
        results = sc.parallelize(files, concurrency).mapPartitions(
            lambda ks: _sweep_parts(sref, sdir, policy, ks, swept, quarantine)).collect() if files else []
    return _result(inputs, st, sdir, add_counts(results), concurrency)


IN_PROCESS_MAX_KEYS = 10_000  # a sweep of at most this many keys runs without Spark (run_here)


def run_here(inputs: StepInputs, environ: Mapping[str, str] | None = None,
             max_keys: int = IN_PROCESS_MAX_KEYS) -> DeleteResult | None:
    """
    The same sweep in this process, without Spark, when the mark has at most ``max_keys`` keys
    (the delete task runs it itself instead of a spark-submit); None when it has more (nothing
    was deleted). The same guard, parts, deleter, report parts and result; the parts are swept
    by threads instead of Spark tasks, as many as Spark would run.
    """
    ctx = inputs.context
    s = ctx.settings
    sref, st, files, to_delete, sdir = _planned(inputs, environ)
    if to_delete > max_keys:
        return None
    concurrency = max(1, min(s.delete_concurrency or ctx.parallelism or 2, max(1, len(files))))
    policy = delete_policy(inputs, concurrency)
    with ThreadPoolExecutor(concurrency, thread_name_prefix="delete") as pool:
        results = list(pool.map(lambda key: next(_sweep_parts(sref, sdir, policy, [key], None,
                                                              bool(s.quarantine_days))), files))
    return _result(inputs, st, sdir, add_counts(results), concurrency)


def _result(inputs: StepInputs, st, sdir: str, counts, concurrency: int) -> DeleteResult:
    s = inputs.context.settings
    dead_letters = st.full_uri(layout.dead_letters_dir(sdir)) if counts.failed else None
    incomplete = (f"{counts.failed} keys could not be deleted after retries; dead letters (key, error_code, "
                  f"message, attempts) at {dead_letters}; a later sweep of the same mark retries them. The task "
                  f"fails so they are not forgotten") if counts.failed else None
    # Azure blob soft delete keeps deleted blobs (and bills them) for its retention period
    soft_delete = st.soft_delete_days() if hasattr(st, "soft_delete_days") and counts.deleted else None
    now = datetime.now(UTC)
    purged = 0 if s.dry_run else _purge(st, now)
    return DeleteResult(counts=counts, dry_run=s.dry_run, concurrency=concurrency, rate=s.delete_rate,
                        sweep_dir=st.full_uri(sdir), dead_letters=dead_letters, incomplete=incomplete,
                        soft_delete_days=soft_delete, restorable=_restorability(st, now, s.quarantine_days, sdir),
                        quarantine_purged=purged)


def _restorability(st, now: datetime, quarantine_days: int, sdir: str) -> Restorability:
    """Never fails the sweep that has run: a store that cannot say is "unknown"."""
    try:
        return restorability(st, now, quarantine_days, sdir)
    except Exception as exc:
        log.warning("could not tell whether this sweep is restorable: %s", exc)
        return Restorability("unknown", None, None, f"could not be read: {exc}")


def _purge(st, now: datetime) -> int:
    """
    Earlier sweeps' quarantines whose days have passed (local://); a failure is logged, not fatal:
    the files stay until a later sweep purges them.
    """
    try:
        n = purge_quarantine(st, now)
    except Exception as exc:
        log.warning("could not purge ended quarantines: %s", exc)
        return 0
    if n:
        log.info("purged %d quarantined file(s) of earlier sweeps (their quarantine days had passed)", n)
    return n
