"""
Committed addresses: commits.csv -> metaranges -> ranges -> namespace-relative addresses.

Fails closed (hazard H1): a malformed commits.csv, an unreadable metarange or range, or a metadata
location outside the namespace raises; nothing is silently skipped.
"""

from __future__ import annotations

import csv
import io
import logging
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from lakefs_gc.errors import LakeFSGCError
from lakefs_gc.lakefs import graveler
from lakefs_gc.lakefs.sstable import SSTableReader
from lakefs_gc.storage import Storage, relative_to

if TYPE_CHECKING:
    from lakefs_gc.lakefs.client import LakeFSClient

COMMITS_HEADER = ["commit_id", "expired", "metarange_id"]


def parse_commits_csv(data: bytes, where: str) -> list[tuple[str, str]]:
    """
    (commit_id, metarange_id) of every row.

    Every listed commit is protected, whatever its ``expired`` value (always ``false`` since lakeFS
    v0.111; protecting more is the safe side).
    """
    text = data.decode("utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise LakeFSGCError(f"{where}: commits.csv is empty (no header); lakeFS always writes one. Re-run the GC")
    header = [h.strip() for h in rows[0]]
    if header[:1] != ["commit_id"] or "metarange_id" not in header:
        raise LakeFSGCError(f"{where}: unexpected commits.csv header {header!r} (expected {COMMITS_HEADER!r})")
    i_c, i_m = header.index("commit_id"), header.index("metarange_id")
    out = []
    for n, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != len(header):
            raise LakeFSGCError(f"{where}: line {n} has {len(row)} fields, expected {len(header)}")
        out.append((row[i_c].strip(), row[i_m].strip()))
    if not out:
        raise LakeFSGCError(
            f"{where}: commits.csv lists no active commit; a repository with GC rules always has "
            f"at least its branch HEADs. Refusing to treat every object as unreferenced"
        )
    return out


def relative_key(namespace: str | tuple[str, ...], location: str) -> str:
    """
    Return a lakeFS metadata location (``_lakefs/<id>`` or a full URI) as a key inside the namespace.

    ``namespace``: its URI, or every URI naming its root, see ``NamespaceURI.roots``.
    """
    if "://" not in location:
        return location.lstrip("/")
    rel = relative_to(namespace, location)
    if rel is not None:
        return rel
    raise LakeFSGCError(f"metadata location {location!r} is outside the storage namespace {namespace!r}")


def metarange_range_ids(storage: Storage, key: str) -> list[tuple[str, int]]:
    """(range id, number of entries) of every range a metarange lists."""
    with storage.open_input(key) as f, SSTableReader(f, name=storage.full_uri(key)) as r:
        return [(rng.id, rng.count) for _, rng in graveler.iter_metarange(r)]


def range_addresses(storage: Storage, key: str, namespace: str | tuple[str, ...]) -> Iterator[str]:
    """Namespace-relative addresses of a range's entries (addresses outside the namespace dropped)."""
    normalize = graveler.normalize_address
    with storage.open_input(key) as f, SSTableReader(f, name=storage.full_uri(key)) as r:
        for block in graveler.iter_range_addresses(r):
            for address, address_type in block:
                rel = normalize(address, address_type, namespace)
                if rel is not None:
                    yield rel


def range_entries(
    storage: Storage, key: str, namespace: str | tuple[str, ...]
) -> Iterator[tuple[str | None, str, int, str]]:
    """
    (namespace-relative address or None outside the namespace, path, size, checksum) of every entry of a range.

    The addresses GC keeps, and the identities the staged check compares (lakefs_gc.listing.staged;
    entries imported from outside the namespace included).
    """
    normalize = graveler.normalize_address
    with storage.open_input(key) as f, SSTableReader(f, name=storage.full_uri(key)) as r:
        for block in graveler.iter_range_identities(r):
            for address, address_type, path, size, checksum in block:
                yield (
                    normalize(address, address_type, namespace),
                    path.decode("utf-8", "surrogateescape"),
                    size,
                    checksum,
                )


DRIVER_THREADS = 8
log = logging.getLogger(__name__)
T = TypeVar("T")


def in_threads(fn: Callable[[str], T], items: list[str]) -> list[T]:
    """``fn`` of each item, in order, a few at a time (lakeFS calls and small reads on the driver)."""
    with ThreadPoolExecutor(min(DRIVER_THREADS, max(1, len(items)))) as pool:
        return list(pool.map(fn, items))


def metarange_ranges(
    client: LakeFSClient, repo: str, storage: Storage, roots: tuple[str, ...], metarange_ids: list[str]
) -> dict[str, list[tuple[str, int]]]:
    """
    Return each metarange's ranges: metarange id -> its (range id, number of entries), in order.

    The one walk from a commit's metarange to its ranges (``list_committed``, the attribution,
    ``explain``): each location one lakeFS call, each metarange one small file, read in this process,
    a few at a time; a location outside the namespace or an unreadable file fails (hazard H1).
    """
    keys = in_threads(lambda m: relative_key(roots, client.meta_range_location(repo, m)), metarange_ids)
    return dict(zip(metarange_ids, in_threads(lambda k: metarange_range_ids(storage, k), keys)))


def range_keys(client: LakeFSClient, repo: str, roots: tuple[str, ...], range_ids: list[str]) -> list[str]:
    """Return the namespace keys of ``range_ids``, in order (each location one lakeFS call, a few at a time)."""
    return in_threads(lambda r: relative_key(roots, client.range_location(repo, r)), range_ids)


def ranges_to_read(
    client: LakeFSClient,
    repo: str,
    storage: Storage,
    roots: tuple[str, ...],
    metarange_ids: list[str],
    read_ranges: set[str],
) -> tuple[dict[str, int], list[str], list[str]]:
    """
    Return the ranges of ``metarange_ids``.

    (every range id -> its number of entries, the ids not in ``read_ranges`` in order, and their
    namespace keys).
    """
    by_metarange = metarange_ranges(client, repo, storage, roots, metarange_ids)
    entries = {r: c for ranges in by_metarange.values() for r, c in ranges}
    to_read = [r for r in sorted(entries) if r not in read_ranges]
    return entries, to_read, range_keys(client, repo, roots, to_read)


MAX_COMMITS_SINCE = 1000  # more unread commits reachable: fail closed (see commits_since)
SINCE_THREADS = 16


@dataclass(frozen=True)
class CommitsSince:
    """What :func:`commits_since` read: how many commits, the addresses they reference, their entries' identities."""

    commits: int
    addresses: frozenset[str]
    identities: tuple[tuple[int, str, str], ...]


def commits_since(
    client: LakeFSClient,
    repo: str,
    st: Storage,
    roots: tuple[str, ...],
    read_commits: set[str],
    read_ranges: set[str],
    branches: Iterable[tuple[str, str]],
) -> CommitsSince:
    """
    Every commit reachable from ``branches`` (id, HEAD) that is not in ``read_commits``.

    Walked by parents until read ones; their ranges not in ``read_ranges`` read here (few: what
    changed during the run). More than :data:`MAX_COMMITS_SINCE` such commits (a branch created
    during the run on an old, expired commit: the next run reads it as a HEAD) fails closed.
    """
    seen: dict[str, str] = {}
    stack = [c for _, c in branches if c and c not in read_commits]
    while stack:
        c = stack.pop()
        if c in read_commits or c in seen:
            continue
        if len(seen) >= MAX_COMMITS_SINCE:
            raise LakeFSGCError(
                f"more than {MAX_COMMITS_SINCE} commits reachable from the branches of {repo!r} were not read by "
                f"list_committed (a branch created during the run on an old commit, or many commits meanwhile): "
                f"their objects cannot be told apart from garbage. Nothing was deleted; run the GC again"
            )
        parents, metarange = client.commit(repo, c)
        seen[c] = metarange
        stack.extend(parents)
    addresses: set[str] = set()
    identities: list[tuple[int, str, str]] = []
    if seen:
        _, ranges, keys = ranges_to_read(client, repo, st, roots, sorted({m for m in seen.values() if m}), read_ranges)
        with ThreadPoolExecutor(max(1, min(SINCE_THREADS, len(keys)))) as pool:
            for entries in pool.map(lambda k: list(range_entries(st, k, roots)), keys):
                for address, path, size, checksum in entries:
                    identities.append((size, checksum, path))
                    if address is not None:
                        addresses.add(address)
        log.info(
            "%d commit(s) of %s made since list_committed read them: %d range(s) read, %d address(es)",
            len(seen),
            repo,
            len(ranges),
            len(addresses),
        )
    return CommitsSince(len(seen), frozenset(addresses), tuple(identities))
