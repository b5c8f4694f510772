"""Objects on a ref: stat, read, list, upload, copy, delete."""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Iterator

from lakefs_gc.lakefs.graveler import FULL, RELATIVE, Entry
from lakefs_gc.storage import open_storage, parse_namespace
from lakefs_gc.storage.namespace import blockstore_root
from lakefs_sandbox.emulator.catalog.staging import Staging, entry_from_json
from lakefs_sandbox.emulator.errors import APIError, not_found

DELETE_OBJECTS_MAX = 1000  # lakeFS's DefaultMaxDeleteObjects (pkg/api/controller.go)


class Objects(Staging):
    """The object API's side of the catalog: entries as a ref shows them (staged over committed)."""

    def get_entry(self, repo: str, ref: str, path: str) -> tuple[dict, Entry]:
        with self.lock:
            r = self._repo_row(repo)
            cid, branch = self.resolve_ref(repo, ref)
            if branch is not None:
                row = (
                    self.db.execute(
                        "SELECT entry FROM staging WHERE repo=? AND branch=? AND path=?", (repo, branch, path)
                    ).fetchone()
                    or self.db.execute(
                        "SELECT entry FROM compacted WHERE repo=? AND branch=? AND path=?", (repo, branch, path)
                    ).fetchone()
                )
                if row is not None:
                    if row[0] is None:
                        raise not_found()
                    return r, entry_from_json(json.loads(row[0]))
            e = self._lookup(r["storage_namespace"], self._commit(repo, cid)["meta_range_id"], path)
            if e is None:
                raise not_found()
            return r, e

    def read_object(self, repo: str, ref: str, path: str) -> tuple[Entry, bytes]:
        r, e = self.get_entry(repo, ref, path)
        ns = r["storage_namespace"]
        if e.address_type == RELATIVE or (e.address_type != FULL and "://" not in e.address):
            return e, self.storage(ns).get(e.address)
        if e.address.startswith("local://"):  # full local addresses are absolute paths (VerifyAbsPath)
            with open(e.address[len("local://") :], "rb") as f:
                return e, f.read()
        parsed = parse_namespace(e.address)
        root = parsed.canonical()[: -len(parsed.prefix)].rstrip("/") if parsed.prefix else parsed.canonical()
        st = open_storage(root, self.s.options(e.address))
        return e, st.get(parsed.prefix)

    def address_uri(self, ns: str, e: Entry) -> str:
        """
        Return the ``physical_address`` that lakeFS's stat and listing print for an entry.

        lakeFS resolves it with ``ResolveNamespace`` then ``QualifiedKey.Format``. On the local blockstore a FULL ``local://<host>/<path>`` prints as ``local://`` +
        ``path.Join(<blockstore root>, host, path)``: the resolved form that ``getPhysicalAddress``
        hands out comes back with the root twice (``local:///<root>/<root>/repo/data/...``), while
        the object is read at ``<root>/repo/data/...``.
        """
        if e.address_type == RELATIVE or (e.address_type != FULL and "://" not in e.address):
            return self.full_uri(ns, e.address)
        if e.address.startswith("local://") and self.s.local_path:
            host, _, path = e.address[len("local://") :].partition("/")
            return "local://" + posixpath.normpath(posixpath.join(blockstore_root(self.s.local_path), host, path))
        return e.address

    def upload(
        self, repo: str, branch: str, path: str, data: bytes, content_type: str, metadata: dict[str, str] | None = None
    ) -> tuple[dict, Entry]:
        with self.lock:
            r = self._repo_row(repo)
            self._branch(repo, branch)
            if r["read_only"]:
                raise APIError(403, "repository is read-only")
            address = self.new_address()
            self.storage(r["storage_namespace"]).put(address, data)
            now = self.now()
            sec = int(now)
            e = Entry(
                address,
                len(data),
                hashlib.md5(data).hexdigest(),
                sec,
                int((now - sec) * 1e9),
                dict(metadata or {}),
                RELATIVE,
                content_type or "application/octet-stream",
            )
            self._stage(repo, branch, path, e)
            return r, e

    def delete_object(self, repo: str, branch: str, path: str) -> None:
        """
        Delete, as lakeFS's ``Graveler.Delete`` (``deleteUnsafe``): a tombstone over an entry the branch shows.

        The entry may be committed or staged; a path that is nowhere, or deleted already, is left
        as it is and still succeeds (lakeFS 1.84 answers 204, not 404). The branch must exist.
        """
        with self.lock:
            self._repo_row(repo)
            self._branch(repo, branch)  # "branch not found"
            try:
                self.get_entry(repo, branch, path)
            except APIError as exc:
                if exc.status != 404:
                    raise
                return  # nothing to delete: lakeFS does nothing and reports success
            self._stage(repo, branch, path, None)

    def delete_objects(self, repo: str, branch: str, paths: list[str]) -> list[dict]:
        """
        Delete each path as :meth:`delete_object`; return the per-path errors (``ObjectError``).

        As lakeFS's ``deleteObjects`` (``Catalog.DeleteEntries``, ``Graveler.DeleteBatch``).
        lakeFS's controller drops every not-found error, the batch's own included: a missing
        repository or branch answers no error and deletes nothing; so does an empty path among
        them (its ``ErrPathRequiredValue`` fails the whole batch, and is dropped too: Spark's "main/").
        """
        with self.lock:
            if len(paths) > DELETE_OBJECTS_MAX:
                raise APIError(400, f"request size exceeded, max paths is set to {DELETE_OBJECTS_MAX}")
            if any(not p for p in paths):
                return []
            try:
                self._repo_row(repo)
                self._branch(repo, branch)
            except APIError as exc:
                if exc.status == 404:
                    return []
                raise
            for p in paths:
                self.delete_object(repo, branch, p)
            return []

    def list_objects(
        self, repo: str, ref: str, prefix: str, after: str, amount: int, delimiter: str
    ) -> tuple[dict, list[tuple[str, Entry | None]], bool]:
        """[(path, entry)] where entry None marks a common prefix; stops after ``amount`` (+1 to know has_more)."""
        with self.lock:
            r = self._repo_row(repo)
            cid, branch = self.resolve_ref(repo, ref)
            mr = self._commit(repo, cid)["meta_range_id"]
            staged = [
                (p, e)
                for p, e in (self._staged(repo, branch) if branch is not None else [])
                if p.startswith(prefix) and p > after
            ]
            committed = self._iter_committed(r["storage_namespace"], mr, max(prefix, after).encode())

            def merged() -> Iterator[tuple[str, Entry]]:
                si = 0
                for p, e in committed:
                    if not p.startswith(prefix):
                        if p > prefix:
                            break
                        continue
                    if p <= after:
                        continue
                    while si < len(staged) and staged[si][0] < p:
                        if staged[si][1] is not None:
                            yield staged[si]  # type: ignore[misc]
                        si += 1
                    if si < len(staged) and staged[si][0] == p:
                        if staged[si][1] is not None:
                            yield staged[si]  # type: ignore[misc]
                        si += 1
                    else:
                        yield p, e
                for sp, se in staged[si:]:
                    if se is not None:
                        yield sp, se

            results: list[tuple[str, Entry | None]] = []
            last_prefix = None
            has_more = False
            for p, e in merged():
                item: tuple[str, Entry | None] = (p, e)
                if delimiter:
                    rest = p[len(prefix) :]
                    if delimiter in rest:
                        cp = prefix + rest[: rest.index(delimiter) + len(delimiter)]
                        if cp == last_prefix or cp <= after:
                            continue
                        last_prefix = cp
                        item = (cp, None)
                if len(results) == amount:
                    has_more = True
                    break
                results.append(item)
            return r, results, has_more

    def copy_object(
        self,
        repo: str,
        branch: str,
        dest_path: str,
        src_ref: str,
        src_path: str,
        force: bool = False,
        shallow: bool = False,
    ) -> tuple[dict, Entry]:
        """
        Copy an object, as lakeFS 1.84's ``copyObject`` (``Catalog.CopyEntry`` without clone).

        The source entry (any ref; the destination branch when ``src_ref`` is empty; staged entries
        included) is copied to a new relative address under ``data/`` and staged on ``branch`` with
        the source's size, checksum, metadata and content type and a new mtime. ``shallow`` answers
        501 as lakeFS's ``apiutil.BuildOptsFromParams`` does (the catalog's clone path is not
        reachable from the API).
        """
        with self.lock:
            r = self._repo_row(repo)
            if self.db.execute("SELECT 1 FROM branches WHERE repo=? AND name=?", (repo, branch)).fetchone() is None:
                raise APIError(404, f"branch '{branch}' not found")
            if shallow:
                raise APIError(501, "Not Implemented")
            src, data = self.read_object(repo, src_ref or branch, src_path)
            self._writable(repo, force)
            address = self.new_address()
            self.storage(r["storage_namespace"]).put(address, data)
            now = self.now()
            sec = int(now)
            e = Entry(
                address, src.size, src.etag, sec, int((now - sec) * 1e9), dict(src.metadata), RELATIVE, src.content_type
            )
            self._stage(repo, branch, dest_path, e)
            return r, e
