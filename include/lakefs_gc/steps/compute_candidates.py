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

One decision, written once (:mod:`lakefs_gc.gc.decision`), on the engine (:mod:`lakefs_gc.engine`),
which decides where it runs: a run with few listed objects (an incremental run's) on a Spark job's
driver, the committed folders asked only for those by one scan; any other on executors, DataFrames
joined; a small run in its Airflow task's own process. All write the same mark
(tests/steps/test_compute_candidates.py, tests/engine/test_placement.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from contextlib import ExitStack
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar, cast

from lakefs_gc.contract import (
    CandidatesResult,
    CommittedResult,
    IncrementalBase,
    PartsDir,
    RunContext,
    SlicesResult,
    StepInputs,
)
from lakefs_gc.errors import LakeFSGCError
from lakefs_gc.gc.confirmation import confirming_mark
from lakefs_gc.gc.decision import carried_candidates, compute_candidates
from lakefs_gc.listing import staged as staged_check, uncommitted
from lakefs_gc.report import formats, layout
from lakefs_gc.report.marks import iter_marks
from lakefs_gc.report.summary import mark_started, write_summary
from lakefs_gc.spark.addresses import clear
from lakefs_gc.spark.runtime import StorageRef, cutoff_seconds, lakefs_ref
from lakefs_gc.timestamps import iso, parse_iso

if TYPE_CHECKING:
    from lakefs_gc.engine import Engine

log = logging.getLogger(__name__)

R = TypeVar("R")  # the engine's rows
A = TypeVar("A")  # the engine's addresses
H = TypeVar("H")


def _inputs(inputs: StepInputs, sref: StorageRef) -> tuple[list[str], IncrementalBase | None]:
    """Return the staged files to read and the base run, checked (fails closed on a missing input)."""
    ctx = inputs.context
    st = sref.open()
    unc = inputs.get("mark_uncommitted")
    files = uncommitted.uncommitted_files(st, sref.roots, unc.run_id, unc.locations)
    if unc.staged_file:  # live staged addresses lakeFS's mark lacked (mark_uncommitted)
        if not st.exists(unc.staged_file):
            raise LakeFSGCError(
                f"the staged addresses lakeFS's mark lacked ({st.full_uri(unc.staged_file)}) are "
                f"gone; re-run the whole DAG run"
            )
        files.append(unc.staged_file)
    base = ctx.incremental_base()
    if (
        ctx.settings.staged_check == "candidates"
        and unc.heads_file
        and (
            inputs.get("list_committed").identity_dir is None
            or (base is not None and len(base.identity_dirs) != len(base.committed_dirs))
        )
    ):
        raise LakeFSGCError(
            "list_committed kept no identities of the entries it read; the staged check cannot run. "
            "Nothing was deleted; re-run the whole DAG run (flow=clean)"
        )
    return files, base


def run(engine: Engine[Any, Any], inputs: StepInputs, environ: Mapping[str, str] | None = None) -> CandidatesResult:
    """
    Decide and write the mark, on ``engine``: in this process, on a Spark job's driver or on executors.

    Where is the engine's choice (:meth:`lakefs_gc.engine.Engine.placed`), by the number of listed
    objects; an engine that cannot take the run raises :class:`lakefs_gc.engine.NeedsSpark` before
    anything is written.
    """
    files, base = _inputs(inputs, engine.sref)
    listed_objects = inputs.get("list_slices").listed_objects
    return engine.placed("compute_candidates", listed_objects, lambda on: _decide(on, inputs, environ, files, base))


def _decide(
    engine: Engine[R, A],
    inputs: StepInputs,
    environ: Mapping[str, str] | None,
    files: list[str],
    base: IncrementalBase | None,
) -> CandidatesResult:
    """
    Return the mark written: the decision (:mod:`lakefs_gc.gc.decision`) on ``engine``.

    What lies in the committed parts of the run and its chain is asked of the engine; an incremental
    run's carried addresses are decided as the listed ones and checked in storage; then the staged
    check, and :func:`_save`.
    """
    ctx = inputs.context
    rel = engine.rel
    unc, committed, slices = inputs.get("mark_uncommitted"), inputs.get("list_committed"), inputs.get("list_slices")
    cutoff_s = cutoff_seconds(ctx)
    with ExitStack() as stack:

        def held(rows: H) -> H:  # computed once, kept until the mark is written (Spark: cached)
            return stack.enter_context(engine.hold(rows))

        carried = engine.carried(base) if base is not None else None
        listed = engine.listed(slices)
        staged = held(engine.staged(files))
        # what list_committed read now (and found at the keep rules' paths) and, incremental, every
        # address the chain's committed listings found
        by_paths = (committed.kept_by_paths,) if committed.kept_by_paths else ()
        committed_found = engine.committed(
            [committed.committed_dir, *by_paths, *(base.committed_dirs if base else ())], listed, carried
        )
        cands = compute_candidates(rel, listed, committed_found, staged, int(cutoff_s * 1000))
        carried_checked = carried_found = 0
        if carried is not None:
            rest = held(carried_candidates(rel, carried, listed, committed_found, staged))
            carried_checked = engine.count(rest)
            found = held(engine.still_garbage(rest, cutoff_s))
            carried_found = engine.count(found)
            cands = engine.union(cands, found)
        check = None
        if ctx.settings.staged_check == "candidates" and unc.heads_file:
            cands = held(cands)
            t0 = time.monotonic()  # computed first, so that the check's seconds are the check's own
            log.info("%d candidate(s) before the staged check (%.1fs)", engine.count(cands), time.monotonic() - t0)
            kept, check = staged_check.check(
                engine, ctx, lakefs_ref(ctx, environ), cands, _identity_dirs(committed, base), committed.read_file
            )
            kept = held(kept)
            cands = rel.minus(cands, kept)
            staged = held(engine.union_addresses(staged, kept))
        bad = engine.sample_undeletable(cands, 5)
        if bad:  # cannot happen by construction; checked anyway before anything is written
            raise LakeFSGCError(f"refusing: candidates outside data/ or the namespace root: {bad}")
        return _save(engine, ctx, unc.run_id, slices, files, staged, held(cands), carried_checked, carried_found, check)


def _save(
    engine: Engine[R, A],
    ctx: RunContext,
    mark_id: str,
    slices: SlicesResult,
    files: list[str],
    staged: A,
    cands: R,
    carried_checked: int,
    carried_found: int,
    check: staged_check.CheckCounts | None,
) -> CandidatesResult:
    """
    Write the mark, on either engine.

    ``staged`` and ``cands`` are of the engine's kind; with delayed confirmation, only the
    candidates an earlier mark also found go to ``deleted/``.
    """
    st = engine.sref.open()
    confirm = ctx.settings.confirm_after_seconds
    reason = confirmed_by = None
    unreadable: list[str] = []
    if confirm <= 0:  # decided before anything is written (the driver's scan may hand over to executors)
        to_delete = cands
    else:
        before = parse_iso(ctx.start_time) - timedelta(seconds=confirm)
        prev, unreadable = confirming_mark(iter_marks(st), before, exclude=mark_id)
        to_delete = engine.earlier_candidates(cands, prev[0] if prev else None)
        if prev is None:
            reason = f"no successful mark started at or before {iso(before)}"
        else:
            confirmed_by = prev[0]
            reason = f"not yet a candidate in mark {prev[0]} (started {prev[1].start_time})"
    # a retried attempt must not leave parts of an earlier attempt behind
    for part_dir in (
        layout.candidates_dir(mark_id),
        layout.deleted_dir(mark_id),
        layout.state_uncommitted_dir(mark_id),
    ):
        clear(engine.sref, part_dir)
    write_summary(st, layout.summary_key(mark_id), mark_started(ctx, mark_id, slices.first_slice))
    reads_file = None
    if check is not None and check.branch_reads:
        reads_file = layout.state_branch_reads_file(mark_id, "compute_candidates")
        formats.write_branch_reads(st, reads_file, check.branch_reads)
    _, _, kept_staged = engine.write(staged, layout.state_uncommitted_dir(mark_id))  # for later runs
    if to_delete is cands:  # every candidate goes: one pass writes both folders
        total, total_bytes, _ = engine.write(cands, layout.candidates_dir(mark_id), layout.deleted_dir(mark_id))
        count, nbytes = total, total_bytes
    else:
        total, total_bytes, _ = engine.write(cands, layout.candidates_dir(mark_id))
        count, nbytes, _ = engine.write(to_delete, layout.deleted_dir(mark_id))
    return CandidatesResult(
        report_dir=st.full_uri(layout.report_dir(mark_id)),
        uncommitted_files=len(files),
        candidates=total,
        candidate_bytes=total_bytes,
        to_delete=count,
        to_delete_bytes=nbytes,
        held_back=total - count,
        confirm_after_seconds=confirm,
        held_back_reason=reason,
        confirmed_by_mark=confirmed_by,
        unreadable_marks=tuple(unreadable),
        uncommitted_dir=kept_staged,
        carried_checked=carried_checked,
        carried_candidates=carried_found,
        staged_check=ctx.settings.staged_check,
        branch_reads_file=reads_file,
        **(_check_fields(check) if check else {}),
    )


def _identity_dirs(committed: CommittedResult, base: IncrementalBase | None) -> tuple[PartsDir, ...]:
    # set whenever the staged check runs on the candidates (_inputs refuses the run otherwise)
    return (cast("PartsDir", committed.identity_dir), *(base.identity_dirs if base else ()))


def _check_fields(check: staged_check.CheckCounts) -> dict[str, Any]:
    return {
        "staged_suspicious": check.suspicious,
        "staged_stats": check.stats,
        "staged_kept": check.kept,
        "commits_since": check.commits_since,
        "committed_since_kept": check.committed_since_kept,
        "staged_check_seconds": check.seconds,
    }
