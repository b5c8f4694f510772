"""The staged addresses of a run: those lakeFS wrote (``prepare_uncommited``, reference 1.3), and
those lakeFS's API shows on every branch that its mark leaves out (:func:`api_staged`)."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from lakefs_gc.errors import LakeFSGCError
from lakefs_gc.gc.committed import relative_key
from lakefs_gc.lakefs.graveler import BY_PREFIX_DEPRECATED, normalize_address
from lakefs_gc.report.layout import uncommitted_dir
from lakefs_gc.storage import relative_to
from lakefs_gc.storage.namespace import blockstore_root

log = logging.getLogger(__name__)


def uncommitted_files(storage, roots: tuple[str, ...], run_id: str, locations: tuple[str, ...]) -> list[str]:
    """Every file of the uncommitted mark: the run's folder listed, plus every location lakeFS
    returned (hazard H2: never only the last page's location). Locations without files while
    lakeFS said it wrote some is an error: the staged addresses would be missing."""
    prefixes = {uncommitted_dir(run_id)}
    for loc in locations:
        key = relative_key(roots, loc)
        prefixes.add(key if key.endswith("/") else key + "/")
    keys: set[str] = set()
    for p in sorted(prefixes):
        keys.update(o.key for o in storage.list(p, recursive=True))
    if locations and not keys:
        raise LakeFSGCError(f"lakeFS reported uncommitted data at {list(locations)} but no file is there; "
                            f"refusing to run without the staged addresses")
    return sorted(keys)


def file_addresses(storage, key: str, roots: tuple[str, ...]) -> Iterator[str]:
    """Namespace-relative staged addresses of one Parquet file (column ``physical_address``)."""
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(storage.get(key)), columns=["physical_address"])
    for address in table.column("physical_address").to_pylist():
        if address is None:
            raise LakeFSGCError(f"{storage.full_uri(key)}: null physical_address in uncommitted parquet")
        rel = normalize_address(address, BY_PREFIX_DEPRECATED, roots)
        if rel is not None:
            yield rel


# ---------------------------------------------------------------------------------------------
# The staged entries as lakeFS's API shows them (the defence against the mark's blind spot)
# ---------------------------------------------------------------------------------------------
#
# lakeFS's uncommitted mark (pkg/catalog/gc_write_uncommitted.go) writes a staged entry only when
# its address is relative or textually starts with "<namespace as written>/". An entry linked with
# any other form of an address inside the namespace is live and readable but missing from the
# mark: on the local blockstore every object written through getPhysicalAddress + link is such an
# entry (the address handed out is the resolved local:///<root>/<ns>/data/... form). So the mark is
# completed from the API: every branch's uncommitted changes (diffBranch), each added or changed
# path statted for its physical address.

STAGED_COLUMNS = ("physical_address", "creation_date")


def address_keys(physical: str, roots: tuple[str, ...], local_root: str | None) -> set[str]:
    """Namespace-relative keys an address lakeFS printed (statObject) may name; empty when it lies
    outside the namespace (an import from elsewhere).

    lakeFS prints a FULL ``local://<host>/<path>`` as ``local://`` + ``path.Join(<root>, host,
    path)`` (``QualifiedKey.Format``), so the resolved form comes back with the blockstore root
    twice, while the object lives at ``<root>/<ns>/...``. Both readings are kept: protecting one
    key too many leaves garbage, one too few loses data."""
    forms = [physical]
    if physical.startswith("local://") and local_root:
        root = blockstore_root(local_root)
        path = physical[len("local://"):]
        if path.startswith(root + "/"):
            forms.append("local://" + path[len(root):])
    out = set()
    for form in forms:
        rel = relative_to(roots, form)
        if rel:
            out.add(rel)
    return out


@dataclass(frozen=True)
class StagedCheck:
    """What the API says is staged: every branch's added and changed entries, by address."""

    addresses: frozenset[str]          # namespace-relative
    branches: int                      # branches read (hidden ones included)
    entries: int                       # added or changed entries statted
    vanished: int = 0                  # gone between the diff and the stat (deleted, reset, branch gone)
    outside: int = 0                   # addresses outside the namespace (imports): not GC's business
    branches_gone: tuple[str, ...] = ()


def api_staged(client, repo: str, roots: tuple[str, ...], local_root: str | None,
               concurrency: int = 8) -> StagedCheck:
    """Every staged address of every branch, read through lakeFS's API. Fails closed
    (``LakeFSGCError``) when a branch's changes cannot be read completely; a branch deleted since
    it was listed is skipped only when lakeFS no longer lists it (its staged entries are then
    unreferenced, as in lakeFS's own mark)."""
    from lakefs_sdk.exceptions import ApiException

    branches = [b for b, _ in client.branches(repo, show_hidden=True)]
    addresses: set[str] = set()
    entries = vanished = outside = 0
    gone: list[str] = []
    with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="stat") as pool:
        for branch in branches:
            try:
                changes = list(client.uncommitted_changes(repo, branch))
            except ApiException as exc:
                if exc.status != 404:
                    raise  # after the client's retries: the task fails (and Airflow retries it)
                if branch in {b for b, _ in client.branches(repo, show_hidden=True)}:
                    raise LakeFSGCError(f"diffBranch of branch {branch!r} of {repo!r} answered 404 while lakeFS still "
                                        f"lists the branch; refusing to run without its staged entries") from None
                log.info("branch %r of %r was deleted during the run; its staged entries are unreferenced", branch, repo)
                gone.append(branch)
                continue
            paths = []
            for kind, path in changes:
                if kind in ("added", "changed"):
                    paths.append(path)
                elif kind != "removed":
                    raise LakeFSGCError(f"diffBranch of branch {branch!r} of {repo!r} answered change type {kind!r} "
                                        f"for {path!r}; refusing to guess whether it is staged")
            entries += len(paths)
            for physical in pool.map(lambda p, b=branch: client.physical_address(repo, b, p), paths):
                if physical is None:
                    vanished += 1
                    continue
                keys = address_keys(physical, roots, local_root)
                if not keys:
                    outside += 1
                addresses |= keys
    return StagedCheck(frozenset(addresses), len(branches), entries, vanished, outside, tuple(gone))


def lakefs_mark_addresses(storage, roots: tuple[str, ...], run_id: str, locations: tuple[str, ...]) -> set[str]:
    """Every namespace-relative address in lakeFS's uncommitted mark."""
    out: set[str] = set()
    for key in uncommitted_files(storage, roots, run_id, locations):
        out.update(file_addresses(storage, key, roots))
    return out


def write_staged_file(storage, key: str, addresses: list[str], creation_date: int) -> None:
    """Staged addresses in lakeFS's uncommitted Parquet format (``physical_address`` relative,
    ``creation_date`` Unix seconds), so :func:`file_addresses` reads them like lakeFS's own."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"physical_address": pa.array(addresses, pa.string()),
                      "creation_date": pa.array([creation_date] * len(addresses), pa.int64())})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    storage.put(key, buf.getvalue())
