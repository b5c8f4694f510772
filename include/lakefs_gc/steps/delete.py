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
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lakefs_gc.contract import DeleteCounts, DeleteResult, Restorability, StepInputs
from lakefs_gc.errors import SweepRefused
from lakefs_gc.gc.guards import blast_radius
from lakefs_gc.report import formats, layout
from lakefs_gc.report.marks import parquet_parts
from lakefs_gc.sweeping.deleter import DeletePolicy
from lakefs_gc.sweeping.parts import add_counts, sweep_part
from lakefs_gc.sweeping.restore import purge_quarantine, restorability, start_quarantine

if TYPE_CHECKING:
    from lakefs_gc.engine import Engine
    from lakefs_gc.spark.runtime import StorageRef
    from lakefs_gc.storage.base import Storage

log = logging.getLogger(__name__)


def _sweep_parts(
    sref: StorageRef,
    sdir: str,
    policy: DeletePolicy,
    part_keys: Iterable[str],
    swept: Any = None,
    quarantine: bool = False,
) -> Iterator[Any]:
    st = sref.open()
    for key in part_keys:
        counts = sweep_part(st, key, sdir, policy, quarantine=quarantine)
        if swept is not None:
            swept.add(counts.keys)
        yield counts


def delete_policy(inputs: StepInputs, concurrent_tasks: int) -> DeletePolicy:
    """
    Return the deleter settings of a run.

    The global rate is split evenly across the delete tasks that can run at once, so together they
    never exceed it.
    """
    s = inputs.context.settings
    return DeletePolicy(
        rate=s.delete_rate / max(1, concurrent_tasks) if s.delete_rate > 0 else 0.0,
        batch_size=s.delete_batch_size,
        max_attempts=s.delete_max_attempts,
        dry_run=s.dry_run,
    )


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
    files = parquet_parts(st, layout.deleted_dir(mark_id))
    to_delete = sum(formats.count_rows(st, k) for k in files)
    blast_radius(mark_id, to_delete, inputs.listed_objects(), s.max_delete_share, s.max_delete_count)
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
    sref = engine.sref
    st, files, to_delete, sdir = _planned(inputs, sref)
    engine.admit("key(s) to sweep", to_delete)
    concurrency = max(1, min(s.delete_concurrency or engine.n, max(1, len(files))))
    policy = delete_policy(inputs, engine.at_once(concurrency))
    quarantine = bool(s.quarantine_days)
    results = engine.map(
        "delete",
        "keys swept",
        files,
        lambda keys, swept: _sweep_parts(sref, sdir, policy, keys, swept, quarantine),
        concurrency,
        total=to_delete,
    )
    return _result(inputs, st, sdir, add_counts(results), concurrency)


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
    return DeleteResult(
        counts=counts,
        dry_run=s.dry_run,
        concurrency=concurrency,
        rate=s.delete_rate,
        sweep_dir=st.full_uri(sdir),
        dead_letters=dead_letters,
        incomplete=incomplete,
        soft_delete_days=soft_delete,
        restorable=_restorability(st, now, s.quarantine_days, sdir),
        quarantine_purged=purged,
    )


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
