"""
The staged check on the candidates (``RunSettings.staged_check`` ``candidates``, the default).

lakeFS's uncommitted mark misses live staged entries in two ways (:mod:`lakefs_gc.listing.uncommitted`
names lakeFS's source): entries re-staged with the committed identity, and entries linked with a
full address not written as the namespace (on the local blockstore, every link-flow entry). The
``full`` check lists every branch against its HEAD commit in ``mark_uncommitted``: its cost follows
the repository's size. This one runs in ``compute_candidates``, once the candidates are known, and
asks lakeFS only about those that could be such an entry:

1. **Commits since.** A staged entry of the mark's time can have been committed after
   ``list_committed`` read the commits (then overwritten or reset): every commit reachable from a
   branch now that the run did not read (``state/read.parquet``: this run and its chain) is read
   now, its ranges' addresses subtracted from the candidates and its entries' identities added to
   what step 2 compares (tags are not walked: lakeFS's retention ignores them,
   ``pkg/graveler/retention/active_commits.go``).
2. **Same identity.** lakeFS's uncommitted diff skips a staged entry whose identity (size,
   checksum, user metadata, content type: ``pkg/catalog/entry.go``) equals the HEAD commit's at its
   path (``pkg/graveler/uncommitted_diff_iterator.go``). Its object is a candidate only if its size
   and checksum then equal those of a committed entry the run read: ``list_committed`` read every
   HEAD recorded around lakeFS's mark (``state/heads.json``) and keeps (size, checksum, path) of
   every entry (``state/identities/``). The candidates whose size and content MD5 equal a read
   entry's, or whose size equals one's when either checksum cannot be compared (below), are
   *suspicious*; the paths of those entries are asked on every branch (``statObject``), and a
   candidate a branch reads is kept.
3. **Link-flow entries on the local blockstore.** ``getPhysicalAddress`` hands out the resolved
   ``local:///<root>/<namespace>/data/...`` form (``pkg/api/controller.go`` ``GetPhysicalAddress``,
   ``ResolveNamespace``), which ``normalizePhysicalAddress`` does not recognise as the namespace:
   such an entry is stored FULL and lakeFS's mark skips it. Its key carries lakeFS's signature
   after a ``,`` (``Catalog.GetAddressWithSignature``, ``LinkAddressSigningDelimiter``): when a
   candidate on a local namespace has one, every branch's changes (``diffBranch``: as many entries
   as lakeFS's own mark reads) of such a candidate's size are asked on that branch. On S3, Azure
   and GCS the address lakeFS hands out starts with the namespace and is stored relative
   (``normalizePhysicalAddress``): lakeFS's mark has it. (An entry linked on the local blockstore
   with an address of no signature, from a lakeFS that did not sign them, is left to
   ``staged_check: full``.)

When the checksums can be compared. lakeFS records an object's checksum as the MD5 of its content
when it writes it (``pkg/upload/write_blob.go``), and what the client says when it links one
(``LinkPhysicalAddress``: lakeFS's clients send the store's ETag). A candidate's content MD5 is
what its store vouches for: Azure's Content-MD5 and GCS's md5Hash as listed; S3's ETag when the
object is in one part and not encrypted with KMS or a customer key (a HEAD says so); on local the
file is read. A candidate without one, or an entry whose checksum is not an MD5 in lakeFS's form,
is compared by size alone. An entry whose checksum equals the candidate's store checksum as
listed always matches.

Cost: a few lakeFS calls per branch (the commits since), then one ``statObject`` per suspicious path
and branch, plus on local, when a candidate is a link-flow object, one ``diffBranch`` per branch and
a ``statObject`` per change of its size. Asking more than ``STAT_BUDGET`` stats
lists every branch instead (the full check's reading, now): never more than that. Fails closed:
any lakeFS error but a 404 of ``statObject`` (nothing read there, or the branch deleted since)
fails the step.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from lakefs_gc.listing import committed
from lakefs_gc.listing.uncommitted import api_staged, changed_paths, read_by_branches
from lakefs_gc.report import formats
from lakefs_gc.storage import kind_of

if TYPE_CHECKING:
    from lakefs_gc.contract import PartsDir, RunContext
    from lakefs_gc.engine import Engine
    from lakefs_gc.spark.runtime import LakeFSRef

log = logging.getLogger(__name__)

R = TypeVar("R")  # the engine's rows
A = TypeVar("A")  # the engine's addresses

STAT_BUDGET = 200_000  # statObject calls; above it every branch is listed instead


@dataclass(frozen=True)
class CheckCounts:
    """What the staged check asked and kept, and its time."""

    suspicious: int = 0  # candidates a staged entry could read
    stats: int = 0  # statObject calls
    kept: int = 0  # candidates a branch reads now
    commits_since: int = 0  # commits read now (made since list_committed read them)
    committed_since_kept: int = 0  # candidates they reference
    seconds: float = 0.0
    # what each branch read at the paths asked (or, over the budget, its staged addresses): for the
    # attribution of space, which lakeFS's diffBranch cannot give for an entry re-staged with its
    # committed identity (lakefs_gc.steps.attribute_space)
    branch_reads: Mapping[str, frozenset[str]] = field(default_factory=dict)


def check(
    engine: Engine[R, A],
    ctx: RunContext,
    lakefs: LakeFSRef,
    cands: R,
    identity_dirs: Sequence[PartsDir],
    read_file: str,
) -> tuple[A, CheckCounts]:
    """
    Return the kept candidates' addresses and :class:`CheckCounts`, on ``engine``.

    ``cands``: (address, size, checksum), of the engine's relation (held by the caller);
    ``identity_dirs``: the committed entries' (size, checksum, path) the run and its chain read.
    Where the matching runs (this process, a job's driver, executors) is the engine's choice
    (:meth:`lakefs_gc.engine.Engine.suspicious`).
    """
    t0 = time.monotonic()
    sref = engine.sref
    st, roots, repo = sref.open(), sref.roots, ctx.repository
    kind, _ = kind_of(ctx.storage.namespace, ctx.storage.local_root)
    read_commits, read_ranges = formats.read_read_ids(st, read_file)
    with lakefs.client() as client:
        branches = list(client.branches(repo, show_hidden=True))
        log.info(
            "staged check: reading the commits made on %d branch(es) since list_committed read them", len(branches)
        )
        since = committed.commits_since(client, repo, st, roots, read_commits, read_ranges, branches)
        # usually no commit was made since: no join, and below no union of the kept
        committed_kept = engine.among(cands, since.addresses) if since.addresses else None
        n_committed_kept = engine.count(committed_kept) if committed_kept is not None else 0
        rest = engine.without(cands, since.addresses)
        identities = engine.identities(identity_dirs).plus(since.identities)
        log.info(
            "staged check: %d commit(s) since (%.1fs); finding the suspicious candidates",
            since.commits,
            time.monotonic() - t0,
        )
        found = engine.suspicious(rest, identities, link_flow=kind.links_unmarked)
        paths = found.paths
        names = [b for b, _ in branches]
        asks = [(b, p) for p in paths for b in names]
        log.info(
            "staged check: %d suspicious candidate(s), %d path(s) to ask on %d branch(es) (%.1fs)",
            found.count,
            len(paths),
            len(names),
            time.monotonic() - t0,
        )
        linked_sizes = {size for _, size in found.link_flow}
        if linked_sizes and names:  # step 3: each branch's own changes, asked on that branch only
            asks += changed_paths(client, repo, names, linked_sizes)
        if len(asks) > STAT_BUDGET:
            log.warning(
                "%d statObject call(s) is over the budget of %d: every branch is listed against its HEAD "
                "commit instead",
                len(asks),
                STAT_BUDGET,
            )
            full = api_staged(client, repo, roots, ctx.storage.local_root)
            read, stats = set(full.addresses), full.listed // 1000 + len(names)
            branch_reads = dict(full.by_branch)
        else:
            branch_reads = {
                b: frozenset(a) for b, a in read_by_branches(client, repo, asks, roots, ctx.storage.local_root).items()
            }
            read, stats = set().union(*branch_reads.values()), len(asks)
    staged_kept = engine.among(rest, read)
    n_kept = engine.count(staged_kept) if read else 0
    kept = staged_kept if committed_kept is None else engine.union_addresses(committed_kept, staged_kept)
    counts = CheckCounts(
        suspicious=found.count,
        stats=stats,
        kept=n_kept,
        commits_since=since.commits,
        committed_since_kept=n_committed_kept,
        seconds=round(time.monotonic() - t0, 3),
        branch_reads=branch_reads,
    )
    log.info(
        "staged check: %d suspicious candidate(s), %d path(s) asked on %d branch(es) (%d call(s)), %d kept as "
        "staged; %d commit(s) made since list_committed read, %d candidate(s) they reference kept; %.1fs",
        found.count,
        len(paths),
        len(names),
        stats,
        n_kept,
        since.commits,
        n_committed_kept,
        counts.seconds,
    )
    return kept, counts
