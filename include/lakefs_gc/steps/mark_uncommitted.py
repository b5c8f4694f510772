"""Step ``mark_uncommitted``: lakeFS's uncommitted mark, completed from its API.

Takes a :class:`~lakefs_gc.lakefs.client.LakeFSClient` and returns a contract type; the Airflow
operator only reads connections around it.
"""

from __future__ import annotations

import logging
import time

from lakefs_gc.contract import RunContext, UncommittedResult
from lakefs_gc.gc.clock import parse_iso
from lakefs_gc.listing import uncommitted
from lakefs_gc.report import formats, layout
from lakefs_gc.storage import parse_namespace

log = logging.getLogger(__name__)


def mark_uncommitted(client, ctx: RunContext, storage) -> UncommittedResult:
    """lakeFS's uncommitted mark, completed from its API.

    1. Page lakeFS's ``prepare_uncommited`` to the end; keep every non-empty location (hazard H2).
    2. Read what every branch reads now against its HEAD commit (``listObjects`` of both,
       :func:`lakefs_gc.listing.uncommitted.api_staged`): lakeFS's mark leaves out live entries linked
       with a full address not written as its namespace (on the local blockstore, every object
       written through ``getPhysicalAddress``) and entries staged again with their committed
       identity (the same bytes uploaded again, a copy onto itself). The staged addresses it
       lacked are written beside the mark, in lakeFS's format, and ``compute_candidates`` keeps
       them like its own.

    ``storage``: the namespace (lakeFS's Parquet is read from it, the addresses it lacked written
    to it). Fails closed when a branch or its HEAD commit cannot be listed completely.
    """
    t0 = time.monotonic()
    run_id, locations, pages = client.prepare_uncommitted_all(ctx.repository)
    roots = parse_namespace(ctx.storage.namespace, ctx.storage.local_root).roots()
    check = uncommitted.api_staged(client, ctx.repository, roots, ctx.storage.local_root)
    omitted = sorted(check.addresses - uncommitted.lakefs_mark_addresses(storage, roots, run_id, tuple(locations)))
    staged_file = None
    if omitted:
        for address in omitted:
            log.warning("staged address %s is live on a branch of %s but lakeFS's uncommitted mark lacks it: kept",
                        address, ctx.repository)
        staged_file = layout.staged_file(run_id)
        formats.write_staged(storage, staged_file, omitted, int(parse_iso(ctx.start_time).timestamp()))
    log.info("staged entries through the API: %d branch(es) and their HEAD commits listed (%d objects), %d staged "
             "entr(ies), %d outside the namespace; %d address(es) lakeFS's mark lacked", check.branches, check.listed,
             check.entries, check.outside, len(omitted))
    return UncommittedResult(run_id=run_id, locations=tuple(locations), pages=int(pages),
                             seconds=round(time.monotonic() - t0, 3), staged_branches=check.branches,
                             staged_entries_checked=check.entries, staged_addresses_lakefs_omitted=len(omitted),
                             staged_file=staged_file, staged_objects_listed=check.listed,
                             staged_branches_gone=check.branches_gone)
