"""
The holders of each address of a namespace, read on one process (issue 43's attribution).

Commits -> their holders (:func:`lakefs_gc.gc.attribution.commit_holders`), metaranges -> ranges,
each range read once with the union of its commits' holders, each address the union of its ranges';
the staged addresses of every branch through lakeFS's API (:func:`lakefs_gc.listing.uncommitted.api_staged`).
Then the listed objects are summed by holder set and by what an unreferenced one is at this run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from lakefs_gc.gc.attribution import (
    DELETED,
    HELD_BACK,
    STAGED,
    TAG,
    YOUNG,
    Attribution,
    Holder,
    Holders,
    attribute,
    commit_holders,
)
from lakefs_gc.listing.committed import in_threads, metarange_range_ids, range_addresses, relative_key
from lakefs_gc.listing.uncommitted import api_staged

if TYPE_CHECKING:
    from lakefs_gc.lakefs.client import LakeFSClient
    from lakefs_gc.storage.base import Storage


def address_masks(client: LakeFSClient, repo: str, st: Storage, roots: tuple[str, ...],
                  holders_of: Mapping[str, set[Holder]], holders: Holders) -> dict[str, int]:
    """{address: its holder set} of every address the commits of ``holders_of`` read."""
    commits = sorted(holders_of)
    metaranges = in_threads(lambda c: client.commit_metarange(repo, c), commits)
    by_metarange: dict[str, int] = {}
    for c, m in zip(commits, metaranges):
        if m:
            by_metarange[m] = by_metarange.get(m, 0) | holders.mask(holders_of[c])
    mids = sorted(by_metarange)
    mr_keys = in_threads(lambda m: relative_key(roots, client.meta_range_location(repo, m)), mids)
    by_range: dict[str, int] = {}
    for m, ranges in zip(mids, in_threads(lambda k: metarange_range_ids(st, k), mr_keys)):
        for r, _ in ranges:
            by_range[r] = by_range.get(r, 0) | by_metarange[m]
    rids = sorted(by_range)
    r_keys = in_threads(lambda r: relative_key(roots, client.range_location(repo, r)), rids)
    out: dict[str, int] = {}
    for r, addresses in zip(rids, in_threads(lambda k: list(range_addresses(st, k, roots)), r_keys)):
        mask = by_range[r]
        for a in addresses:
            out[a] = out.get(a, 0) | mask
    return out


def staged_masks(by_branch: Mapping[str, Iterable[str]], holders: Holders) -> dict[str, int]:
    """{address: its holder set} of every staged address, by the branches staging it."""
    out: dict[str, int] = {}
    for branch, addresses in by_branch.items():
        bit = holders.bit(Holder(STAGED, branch))
        for a in addresses:
            out[a] = out.get(a, 0) | bit
    return out


def groups(listed: Iterable[tuple[str, int, int]], masks: Mapping[str, int], tag_bits: int,
           deleted: set[str] | frozenset[str], cutoff_ms: int) -> dict[tuple[int, str | None], tuple[int, int]]:
    """
    Objects and bytes by (holder set, what an unreferenced object is): the input of :func:`attribute`.

    ``listed``: (address, size, last-modified ms) of every listed object; ``tag_bits``: the tags'
    holders (which keep nothing); ``deleted``: the candidates this run deletes (or marks, in a dry
    run). An unreferenced object not deleted is young (modified at or after the cutoff) or held
    back (delayed confirmation, the staged check).
    """
    out: dict[tuple[int, str | None], list[int]] = {}
    for address, size, modified in listed:
        mask = masks.get(address, 0)
        state = None if mask & ~tag_bits else (
            DELETED if address in deleted else YOUNG if modified >= cutoff_ms else HELD_BACK)
        acc = out.setdefault((mask, state), [0, 0])
        acc[0] += 1
        acc[1] += size
    return {k: (v[0], v[1]) for k, v in out.items()}


def attribute_here(client: LakeFSClient, repo: str, st: Storage, roots: tuple[str, ...], local_root: str | None,
                   listed: Iterable[tuple[str, int, int]], deleted: set[str] | frozenset[str], cutoff_ms: int,
                   default_days: int, branch_days: Mapping[str, int], now: float) -> tuple[Attribution, Holders]:
    """Return the attribution of a namespace, every input read in this process (a small repository, the tests)."""
    holders = Holders()
    masks = address_masks(client, repo, st, roots,
                          commit_holders(client, repo, default_days, branch_days, now), holders)
    for a, m in staged_masks(api_staged(client, repo, roots, local_root).by_branch, holders).items():
        masks[a] = masks.get(a, 0) | m
    tag_bits = holders.mask(h for h in holders.holders if h.kind == TAG)
    summed = groups(listed, masks, tag_bits, deleted, cutoff_ms)
    return attribute(((mask, state, n, b) for (mask, state), (n, b) in summed.items()), holders), holders
