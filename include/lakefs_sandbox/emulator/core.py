"""
The emulator's catalog: repositories, branches, commits, staging, GC preparation.

State (repositories, branches, commits, staging, rules, tasks) lives in SQLite (a file under
``--state`` or in memory); trees live where lakeFS keeps them: ranges and metaranges written as
graveler SSTables into the storage namespace under ``_lakefs/<id>``. Every public method runs
under one lock, so the HTTP layer may call from any thread.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import csv
import hashlib
import heapq
import hmac
import io
import json
import os
import posixpath
import re
import secrets
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from lakefs_gc.lakefs.graveler import FULL, RANGES_TYPE, RELATIVE, Entry, RangeInfo, iter_metarange, iter_range
from lakefs_gc.lakefs.sstable import SSTableReader
from lakefs_gc.storage import AzureOptions, GCSOptions, S3Options, S3Storage, open_storage, parse_namespace
from lakefs_gc.storage.namespace import blockstore_root
from lakefs_sandbox.graveler_writer import (
    GravelerTableWriter,
    entry_identity,
    entry_value,
    metarange_to_bytes,
    should_break_at_key,
)

from .active_commits import CommitNode, Rules, active_commits
from .xid import new_descending_xid, new_xid, xid_time

DUMMY_KEY = "_lakefs/dummy"
DUMMY_CONTENT = b"this is dummy data - created by lakeFS to check accessibility"
RULES_KEY = "_lakefs/retention/gc/rules/config.json"
REPO_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{2,62}$")
BRANCH_NAME_RE = re.compile(r"^\w[-\w]*$")
NANOID_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-"
RAW_URL_B64 = re.compile(r"[A-Za-z0-9_-]*")
DELETE_OBJECTS_MAX = 1000  # lakeFS's DefaultMaxDeleteObjects (pkg/api/controller.go)


class APIError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def not_found(what: str = "") -> APIError:
    """
    LakeFS's 404s: graveler's ``ErrRepositoryNotFound`` ("repository not found"),
    ``ErrBranchNotFound``, ``ErrCommitNotFound``, ``ErrTagNotFound``, else ``ErrNotFound``
    ("not found", e.g. a missing object or an unresolvable ref).
    """
    return APIError(404, f"{what} not found" if what else "not found")


class ImportFailed(APIError):
    """
    An import that lakeFS starts (202) and then fails: its status reports ``completed: false``
    and the error (``import error: <message>``); ``ingested`` objects were listed before it failed.
    """

    def __init__(self, message: str, ingested: int):
        super().__init__(400, message)
        self.ingested = ingested


class MergeConflict(APIError):
    """lakeFS's ``ErrConflictFound`` from a three-way merge (409)."""

    def __init__(self):
        super().__init__(409, "conflict found")


def _validate_tag_id(tag: str) -> None:
    """LakeFS's ``graveler.ValidateTagID`` (git-check-ref-format, ``~`` allowed)."""
    if not tag:
        raise APIError(400, "tagID: required value: validation error")
    if tag == "@" or tag.endswith((".", ".lock")) or any(x in tag for x in ("..", "/", "@{")) or \
            any(ch in tag for ch in "^:?*[\\") or any(ord(ch) <= 0x20 for ch in tag):
        raise APIError(400, "argument tagID: tag id: invalid value: validation error")


_GO_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                    "\t": "\\t", "<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                    "\u2029": "\\u2029"}


def _go_json_string(s: str) -> str:
    """
    A string as Go's ``json.Marshal`` writes it (Go 1.22+): ``"`` and ``\\`` escaped, ``\\b
    \\f \\n \\r \\t`` by name, other control characters ``\\u00xx``, HTML-escaped (``<``, ``>``,
    ``&``), U+2028/U+2029 escaped, anything else as UTF-8 (a lone surrogate, invalid UTF-8 to Go,
    as U+FFFD).
    """
    out = []
    for ch in s:
        if ch in _GO_JSON_ESCAPES:
            out.append(_GO_JSON_ESCAPES[ch])
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        elif 0xD800 <= ord(ch) <= 0xDFFF:
            out.append("\ufffd")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _address_json(repo: str, branch: str, path: str, address: str) -> bytes:
    """
    What lakeFS signs for a link address (``catalog.getAddressJSON``): ``json.Marshal`` of a
    struct of Repository, Branch, Path and PhysicalAddress, in that order.
    """
    fields = (("Repository", repo), ("Branch", branch), ("Path", path), ("PhysicalAddress", address))
    return ("{" + ",".join(f'"{k}":{_go_json_string(v)}' for k, v in fields) + "}").encode()


def _apply_overrides(commit: dict, overrides: dict | None) -> None:
    """LakeFS's ``applyCommitOverrides``: a non-empty message and a given metadata replace."""
    if not overrides:
        return
    if overrides.get("message"):
        commit["message"] = overrides["message"]
    if overrides.get("metadata") is not None:
        commit["metadata"] = dict(overrides["metadata"])


@dataclass
class Settings:
    """Emulator knobs (command-line flags of ``python -m lakefs_sandbox.emulator``)."""

    access_key: str = "AKIAIOSFOLEMULATOR"
    secret_key: str = "emulator-secret"
    state_dir: str | None = None
    blockstore_type: str = "local"  # "local", "s3", "azure" or "gs"
    local_path: str | None = None  # blockstore.local.path: local://<ns> lives at <local_path>/<ns>
    s3: S3Options = field(default_factory=S3Options)
    azure: AzureOptions | None = None  # the account the azure blockstore writes to (Azurite in tests)
    gcs: GCSOptions | None = None      # the endpoint the gs blockstore writes to (fake-gcs-server in tests)

    def options(self, uri: str):
        """The storage settings for a namespace or address of this blockstore's kind."""
        scheme = parse_namespace(uri, self.local_path).scheme
        return {"s3": self.s3, "azure": self.azure, "gs": self.gcs}.get(scheme)
    grace_period: int = 86400  # seconds: link-address validity and /config/garbage-collection
    slice_size: int = 50_000  # data partition roll-over by count (DefaultDataPartitionSize)
    slice_interval: int = 3600  # ... and by time, seconds (DefaultDataInterval)
    min_range_size: int = 0
    max_range_size: int = 20 << 20
    range_raggedness: int = 50_000
    uncommitted_page_size: int = 100_000  # rows per prepare_uncommited call
    prepare_commits_delay: float = 0.0  # seconds an async prepare task reports completed=false
    clock_offset: float | None = None  # seconds added to the real clock; None keeps the persisted one


def _now_iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).isoformat().replace("+00:00", "Z")


def entry_to_json(e: Entry) -> dict:
    return {"address": e.address, "address_type": e.address_type, "size": e.size, "etag": e.etag,
            "mtime": e.last_modified_seconds + e.last_modified_nanos / 1e9, "metadata": dict(e.metadata),
            "content_type": e.content_type}


def entry_from_json(d: dict) -> Entry:
    mt = float(d["mtime"])
    sec = int(mt)
    return Entry(d["address"], int(d["size"]), d["etag"], sec, int(round((mt - sec) * 1e9)) % 1_000_000_000,
                 dict(d.get("metadata") or {}), int(d["address_type"]), d.get("content_type") or "")


def entry_mtime(e: Entry) -> int:
    return int(e.last_modified_seconds)


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


class Catalog:
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
        self._presigners: dict[str, object] = {}  # S3 clients that sign URLs with SigV4
        # trees are immutable: keep many parsed (test repositories hold thousands of small ranges; a
        # big one holds few large ones), and remember which tables are known to be in the namespace
        self._metaranges = _LRU(4096)
        self._ranges = _LRU(2048)
        self._tables_written: set[tuple[str, str]] = set()
        self._commits_cache: dict[str, tuple[tuple, dict[str, dict]]] = {}  # repo -> (stamp, commits)
        self._slice: tuple[str, int, float] | None = None  # (slice id, ids issued, created at)
        self._signing_key = hashlib.sha256(b"lakefs-emulator-link:" + settings.secret_key.encode()).digest()

    # ------------------------------------------------------------------ state
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

    # ------------------------------------------------------------------ clock
    def clock_offset(self) -> float:
        return self._offset

    def set_clock_offset(self, offset: float) -> None:
        with self.lock:
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('clock_offset', ?)", (repr(float(offset)),))
            self._offset = float(offset)

    def now(self) -> float:
        return time.time() + self.clock_offset()

    # ------------------------------------------------------------------ storage
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
        A key as lakeFS formats it (``QualifiedKey.Format``): on the local blockstore
        ``local://`` + ``path.Join(local_path, ns, key)``, so resolved and without a trailing ``/``
        (``local:///<local_path>/<ns>/<key>``); on S3 the namespace and the key as they are.
        """
        if ns.startswith("local://"):
            return "local://" + posixpath.normpath(f"{parse_namespace(ns, self.s.local_path).prefix}/{key}")
        return ns.rstrip("/") + "/" + key

    # ------------------------------------------------------------------ repositories
    def _repo_row(self, name: str) -> dict:
        row = self.db.execute("SELECT name, storage_namespace, default_branch, creation_date, read_only, gc_rules "
                              "FROM repos WHERE name=?", (name,)).fetchone()
        if row is None:
            raise not_found("repository")
        return {"id": row[0], "storage_namespace": row[1], "default_branch": row[2], "creation_date": row[3],
                "read_only": bool(row[4]), "gc_rules": json.loads(row[5]) if row[5] else None}

    @staticmethod
    def repo_json(r: dict) -> dict:
        return {"id": r["id"], "creation_date": r["creation_date"], "default_branch": r["default_branch"],
                "storage_namespace": r["storage_namespace"], "storage_id": "", "read_only": r["read_only"]}

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
                raise APIError(400, f"storage namespace {ns!r}: expected a {self.s.blockstore_type}:// namespace "
                                    f"(blockstore type {self.s.blockstore_type})")
            if self.db.execute("SELECT 1 FROM repos WHERE name=?", (name,)).fetchone():
                raise APIError(409, "error creating repository: not unique")
            ns = ns.rstrip("/")
            st = self.storage(ns)
            try:
                in_use = st.exists(DUMMY_KEY)
            except Exception as exc:
                raise APIError(400, f"failed to access storage namespace {ns}: {exc}") from None
            if in_use:
                raise APIError(400, f"failed to create repository: found lakeFS objects in the storage (:{ns}) "
                                    f"key({DUMMY_KEY}): storage namespace already in use")
            st.put(DUMMY_KEY, DUMMY_CONTENT)
            now = int(self.now())
            commit = {"id": "", "parents": [], "committer": "", "message": "Repository created",
                      "creation_date": now, "meta_range_id": "", "metadata": {}, "generation": 1, "version": 1}
            commit["id"] = self._commit_id(commit)
            with self._tx():
                self.db.execute("INSERT INTO repos VALUES (?,?,?,?,?,NULL)", (name, ns, default_branch, now,
                                                                             int(read_only)))
                self.db.execute("INSERT INTO commits VALUES (?,?,?)", (name, commit["id"], json.dumps(commit)))
                self.db.execute("INSERT INTO branches VALUES (?,?,?,0)", (name, default_branch, commit["id"]))
            return self.repo_json(self._repo_row(name))

    def get_repository(self, name: str) -> dict:
        with self.lock:
            return self.repo_json(self._repo_row(name))

    def list_repositories(self, prefix: str, after: str, amount: int) -> tuple[list[dict], bool]:
        with self.lock:
            names = [r[0] for r in self.db.execute("SELECT name FROM repos WHERE name > ? ORDER BY name", (after,))
                     if r[0].startswith(prefix)]
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

    # ------------------------------------------------------------------ commits & refs
    def _commit_id(self, c: dict) -> str:
        body = json.dumps({k: c[k] for k in ("parents", "committer", "message", "creation_date", "meta_range_id",
                                               "metadata", "generation", "version")}, sort_keys=True)
        return hashlib.sha256(body.encode() + str(time.time_ns()).encode()).hexdigest()

    def _commit(self, repo: str, cid: str) -> dict:
        row = self.db.execute("SELECT body FROM commits WHERE repo=? AND id=?", (repo, cid)).fetchone()
        if row is None:
            raise not_found("commit")
        return json.loads(row[0])

    def _all_commits(self, repo: str) -> dict[str, dict]:
        """
        Every commit of ``repo`` by id (read-only: shared by callers). Commits never change and
        are only added, so the parsed set is kept while the repository's commit count and last
        rowid stay the same (``delete_repository`` drops it).
        """
        stamp = tuple(self.db.execute("SELECT COUNT(*), MAX(rowid) FROM commits WHERE repo=?", (repo,)).fetchone())
        cached = self._commits_cache.get(repo)
        if cached is None or cached[0] != stamp:
            cached = (stamp, {r[0]: json.loads(r[1])
                              for r in self.db.execute("SELECT id, body FROM commits WHERE repo=? ORDER BY rowid",
                                                       (repo,))})
            self._commits_cache[repo] = cached
        return cached[1]

    def _branch(self, repo: str, name: str) -> tuple[str, bool]:
        row = self.db.execute("SELECT commit_id, hidden FROM branches WHERE repo=? AND name=?", (repo, name)).fetchone()
        if row is None:
            raise not_found("branch")
        return row[0], bool(row[1])

    def resolve_ref(self, repo: str, ref: str, missing: str = "not found") -> tuple[str, str | None]:
        """
        (commit id, branch name or None). Accepts a branch, a tag, a full commit id or a unique
        prefix (>= 6); ``missing``: the 404's message (lakeFS's differs by endpoint).
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
                ordered = ordered[ordered.index(after_id) + 1:] if after_id in ordered else []
            return [commits[c] for c in ordered[:amount]], len(ordered) > amount

    # ------------------------------------------------------------------ branches
    def create_branch(self, repo: str, name: str, source: str, hidden: bool = False) -> str:
        with self.lock:
            self._repo_row(repo)
            if not BRANCH_NAME_RE.match(name or ""):
                raise APIError(400, "argument branch: branch id: invalid value: validation error: branch id must "
                                    "consist of letters, digits, underscores and dashes, and cannot start with a dash")
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

    def list_branches(self, repo: str, prefix: str, after: str, amount: int, show_hidden: bool) -> tuple[list[dict], bool]:
        with self.lock:
            self._repo_row(repo)
            rows = [(n, c) for n, c, h in self.db.execute(
                "SELECT name, commit_id, hidden FROM branches WHERE repo=? AND name > ? ORDER BY name", (repo, after))
                if n.startswith(prefix) and (show_hidden or not h)]
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

    # ------------------------------------------------------------------ trees (graveler SSTables)
    def _metarange(self, ns: str, mr_id: str) -> list[RangeInfo]:
        if not mr_id:
            return []

        def load():
            with self.storage(ns).open_input(f"_lakefs/{mr_id}") as f:
                return [ri for _, ri in iter_metarange(SSTableReader(f, name=mr_id))]
        return self._metaranges.get_or((ns, mr_id), load)

    def _range(self, ns: str, range_id: str) -> tuple[list[bytes], list]:
        def load():
            with self.storage(ns).open_input(f"_lakefs/{range_id}") as f:
                recs = list(iter_range(SSTableReader(f, name=range_id)))
            return [r.key for r in recs], recs
        return self._ranges.get_or((ns, range_id), load)

    def _lookup(self, ns: str, mr_id: str, path: str) -> Entry | None:
        ranges = self._metarange(ns, mr_id)
        key = path.encode()
        i = bisect.bisect_left([r.max_key for r in ranges], key)
        if i == len(ranges) or ranges[i].min_key > key:
            return None
        keys, recs = self._range(ns, ranges[i].id)
        j = bisect.bisect_left(keys, key)
        return recs[j].entry if j < len(keys) and keys[j] == key else None

    def _iter_committed(self, ns: str, mr_id: str, start: bytes = b"") -> Iterator[tuple[str, Entry]]:
        for rng in self._metarange(ns, mr_id):
            if rng.max_key < start:
                continue
            keys, recs = self._range(ns, rng.id)
            for j in range(bisect.bisect_left(keys, start), len(keys)):
                yield recs[j].key.decode("utf-8", "surrogateescape"), recs[j].entry

    def _write_table(self, ns: str, table_id: str, data: bytes) -> None:
        if (ns, table_id) in self._tables_written:
            return
        self.storage(ns).put(f"_lakefs/{table_id}", data)  # content-addressed: writing it again is harmless
        self._tables_written.add((ns, table_id))

    def _apply(self, ns: str, base_mr: str, changes: list[tuple[bytes, Entry | None]]) -> str:
        """
        LakeFS's committed Apply: untouched base ranges are reused as-is when the writer is at a range
        boundary; touched ranges are rewritten, cut by ShouldBreakAtKey. Returns the new metarange id.
        """
        out: list[RangeInfo] = []
        state: dict = {"w": None, "buf": None}
        s = self.s

        def add(key: bytes, value: bytes) -> None:
            if state["w"] is None:
                state["buf"] = io.BytesIO()
                state["w"] = GravelerTableWriter(state["buf"], RANGES_TYPE)
            w = state["w"]
            w.add(key, value)
            if should_break_at_key(key, w.estimated_size(), s.min_range_size, s.max_range_size, s.range_raggedness):
                close()

        def close() -> None:
            w = state["w"]
            if w is None:
                return
            info = w.finish()
            self._write_table(ns, info.id, state["buf"].getvalue())
            out.append(info)
            state["w"] = state["buf"] = None

        ci, n = 0, len(changes)
        for rng in self._metarange(ns, base_mr):
            while ci < n and changes[ci][0] < rng.min_key:
                if changes[ci][1] is not None:
                    add(changes[ci][0], entry_value(changes[ci][1]))
                ci += 1
            if ci == n or changes[ci][0] > rng.max_key:
                close()
                out.append(rng)  # unchanged range: shared with the base commit
                continue
            _, recs = self._range(ns, rng.id)
            for rec in recs:
                while ci < n and changes[ci][0] < rec.key:
                    if changes[ci][1] is not None:
                        add(changes[ci][0], entry_value(changes[ci][1]))
                    ci += 1
                if ci < n and changes[ci][0] == rec.key:
                    if changes[ci][1] is not None:
                        add(rec.key, entry_value(changes[ci][1]))
                    ci += 1
                else:
                    add(rec.key, entry_value(rec.entry))
        while ci < n:
            if changes[ci][1] is not None:
                add(changes[ci][0], entry_value(changes[ci][1]))
            ci += 1
        close()
        mr_id, data = metarange_to_bytes(out)
        self._write_table(ns, mr_id, data)
        return mr_id

    # ------------------------------------------------------------------ staging
    def _staged(self, repo: str, branch: str) -> list[tuple[str, Entry | None]]:
        """
        The branch's uncommitted changes: staging over the compacted layer (lakeFS's
        CompactedBaseMetaRangeID; its uncommitted diff joins both, pkg/graveler diffUncommitted).
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
            for (p,) in self.db.execute(f"SELECT path FROM {table} WHERE repo=? AND branch=?", (repo, branch)).fetchall():
                if which(p):
                    self.db.execute(f"DELETE FROM {table} WHERE repo=? AND branch=? AND path=?", (repo, branch, p))

    def compact(self, repo: str, branch: str) -> int:
        """
        Staging compaction (lakeFS Enterprise; OSS graveler reads its result): the branch's staged
        entries move into the compacted layer. Returns how many moved.
        """
        with self.lock:
            self._repo_row(repo)
            self._branch(repo, branch)
            rows = self.db.execute("SELECT path, entry FROM staging WHERE repo=? AND branch=?", (repo, branch)).fetchall()
            with self._tx():
                for p, e in rows:
                    self.db.execute("INSERT OR REPLACE INTO compacted VALUES (?,?,?,?)", (repo, branch, p, e))
                self.db.execute("DELETE FROM staging WHERE repo=? AND branch=?", (repo, branch))
            return len(rows)

    def _diff_uncommitted(self, ns: str, mr_id: str, staged: list[tuple[str, Entry | None]]) -> list[tuple[str, Entry | None]]:
        """Staged changes that differ from the committed tree (identity compare; tombstones of absent keys dropped)."""
        out = []
        for path, e in staged:
            base = self._lookup(ns, mr_id, path)
            if e is None:
                if base is not None:
                    out.append((path, None))
            elif base is None or entry_identity(base) != entry_identity(e):
                out.append((path, e))
        return out

    def _stage(self, repo: str, branch: str, path: str, entry: Entry | None) -> None:
        self.db.execute("INSERT OR REPLACE INTO staging VALUES (?,?,?,?)",
                        (repo, branch, path, json.dumps(entry_to_json(entry)) if entry else None))

    def new_address(self) -> str:
        """``data/<slice>/<object>``: descending-xid slices rolled over by count and time, ascending object xids."""
        now = self.now()
        sl = self._slice
        if sl is None or sl[1] >= self.s.slice_size or now - sl[2] > self.s.slice_interval:
            sl = (new_descending_xid(now), 0, now)
        self._slice = (sl[0], sl[1] + 1, sl[2])
        return f"data/{sl[0]}/{new_xid(now)}"

    def get_entry(self, repo: str, ref: str, path: str) -> tuple[dict, Entry]:
        with self.lock:
            r = self._repo_row(repo)
            cid, branch = self.resolve_ref(repo, ref)
            if branch is not None:
                row = self.db.execute("SELECT entry FROM staging WHERE repo=? AND branch=? AND path=?",
                                      (repo, branch, path)).fetchone() or self.db.execute(
                    "SELECT entry FROM compacted WHERE repo=? AND branch=? AND path=?", (repo, branch, path)).fetchone()
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
            with open(e.address[len("local://"):], "rb") as f:
                return e, f.read()
        parsed = parse_namespace(e.address)
        root = parsed.canonical()[:-len(parsed.prefix)].rstrip("/") if parsed.prefix else parsed.canonical()
        st = open_storage(root, self.s.options(e.address))
        return e, st.get(parsed.prefix)

    def _import_storage(self, root: str):
        if root.startswith("local://"):
            from lakefs_gc.storage import LocalStorage

            return LocalStorage(root[len("local://"):])
        return open_storage(root, self.s.options(root))

    def address_uri(self, ns: str, e: Entry) -> str:
        """
        The ``physical_address`` lakeFS's stat and listing print (``ResolveNamespace`` then
        ``QualifiedKey.Format``). On the local blockstore a FULL ``local://<host>/<path>`` prints as
        ``local://`` + ``path.Join(<blockstore root>, host, path)``: the resolved form that
        ``getPhysicalAddress`` hands out comes back with the root twice
        (``local:///<root>/<root>/repo/data/...``), while the object is read at ``<root>/repo/data/...``.
        """
        if e.address_type == RELATIVE or (e.address_type != FULL and "://" not in e.address):
            return self.full_uri(ns, e.address)
        if e.address.startswith("local://") and self.s.local_path:
            host, _, path = e.address[len("local://"):].partition("/")
            return "local://" + posixpath.normpath(posixpath.join(blockstore_root(self.s.local_path), host, path))
        return e.address

    def diff_branch(self, repo: str, branch: str, prefix: str, after: str, amount: int,
                    delimiter: str = "") -> tuple[list[tuple[str, str, int | None]], bool]:
        """
        LakeFS's ``diffBranch`` (``Catalog.DiffUncommitted``): the branch's uncommitted changes
        against its HEAD, by path: ``added`` (no committed entry), ``changed`` (another identity),
        ``removed`` (a tombstone over a committed entry: the tombstone's size, 0); paged as
        :meth:`_page_diff` (``size`` None: a common prefix).
        """
        with self.lock:
            r = self._repo_row(repo)
            head, _ = self._branch(repo, branch)
            ns = r["storage_namespace"]
            mr = self._commit(repo, head)["meta_range_id"]
            diffs = [(path, "removed", 0) if e is None else
                     (path, "changed" if self._lookup(ns, mr, path) is not None else "added", e.size)
                     for path, e in self._diff_uncommitted(ns, mr, self._staged(repo, branch))]
            return _page_diff(diffs, prefix, after, amount, delimiter)

    def _tree(self, repo: str, ns: str, cid: str, branch: str | None = None) -> dict[str, Entry]:
        """A commit's entries by path (with ``branch``: its staged changes over them)."""
        tree = dict(self._iter_committed(ns, self._commit(repo, cid)["meta_range_id"]))
        for path, e in self._staged(repo, branch) if branch is not None else []:
            if e is None:
                tree.pop(path, None)
            else:
                tree[path] = e
        return tree

    def diff_refs(self, repo: str, left: str, right: str, kind: str, prefix: str, after: str, amount: int,
                  delimiter: str) -> tuple[list[tuple[str, str, int | None]], bool]:
        """
        LakeFS's ``diffRefs``. ``two_dot`` (``Graveler.Diff``): the left commit against the right
        one (a right ref ``<branch>$``, lakeFS's staging modifier: the branch's staged changes
        over its HEAD); ``removed`` carries the left entry's size.
        ``three_dot``, the default (``Graveler.Compare``, committed only): what merging the right
        ref into the left would change, from their merge base: a key only the right side changed
        is ``added``/``changed``/``removed``, one both changed differently ``conflict``. Paged as
        :meth:`_page_diff`.
        """
        with self.lock:
            r = self._repo_row(repo)
            ns = r["storage_namespace"]
            if kind == "two_dot":
                left_id, _ = self.resolve_ref(repo, left)
                staging = right.endswith("$") and self.db.execute(
                    "SELECT 1 FROM branches WHERE repo=? AND name=?", (repo, right[:-1])).fetchone() is not None
                right_id, _ = self.resolve_ref(repo, right[:-1] if staging else right)
                lt, base = self._tree(repo, ns, left_id), None
                rt = self._tree(repo, ns, right_id, right[:-1] if staging else None)
            else:
                right_id, _ = self.resolve_ref(repo, right, f"get commit by ref {right}: not found")
                left_id, _ = self.resolve_ref(repo, left, f"get commit by branch {left}: not found")
                base_id = self._merge_base(repo, right_id, left_id)
                if base_id is None:
                    raise APIError(500, "no merge base")
                lt, rt, base = (self._tree(repo, ns, c) for c in (left_id, right_id, base_id))
            ident = entry_identity
            diffs: list[tuple[str, str, int | None]] = []
            for path in sorted(set(lt) | set(rt), key=lambda k: k.encode("utf-8", "surrogateescape")):
                lv, rv = lt.get(path), rt.get(path)
                if lv is not None and rv is not None and ident(lv) == ident(rv):
                    continue
                typ = "added" if lv is None else "removed" if rv is None else "changed"
                size = (rv if rv is not None else lv).size
                if base is not None:  # lakeFS's compareIterator
                    bv = base.get(path)
                    if typ == "added":
                        if bv is not None:
                            if ident(bv) == ident(rv):
                                continue
                            typ = "conflict"
                    elif typ == "changed":
                        if bv is None:
                            typ = "conflict"
                        elif ident(bv) == ident(rv):
                            continue
                        elif ident(bv) != ident(lv):
                            typ = "conflict"
                    else:  # removed
                        if bv is None:
                            continue
                        if ident(bv) != ident(lv):
                            typ = "conflict"
                diffs.append((path, typ, size))
            return _page_diff(diffs, prefix, after, amount, delimiter)

    def find_merge_base(self, repo: str, source: str, destination: str) -> tuple[str, str, str]:
        """
        LakeFS's ``findMergeBase``: (source_commit_id, destination_commit_id, base_commit_id) as
        lakeFS 1.84 answers them: its controller passes the destination as the catalog's source,
        so ``source_commit_id`` is the destination's commit and ``destination_commit_id`` the
        source's.
        """
        with self.lock:
            self._repo_row(repo)
            from_id, _ = self.resolve_ref(repo, destination, f"get commit by ref {destination}: not found")
            to_id, _ = self.resolve_ref(repo, source, f"get commit by branch {source}: not found")
            base = self._merge_base(repo, from_id, to_id)
            if base is None:
                raise APIError(500, "no merge base")
            return from_id, to_id, base

    def upload(self, repo: str, branch: str, path: str, data: bytes, content_type: str,
               metadata: dict[str, str] | None = None) -> tuple[dict, Entry]:
        with self.lock:
            r = self._repo_row(repo)
            self._branch(repo, branch)
            if r["read_only"]:
                raise APIError(403, "repository is read-only")
            address = self.new_address()
            self.storage(r["storage_namespace"]).put(address, data)
            now = self.now()
            sec = int(now)
            e = Entry(address, len(data), hashlib.md5(data).hexdigest(), sec, int((now - sec) * 1e9),
                      dict(metadata or {}), RELATIVE, content_type or "application/octet-stream")
            self._stage(repo, branch, path, e)
            return r, e

    def delete_object(self, repo: str, branch: str, path: str) -> None:
        """
        LakeFS's ``Graveler.Delete`` (``deleteUnsafe``): a tombstone over an entry the branch
        shows (committed or staged); a path that is nowhere, or deleted already, is left as it is
        and still succeeds (lakeFS 1.84 answers 204, not 404). The branch must exist.
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
        LakeFS's ``deleteObjects`` (``Catalog.DeleteEntries``, ``Graveler.DeleteBatch``): each
        path as :meth:`delete_object`; answers the per-path errors (``ObjectError``). lakeFS's
        controller drops every not-found error, the batch's own included: a missing repository
        or branch answers no error and deletes nothing; so does an empty path among them (its
        ``ErrPathRequiredValue`` fails the whole batch, and is dropped too: Spark's "main/").
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

    def list_objects(self, repo: str, ref: str, prefix: str, after: str, amount: int,
                     delimiter: str) -> tuple[dict, list[tuple[str, Entry | None]], bool]:
        """[(path, entry)] where entry None marks a common prefix; stops after ``amount`` (+1 to know has_more)."""
        with self.lock:
            r = self._repo_row(repo)
            cid, branch = self.resolve_ref(repo, ref)
            mr = self._commit(repo, cid)["meta_range_id"]
            staged = [(p, e) for p, e in (self._staged(repo, branch) if branch is not None else [])
                      if p.startswith(prefix) and p > after]
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
                for p, e in staged[si:]:
                    if e is not None:
                        yield p, e

            results: list[tuple[str, Entry | None]] = []
            last_prefix = None
            has_more = False
            for p, e in merged():
                item: tuple[str, Entry | None] = (p, e)
                if delimiter:
                    rest = p[len(prefix):]
                    if delimiter in rest:
                        cp = prefix + rest[:rest.index(delimiter) + len(delimiter)]
                        if cp == last_prefix or cp <= after:
                            continue
                        last_prefix = cp
                        item = (cp, None)
                if len(results) == amount:
                    has_more = True
                    break
                results.append(item)
            return r, results, has_more

    # ------------------------------------------------------------------ link addresses
    def _hmac(self, repo: str, branch: str, path: str, address: str) -> bytes:
        """
        The link-address HMAC-SHA256 over what lakeFS signs (``catalog.getAddressJSON``): the
        JSON of repository, branch, path and address, so that an address links only under the
        repository, branch and path it was handed out for.
        """
        return hmac.new(self._signing_key, _address_json(repo, branch, path, address), hashlib.sha256).digest()

    def _sign(self, repo: str, branch: str, path: str, address: str) -> str:
        """The signature, URL-safe base64 without padding (43 characters), as lakeFS's ``signAddress``."""
        return base64.urlsafe_b64encode(self._hmac(repo, branch, path, address)).rstrip(b"=").decode()

    def get_physical_address(self, repo: str, branch: str, path: str) -> tuple[dict, str, str]:
        """
        (repo, the key to write: the relative address with ``,<signature>``, the full URI of
        that key). As lakeFS 1.84 (``GetPhysicalAddress``): only the repository is looked up, so a
        branch that does not exist gets an address too (linking it then answers the missing branch).
        """
        with self.lock:
            r = self._repo_row(repo)
            address = self.new_address()
            key = address + "," + self._sign(repo, branch, path, address)
            return r, key, self.full_uri(r["storage_namespace"], key)

    def link_physical_address(self, repo: str, branch: str, path: str, physical: str, checksum: str, size: int,
                              content_type: str, metadata: dict[str, str] | None) -> tuple[dict, Entry]:
        """
        LakeFS's ``LinkPhysicalAddress``, in its order: the repository, the address (verified
        when relative), then the entry staged on the branch (``CreateEntry``: a missing branch
        answers 404 only after the address passed).
        """
        with self.lock:
            r = self._repo_row(repo)
            # lakeFS's normalizePhysicalAddress (pkg/api/controller.go): relative only when under
            # "<namespace as written>/data/", and then stored *with* its ",<signature>" suffix (the
            # object key the client wrote to); anything else is FULL, unverified. On the local
            # blockstore the address lakeFS hands out is the resolved form, so it links as FULL.
            prefix = r["storage_namespace"].rstrip("/") + "/"
            if physical.startswith(prefix + "data/"):  # lakeFS's Catalog.VerifyLinkAddress
                address = physical[len(prefix):]
                unsigned, sep, sig = address.rpartition(",")
                if not sep:
                    raise APIError(400, "address is not signed: link address invalid")
                try:  # Go's base64.RawURLEncoding: that alphabet only, no padding
                    if not RAW_URL_B64.fullmatch(sig) or len(sig) % 4 == 1:
                        raise ValueError(sig)
                    given = base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4))
                except (ValueError, binascii.Error):
                    signed = _address_json(repo, branch, path, unsigned).decode()
                    raise APIError(400, f"malformed address signature: {signed}: link address invalid") from None
                if not hmac.compare_digest(given, self._hmac(repo, branch, path, unsigned)):
                    raise APIError(400, "invalid address signature: invalid address")
                try:
                    issued = xid_time(unsigned.rsplit("/", 1)[-1])
                except (ValueError, binascii.Error):
                    raise APIError(400, "link address invalid") from None
                if self.now() - issued > self.s.grace_period:
                    raise APIError(400, "link address expired")
                address_type = RELATIVE
            else:
                address, address_type = physical, FULL
            self._branch(repo, branch)
            now = self.now()
            sec = int(now)
            e = Entry(address, int(size), checksum, sec, int((now - sec) * 1e9), dict(metadata or {}), address_type,
                      content_type or "application/octet-stream")
            self._stage(repo, branch, path, e)
            return r, e

    # ------------------------------------------------------------------ commit
    def commit(self, repo: str, branch: str, message: str, metadata: dict[str, str] | None, date: int | None,
               allow_empty: bool = False, committer: str = "") -> dict:
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

    def _new_commit(self, repo: str, parents: list[str], message: str, metadata: dict | None, date: int | None,
                    mr_id: str, committer: str) -> dict:
        gen = 1 + max((self._commit(repo, p)["generation"] for p in parents), default=0)
        c = {"id": "", "parents": parents, "committer": committer, "message": message,
             "creation_date": int(date) if date is not None else int(self.now()), "meta_range_id": mr_id,
             "metadata": dict(metadata or {}), "generation": gen, "version": 1}
        c["id"] = self._commit_id(c)
        return c

    # ------------------------------------------------------------------ import
    def import_objects(self, repo: str, branch: str, paths: list[dict], message: str, metadata: dict | None,
                       date: int | None, committer: str) -> dict:
        """
        LakeFS import (``Catalog.importAsync``, then ``Graveler.Import``): a commit on ``branch``
        whose destinations are replaced by the listed source objects (FULL addresses, outside the
        namespace), message ``Import objects`` when none is given, metadata
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
                    what = "import path ({}) in repository namespace ({}) is prohibited" if src.startswith(ns) \
                        else "prefix ({}) contains repository namespace: ({}),"
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
                    new[dpath] = Entry(uri, info.size, etag, sec, int((info.last_modified - sec) * 1e9), {}, FULL,
                                       "application/octet-stream")
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
            c = self._new_commit(repo, [head], message or "Import objects",
                                 {**(metadata or {}), ".lakefs.merge.strategy": "source-wins"}, date, mr_id, committer)
            self._move_branch(repo, branch, c)
            return {"commit": c, "ingested_objects": len(new), "metarange_id": mr_id}

    # ------------------------------------------------------------------ copies (lakeFS's CopyObject)
    def copy_object(self, repo: str, branch: str, dest_path: str, src_ref: str, src_path: str,
                    force: bool = False, shallow: bool = False) -> tuple[dict, Entry]:
        """
        LakeFS 1.84's ``copyObject`` (``Catalog.CopyEntry`` without clone): the source entry (any
        ref; the destination branch when ``src_ref`` is empty; staged entries included) is copied to a
        new relative address under ``data/`` and staged on ``branch`` with the source's size, checksum,
        metadata and content type and a new mtime. ``shallow`` answers 501 as lakeFS's
        ``apiutil.BuildOptsFromParams`` does (the catalog's clone path is not reachable from the API).
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
            e = Entry(address, src.size, src.etag, sec, int((now - sec) * 1e9), dict(src.metadata), RELATIVE,
                      src.content_type)
            self._stage(repo, branch, dest_path, e)
            return r, e

    # ------------------------------------------------------------------ tags
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
            rows = [(n, c) for n, c in self.db.execute(
                "SELECT name, commit_id FROM tags WHERE repo=? AND name > ? ORDER BY name", (repo, after))
                if n.startswith(prefix)]
            return [{"id": n, "commit_id": c} for n, c in rows[:amount]], len(rows) > amount

    # ------------------------------------------------------------------ merge, revert, cherry-pick
    def _merge_base(self, repo: str, left: str, right: str) -> str | None:
        """
        LakeFS's ``ref.FindMergeBase``: a best common ancestor, walking both sides together by
        generation (then creation date), newest first.
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

    def _merge_trees(self, ns: str, dest: str, source: str, base: str, strategy: str,
                     allow_empty: bool = False) -> str:
        """
        LakeFS's ``committedManager.Merge`` (``pkg/graveler/committed/merge.go``), key by key: a
        side that did not change a key against ``base`` takes the other side's; both changed (or
        one changed and the other deleted) is a conflict unless ``strategy`` is ``dest-wins`` or
        ``source-wins``. Entries compare by identity. Returns the merged metarange id.
        """
        if source == base and not allow_empty:
            raise APIError(400, "no changes")
        if dest == base:
            return source  # changes on the source only
        d, s, b = (dict(self._iter_committed(ns, mr)) if mr else {} for mr in (dest, source, base))

        def ident(e: Entry | None) -> bytes | None:
            return None if e is None else entry_identity(e)

        def conflict(src_value: Entry | None, dest_value: Entry | None) -> Entry | None:
            if strategy == "dest-wins":
                return dest_value
            if strategy == "source-wins":
                return src_value
            raise MergeConflict()

        changes: list[tuple[bytes, Entry | None]] = []
        for key in sorted(set(d) | set(s), key=lambda k: k.encode("utf-8", "surrogateescape")):
            dv, sv, bv = d.get(key), s.get(key), b.get(key)
            di, si, bi = ident(dv), ident(sv), ident(bv)
            if sv is not None and dv is not None:
                if si == di:
                    out = sv
                elif bv is not None and si == bi:
                    out = dv
                elif bv is not None and di == bi:
                    out = sv
                else:
                    out = conflict(sv, dv)
            else:  # on one side only
                present, present_ident = (sv, si) if sv is not None else (dv, di)
                if bv is None:
                    out = present  # added by that side
                elif present_ident == bi:
                    out = None  # deleted by the other side
                else:
                    out = conflict(sv, dv)  # changed by one side, deleted by the other
            if out != dv:
                changes.append((key.encode("utf-8", "surrogateescape"), out))
        return self._apply(ns, dest, changes) if changes else dest

    def _writable(self, repo: str, force: bool) -> dict:
        """The repository's row; 403 when it is read-only and ``force`` is not set."""
        r = self._repo_row(repo)
        if r["read_only"] and not force:
            raise APIError(403, "repository is read-only")
        return r

    def _replayed(self, repo: str, ref: str, force: bool) -> tuple[dict, str, dict]:
        """(repo row, commit id, commit) of the commit a revert or cherry-pick replays."""
        r = self._writable(repo, force)
        cid, _ = self.resolve_ref(repo, ref)
        return r, cid, self._commit(repo, cid)

    def _clean_branch(self, repo: str, branch: str) -> tuple[dict, str, dict]:
        """
        (repo row, HEAD id, HEAD commit) of a branch without uncommitted changes (lakeFS's
        ``prepareForCommitIDUpdate``: ``ErrDirtyBranch`` otherwise).
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

    def merge(self, repo: str, source_ref: str, destination: str, message: str, metadata: dict | None,
              strategy: str, force: bool, allow_empty: bool, squash: bool, committer: str) -> str:
        """
        LakeFS's ``Graveler.Merge``: a commit on ``destination`` whose parents are the
        destination's HEAD (first) and the source commit, or the destination's HEAD alone for a
        squash merge; metadata gains ``.lakefs.merge.strategy``. Returns the new commit id.
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
                mr = self._merge_trees(r["storage_namespace"], to_commit["meta_range_id"],
                                       from_commit["meta_range_id"], self._commit(repo, base_id)["meta_range_id"],
                                       strategy, allow_empty or force)
            except MergeConflict:
                raise
            except APIError as exc:  # lakeFS: "update branch <destination>: no changes"
                raise APIError(exc.status, f"update branch {destination}: {exc.message}") from None
            meta = {**(metadata or {}), ".lakefs.merge.strategy": strategy or "default"}
            c = self._new_commit(repo, [to_id] if squash else [to_id, from_id],
                                 message or f"Merge '{source_ref}' into '{destination}'", meta, None, mr, committer)
            c["generation"] = max(to_commit["generation"], from_commit["generation"]) + 1
            c["id"] = self._commit_id(c)
            self._move_branch(repo, destination, c)
            return c["id"]

    def revert(self, repo: str, branch: str, ref: str, parent_number: int, allow_empty: bool,
               overrides: dict | None, force: bool, committer: str) -> dict:
        """
        LakeFS's ``Graveler.Revert``: merge the reverted commit's parent (``parent_number``,
        1-based, required for a merge commit) into the branch with the commit as the base; one
        parent, the branch's HEAD.
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
                mr = self._merge_trees(r["storage_namespace"], head_commit["meta_range_id"], parent_mr,
                                       commit["meta_range_id"], "", allow_empty)
            except APIError as exc:  # lakeFS: "update branch: conflict found", "update branch: no changes"
                raise APIError(exc.status, f"update branch: {exc.message}") from None
            if mr == head_commit["meta_range_id"] and not allow_empty:
                raise APIError(400, "update branch: no changes")
            c = self._new_commit(repo, [head], f"Revert {ref}", {}, None, mr, committer)
            _apply_overrides(c, overrides)
            c["id"] = self._commit_id(c)
            self._move_branch(repo, branch, c)
            return c

    def cherry_pick(self, repo: str, branch: str, ref: str, parent_number: int | None, overrides: dict | None,
                    force: bool, committer: str) -> dict:
        """
        LakeFS's ``Graveler.CherryPick``: merge the commit into the branch with its parent
        (``parent_number``, 1-based, required for a merge commit) as the base; one parent, the
        branch's HEAD; the commit's message and metadata plus ``cherry-pick-origin`` and
        ``cherry-pick-committer``.
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
                mr = self._merge_trees(r["storage_namespace"], head_commit["meta_range_id"], commit["meta_range_id"],
                                       parent_mr, "")
            except APIError as exc:  # lakeFS: "update branch: conflict found", "update branch: no changes"
                raise APIError(exc.status, f"update branch: {exc.message}") from None
            c = self._new_commit(repo, [head], commit["message"], dict(commit["metadata"]), None, mr, committer)
            _apply_overrides(c, overrides)
            c["metadata"] = {**c["metadata"], "cherry-pick-origin": cid, "cherry-pick-committer": commit["committer"]}
            c["id"] = self._commit_id(c)
            self._move_branch(repo, branch, c)
            return c

    # ------------------------------------------------------------------ GC rules
    def get_gc_rules(self, repo: str) -> dict:
        with self.lock:
            rules = self._repo_row(repo)["gc_rules"]
            if rules is None:
                raise not_found()
            return rules

    def set_gc_rules(self, repo: str, rules: dict | None) -> None:
        with self.lock:
            r = self._repo_row(repo)
            self.storage(r["storage_namespace"]).put(RULES_KEY, _rules_proto(rules) if rules else b"")
            self.db.execute("UPDATE repos SET gc_rules=? WHERE name=?", (json.dumps(rules) if rules else None, repo))

    # ------------------------------------------------------------------ GC: commits
    def prepare_commits(self, repo: str) -> dict:
        with self.lock:
            r = self._repo_row(repo)
            rules = r["gc_rules"]
            if rules is None:
                raise APIError(404, "get gc rules: not found")
            ns = r["storage_namespace"]
            commits = {cid: CommitNode(cid, tuple(c["parents"]), c["creation_date"], c["meta_range_id"], c["version"])
                       for cid, c in self._all_commits(repo).items()}
            branches = {n: c for n, c in self.db.execute("SELECT name, commit_id FROM branches WHERE repo=?", (repo,))}
            rr = Rules(int(rules["default_retention_days"]),
                       {b["branch_id"]: int(b["retention_days"]) for b in rules.get("branches") or []})
            active = active_commits(commits, branches, rr, self.now())
            run_id = new_descending_xid(self.now())
            buf = io.StringIO()
            w = csv.writer(buf, lineterminator="\n")
            w.writerow(["commit_id", "expired", "metarange_id"])
            for cid, mr in active.items():
                w.writerow([cid, "false", mr])
            key = f"_lakefs/retention/gc/commits/run_id={run_id}/commits.csv"
            st = self.storage(ns)
            st.put(key, buf.getvalue().encode())
            out = {"run_id": run_id, "gc_commits_location": self.full_uri(ns, key),
                   "gc_addresses_location": self.full_uri(ns, "_lakefs/retention/gc/addresses/")}
            url = self._presign_get(ns, key)
            if url:
                out["gc_commits_presigned_url"] = url
            return out

    def _presign_get(self, ns: str, key: str) -> str | None:
        """
        A presigned GET (S3 only: the emulator presigns no Azure or GCS URL; the GC reads the
        location).
        """
        return self.presign(ns, "get_object", key) if isinstance(self.storage(ns), S3Storage) else None

    def presign(self, ns: str, operation: str, key: str, expiry: int = 900) -> str:
        """
        A presigned S3 URL for ``key`` of namespace ``ns``, signed as lakeFS signs (SigV4, query
        parameters ``X-Amz-*``, boto3's default for a custom endpoint being SigV2) and, as the Go
        SDK lakeFS uses, with ``x-id=<operation>`` among the signed parameters.
        """
        st = self.storage(ns)
        presigner = self._presigners.get(ns)
        if presigner is None:
            import boto3
            from botocore.config import Config

            o = st.options
            presigner = boto3.session.Session().client(
                "s3", endpoint_url=o.endpoint_url, aws_access_key_id=o.access_key_id,
                aws_secret_access_key=o.secret_access_key, aws_session_token=o.session_token,
                config=Config(region_name=o.region, signature_version="s3v4",
                              s3={"addressing_style": "path" if o.path_style else "auto"}))
            presigner.meta.events.register("before-sign.s3", _x_id)
            self._presigners[ns] = presigner
        return presigner.generate_presigned_url(operation, Params={"Bucket": st.bucket, "Key": st._name(key)},
                                                ExpiresIn=expiry)

    def start_prepare_commits_task(self, repo: str) -> str:
        with self.lock:
            self._repo_row(repo)
            task_id = "GCPC" + "".join(secrets.choice(NANOID_ALPHABET) for _ in range(20))  # catalog.NewTaskID
            body: dict = {"created": time.time(), "done_at": time.time() + self.s.prepare_commits_delay}
            try:
                body["result"] = self.prepare_commits(repo)
            except APIError as exc:
                body["error"] = exc.message
            self.db.execute("INSERT INTO tasks VALUES (?,?,?)", (task_id, repo, json.dumps(body)))
            return task_id

    def prepare_commits_status(self, repo: str, task_id: str) -> dict:
        with self.lock:
            self._repo_row(repo)
            row = self.db.execute("SELECT body FROM tasks WHERE id=? AND repo=?", (task_id, repo)).fetchone()
            if row is None or not task_id.startswith("GCPC"):
                raise not_found("task")
            body = json.loads(row[0])
            now = time.time()
            out: dict = {"task_id": task_id, "completed": now >= body["done_at"],
                         "update_time": _now_iso(min(now, body["done_at"]) if now >= body["done_at"] else body["created"])}
            if out["completed"]:
                if "result" in body:
                    out["result"] = body["result"]
                else:
                    out["error"] = {"message": body["error"]}
            return out

    # ------------------------------------------------------------------ GC: uncommitted
    def prepare_uncommitted(self, repo: str, token: str | None) -> dict:
        with self.lock:
            r = self._repo_row(repo)
            ns = r["storage_namespace"]
            if token:
                try:
                    mark = json.loads(base64.b64decode(token, validate=True))
                    run_id, mark_branch, mark_path = mark["run_id"], mark["branch"], mark["path"]
                except Exception:
                    raise APIError(400, "invalid continuation token") from None
            else:
                run_id, mark_branch, mark_path = new_descending_xid(self.now()), "", ""
            prefix = ns.rstrip("/") + "/"
            rows: list[tuple[str, int]] = []
            next_mark = None
            page = self.s.uncommitted_page_size
            for (branch,) in self.db.execute("SELECT name FROM branches WHERE repo=? AND name >= ? ORDER BY name",
                                             (repo, mark_branch)).fetchall():
                head, _ = self._branch(repo, branch)
                mr = self._commit(repo, head)["meta_range_id"]
                staged = [(p, e) for p, e in self._staged(repo, branch)
                          if e is not None and (branch != mark_branch or p >= mark_path)]
                for path, e in self._diff_uncommitted(ns, mr, staged):
                    if len(rows) == page:
                        next_mark = {"branch": branch, "path": path, "run_id": run_id, "key": ""}
                        break
                    if e.address_type == RELATIVE:
                        addr = e.address
                    elif e.address.startswith(prefix):
                        addr = e.address[len(prefix):]
                    else:
                        continue  # external address: not GC's business
                    rows.append((addr, entry_mtime(e)))
                if next_mark:
                    break
            if next_mark is None and len(rows) == page and page > 0:
                # the page is full: lakeFS only learns the listing ended on the next call
                next_mark = {"branch": "\U0010ffff", "path": "", "run_id": run_id, "key": ""}
            location = ""
            if rows:
                import pyarrow as pa
                import pyarrow.parquet as pq
                table = pa.table({"physical_address": pa.array([a for a, _ in rows], pa.string()),
                                  "creation_date": pa.array([t for _, t in rows], pa.int64())},
                                 schema=pa.schema([pa.field("physical_address", pa.string(), nullable=False),
                                                   pa.field("creation_date", pa.int64(), nullable=False)]))
                buf = io.BytesIO()
                pq.write_table(table, buf, compression="GZIP")
                loc_key = f"_lakefs/retention/gc/uncommitted/{run_id}/uncommitted/"
                self.storage(ns).put(loc_key + new_xid(self.now()), buf.getvalue())
                location = self.full_uri(ns, loc_key)
            out = {"run_id": run_id, "gc_uncommitted_location": location}
            if next_mark:
                out["continuation_token"] = base64.b64encode(json.dumps(next_mark).encode()).decode()
            return out


def _x_id(request, operation_name: str, **_) -> None:
    """Botocore ``before-sign`` hook: the operation as ``x-id`` in the query (signed with it)."""
    request.url += ("&" if "?" in request.url else "?") + f"x-id={operation_name}"


def _page_diff(diffs: list[tuple[str, str, int | None]], prefix: str, after: str, amount: int,
               delimiter: str) -> tuple[list[tuple[str, str, int | None]], bool]:
    """
    LakeFS's ``listDiffHelper`` over (path, type, size) in path order: the paths under
    ``prefix`` past ``after`` (with a delimiter: past everything under ``after``), a run of paths
    under one common prefix folded into one ``prefix_changed`` entry (size None; lakeFS reports
    every common prefix as changed), at most ``amount``; returns them and whether more follow.
    """
    def started(p: str) -> bool:
        if not after or after < prefix:
            return p >= prefix
        if not delimiter:
            return p >= after
        return p > after and not p.startswith(after)  # SeekGE(UpperBoundForPrefix(after))

    out: list[tuple[str, str, int | None]] = []
    items = [d for d in diffs if started(d[0])]
    i = 0
    while i < len(items) and len(out) <= amount:
        path, typ, size = items[i]
        if path == after:
            i += 1
            continue
        if not path.startswith(prefix):
            break
        rest = path[len(prefix):]
        if delimiter and delimiter in rest:
            common = prefix + rest.split(delimiter, 1)[0] + delimiter
            out.append((common, "prefix_changed", None))
            while i < len(items) and items[i][0].startswith(common):
                i += 1
            continue
        out.append((path, typ, size))
        i += 1
    return out[:amount], len(out) > amount


class _Tx:
    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN")

    def __exit__(self, exc_type, *_):
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")


def _pb_varint(v: int) -> bytes:
    v &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _rules_proto(rules: dict) -> bytes:
    """graveler.GarbageCollectionRules {int32 default_retention_days = 1; map<string,int32> branch_retention_days = 2}."""
    out = bytearray()
    d = int(rules["default_retention_days"])
    if d:
        out += b"\x08" + _pb_varint(d)
    for b in sorted(rules.get("branches") or [], key=lambda x: x["branch_id"]):
        k = b["branch_id"].encode()
        entry = b"\x0a" + _pb_varint(len(k)) + k
        if int(b["retention_days"]):
            entry += b"\x10" + _pb_varint(int(b["retention_days"]))
        out += b"\x12" + _pb_varint(len(entry)) + entry
    return bytes(out)


def _import_checksum(st, info, uri: str) -> str:
    """
    The checksum lakeFS's import walkers record: the S3 listing's ETag (``pkg/block/s3/walker.go``),
    GCS's md5Hash in hex (``pkg/block/gs/walker.go``), Azure's Content-MD5 in hex else the blob's
    ETag (``pkg/block/azure/adapter.go`` ``calcETag``), a local file's MD5 (``pkg/block/local/adapter.go``
    ``calcFileETag``). Our listings give the first three as ``ObjectInfo.checksum``; an Azure blob
    without Content-MD5 gets an ETag-like value here (Azurite's ETag is not in our listing).
    """
    if info.checksum:
        return info.checksum
    if hasattr(st, "content_md5") and uri.startswith("local://"):
        return st.content_md5(info.key) or ""
    return "0x" + hashlib.md5(f"{uri}:{info.size}:{info.last_modified}".encode()).hexdigest()[:15].upper()
