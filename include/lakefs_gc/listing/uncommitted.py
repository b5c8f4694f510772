"""
The staged addresses of a run.

Those lakeFS wrote (``prepare_uncommited``, reference 1.3), and those every branch reads through
lakeFS's API that its mark leaves out (:func:`api_staged`).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lakefs_gc.errors import LakeFSGCError
from lakefs_gc.lakefs.graveler import BY_PREFIX_DEPRECATED, normalize_address
from lakefs_gc.listing.committed import relative_key
from lakefs_gc.progress import Progress
from lakefs_gc.report import formats
from lakefs_gc.report.layout import uncommitted_dir
from lakefs_gc.storage import relative_to
from lakefs_gc.storage.namespace import address_forms

if TYPE_CHECKING:
    from lakefs_gc.lakefs.client import LakeFSClient
    from lakefs_gc.storage.base import Storage

log = logging.getLogger(__name__)


def uncommitted_files(storage: Storage, roots: tuple[str, ...], run_id: str, locations: tuple[str, ...]) -> list[str]:
    """
    Every file of the uncommitted mark: the run's folder listed, plus every location lakeFS returned.

    Hazard H2: never only the last page's location. Locations without files while lakeFS said it
    wrote some is an error: the staged addresses would be missing.
    """
    prefixes = {uncommitted_dir(run_id)}
    for loc in locations:
        key = relative_key(roots, loc)
        prefixes.add(key if key.endswith("/") else key + "/")
    keys: set[str] = set()
    for p in sorted(prefixes):
        keys.update(o.key for o in storage.list(p, recursive=True))
    if locations and not keys:
        raise LakeFSGCError(
            f"lakeFS reported uncommitted data at {list(locations)} but no file is there; "
            f"refusing to run without the staged addresses"
        )
    return sorted(keys)


def file_addresses(storage: Storage, key: str, roots: tuple[str, ...]) -> Iterator[str]:
    """Namespace-relative staged addresses of one Parquet file (column ``physical_address``)."""
    for address in formats.read_staged(storage, key):
        if address is None:
            raise LakeFSGCError(f"{storage.full_uri(key)}: null physical_address in uncommitted parquet")
        rel = normalize_address(address, BY_PREFIX_DEPRECATED, roots)
        if rel is not None:
            yield rel


# ---------------------------------------------------------------------------------------------
# The staged entries as lakeFS's API shows them (the defence against the mark's blind spots)
# ---------------------------------------------------------------------------------------------
#
# lakeFS's uncommitted mark misses live staged entries in two ways, both checked in lakeFS 1.84's
# source:
# 1. pkg/catalog/gc_write_uncommitted.go writes an entry only when its address is relative or
#    textually starts with "<namespace as written>/". An entry linked with any other form of an
#    address inside the namespace is live and readable but not in the mark: on the local
#    blockstore every object written through getPhysicalAddress + link is such an entry (the
#    address handed out is the resolved local:///<root>/<ns>/data/... form).
# 2. The mark walks the uncommitted diff (pkg/graveler/uncommitted_diff_iterator.go), which skips
#    a staged entry whose identity equals the committed one; the identity is size, checksum, user
#    metadata and content type, not the address (pkg/catalog/entry.go). The same bytes uploaded
#    again to a committed path, or a committed object copied onto itself, is staged at a new
#    address that reads return and that neither the mark nor diffBranch lists.
# So the staged entries are read from what each branch reads now: listObjects of the branch
# against listObjects of its HEAD commit, merged by path; every entry the branch reads at an
# address the commit does not have at that path is staged. diffBranch would cost only the staged
# entries but is blind to case 2; this costs two listings per branch (see api_staged).


def address_keys(physical: str, roots: tuple[str, ...], local_root: str | None) -> set[str]:
    """
    Namespace-relative keys an address lakeFS printed (statObject, listObjects) may name.

    Empty when it lies outside the namespace (an import from elsewhere).

    Every reading of it is kept (:func:`lakefs_gc.storage.namespace.address_forms`: a FULL local
    address comes back with the blockstore root twice): protecting one key too many leaves garbage,
    one too few loses data.
    """
    out: set[str] = set()
    for form in address_forms(physical, local_root):
        rel = relative_to(roots, form)
        if rel:
            out.add(rel)
    return out


def staged_entries(
    branch_view: Iterable[tuple[str, str]], committed: Iterable[tuple[str, str]]
) -> Iterator[tuple[str, str]]:
    """
    (path, address) of every entry a branch reads at an address its HEAD commit does not have at that path.

    Added, changed, or re-staged with the committed identity. Both inputs in path order (as lakeFS
    lists them: Go's byte order, which is Python's order of code points); input out of order only
    yields more entries, never fewer.
    """
    it = iter(committed)
    c = next(it, None)
    for path, address in branch_view:
        while c is not None and c[0] < path:
            c = next(it, None)
        if c is None or c[0] != path or c[1] != address:
            yield path, address


@dataclass(frozen=True)
class StagedCheck:
    """What the API says is staged on every branch, by address."""

    addresses: frozenset[str]  # namespace-relative
    branches: int  # branches read (hidden ones included)
    entries: int  # entries a branch reads at an address its HEAD commit lacks
    listed: int = 0  # objects listed (branches and their HEAD commits)
    outside: int = 0  # addresses outside the namespace (imports): not GC's business
    branches_gone: tuple[str, ...] = ()
    by_branch: Mapping[str, frozenset[str]] = field(default_factory=dict)  # each branch's staged addresses


class _Listing:
    """One listObjects stream, counted; an API error names the ref it came from."""

    def __init__(self, client: LakeFSClient, repo: str, ref: str, progress: Progress):
        self.client, self.repo, self.ref, self.n, self.progress = client, repo, ref, 0, progress

    def __iter__(self) -> Iterator[tuple[str, str]]:
        from lakefs_sdk.exceptions import ApiException

        try:
            for item in self.client.objects(self.repo, self.ref):
                self.n += 1
                self.progress.add()
                yield item
        except ApiException as exc:
            setattr(exc, "lakefs_gc_ref", self.ref)  # an attribute of ours on lakeFS's exception
            raise


def api_staged(
    client: LakeFSClient,
    repo: str,
    roots: tuple[str, ...],
    local_root: str | None,
    concurrency: int = 8,
    only: Collection[str] | None = None,
) -> StagedCheck:
    """
    Every staged address of every branch (hidden ones included), read through lakeFS's API.

    Each branch's listing against its HEAD commit's (:func:`staged_entries`), branches in parallel.
    Cost: two listings per branch, each as long as the branch (1,000 objects a page).

    The HEAD commit is the one lakeFS listed the branch at, taken before the branch is read: a
    commit landing meanwhile only makes more entries look staged (kept), never fewer. Fails
    closed (``LakeFSGCError``) when a listing cannot be read completely; a branch deleted since it
    was listed is skipped only when lakeFS no longer lists it (its staged entries are then
    unreferenced, as in lakeFS's own mark). ``only``: these branches, not every one.
    """
    from lakefs_sdk.exceptions import ApiException

    branches = [(b, c) for b, c in client.branches(repo, show_hidden=True) if only is None or b in only]
    progress = Progress("mark_uncommitted", f"objects listed on {len(branches)} branch(es) and their HEAD commits")

    def read(branch: str, commit: str) -> tuple[list[tuple[str, str]] | None, int]:
        view, tree = _Listing(client, repo, branch, progress), _Listing(client, repo, commit, progress)
        try:
            entries = list(staged_entries(view, tree))
        except ApiException as exc:
            if exc.status == 404 and branch not in {b for b, _ in client.branches(repo, show_hidden=True)}:
                log.info(
                    "branch %r of %r was deleted during the run; its staged entries are unreferenced", branch, repo
                )
                return None, view.n + tree.n
            if exc.status is not None and 400 <= exc.status < 500:
                what = (
                    f"listObjects of branch {branch!r} of {repo!r}"
                    if getattr(exc, "lakefs_gc_ref", None) == branch
                    else f"listObjects of commit {commit}, the HEAD lakeFS lists for branch {branch!r} of {repo!r},"
                )
                fix = (
                    "lakeFS 1.84 answers 404 for a merge commit that was cherry-picked, until the server restarts: "
                    "restart lakeFS"
                    if exc.status == 404 and what.startswith("listObjects of commit")
                    else "give the GC's lakeFS user fs:ListObjects on the repository"
                )
                raise LakeFSGCError(
                    f"{what} answered {exc.status} {exc.reason or ''}".rstrip() + f": the branch's staged entries "
                    f"cannot be read, so nothing can be collected safely. To fix: {fix}, then re-run the GC"
                ) from None
            raise  # after the client's retries: the task fails (and Airflow retries it)
        log.debug("branch %r of %r: %d staged entr(ies) among %d object(s)", branch, repo, len(entries), view.n)
        return entries, view.n + tree.n

    addresses: set[str] = set()
    by_branch: dict[str, frozenset[str]] = {}
    entries = listed = outside = 0
    gone: list[str] = []
    with ThreadPoolExecutor(
        max_workers=max(1, min(concurrency, len(branches) or 1)), thread_name_prefix="staged"
    ) as pool:
        for (branch, _), (staged, n) in zip(branches, pool.map(lambda bc: read(*bc), branches)):
            listed += n
            if staged is None:
                gone.append(branch)
                continue
            entries += len(staged)
            mine: set[str] = set()
            for _, physical in staged:
                keys = address_keys(physical, roots, local_root)
                if not keys:
                    outside += 1
                mine |= keys
            by_branch[branch] = frozenset(mine)
            addresses |= mine
    progress.finish()
    return StagedCheck(frozenset(addresses), len(branches), entries, listed, outside, tuple(gone), by_branch)


def lakefs_mark_addresses(
    storage: Storage, roots: tuple[str, ...], run_id: str, locations: tuple[str, ...]
) -> set[str]:
    """Every namespace-relative address in lakeFS's uncommitted mark."""
    out: set[str] = set()
    for key in uncommitted_files(storage, roots, run_id, locations):
        out.update(file_addresses(storage, key, roots))
    return out


BRANCH_THREADS = 16  # statObject calls at once


def read_by_branches(
    client: LakeFSClient,
    repo: str,
    asks: list[tuple[str, str]],
    roots: tuple[str, ...],
    local_root: str | None,
    step: str = "compute_candidates",
) -> dict[str, set[str]]:
    """
    {branch: namespace-relative keys of what it reads at the paths ``asks`` name for it} (statObject).

    A branch or path gone (404) reads nothing. ``step``: the task its progress lines name.
    """
    progress = Progress(step, "paths asked on branches (statObject)", total=len(asks))

    def ask(branch_path: tuple[str, str]) -> set[str]:
        physical = client.stat_address(repo, *branch_path)
        progress.add()
        return address_keys(physical, roots, local_root) if physical is not None else set()

    out: dict[str, set[str]] = {}
    with ThreadPoolExecutor(BRANCH_THREADS, thread_name_prefix="staged-check") as pool:
        for (branch, _), found in zip(asks, pool.map(ask, asks)):
            if found:
                out.setdefault(branch, set()).update(found)
    progress.finish()
    return out


def staged_by_branch(
    client: LakeFSClient, repo: str, roots: tuple[str, ...], local_root: str | None
) -> dict[str, frozenset[str]]:
    """
    {branch: the namespace-relative addresses of its staged entries} of every branch, hidden ones included.

    Each branch's own changes (``diffBranch``: added and changed entries), each asked for its
    address (``statObject``): the cost follows what is staged, not the repository's size. An entry
    re-staged with its committed identity is not a change to ``diffBranch``, so it is not here
    (lakeFS's mark leaves it out too); a branch deleted meanwhile stages nothing. For the
    attribution of space (:mod:`lakefs_gc.listing.holders`), never for a decision:
    :func:`api_staged` is the one that reads everything.
    """
    names = [b for b, _ in client.branches(repo, show_hidden=True)]
    read = read_by_branches(
        client, repo, changed_paths(client, repo, names, set()), roots, local_root, step="attribute_space"
    )
    return {b: frozenset(read.get(b, ())) for b in names}


def changed_paths(client: LakeFSClient, repo: str, branches: list[str], sizes: set[int]) -> list[tuple[str, str]]:
    """(branch, path) of what each branch adds or changes (diffBranch) at one of ``sizes`` (empty: any size)."""
    from lakefs_sdk.exceptions import NotFoundException

    out: list[tuple[str, str]] = []
    for branch in branches:
        try:
            out += [
                (branch, p)
                for p, size in client.branch_changes(repo, branch)
                if not sizes or size is None or size in sizes
            ]
        except NotFoundException:  # deleted since it was listed: its staged entries are garbage
            continue
    return out
