"""
Spark step ``delete``: the sweep.

Deletes the mark's ``deleted/`` list, one report part per Spark task, through
:mod:`lakefs_gc.sweeping.parts` (rate-limited, retried, resumable), after the blast-radius guard.
Keys that still fail are dead letters: the result says so in ``incomplete`` and the shell fails the
task.

A mark of few keys is swept in the delete task's own process, without Spark (the engine's
placement, ``spark.in_process_max_keys``): a spark-submit costs 10 s or more before it deletes
anything.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lakefs_gc.contract import (
    APPROVAL_TASK,
    STILL_BILLED,
    DeleteCounts,
    DeleteResult,
    FreedOn,
    Freeing,
    Restorability,
    StepInputs,
)
from lakefs_gc.errors import SweepRefused
from lakefs_gc.gc.approval import sweep_size
from lakefs_gc.gc.guards import sweep_guard
from lakefs_gc.report import layout
from lakefs_gc.sweeping.deleter import DeletePolicy
from lakefs_gc.sweeping.parts import add_counts, sweep_part
from lakefs_gc.sweeping.restore import purge_quarantine, restorability, start_quarantine
from lakefs_gc.sweeping.shared_rate import AdaptiveRate
from lakefs_gc.sweeping.uploads import sweep_uploads, with_uploads
from lakefs_gc.timestamps import parse_iso
from lakefs_gc.words import plural

if TYPE_CHECKING:
    from lakefs_gc.engine import Engine
    from lakefs_gc.spark.runtime import StorageRef
    from lakefs_gc.storage.base import Storage
    from lakefs_gc.sweeping.shared_rate import RateSource

log = logging.getLogger(__name__)


def _sweep_parts(
    sref: StorageRef,
    sdir: str,
    policy: DeletePolicy,
    part_keys: Iterable[str],
    swept: Any = None,
    quarantine: bool = False,
    rates: RateSource | None = None,
) -> Iterator[Any]:
    st = sref.open()
    rate = rates.open() if rates is not None else None  # the run's shared rate (None: each part its own)
    for key in part_keys:
        counts = sweep_part(st, key, sdir, policy, quarantine=quarantine, rate=rate)
        if swept is not None:
            swept.add(counts.keys)
        yield counts


def delete_policy(inputs: StepInputs, concurrent_tasks: int, adaptive: bool = True) -> DeletePolicy:
    """
    Return the deleter settings of a run.

    ``adaptive`` (the sweep's): the rate is the run's whole ``delete_rate``, the ceiling of the one
    rate its delete tasks share (:class:`lakefs_gc.sweeping.shared_rate.AdaptiveRate`), throttled
    keys back in the queue. Not ``adaptive`` (the deleter before, kept for the bench): the rate split
    evenly across the ``concurrent_tasks`` that can run at once, each backing off alone.
    """
    s = inputs.context.settings
    return DeletePolicy(
        rate=s.delete_rate if adaptive else even_split(s.delete_rate, concurrent_tasks),
        batch_size=s.delete_batch_size,
        max_attempts=s.delete_max_attempts,
        dry_run=s.dry_run,
        adaptive=adaptive,
    )


def even_split(rate: float, concurrent_tasks: int) -> float:
    """Return each of ``concurrent_tasks``' share of ``rate`` keys/s (0: unlimited): together never more."""
    return rate / max(1, concurrent_tasks) if rate > 0 else 0.0


def _planned(inputs: StepInputs, sref: StorageRef) -> tuple[Storage, list[str], int, str]:
    """
    Return what the sweep deletes (the mark's ``deleted/`` parts and their key count), after the blast-radius guard.

    With ``quarantine_days`` (``local://``), its quarantine recorded first. Also the namespace's
    storage and the sweep's folder.
    """
    ctx = inputs.context
    s = ctx.settings
    mark_id = inputs.mark_id()
    st = sref.open()
    if not st.exists(layout.summary_key(mark_id)):
        raise SweepRefused(
            f"mark {mark_id} has no summary.json at {st.full_uri(layout.report_dir(mark_id))}: nothing to sweep"
        )
    files, to_delete = sweep_size(st, mark_id)  # what approve_sweep showed a person, counted alike
    sweep_guard(mark_id, to_delete, inputs.listed_objects(), s, ctx.approval, inputs.get(APPROVAL_TASK, required=False))
    sdir = layout.sweep_dir(mark_id, ctx.airflow_run_id)
    if s.quarantine_days and not s.dry_run and files:
        start_quarantine(st, sdir, s.quarantine_days, datetime.now(UTC))
    return st, files, to_delete, sdir


def run(engine: Engine[Any, Any], inputs: StepInputs, environ: Mapping[str, str] | None = None) -> DeleteResult:
    """
    Sweep the mark on ``engine``: its parts swept by Spark tasks, or by threads in this process.

    The same guard, parts, deleter, report parts and result on either engine; an engine given a
    mark of more keys than it takes raises :class:`lakefs_gc.engine.NeedsSpark` (nothing deleted).
    """
    s = inputs.context.settings
    approval = inputs.get(APPROVAL_TASK, required=False)
    if approval is not None and approval.decision == "rejected":  # a person said no: nothing is swept
        log.info(
            "the sweep of mark %s was rejected by %s at %s: nothing deleted", approval.mark_id, approval.by, approval.at
        )
        return DeleteResult(skipped="rejected", approval=approval)
    sref = engine.sref
    st, files, to_delete, sdir = _planned(inputs, sref)
    engine.admit("key(s) to sweep", to_delete)
    concurrency = max(1, min(s.delete_concurrency or engine.n, max(1, len(files))))
    at_once = engine.at_once(concurrency)
    policy = delete_policy(inputs, at_once)
    quarantine = bool(s.quarantine_days)
    shared = AdaptiveRate(s.delete_rate)  # one rate for every delete task (on Spark: served by this driver)
    with engine.serve_rate(shared, even_split(s.delete_rate, at_once)) as rates:
        results = engine.map(
            "delete",
            "keys swept",
            files,
            lambda keys, swept: _sweep_parts(sref, sdir, policy, keys, swept, quarantine, rates),
            concurrency,
            total=to_delete,
        )
    rate = shared.figures()
    if rate.cuts:
        log.info(
            "the delete rate was halved %s on %s (lowest %.0f keys/s, last %.0f)",
            plural(rate.cuts, "time"),
            plural(rate.throttles, "throttled request"),
            rate.lowest or 0,
            rate.final or 0,
        )
    result = replace(
        _result(inputs, st, sdir, add_counts(results), concurrency),
        rate_cuts=rate.cuts,
        rate_lowest=rate.lowest,
        rate_final=rate.final,
    )
    # Incomplete multipart uploads, once the guard let the sweep run (a refused sweep aborts none). They
    # do not count toward the blast radius: it bounds how much of what the run listed a wrong decision
    # could delete, and an upload is neither listed nor readable by any commit; its guard is its age
    uploads = sweep_uploads(
        st, parse_iso(inputs.context.start_time), s.abort_uploads_after_days, delete_policy(inputs, 1)
    )
    return with_uploads(result, uploads)


def _result(inputs: StepInputs, st: Storage, sdir: str, counts: DeleteCounts, concurrency: int) -> DeleteResult:
    s = inputs.context.settings
    dead_letters = st.full_uri(layout.dead_letters_dir(sdir)) if counts.failed else None
    incomplete = (
        (
            f"{counts.failed} keys could not be deleted after retries; dead letters (key, error_code, "
            f"message, attempts) at {dead_letters}; a later sweep of the same mark retries them. The task "
            f"fails so they are not forgotten"
        )
        if counts.failed
        else None
    )
    # a store's soft delete (Azure's blob soft delete) keeps deleted objects (and bills them) for its retention period
    soft_delete = st.soft_delete_days() if counts.deleted else None
    now = datetime.now(UTC)
    purged = 0 if s.dry_run else _purge(st, now)
    restorable = _restorability(st, now, s.quarantine_days, sdir)
    freeing = _freeing(st, now, s.quarantine_days, restorable.until if st.quarantines else None)
    freed_now, still_billed = (0, 0) if s.dry_run else (None, None)  # a dry run frees nothing
    freed_later: tuple[FreedOn, ...] = ()
    swept = _swept_bytes(inputs, counts)
    if swept is not None and not s.dry_run:
        freed_now, freed_later, still_billed = freeing.split(swept)
    return DeleteResult(
        counts=counts,
        dry_run=s.dry_run,
        concurrency=concurrency,
        rate=s.delete_rate,
        sweep_dir=st.full_uri(sdir),
        dead_letters=dead_letters,
        incomplete=incomplete,
        soft_delete_days=soft_delete,
        restorable=restorable,
        quarantine_purged=purged,
        freeing=freeing,
        freed_now_bytes=freed_now,
        freed_later=freed_later,
        still_billed_bytes=still_billed,
        approval=inputs.get(APPROVAL_TASK, required=False),
    )


def _swept_bytes(inputs: StepInputs, counts: DeleteCounts) -> int | None:
    """
    Return the bytes this sweep deleted: the mark's (its to_delete_bytes), as the run's reclaimed bytes are.

    None when not known: a sweep with dead letters (which keys stayed is not known by size), or a
    mark whose bytes the run does not have (sweep_only).
    """
    cand = inputs.get("compute_candidates", required=False)
    if counts.failed or cand is None:
        return None
    return int(cand.to_delete_bytes)


def _freeing(st: Storage, now: datetime, quarantine_days: int, quarantine_until: str | None) -> Freeing:
    """Never fails the sweep that has run: a store that cannot say is "still billed"."""
    try:
        return st.freeing(now, quarantine_days, quarantine_until)
    except Exception as exc:
        log.warning("could not tell what this sweep frees on the bill: %s", exc)
        return Freeing(STILL_BILLED, None, "unknown", f"could not be read ({exc}): counted as still billed")


def _restorability(st: Storage, now: datetime, quarantine_days: int, sdir: str) -> Restorability:
    """Never fails the sweep that has run: a store that cannot say is "unknown"."""
    try:
        return restorability(st, now, quarantine_days, sdir)
    except Exception as exc:
        log.warning("could not tell whether this sweep is restorable: %s", exc)
        return Restorability("unknown", None, None, f"could not be read: {exc}")


def _purge(st: Storage, now: datetime) -> int:
    """
    Purge earlier sweeps' quarantines whose days have passed (local://); return how many files.

    A failure is logged, not fatal: the files stay until a later sweep purges them.
    """
    try:
        n = purge_quarantine(st, now)
    except Exception as exc:
        log.warning("could not purge ended quarantines: %s", exc)
        return 0
    if n:
        log.info("purged %d quarantined file(s) of earlier sweeps (their quarantine days had passed)", n)
    return n
