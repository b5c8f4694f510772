"""
Step ``mark_uncommitted``: lakeFS's uncommitted mark, completed from its API.

Takes a :class:`~lakefs_gc.lakefs.client.LakeFSClient` and returns a contract type; the Airflow
operator only reads connections around it.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import TYPE_CHECKING

from lakefs_gc.contract import RunContext, UncommittedResult
from lakefs_gc.listing import uncommitted
from lakefs_gc.report import formats, layout
from lakefs_gc.storage import parse_namespace, requests
from lakefs_gc.timestamps import parse_iso

if TYPE_CHECKING:
    from lakefs_gc.lakefs.client import LakeFSClient
    from lakefs_gc.storage.base import Storage

log = logging.getLogger(__name__)


def mark_uncommitted(client: LakeFSClient, ctx: RunContext, storage: Storage) -> UncommittedResult:
    """Run :func:`mark` with the storage requests it sent in its result (``requests``, issue 54)."""
    with requests.counting() as sent:
        result = mark(client, ctx, storage)
    return dataclasses.replace(result, requests=sent.counts())


def mark(client: LakeFSClient, ctx: RunContext, storage: Storage) -> UncommittedResult:
    """
    LakeFS's uncommitted mark, and what it needs to be complete.

    1. Page lakeFS's ``prepare_uncommited`` to the end; keep every non-empty location (hazard H2).
    2. ``staged_check`` ``candidates`` (default): record every branch's HEAD just before and just
       after lakeFS's mark (``state/heads.json``; ``list_committed`` reads those commits, and
       ``compute_candidates`` checks the candidates against their entries,
       :mod:`lakefs_gc.listing.staged`). The HEAD lakeFS's mark diffed a branch against is what
       an entry it skipped has the identity of; it can be gone from lakeFS's list of commits by
       the time ``list_committed`` asks: a commit, merge, revert or cherry-pick applies the staged
       entries and keeps HEAD's for an identical identity (``pkg/graveler/committed/commit.go``),
       but a hard reset keeps the staging area (``pkg/graveler/graveler.go`` ``ResetHard`` refuses
       only on sealed staging tokens), so the entry lives on against another HEAD. A branch whose
       HEAD moved during the mark (lakeFS diffed it against a HEAD we cannot name) is listed in
       full, as below.
       ``full``: read what every branch reads now against its HEAD commit (``listObjects`` of
       both, :func:`lakefs_gc.listing.uncommitted.api_staged`): two listings per branch.
    The staged addresses lakeFS's mark lacked that a listing found are written beside the mark,
    in lakeFS's format, and ``compute_candidates`` keeps them like its own.

    ``storage``: the namespace (lakeFS's Parquet is read from it, the addresses it lacked written
    to it). Fails closed when a branch or its HEAD commit cannot be listed completely.
    """
    t0 = time.monotonic()
    roots = parse_namespace(ctx.storage.namespace, ctx.storage.local_root).roots()
    fast = ctx.settings.staged_check == "candidates"
    before = dict(client.branches(ctx.repository, show_hidden=True)) if fast else {}
    t_lakefs = time.monotonic()
    run_id, locations, pages = client.prepare_uncommitted_all(ctx.repository)
    lakefs_seconds = round(time.monotonic() - t_lakefs, 3)
    heads_file, moved = None, []
    if fast:
        after = dict(client.branches(ctx.repository, show_hidden=True))
        moved = sorted(b for b in before.keys() & after.keys() if before[b] != after[b])
        heads_file = layout.state_heads_file(run_id)
        formats.write_heads(storage, heads_file, before, after)
        log.info(
            "staged check on the candidates: %d branch HEAD(s) recorded around lakeFS's mark, %d moved meanwhile "
            "(listed in full)",
            len(after),
            len(moved),
        )
    if not fast:
        check = uncommitted.api_staged(client, ctx.repository, roots, ctx.storage.local_root)
    elif moved:
        check = uncommitted.api_staged(client, ctx.repository, roots, ctx.storage.local_root, only=moved)
    else:
        check = uncommitted.StagedCheck(frozenset(), 0, 0)
    omitted = (
        sorted(check.addresses - uncommitted.lakefs_mark_addresses(storage, roots, run_id, tuple(locations)))
        if check.addresses
        else []
    )
    staged_file = reads_file = None
    if omitted:
        for address in omitted:
            log.warning(
                "staged address %s is live on a branch of %s but lakeFS's uncommitted mark lacks it: kept",
                address,
                ctx.repository,
            )
        staged_file = layout.staged_file(run_id)
        formats.write_staged(storage, staged_file, omitted, int(parse_iso(ctx.start_time).timestamp()))
        reads_file = layout.state_branch_reads_file(run_id, "mark_uncommitted")
        lacked = set(omitted)
        formats.write_branch_reads(
            storage, reads_file, {b: a & lacked for b, a in check.by_branch.items() if a & lacked}
        )
    if check.branches:
        log.info(
            "staged entries through the API: %d branch(es) and their HEAD commits listed (%d objects), %d staged "
            "entr(ies), %d outside the namespace; %d address(es) lakeFS's mark lacked",
            check.branches,
            check.listed,
            check.entries,
            check.outside,
            len(omitted),
        )
    return UncommittedResult(
        run_id=run_id,
        locations=tuple(locations),
        pages=int(pages),
        seconds=round(time.monotonic() - t0, 3),
        staged_branches=check.branches,
        staged_entries_checked=check.entries,
        staged_addresses_lakefs_omitted=len(omitted),
        staged_file=staged_file,
        staged_objects_listed=check.listed,
        staged_branches_gone=check.branches_gone,
        staged_check=ctx.settings.staged_check,
        heads_file=heads_file,
        branches_moved=len(moved),
        lakefs_seconds=lakefs_seconds,
        branch_reads_file=reads_file,
    )
