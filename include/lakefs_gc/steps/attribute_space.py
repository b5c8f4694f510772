"""
Spark step ``attribute_space``: where the namespace's bytes go at this run.

Between ``compute_candidates`` and ``delete``: every object ``list_slices`` listed, attributed to
what holds it (:mod:`lakefs_gc.gc.attribution`): a branch's HEAD, a branch's retention window, a
branch's staged entries, a tag's commit; or unreferenced: in this run's ``deleted/`` list, held
back (delayed confirmation, the staged check), or too young. The holders come from lakeFS (the
documented retention rules over each branch's log, the tags, each branch's staged changes), the
ranges are read with their holders, and only the sums by holder set reach the driver
(:mod:`lakefs_gc.listing.holders`). Written as ``space.json`` beside the summary
(:func:`lakefs_gc.report.formats.write_space`), the totals in the result.

Clean runs only: an incremental run lists only new slices, so its own attribution would miss the
rest of the namespace; the chain's clean run's ``space.json`` stands (the summary says so). A
report, never a decision: nothing it reads changes what is deleted, and when lakeFS cannot give an
input (a rule, a log, a branch's changes) the step says why in ``skipped`` and the run goes on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lakefs_gc.contract import CandidatesResult, SlicesResult, SpaceResult, StepInputs, UncommittedResult
from lakefs_gc.errors import LakeFSGCError
from lakefs_gc.gc.attribution import (
    DELETED,
    HEAD,
    HELD_BACK,
    RETENTION,
    STAGED,
    TAG,
    YOUNG,
    Attribution,
    Holders,
    attribute,
    commit_holders,
    stale_branches,
)
from lakefs_gc.listing.holders import range_masks, staged_masks
from lakefs_gc.listing.uncommitted import staged_by_branch
from lakefs_gc.report import formats, layout
from lakefs_gc.report.marks import parquet_parts
from lakefs_gc.spark.runtime import cutoff_seconds, lakefs_ref
from lakefs_gc.timestamps import iso, parse_iso

if TYPE_CHECKING:
    from lakefs_gc.engine import Engine
    from lakefs_gc.lakefs.client import LakeFSClient

log = logging.getLogger(__name__)


def run(engine: Engine[Any, Any], inputs: StepInputs, environ: Mapping[str, str] | None = None) -> SpaceResult:
    """
    Attribute the namespace's listed objects, on ``engine``; write ``space.json``.

    Summed where the engine places it (:meth:`lakefs_gc.engine.Engine.placed`); an engine that
    cannot take the listing raises :class:`lakefs_gc.engine.NeedsSpark` before asking lakeFS.
    """
    ctx = inputs.context
    t0 = time.monotonic()
    if not ctx.settings.attribute_space:
        return SpaceResult(skipped="switched off (Param attribute_space)")
    if ctx.flow == "incremental":
        return SpaceResult(
            skipped="an incremental run lists only new slices: the attribution of its chain's clean run stands"
        )
    slices: SlicesResult = inputs.get("list_slices")
    engine.admit("listed object(s)", slices.listed_objects)
    from lakefs_sdk.exceptions import ApiException

    try:
        with lakefs_ref(ctx, environ).client() as client:
            gathered = _holders(client, ctx.repository, engine, ctx, _branch_reads(inputs, engine))
    except (LakeFSGCError, ApiException) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        log.warning("no attribution of space this run: %s", reason)
        return SpaceResult(skipped=f"lakeFS could not give an input: {reason}", seconds=round(time.monotonic() - t0, 3))
    holders, ranges, staged, heads, rules = gathered
    t_lakefs = time.monotonic() - t0
    tag_bits = holders.mask(h for h in holders.holders if h.kind == TAG)
    mark_id = inputs.mark_id()
    st = engine.sref.open()
    deleted_keys = parquet_parts(st, layout.deleted_dir(mark_id))
    cutoff_ms = int(cutoff_seconds(ctx) * 1000)
    summed = engine.placed(
        "attribute_space",
        slices.listed_objects,
        lambda on: on.space_groups(ranges, staged, slices, deleted_keys, cutoff_ms, tag_bits),
    )
    attribution = attribute(((mask, state, n, b) for (mask, state), (n, b) in summed.items()), holders)
    now = parse_iso(ctx.start_time).timestamp()
    days = ctx.settings.stale_branch_days
    stale = stale_branches(attribution, {b: t for b, (_, t) in heads.items()}, now, days)
    key = layout.space_key(mark_id)
    formats.write_space(
        st,
        key,
        {
            "mark_id": mark_id,
            "repository": ctx.repository,
            "computed_at": ctx.start_time,
            "cutoff": ctx.cutoff_time,
            "rules": rules,
            "heads": {
                b: {"commit": c, "created": iso(datetime.fromtimestamp(t, UTC))} for b, (c, t) in sorted(heads.items())
            },
            "stale_branch_days": days,
            "stale": [s.as_dict() for s in stale],
            "attribution": attribution.as_dict(),
        },
    )
    seconds = round(time.monotonic() - t0, 3)
    log.info(
        "where the bytes go: %d object(s), %d byte(s) attributed to %d holder(s) of %d branch(es), %d range(s) "
        "read; %d stale branch(es); %.1fs (%.1fs asking lakeFS)",
        attribution.total.objects,
        attribution.total.bytes,
        len(holders.holders),
        len(heads),
        len(ranges),
        len(stale),
        seconds,
        t_lakefs,
    )
    return result(attribution, key, len(heads), stale, seconds)


def result(attribution: Attribution, key: str, branches: int, stale: list[Any], seconds: float) -> SpaceResult:
    """Return the step's result: the attribution's totals."""
    c = attribution.classes
    return SpaceResult(
        space_key=key,
        objects=attribution.total.objects,
        bytes=attribution.total.bytes,
        head_bytes=c[HEAD].bytes,
        retention_bytes=c[RETENTION].bytes,
        staged_bytes=c[STAGED].bytes,
        deleted_bytes=c[DELETED].bytes,
        held_back_bytes=c[HELD_BACK].bytes,
        young_bytes=c[YOUNG].bytes,
        branches=branches,
        stale_branches=len(stale),
        stale_alone_bytes=sum(s.alone.bytes for s in stale),
        seconds=seconds,
    )


def _branch_reads(inputs: StepInputs, engine: Engine[Any, Any]) -> dict[str, set[str]]:
    """
    Return what the run's staged checks read on each branch (the files mark_uncommitted and compute_candidates wrote).

    The staged addresses ``diffBranch`` cannot name: an entry re-staged with its committed
    identity is no change to it, and lakeFS's mark lacks it too; the staged check found it.
    """
    st = engine.sref.open()
    out: dict[str, set[str]] = {}
    unc: UncommittedResult = inputs.get("mark_uncommitted")
    cand: CandidatesResult = inputs.get("compute_candidates")
    for key in (unc.branch_reads_file, cand.branch_reads_file):
        if key:
            for branch, addresses in formats.read_branch_reads(st, key).items():
                out.setdefault(branch, set()).update(addresses)
    return out


def _holders(
    client: LakeFSClient, repo: str, engine: Engine[Any, Any], ctx: Any, reads: Mapping[str, set[str]]
) -> tuple[Holders, dict[str, int], dict[str, int], dict[str, tuple[str, float]], dict[str, Any]]:
    """
    Return what lakeFS says holds what: the holders, each range's and each staged address's holder set.

    And each branch's HEAD (commit, created) and the rules read.
    """
    rules = client.require_gc_rules(repo)
    default_days = rules.default_retention_days
    branch_days = {r.branch_id: r.retention_days for r in rules.branches or ()}
    now = parse_iso(ctx.start_time).timestamp()
    holders = Holders()
    roots = engine.sref.roots
    st = engine.sref.open()
    ranges = range_masks(client, repo, st, roots, commit_holders(client, repo, default_days, branch_days, now), holders)
    by_branch = {b: set(a) for b, a in staged_by_branch(client, repo, roots, ctx.storage.local_root).items()}
    for b, a in reads.items():
        if b in by_branch:  # a branch deleted since the check stages nothing
            by_branch[b] |= a
    staged = staged_masks(by_branch, holders)
    heads = {b: (h, float(client.commit_node(repo, h).creation_date)) for b, h in client.branches(repo) if h}
    return holders, ranges, staged, heads, {"default_days": default_days, "branches": dict(sorted(branch_days.items()))}
