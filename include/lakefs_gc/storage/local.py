"""
lakeFS's ``local`` blockstore: objects are files under the namespace directory.

What a sweep deletes is gone, unless the run has ``quarantine_days``: then the sweep moves its files
to ``sweeps/<sweep>/quarantine/<key>`` (:meth:`LocalStorage.move_batch`) and a restore links each
back (a link never replaces a file) and removes the quarantined name. A later sweep purges
quarantines whose days have passed (:func:`lakefs_gc.sweeping.restore.purge_quarantine`).
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, TYPE_CHECKING

from lakefs_gc.contract import FREED_LATER, FREED_NOW, Freeing, Restorability
from lakefs_gc.storage.base import ObjectNotFound
from lakefs_gc.storage.info import ObjectInfo
from lakefs_gc.storage.namespace import _check_key
from lakefs_gc.storage.native import sdk_batches
from lakefs_gc.storage.restoring import (
    NO_VERSION,
    PRESENT,
    RESTORED,
    RETENTION_PASSED,
    WOULD_RESTORE,
    WRITTEN_SINCE,
    SweptKeys,
    parse_time,
)
from lakefs_gc.timestamps import iso
from lakefs_gc.words import plural

if TYPE_CHECKING:
    import pyarrow as pa


class LocalStorage:
    """Files under a directory (lakeFS's ``local`` blockstore)."""

    max_delete_batch = 1000
    listed_md5 = False  # no checksum listed: content_md5 reads the file
    hashes_locally = True  # content_md5 reads and hashes the file in this process
    quarantines = True  # with quarantine_days, a sweep moves its files into its quarantine folder (move_batch)

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        self.uri = f"local://{self.root}"

    def full_uri(self, key: str) -> str:
        return f"{self.uri}/{key}"

    def _path(self, key: str) -> Path:
        return self.root / _check_key(key)

    def put(self, key: str, data: bytes) -> None:
        p = self._path(key)
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, p)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise ObjectNotFound(self.full_uri(key)) from None

    def open_input(self, key: str) -> IO[bytes]:
        try:
            return open(self._path(key), "rb")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise ObjectNotFound(self.full_uri(key)) from None

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def stat(self, key: str) -> ObjectInfo | None:
        try:
            st = self._path(key).stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        return ObjectInfo(key, st.st_size, st.st_mtime) if stat.S_ISREG(st.st_mode) else None

    def content_md5(self, key: str) -> str | None:
        """Return the file's MD5, read (lakeFS's local blockstore computes the same for what it writes)."""
        import hashlib

        h = hashlib.md5(usedforsecurity=False)
        try:
            with open(self._path(key), "rb") as f:
                while chunk := f.read(1 << 20):
                    h.update(chunk)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        return h.hexdigest()

    def _dir_and_name_prefix(self, prefix: str) -> tuple[Path, str, str]:
        if prefix.rstrip("/"):
            _check_key(prefix.rstrip("/"))
        if prefix == "" or prefix.endswith("/"):
            return self.root / prefix, "", prefix
        d, _, name = prefix.rpartition("/")
        return (self.root / d if d else self.root), name, (d + "/" if d else "")

    def list(self, prefix: str = "", recursive: bool = True, start_after: str | None = None) -> Iterator[ObjectInfo]:
        """
        Objects whose key starts with ``prefix`` (and sorts after ``start_after``), sorted by key.

        Non-recursive lists only the objects directly under the last ``/`` of the prefix (delimiter
        listing, objects only).
        """
        base, name_prefix, key_base = self._dir_and_name_prefix(prefix)
        for o in self._walk(base, name_prefix, key_base, recursive):
            if start_after is None or o.key > start_after:
                yield o

    def _walk(self, d: Path, name_prefix: str, key_base: str, recursive: bool) -> Iterator[ObjectInfo]:
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            return
        # Keys sort as "name/..." for directories: order by name + "/" so output is key-sorted.
        entries.sort(key=lambda e: e.name + "/" if e.is_dir(follow_symlinks=False) else e.name)
        for e in entries:
            if not e.name.startswith(name_prefix) or e.name.startswith(".tmp-"):
                continue
            if e.is_dir(follow_symlinks=False):
                if recursive:
                    yield from self._walk(Path(e.path), "", f"{key_base}{e.name}/", True)
            elif e.is_file():
                st = e.stat()
                yield ObjectInfo(key_base + e.name, st.st_size, st.st_mtime)

    def list_batches(self, prefix: str) -> Iterator[pa.RecordBatch]:
        """Every file under ``prefix`` as Arrow batches (``os.scandir``: :meth:`list`)."""
        return sdk_batches(self.list(prefix))

    def list_prefixes(self, prefix: str = "") -> Iterator[str]:
        """Yield the common prefixes (``<prefix><dir>/``) directly under ``prefix``: S3 delimiter semantics."""
        base, name_prefix, key_base = self._dir_and_name_prefix(prefix)
        try:
            names = sorted(
                e.name for e in os.scandir(base) if e.is_dir(follow_symlinks=False) and e.name.startswith(name_prefix)
            )
        except (FileNotFoundError, NotADirectoryError):
            return
        for n in names:
            yield f"{key_base}{n}/"

    def delete(self, key: str) -> None:
        self._unlink(key)

    def _unlink(self, key: str) -> bool:
        """Remove the object; False if it was not there."""
        p = self._path(key)
        try:
            p.unlink()
        except FileNotFoundError:
            return False
        # prune empty parent directories up to the root, as an object store has no directories
        parent = p.parent
        while parent != self.root and self.root in parent.parents:
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent
        return True

    def delete_batch(self, keys: builtins.list[str]) -> builtins.list[tuple[str, str, str]]:
        """
        Delete ``keys``; return (key, code, message) for the keys that failed.

        ``NoSuchKey`` for missing ones. Directories left empty are pruned once per batch, not once
        per key.
        """
        return self._remove_batch(keys, os.unlink)

    def move_batch(self, keys: builtins.list[str], to_prefix: str) -> builtins.list[tuple[str, str, str]]:
        """
        Move ``keys`` to ``<to_prefix><key>`` (a rename: the same bytes, the same file).

        As :meth:`delete_batch` deletes them: the same failures, the same pruning. The quarantine of
        a sweep on ``local://`` (:mod:`lakefs_gc.sweeping.restore`).
        """
        _check_key(to_prefix.rstrip("/"))
        dest = str(self.root / to_prefix)

        def move(path: str) -> None:
            target = os.path.join(dest, path[len(str(self.root)) + 1 :])
            try:
                os.rename(path, target)
            except FileNotFoundError:
                if not os.path.exists(path):
                    raise
                os.makedirs(os.path.dirname(target), exist_ok=True)
                os.rename(path, target)

        return self._remove_batch(keys, move)

    def _remove_batch(
        self, keys: builtins.list[str], remove: Callable[[str], None]
    ) -> builtins.list[tuple[str, str, str]]:
        failed: builtins.list[tuple[str, str, str]] = []
        parents: set[str] = set()
        root = str(self.root)
        base = root + "/"
        for k in keys:
            if not k or k[0] == "/" or "." in k:  # the fast path needs no full check: no "." means no ./..
                _check_key(k)
            path = base + k
            try:
                remove(path)
            except FileNotFoundError:
                failed.append((k, "NoSuchKey", "not found"))
                continue
            except OSError as exc:
                failed.append((k, errno.errorcode.get(exc.errno or 0, type(exc).__name__), str(exc)))
                continue
            parents.add(path.rpartition("/")[0])
        for parent in sorted(parents, key=len, reverse=True):
            d = parent
            while d != root and d.startswith(root + os.sep):
                try:
                    os.rmdir(d)
                except OSError:
                    break
                d = os.path.dirname(d)
        return failed

    def soft_delete_days(self) -> None:
        """None: files have no soft delete (a sweep's quarantine is :meth:`restorability`'s)."""
        return None

    def restorability(
        self, now: datetime, quarantine_days: int = 0, quarantine_until: str | None = None
    ) -> Restorability:
        """Return what the sweep's quarantine keeps (``quarantine_days``, to its record's end); none without it."""
        if quarantine_days:
            until = quarantine_until if quarantine_until is not None else iso(now + timedelta(days=quarantine_days))
            return Restorability(
                "local quarantine",
                True,
                until,
                f"swept files go to the sweep's quarantine/ folder for {plural(quarantine_days, 'day')}",
            )
        return Restorability(
            "none", False, None, "local:// files are deleted (quarantine_days is 0: set it to keep them restorable)"
        )

    def freeing(self, now: datetime, quarantine_days: int = 0, quarantine_until: str | None = None) -> Freeing:
        """Return when the disk space comes back: now, or when a sweep after the quarantine's end purges it."""
        if quarantine_days:
            until = quarantine_until if quarantine_until is not None else iso(now + timedelta(days=quarantine_days))
            return Freeing(
                FREED_LATER,
                until,
                "local quarantine",
                f"swept files stay in the sweep's quarantine/ folder {plural(quarantine_days, 'day')}: the first "
                f"sweep after that purges them",
            )
        return Freeing(FREED_NOW, None, "none", "local:// files are deleted")

    def restore_key(self, key: str, run: SweptKeys, dry_run: bool, now: datetime) -> tuple[str, str]:
        """Link the file back from the first sweep's quarantine that has it, never over a file written since."""
        target = self.root / key
        for sdir, qdir in run.quarantines():
            q = self.root / qdir / key
            if not q.is_file():
                continue
            if target.exists():
                return WRITTEN_SINCE, f"{self.full_uri(key)} exists again; its quarantined copy stays in {sdir}"
            if dry_run:
                return WOULD_RESTORE, f"from {qdir}{key}"
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(q, target)  # never replaces a file written meanwhile
            except FileExistsError:
                return WRITTEN_SINCE, f"{self.full_uri(key)} was written during the restore; the quarantined copy stays"
            os.unlink(q)
            return RESTORED, f"moved back from {qdir}{key}"
        if target.exists():
            return PRESENT, "the file is there (the sweep did not remove it)"
        ends = run.quarantine_ends(self)
        if not ends:
            return NO_VERSION, "the sweep deleted the file (quarantine_days was 0)"
        if any((until := parse_time(end)) is not None and until < now for end in ends):
            return RETENTION_PASSED, f"the quarantine ended {min(ends)} and was purged"
        return NO_VERSION, "not in the quarantine (restored already, or removed by hand)"
