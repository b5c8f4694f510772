"""Commits, imports, merges, reverts and cherry-picks: everything that moves a branch to a new commit."""

from __future__ import annotations

import hashlib
import json

from lakefs_gc.lakefs.graveler import FULL, Entry
from lakefs_gc.storage import open_storage, parse_namespace
from lakefs_sandbox.emulator.catalog.staging import Staging
from lakefs_sandbox.emulator.errors import APIError, ImportFailed, MergeConflict


def _apply_overrides(commit: dict, overrides: dict | None) -> None:
    """LakeFS's ``applyCommitOverrides``: a non-empty message and a given metadata replace."""
    if not overrides:
        return
    if overrides.get("message"):
        commit["message"] = overrides["message"]
    if overrides.get("metadata") is not None:
        commit["metadata"] = dict(overrides["metadata"])


class Commits(Staging):
    """Commit, import, merge, revert, cherry-pick."""

    def commit(
        self,
        repo: str,
        branch: str,
        message: str,
        metadata: dict[str, str] | None,
        date: int | None,
        allow_empty: bool = False,
        committer: str = "",
    ) -> dict:
        with self.lock:
            r = self._repo_row(repo)
            head, _ = self._branch(repo, branch)
            if r["read_only"]:
                raise APIError(403, "repository is read-only")
            ns = r["storage_namespace"]
            parent = self._commit(repo, head)
            changes = self._diff_uncommitted(ns, parent["meta_range_id"], self._staged(repo, branch))
            if not changes and not allow_empty:
                raise APIError(400, "commit: no changes")
            mr_id = self._apply(ns, parent["meta_range_id"], [(p.encode(), e) for p, e in changes])
            c = self._new_commit(repo, [head], message, metadata, date, mr_id, committer)
            with self._tx():
                self.db.execute("INSERT INTO commits VALUES (?,?,?)", (repo, c["id"], json.dumps(c)))
                self.db.execute("UPDATE branches SET commit_id=? WHERE repo=? AND name=?", (c["id"], repo, branch))
                self._unstage(repo, branch)
            return c

    def import_objects(
        self,
        repo: str,
        branch: str,
        paths: list[dict],
        message: str,
        metadata: dict | None,
        date: int | None,
        committer: str,
    ) -> dict:
        """
        Import, as lakeFS does (``Catalog.importAsync``, then ``Graveler.Import``).

        A commit on ``branch`` whose destinations are replaced by the listed source objects (FULL
        addresses, outside the namespace), message ``Import objects`` when none is given, metadata
        ``.lakefs.merge.strategy: source-wins``; the branch's staging is dropped (lakeFS drops its
        sealed tokens). A branch with uncommitted changes (``prepareForCommitIDUpdate``: a staged
        entry that differs from HEAD, or a tombstone over a committed one) is refused after the
        sources were listed: :class:`ImportFailed`, which lakeFS reports in the import's status
        (``merge import: uncommitted changes (dirty branch)``), not as the start's answer.
        """
        with self.lock:
            r = self._repo_row(repo)
            head, _ = self._branch(repo, branch)
            ns = r["storage_namespace"]
            base = self._commit(repo, head)["meta_range_id"]
            new: dict[str, Entry] = {}
            prefixes: list[str] = []
            for loc in paths:  # lakeFS's verifyImportPaths: plain string prefixes of the namespace as written
                src, kind = loc["path"], loc["type"]
                if src.startswith(ns) or (kind == "common_prefix" and ns.startswith(src)):
                    what = (
                        "import path ({}) in repository namespace ({}) is prohibited"
                        if src.startswith(ns)
                        else "prefix ({}) contains repository namespace: ({}),"
                    )
                    raise APIError(400, what.format(src, ns) + ": invalid import source")
            for loc in paths:
                src, dest, kind = loc["path"], loc["destination"], loc["type"]
                try:  # import sources are absolute (local: an absolute path, never under the root's rules)
                    parsed = parse_namespace(src, "/" if src.startswith("local://") else None)
                except ValueError as exc:
                    raise APIError(400, f"import path: {exc}") from None
                if parsed.scheme != self.s.blockstore_type:
                    raise APIError(400, f"import path {src!r} does not match blockstore type {self.s.blockstore_type}")
                if kind == "object":
                    root, leaf = src.rsplit("/", 1)
                    st = self._import_storage(root)
                    infos = [i for i in st.list(leaf, recursive=False) if i.key == leaf]
                    if not infos:
                        raise APIError(400, f"import: object {src} not found")
                    items = [(dest, src, infos[0])]
                elif kind == "common_prefix":
                    prefixes.append(dest)
                    root = src.rstrip("/")
                    st = self._import_storage(root)
                    items = [(dest + i.key, f"{root}/{i.key}", i) for i in st.list("", recursive=True)]
                else:
                    raise APIError(400, f"unknown import type {kind!r}")
                for dpath, uri, info in items:
                    etag = _import_checksum(st, info, uri)
                    sec = int(info.last_modified)
                    new[dpath] = Entry(
                        uri,
                        info.size,
                        etag,
                        sec,
                        int((info.last_modified - sec) * 1e9),
                        {},
                        FULL,
                        "application/octet-stream",
                    )
            if self._diff_uncommitted(ns, base, self._staged(repo, branch)):
                raise ImportFailed("merge import: uncommitted changes (dirty branch)", len(new))
            changes: dict[str, Entry | None] = {}
            for pfx in prefixes:
                for p, _ in self._iter_committed(ns, base, pfx.encode()):
                    if not p.startswith(pfx):
                        break
                    changes[p] = None
            changes.update(new)
            mr_id = self._apply(ns, base, sorted((p.encode(), e) for p, e in changes.items()))
            c = self._new_commit(
                repo,
                [head],
                message or "Import objects",
                {**(metadata or {}), ".lakefs.merge.strategy": "source-wins"},
                date,
                mr_id,
                committer,
            )
            self._move_branch(repo, branch, c)
            return {"commit": c, "ingested_objects": len(new), "metarange_id": mr_id}

    def _import_storage(self, root: str):
        if root.startswith("local://"):
            from lakefs_gc.storage import LocalStorage

            return LocalStorage(root[len("local://") :])
        return open_storage(root, self.s.options(root))

    def merge(
        self,
        repo: str,
        source_ref: str,
        destination: str,
        message: str,
        metadata: dict | None,
        strategy: str,
        force: bool,
        allow_empty: bool,
        squash: bool,
        committer: str,
    ) -> str:
        """
        Merge, as lakeFS's ``Graveler.Merge``; return the new commit id.

        A commit on ``destination`` whose parents are the destination's HEAD (first) and the source
        commit, or the destination's HEAD alone for a squash merge; metadata gains
        ``.lakefs.merge.strategy``.
        """
        with self.lock:
            if strategy not in ("", "dest-wins", "source-wins"):
                raise APIError(400, "argument strategy: invalid value: validation error")
            r = self._writable(repo, force)
            _, to_id, to_commit = self._clean_branch(repo, destination)
            from_id, _ = self.resolve_ref(repo, source_ref)
            from_commit = self._commit(repo, from_id)
            base_id = self._merge_base(repo, from_id, to_id)
            if base_id is None:
                raise APIError(500, "find merge base: no merge base")
            try:
                mr = self._merge_trees(
                    r["storage_namespace"],
                    to_commit["meta_range_id"],
                    from_commit["meta_range_id"],
                    self._commit(repo, base_id)["meta_range_id"],
                    strategy,
                    allow_empty or force,
                )
            except MergeConflict:
                raise
            except APIError as exc:  # lakeFS: "update branch <destination>: no changes"
                raise APIError(exc.status, f"update branch {destination}: {exc.message}") from None
            meta = {**(metadata or {}), ".lakefs.merge.strategy": strategy or "default"}
            c = self._new_commit(
                repo,
                [to_id] if squash else [to_id, from_id],
                message or f"Merge '{source_ref}' into '{destination}'",
                meta,
                None,
                mr,
                committer,
            )
            c["generation"] = max(to_commit["generation"], from_commit["generation"]) + 1
            c["id"] = self._commit_id(c)
            self._move_branch(repo, destination, c)
            return c["id"]

    def _replayed(self, repo: str, ref: str, force: bool) -> tuple[dict, str, dict]:
        """(repo row, commit id, commit) of the commit a revert or cherry-pick replays."""
        r = self._writable(repo, force)
        cid, _ = self.resolve_ref(repo, ref)
        return r, cid, self._commit(repo, cid)

    def revert(
        self,
        repo: str,
        branch: str,
        ref: str,
        parent_number: int,
        allow_empty: bool,
        overrides: dict | None,
        force: bool,
        committer: str,
    ) -> dict:
        """
        Revert, as lakeFS's ``Graveler.Revert``.

        Merge the reverted commit's parent (``parent_number``, 1-based, required for a merge
        commit) into the branch with the commit as the base; one parent, the branch's HEAD.
        """
        with self.lock:
            if parent_number < 0:
                raise APIError(400, "parentNumber: invalid value: validation error")
            r, _, commit = self._replayed(repo, ref, force)
            parents = commit["parents"]
            if len(parents) > 1 and parent_number <= 0:
                raise APIError(409, "must specify 1-based parent number for reverting merge commit")
            if parent_number > len(parents):
                raise APIError(400, f"given commit does not have the given parent number: parent {parent_number}")
            index = parent_number - 1 if parent_number > 0 else 0
            _, head, head_commit = self._clean_branch(repo, branch)
            parent_mr = self._commit(repo, parents[index])["meta_range_id"] if parents else ""
            try:
                mr = self._merge_trees(
                    r["storage_namespace"],
                    head_commit["meta_range_id"],
                    parent_mr,
                    commit["meta_range_id"],
                    "",
                    allow_empty,
                )
            except APIError as exc:  # lakeFS: "update branch: conflict found", "update branch: no changes"
                raise APIError(exc.status, f"update branch: {exc.message}") from None
            if mr == head_commit["meta_range_id"] and not allow_empty:
                raise APIError(400, "update branch: no changes")
            c = self._new_commit(repo, [head], f"Revert {ref}", {}, None, mr, committer)
            _apply_overrides(c, overrides)
            c["id"] = self._commit_id(c)
            self._move_branch(repo, branch, c)
            return c

    def cherry_pick(
        self,
        repo: str,
        branch: str,
        ref: str,
        parent_number: int | None,
        overrides: dict | None,
        force: bool,
        committer: str,
    ) -> dict:
        """
        Cherry-pick, as lakeFS's ``Graveler.CherryPick``.

        Merge the commit into the branch with its parent (``parent_number``, 1-based, required for
        a merge commit) as the base; one parent, the branch's HEAD; the commit's message and
        metadata plus ``cherry-pick-origin`` and ``cherry-pick-committer``.
        """
        with self.lock:
            if parent_number is not None and parent_number <= 0:
                raise APIError(400, "parentNumber: value should be greater than 0: invalid value: validation error")
            r, cid, commit = self._replayed(repo, ref, force)
            parents = commit["parents"]
            if parent_number is None and len(parents) > 1:
                raise APIError(400, "must specify 1-based parent number for cherry-picking merge commit")
            pn = 1 if parent_number is None else parent_number
            if pn > len(parents):
                raise APIError(400, f"parent {pn}: given commit does not have the given parent number")
            _, head, head_commit = self._clean_branch(repo, branch)
            parent_mr = self._commit(repo, parents[pn - 1])["meta_range_id"]
            try:
                mr = self._merge_trees(
                    r["storage_namespace"], head_commit["meta_range_id"], commit["meta_range_id"], parent_mr, ""
                )
            except APIError as exc:  # lakeFS: "update branch: conflict found", "update branch: no changes"
                raise APIError(exc.status, f"update branch: {exc.message}") from None
            c = self._new_commit(repo, [head], commit["message"], dict(commit["metadata"]), None, mr, committer)
            _apply_overrides(c, overrides)
            c["metadata"] = {**c["metadata"], "cherry-pick-origin": cid, "cherry-pick-committer": commit["committer"]}
            c["id"] = self._commit_id(c)
            self._move_branch(repo, branch, c)
            return c


def _import_checksum(st, info, uri: str) -> str:
    """
    Return the checksum lakeFS's import walkers record for a listed object.

    The S3 listing's ETag (``pkg/block/s3/walker.go``), GCS's md5Hash in hex
    (``pkg/block/gs/walker.go``), Azure's Content-MD5 in hex else the blob's ETag
    (``pkg/block/azure/adapter.go`` ``calcETag``), a local file's MD5 (``pkg/block/local/adapter.go``
    ``calcFileETag``). Our listings give the first three as ``ObjectInfo.checksum``; an Azure blob
    without Content-MD5 gets an ETag-like value here (Azurite's ETag is not in our listing).
    """
    if info.checksum:
        return info.checksum
    if hasattr(st, "content_md5") and uri.startswith("local://"):
        return st.content_md5(info.key) or ""
    return "0x" + hashlib.md5(f"{uri}:{info.size}:{info.last_modified}".encode()).hexdigest()[:15].upper()
