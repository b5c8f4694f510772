"""
A branch's uncommitted changes, and what moves a branch to a new commit.

Staged entries (and tombstones) live in SQLite, over the compacted layer lakeFS Enterprise writes;
new objects get ``data/<slice>/<object>`` addresses.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TypeVar

from lakefs_gc.lakefs.graveler import Entry
from lakefs_sandbox.emulator.catalog.trees import Trees
from lakefs_sandbox.emulator.errors import APIError
from lakefs_sandbox.emulator.xid import new_descending_xid, new_xid
from lakefs_sandbox.graveler_writer import entry_identity

# staged changes with tombstones (None) or without: what goes into _diff_uncommitted comes out
_Staged = TypeVar("_Staged", Entry, Entry | None)


def entry_to_json(e: Entry) -> dict:
    return {
        "address": e.address,
        "address_type": e.address_type,
        "size": e.size,
        "etag": e.etag,
        "mtime": e.last_modified_seconds + e.last_modified_nanos / 1e9,
        "metadata": dict(e.metadata),
        "content_type": e.content_type,
    }


def entry_from_json(d: dict) -> Entry:
    mt = float(d["mtime"])
    sec = int(mt)
    return Entry(
        d["address"],
        int(d["size"]),
        d["etag"],
        sec,
        int(round((mt - sec) * 1e9)) % 1_000_000_000,
        dict(d.get("metadata") or {}),
        int(d["address_type"]),
        d.get("content_type") or "",
    )


def entry_mtime(e: Entry) -> int:
    return int(e.last_modified_seconds)


class Staging(Trees):
    """Staging, its compaction, and the commits that move a branch (the base of every public part)."""

    def _staged(self, repo: str, branch: str) -> list[tuple[str, Entry | None]]:
        """
        Return the branch's uncommitted changes: staging over the compacted layer.

        lakeFS's CompactedBaseMetaRangeID; its uncommitted diff joins both (pkg/graveler
        diffUncommitted).
        """
        rows = dict(self.db.execute("SELECT path, entry FROM compacted WHERE repo=? AND branch=?", (repo, branch)))
        rows.update(self.db.execute("SELECT path, entry FROM staging WHERE repo=? AND branch=?", (repo, branch)))
        return [(p, entry_from_json(json.loads(e)) if e else None) for p, e in sorted(rows.items())]

    def _unstage(self, repo: str, branch: str, which=None) -> None:
        """Drop uncommitted changes (both layers): all, or the paths ``which(path)`` selects."""
        for table in ("staging", "compacted"):
            if which is None:
                self.db.execute(f"DELETE FROM {table} WHERE repo=? AND branch=?", (repo, branch))
                continue
            for (p,) in self.db.execute(
                f"SELECT path FROM {table} WHERE repo=? AND branch=?", (repo, branch)
            ).fetchall():
                if which(p):
                    self.db.execute(f"DELETE FROM {table} WHERE repo=? AND branch=? AND path=?", (repo, branch, p))

    def compact(self, repo: str, branch: str) -> int:
        """
        Move the branch's staged entries into the compacted layer; return how many moved.

        Staging compaction is lakeFS Enterprise's; OSS graveler reads its result.
        """
        with self.lock:
            self._repo_row(repo)
            self._branch(repo, branch)
            rows = self.db.execute(
                "SELECT path, entry FROM staging WHERE repo=? AND branch=?", (repo, branch)
            ).fetchall()
            with self._tx():
                for p, e in rows:
                    self.db.execute("INSERT OR REPLACE INTO compacted VALUES (?,?,?,?)", (repo, branch, p, e))
                self.db.execute("DELETE FROM staging WHERE repo=? AND branch=?", (repo, branch))
            return len(rows)

    def _diff_uncommitted(
        self, ns: str, mr_id: str, staged: Sequence[tuple[str, _Staged]]
    ) -> list[tuple[str, _Staged]]:
        """
        Return the staged changes that differ from the committed tree.

        Entries compare by identity; tombstones of absent keys are dropped.
        """
        out: list[tuple[str, _Staged]] = []
        for path, e in staged:
            base = self._lookup(ns, mr_id, path)
            if e is None:
                if base is not None:
                    out.append((path, None))
            elif base is None or entry_identity(base) != entry_identity(e):
                out.append((path, e))
        return out

    def _stage(self, repo: str, branch: str, path: str, entry: Entry | None) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO staging VALUES (?,?,?,?)",
            (repo, branch, path, json.dumps(entry_to_json(entry)) if entry else None),
        )

    def new_address(self) -> str:
        """``data/<slice>/<object>``: descending-xid slices rolled over by count and time, ascending object xids."""
        now = self.now()
        sl = self._slice
        if sl is None or sl[1] >= self.s.slice_size or now - sl[2] > self.s.slice_interval:
            sl = (new_descending_xid(now), 0, now)
        self._slice = (sl[0], sl[1] + 1, sl[2])
        return f"data/{sl[0]}/{new_xid(now)}"

    def _tree(self, repo: str, ns: str, cid: str, branch: str | None = None) -> dict[str, Entry]:
        """Return a commit's entries by path (with ``branch``: its staged changes over them)."""
        tree = dict(self._iter_committed(ns, self._commit(repo, cid)["meta_range_id"]))
        for path, e in self._staged(repo, branch) if branch is not None else []:
            if e is None:
                tree.pop(path, None)
            else:
                tree[path] = e
        return tree

    def _new_commit(
        self,
        repo: str,
        parents: list[str],
        message: str,
        metadata: dict | None,
        date: int | None,
        mr_id: str,
        committer: str,
    ) -> dict:
        gen = 1 + max((self._commit(repo, p)["generation"] for p in parents), default=0)
        c = {
            "id": "",
            "parents": parents,
            "committer": committer,
            "message": message,
            "creation_date": int(date) if date is not None else int(self.now()),
            "meta_range_id": mr_id,
            "metadata": dict(metadata or {}),
            "generation": gen,
            "version": 1,
        }
        c["id"] = self._commit_id(c)
        return c

    def _clean_branch(self, repo: str, branch: str) -> tuple[dict, str, dict]:
        """
        Return (repo row, HEAD id, HEAD commit) of a branch without uncommitted changes.

        As lakeFS's ``prepareForCommitIDUpdate``: ``ErrDirtyBranch`` otherwise.
        """
        r = self._repo_row(repo)
        head, _ = self._branch(repo, branch)
        commit = self._commit(repo, head)
        if self._diff_uncommitted(r["storage_namespace"], commit["meta_range_id"], self._staged(repo, branch)):
            raise APIError(400, "uncommitted changes (dirty branch)")
        return r, head, commit

    def _move_branch(self, repo: str, branch: str, c: dict) -> None:
        with self._tx():
            self.db.execute("INSERT INTO commits VALUES (?,?,?)", (repo, c["id"], json.dumps(c)))
            self.db.execute("UPDATE branches SET commit_id=? WHERE repo=? AND name=?", (c["id"], repo, branch))
            self._unstage(repo, branch)  # lakeFS drops the sealed (empty) staging tokens
