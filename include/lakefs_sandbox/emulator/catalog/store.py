"""
The catalog's state: SQLite tables, the clock, the blockstore, and lookups of rows and refs.

Repositories, branches, commits, staging, tags and tasks live in SQLite (a file under ``--state``
or in memory); :class:`Store` opens it and answers the lookups every other part of the catalog
makes: a repository's row, a branch's HEAD, a commit, a ref resolved, the commit graph's merge base.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import os
import posixpath
import re
import sqlite3
import threading
import time
from collections import OrderedDict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lakefs_gc.storage import open_storage, parse_namespace
from lakefs_sandbox.emulator.errors import APIError, not_found

if TYPE_CHECKING:
    from lakefs_sandbox.emulator.settings import Settings


def _now_iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).isoformat().replace("+00:00", "Z")


class _LRU(OrderedDict):
    def __init__(self, size: int):
        super().__init__()
        self.size = size

    def get_or(self, key, loader):
        if key in self:
            self.move_to_end(key)
            return self[key]
        v = loader()
        self[key] = v
        if len(self) > self.size:
            self.popitem(last=False)
        return v


class _Tx:
    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN")

    def __exit__(self, exc_type, *_):
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")


class Store:
    """The catalog's state and the lookups every other part of it makes (see the module docstring)."""

    def __init__(self, settings: Settings):
        self.s = settings
        self.lock = threading.RLock()
        if settings.state_dir:
            os.makedirs(settings.state_dir, exist_ok=True)
            path = os.path.join(settings.state_dir, "emulator.sqlite")
        else:
            path = ":memory:"
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL" if settings.state_dir else "PRAGMA journal_mode=MEMORY")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self._schema()
        row = self.db.execute("SELECT value FROM meta WHERE key='clock_offset'").fetchone()
        self._offset = float(row[0]) if row else 0.0
        if settings.clock_offset is not None:
            self.set_clock_offset(settings.clock_offset)
        self._storages: dict[str, object] = {}
        self._presigners: dict[str, Any] = {}  # S3 clients that sign URLs with SigV4
        # trees are immutable: keep many parsed (test repositories hold thousands of small ranges; a
        # big one holds few large ones), and remember which tables are known to be in the namespace
        self._metaranges = _LRU(4096)
        self._ranges = _LRU(2048)
        self._tables_written: set[tuple[str, str]] = set()
        self._commits_cache: dict[str, tuple[tuple, dict[str, dict]]] = {}  # repo -> (stamp, commits)
        self._slice: tuple[str, int, float] | None = None  # (slice id, ids issued, created at)
        self._signing_key = hashlib.sha256(b"lakefs-emulator-link:" + settings.secret_key.encode()).digest()

    def _schema(self) -> None:
        self.db.executescript("""
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS repos (name TEXT PRIMARY KEY, storage_namespace TEXT NOT NULL,
            default_branch TEXT NOT NULL, creation_date INTEGER NOT NULL, read_only INTEGER NOT NULL,
            gc_rules TEXT);
        CREATE TABLE IF NOT EXISTS branches (repo TEXT NOT NULL, name TEXT NOT NULL, commit_id TEXT NOT NULL,
            hidden INTEGER NOT NULL, PRIMARY KEY (repo, name));
        CREATE TABLE IF NOT EXISTS commits (repo TEXT NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL,
            PRIMARY KEY (repo, id));
        CREATE TABLE IF NOT EXISTS staging (repo TEXT NOT NULL, branch TEXT NOT NULL, path TEXT NOT NULL,
            entry TEXT, PRIMARY KEY (repo, branch, path));
        CREATE TABLE IF NOT EXISTS compacted (repo TEXT NOT NULL, branch TEXT NOT NULL, path TEXT NOT NULL,
            entry TEXT, PRIMARY KEY (repo, branch, path));
        CREATE TABLE IF NOT EXISTS tasks (id TEXT PRIMARY KEY, repo TEXT NOT NULL, body TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS tags (repo TEXT NOT NULL, name TEXT NOT NULL, commit_id TEXT NOT NULL,
            PRIMARY KEY (repo, name));
        """)

    def _tx(self):
        return _Tx(self.db)

    def clock_offset(self) -> float:
        return self._offset

    def set_clock_offset(self, offset: float) -> None:
        with self.lock:
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('clock_offset', ?)", (repr(float(offset)),))
            self._offset = float(offset)

    def now(self) -> float:
        return time.time() + self.clock_offset()

    def storage(self, ns: str):
        st = self._storages.get(ns)
        if st is None:
            st = open_storage(ns, self.s.options(ns), self.s.local_path)
            self._storages[ns] = st
        return st

    def roots(self, ns: str) -> tuple[str, ...]:
        """Every URI naming the namespace root (local: as written and as resolved)."""
        return parse_namespace(ns, self.s.local_path).roots()

    def full_uri(self, ns: str, key: str) -> str:
        """
        Return a key as lakeFS formats it (``QualifiedKey.Format``).

        On the local blockstore ``local://`` + ``path.Join(local_path, ns, key)``, so resolved and
        without a trailing ``/`` (``local:///<local_path>/<ns>/<key>``); on S3 the namespace and the
        key as they are.
        """
        if ns.startswith("local://"):
            return "local://" + posixpath.normpath(f"{parse_namespace(ns, self.s.local_path).prefix}/{key}")
        return ns.rstrip("/") + "/" + key

    def _repo_row(self, name: str) -> dict:
        row = self.db.execute(
            "SELECT name, storage_namespace, default_branch, creation_date, read_only, gc_rules "
            "FROM repos WHERE name=?",
            (name,),
        ).fetchone()
        if row is None:
            raise not_found("repository")
        return {
            "id": row[0],
            "storage_namespace": row[1],
            "default_branch": row[2],
            "creation_date": row[3],
            "read_only": bool(row[4]),
            "gc_rules": json.loads(row[5]) if row[5] else None,
        }

    @staticmethod
    def repo_json(r: dict) -> dict:
        return {
            "id": r["id"],
            "creation_date": r["creation_date"],
            "default_branch": r["default_branch"],
            "storage_namespace": r["storage_namespace"],
            "storage_id": "",
            "read_only": r["read_only"],
        }

    def _writable(self, repo: str, force: bool) -> dict:
        """Return the repository's row; 403 when it is read-only and ``force`` is not set."""
        r = self._repo_row(repo)
        if r["read_only"] and not force:
            raise APIError(403, "repository is read-only")
        return r

    def _commit_id(self, c: dict) -> str:
        body = json.dumps(
            {
                k: c[k]
                for k in (
                    "parents",
                    "committer",
                    "message",
                    "creation_date",
                    "meta_range_id",
                    "metadata",
                    "generation",
                    "version",
                )
            },
            sort_keys=True,
        )
        return hashlib.sha256(body.encode() + str(time.time_ns()).encode()).hexdigest()

    def _commit(self, repo: str, cid: str) -> dict:
        row = self.db.execute("SELECT body FROM commits WHERE repo=? AND id=?", (repo, cid)).fetchone()
        if row is None:
            raise not_found("commit")
        return json.loads(row[0])

    def _all_commits(self, repo: str) -> dict[str, dict]:
        """
        Return every commit of ``repo`` by id (read-only: shared by callers).

        Commits never change and are only added, so the parsed set is kept while the repository's
        commit count and last rowid stay the same (``delete_repository`` drops it).
        """
        stamp = tuple(self.db.execute("SELECT COUNT(*), MAX(rowid) FROM commits WHERE repo=?", (repo,)).fetchone())
        cached = self._commits_cache.get(repo)
        if cached is None or cached[0] != stamp:
            cached = (
                stamp,
                {
                    r[0]: json.loads(r[1])
                    for r in self.db.execute("SELECT id, body FROM commits WHERE repo=? ORDER BY rowid", (repo,))
                },
            )
            self._commits_cache[repo] = cached
        return cached[1]

    def _branch(self, repo: str, name: str) -> tuple[str, bool]:
        row = self.db.execute("SELECT commit_id, hidden FROM branches WHERE repo=? AND name=?", (repo, name)).fetchone()
        if row is None:
            raise not_found("branch")
        return row[0], bool(row[1])

    def resolve_ref(self, repo: str, ref: str, missing: str = "not found") -> tuple[str, str | None]:
        """
        Return (commit id, branch name or None) of a ref.

        Accepts a branch, a tag, a full commit id or a unique prefix (>= 6); ``missing``: the 404's
        message (lakeFS's differs by endpoint).
        """
        row = self.db.execute("SELECT commit_id FROM branches WHERE repo=? AND name=?", (repo, ref)).fetchone()
        if row:
            return row[0], ref
        row = self.db.execute("SELECT commit_id FROM tags WHERE repo=? AND name=?", (repo, ref)).fetchone()
        if row:  # lakeFS's revResolve: a full commit id, a branch, a tag, then a commit prefix
            return row[0], None
        if re.fullmatch(r"[0-9a-f]{6,64}", ref or ""):
            rows = self.db.execute("SELECT id FROM commits WHERE repo=? AND id LIKE ?", (repo, ref + "%")).fetchall()
            if len(rows) == 1:
                return rows[0][0], None
        raise APIError(404, missing)

    def _merge_base(self, repo: str, left: str, right: str) -> str | None:
        """
        Return a best common ancestor, as lakeFS's ``ref.FindMergeBase``.

        Walks both sides together by generation (then creation date), newest first.
        """
        if left == right:
            return left
        commits = self._all_commits(repo)
        reached = {left: 1, right: 2}
        queue: list[tuple[int, int, int, str]] = []
        order = iter(range(1 << 62))
        for cid in (left, right):
            c = commits[cid]
            heapq.heappush(queue, (-c["generation"], -c["creation_date"], next(order), cid))
        while queue:
            cid = heapq.heappop(queue)[3]
            flags = reached[cid]
            for parent in commits[cid]["parents"]:
                if parent not in reached:
                    p = commits[parent]
                    heapq.heappush(queue, (-p["generation"], -p["creation_date"], next(order), parent))
                reached[parent] = reached.get(parent, 0) | flags
                if reached[parent] == 3:
                    return parent
        return None
