"""Repositories, branches, tags, and the commit log."""

from __future__ import annotations

import heapq
import json
import re

from lakefs_gc.storage import parse_namespace
from lakefs_sandbox.emulator.catalog.staging import Staging
from lakefs_sandbox.emulator.errors import APIError, not_found

DUMMY_KEY = "_lakefs/dummy"
DUMMY_CONTENT = b"this is dummy data - created by lakeFS to check accessibility"
REPO_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{2,62}$")
BRANCH_NAME_RE = re.compile(r"^\w[-\w]*$")


def _validate_tag_id(tag: str) -> None:
    """LakeFS's ``graveler.ValidateTagID`` (git-check-ref-format, ``~`` allowed)."""
    if not tag:
        raise APIError(400, "tagID: required value: validation error")
    if (
        tag == "@"
        or tag.endswith((".", ".lock"))
        or any(x in tag for x in ("..", "/", "@{"))
        or any(ch in tag for ch in "^:?*[\\")
        or any(ord(ch) <= 0x20 for ch in tag)
    ):
        raise APIError(400, "argument tagID: tag id: invalid value: validation error")


class Repositories(Staging):
    """Creating, listing and deleting repositories, branches and tags; reading commits and the log."""

    def create_repository(self, name: str, ns: str, default_branch: str, read_only: bool = False) -> dict:
        with self.lock:
            if not REPO_NAME_RE.match(name or ""):
                raise APIError(400, "repository name: invalid value: validation error")
            if not BRANCH_NAME_RE.match(default_branch or ""):
                raise APIError(400, "default branch: invalid value: validation error")
            try:
                parsed = parse_namespace(ns, self.s.local_path)
            except ValueError as exc:
                raise APIError(400, f"storage namespace: {exc}") from None
            if parsed.scheme != self.s.blockstore_type:
                raise APIError(
                    400,
                    f"storage namespace {ns!r}: expected a {self.s.blockstore_type}:// namespace "
                    f"(blockstore type {self.s.blockstore_type})",
                )
            if self.db.execute("SELECT 1 FROM repos WHERE name=?", (name,)).fetchone():
                raise APIError(409, "error creating repository: not unique")
            ns = ns.rstrip("/")
            st = self.storage(ns)
            try:
                in_use = st.exists(DUMMY_KEY)
            except Exception as exc:
                raise APIError(400, f"failed to access storage namespace {ns}: {exc}") from None
            if in_use:
                raise APIError(
                    400,
                    f"failed to create repository: found lakeFS objects in the storage (:{ns}) "
                    f"key({DUMMY_KEY}): storage namespace already in use",
                )
            st.put(DUMMY_KEY, DUMMY_CONTENT)
            now = int(self.now())
            commit = {
                "id": "",
                "parents": [],
                "committer": "",
                "message": "Repository created",
                "creation_date": now,
                "meta_range_id": "",
                "metadata": {},
                "generation": 1,
                "version": 1,
            }
            commit["id"] = self._commit_id(commit)
            with self._tx():
                self.db.execute(
                    "INSERT INTO repos VALUES (?,?,?,?,?,NULL)", (name, ns, default_branch, now, int(read_only))
                )
                self.db.execute("INSERT INTO commits VALUES (?,?,?)", (name, commit["id"], json.dumps(commit)))
                self.db.execute("INSERT INTO branches VALUES (?,?,?,0)", (name, default_branch, commit["id"]))
            return self.repo_json(self._repo_row(name))

    def get_repository(self, name: str) -> dict:
        with self.lock:
            return self.repo_json(self._repo_row(name))

    def list_repositories(self, prefix: str, after: str, amount: int) -> tuple[list[dict], bool]:
        with self.lock:
            names = [
                r[0]
                for r in self.db.execute("SELECT name FROM repos WHERE name > ? ORDER BY name", (after,))
                if r[0].startswith(prefix)
            ]
            page = names[:amount]
            return [self.repo_json(self._repo_row(n)) for n in page], len(names) > amount

    def delete_repository(self, name: str) -> None:
        with self.lock:
            self._repo_row(name)
            with self._tx():
                for table in ("repos", "branches", "commits", "staging", "tasks", "tags"):
                    col = "name" if table == "repos" else "repo"
                    self.db.execute(f"DELETE FROM {table} WHERE {col}=?", (name,))
            self._commits_cache.pop(name, None)

    def get_commit(self, repo: str, cid: str) -> dict:
        with self.lock:
            self._repo_row(repo)
            full, _ = self.resolve_ref(repo, cid, "commit not found") if cid else (None, None)
            if full is None:
                raise not_found("commit")
            return self._commit(repo, full)

    def log(self, repo: str, ref: str, after: str, amount: int, first_parent: bool = False) -> tuple[list[dict], bool]:
        with self.lock:
            self._repo_row(repo)
            head, _ = self.resolve_ref(repo, ref, "ref: not found")
            after_id = self.resolve_ref(repo, after, "from ref: not found")[0] if after else ""
            commits = self._all_commits(repo)
            # lakeFS's CommitIterator (pkg/graveler/ref/commit_iterator.go): a queue of reached
            # commits, the newest creation date first (lakeFS: then the larger id; here, within one
            # second, the later created, as lakeFS's nanosecond dates have it), each commit's
            # parents (the first only with first_parent) queued once
            created = {cid: i for i, cid in enumerate(commits)}  # insertion order

            def rank(cid: str) -> tuple[int, int]:
                return -commits[cid]["creation_date"], -created[cid]

            queue, reached, ordered = [(rank(head), head)], set(), []
            while queue:
                cid = heapq.heappop(queue)[1]
                ordered.append(cid)
                parents = commits[cid]["parents"]
                for p in parents[:1] if first_parent else parents:
                    if p not in reached:
                        reached.add(p)
                        heapq.heappush(queue, (rank(p), p))
            if after_id:  # lakeFS skips up to and including it; never reached: nothing left
                ordered = ordered[ordered.index(after_id) + 1 :] if after_id in ordered else []
            return [commits[c] for c in ordered[:amount]], len(ordered) > amount

    def create_branch(self, repo: str, name: str, source: str, hidden: bool = False) -> str:
        with self.lock:
            self._repo_row(repo)
            if not BRANCH_NAME_RE.match(name or ""):
                raise APIError(
                    400,
                    "argument branch: branch id: invalid value: validation error: branch id must "
                    "consist of letters, digits, underscores and dashes, and cannot start with a dash",
                )
            if self.db.execute("SELECT 1 FROM branches WHERE repo=? AND name=?", (repo, name)).fetchone():
                raise APIError(409, "branch already exists: not unique")
            cid, _ = self.resolve_ref(repo, source, f"source reference '{source}': not found")
            self.db.execute("INSERT INTO branches VALUES (?,?,?,?)", (repo, name, cid, int(hidden)))
            return cid

    def get_branch(self, repo: str, name: str) -> dict:
        with self.lock:
            self._repo_row(repo)
            cid, _ = self._branch(repo, name)
            return {"id": name, "commit_id": cid}

    def list_branches(
        self, repo: str, prefix: str, after: str, amount: int, show_hidden: bool
    ) -> tuple[list[dict], bool]:
        with self.lock:
            self._repo_row(repo)
            rows = [
                (n, c)
                for n, c, h in self.db.execute(
                    "SELECT name, commit_id, hidden FROM branches WHERE repo=? AND name > ? ORDER BY name",
                    (repo, after),
                )
                if n.startswith(prefix) and (show_hidden or not h)
            ]
            return [{"id": n, "commit_id": c} for n, c in rows[:amount]], len(rows) > amount

    def delete_branch(self, repo: str, name: str) -> None:
        with self.lock:
            r = self._repo_row(repo)
            self._branch(repo, name)
            if name == r["default_branch"]:
                raise APIError(403, "cannot delete repository default branch")
            with self._tx():
                self.db.execute("DELETE FROM branches WHERE repo=? AND name=?", (repo, name))
                self._unstage(repo, name)

    def reset_branch(self, repo: str, name: str, kind: str, path: str | None) -> None:
        with self.lock:
            self._repo_row(repo)
            self._branch(repo, name)
            if kind == "reset":
                self._unstage(repo, name)
            elif kind == "object":
                self._unstage(repo, name, lambda p: p == (path or ""))
            elif kind == "common_prefix":
                self._unstage(repo, name, lambda p: p.startswith(path or ""))
            else:
                raise APIError(400, f"unknown reset type {kind!r}")

    def create_tag(self, repo: str, tag: str, ref: str, force: bool = False) -> str:
        """LakeFS's ``Catalog.CreateTag``; returns the tagged commit id."""
        with self.lock:
            _validate_tag_id(tag)
            self._repo_row(repo)
            if self.db.execute("SELECT 1 FROM branches WHERE repo=? AND name=?", (repo, tag)).fetchone():
                raise APIError(409, f"branch name {tag}: conflict found")
            if self.db.execute("SELECT 1 FROM commits WHERE repo=? AND id=?", (repo, tag)).fetchone():
                raise APIError(409, f"commit ID {tag}: conflict found")
            cid, _ = self.resolve_ref(repo, ref)
            self._writable(repo, force)
            if self.db.execute("SELECT 1 FROM tags WHERE repo=? AND name=?", (repo, tag)).fetchone():
                raise APIError(409, "tag already exists: not unique")
            self.db.execute("INSERT INTO tags VALUES (?,?,?)", (repo, tag, cid))
            return cid

    def get_tag(self, repo: str, tag: str) -> str:
        with self.lock:
            _validate_tag_id(tag)
            self._repo_row(repo)
            row = self.db.execute("SELECT commit_id FROM tags WHERE repo=? AND name=?", (repo, tag)).fetchone()
            if row is None:
                raise APIError(404, "tag not found")
            return row[0]

    def delete_tag(self, repo: str, tag: str, force: bool = False) -> None:
        with self.lock:
            _validate_tag_id(tag)
            self._writable(repo, force)
            self.get_tag(repo, tag)
            self.db.execute("DELETE FROM tags WHERE repo=? AND name=?", (repo, tag))

    def list_tags(self, repo: str, prefix: str, after: str, amount: int) -> tuple[list[dict], bool]:
        with self.lock:
            self._repo_row(repo)
            rows = [
                (n, c)
                for n, c in self.db.execute(
                    "SELECT name, commit_id FROM tags WHERE repo=? AND name > ? ORDER BY name", (repo, after)
                )
                if n.startswith(prefix)
            ]
            return [{"id": n, "commit_id": c} for n, c in rows[:amount]], len(rows) > amount
