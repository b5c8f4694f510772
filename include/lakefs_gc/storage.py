"""A small storage-namespace interface: ``local://<path>`` (under lakeFS's blockstore root) and ``s3://bucket/prefix``.

Keys are always relative to the namespace root and use ``/`` separators (``data/<slice>/<obj>``,
``_lakefs/<id>``). The same interface serves the lakeFS emulator (tests) and the GC itself:
put/get/open_input/exists/list/delete/delete_many. No Airflow imports.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol
from urllib.parse import urlsplit

S3_MAX_DELETE = 1000


class StorageError(Exception):
    """A storage operation failed (other than a missing object, which raises KeyError-like NotFound)."""


class ObjectNotFound(StorageError, KeyError):
    """The object does not exist."""


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    """One listed object. ``key`` is relative to the namespace root."""

    key: str
    size: int
    last_modified: float  # epoch seconds


@dataclass(frozen=True, slots=True)
class S3Options:
    """How to reach an S3-compatible endpoint (None means boto3's default chain / AWS)."""

    endpoint_url: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None
    region: str = "us-east-1"
    path_style: bool = True

    @classmethod
    def from_env(cls, prefix: str = "LAKEFS_GC_S3_") -> S3Options:
        """Read ``<prefix>ENDPOINT_URL``, ``ACCESS_KEY_ID``, ``SECRET_ACCESS_KEY``, ``REGION``."""
        env = os.environ
        return cls(endpoint_url=env.get(prefix + "ENDPOINT_URL") or None,
                   access_key_id=env.get(prefix + "ACCESS_KEY_ID") or None,
                   secret_access_key=env.get(prefix + "SECRET_ACCESS_KEY") or None,
                   region=env.get(prefix + "REGION") or "us-east-1")


@dataclass(frozen=True, slots=True)
class NamespaceURI:
    scheme: str  # "local" or "s3"
    bucket: str  # "" for local
    prefix: str  # local: absolute directory (resolved under the blockstore root); s3: key prefix without "/" ends
    uri: str = ""  # the namespace as lakeFS reports it, without a trailing "/"

    def __str__(self) -> str:
        if self.uri:
            return self.uri
        if self.scheme == "local":
            return f"local://{self.prefix}"
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    def roots(self) -> tuple[str, ...]:
        """Every URI prefix (ending in ``/``) that names this namespace's root. A real lakeFS on the
        local blockstore reports the namespace as written (``local://repo1``) but writes locations
        and full addresses with the resolved path (``local:///<blockstore root>/repo1/...``)."""
        forms = [str(self)]
        if self.scheme == "local":
            forms.append(f"local://{self.prefix}")
        elif self.scheme == "s3":
            forms.append(f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}")
        return tuple(dict.fromkeys(f.rstrip("/") + "/" for f in forms))


LOCAL_ROOT_HELP = ("a local:// storage namespace is relative to the lakeFS server's blockstore.local.path "
                   "(local://repo1 is <blockstore.local.path>/repo1): set it as \"local_blockstore_root\" in the "
                   "extra of the lakeFS connection (the same directory, as the GC workers see it)")


def resolve_local(path: str, local_root: str | os.PathLike | None, uri: str) -> str:
    """Where lakeFS's local blockstore keeps namespace ``local://<path>``: ``<root>/<path>``, cleaned,
    and strictly under the root (pkg/block/local/adapter.go ``extractParamsFromObj``)."""
    if local_root is None or str(local_root) == "":
        raise ValueError(f"{uri!r}: {LOCAL_ROOT_HELP}")
    root = os.path.normpath(os.path.abspath(os.fspath(local_root)))
    resolved = os.path.normpath(os.path.join(root, path.lstrip("/")))
    if not resolved.startswith(root.rstrip("/") + "/"):
        raise ValueError(f"local namespace {uri!r} resolves to {resolved!r}, outside the blockstore root {root!r}")
    return resolved


def parse_namespace(uri: str, local_root: str | os.PathLike | None = None) -> NamespaceURI:
    """Parse ``local://<path>`` (resolved under ``local_root``, lakeFS's ``blockstore.local.path``,
    as lakeFS does) or ``s3://bucket[/prefix]`` (a trailing ``/`` is ignored)."""
    if uri.startswith("local://"):
        path = uri[len("local://"):].rstrip("/")
        if not path.strip("/"):
            raise ValueError(f"local namespace needs a path: {uri!r}")
        return NamespaceURI("local", "", resolve_local(path, local_root, uri), uri.rstrip("/"))
    parts = urlsplit(uri)
    if parts.scheme in ("s3", "s3a"):
        if not parts.netloc:
            raise ValueError(f"s3 namespace needs a bucket: {uri!r}")
        return NamespaceURI("s3", parts.netloc, parts.path.strip("/"), uri.rstrip("/"))
    raise ValueError(f"unsupported storage namespace scheme {parts.scheme!r} in {uri!r} (local:// or s3://)")


def relative_to(roots: str | tuple[str, ...] | list[str], uri: str) -> str | None:
    """``uri`` relative to the namespace (one of its ``roots``), or None when it lies outside."""
    for root in ((roots,) if isinstance(roots, str) else roots):
        root = root.rstrip("/") + "/"
        if uri.startswith(root):
            return uri[len(root):]
    return None


def _check_key(key: str) -> str:
    if key.startswith("/") or any(p in ("..", ".") for p in key.split("/")):
        raise ValueError(f"invalid relative key {key!r}")
    return key


class Storage(Protocol):
    """A storage namespace: relative keys under one root."""

    uri: str

    def full_uri(self, key: str) -> str: ...
    def put(self, key: str, data: bytes) -> None: ...
    def get(self, key: str) -> bytes: ...
    def open_input(self, key: str) -> IO[bytes]: ...
    def exists(self, key: str) -> bool: ...
    def list(self, prefix: str = "", recursive: bool = True) -> Iterator[ObjectInfo]: ...
    def list_prefixes(self, prefix: str = "") -> Iterator[str]: ...
    def delete(self, key: str) -> None: ...
    def delete_many(self, keys: Iterable[str]) -> list[tuple[str, str]]: ...


class LocalStorage:
    """Files under a directory (lakeFS's ``local`` blockstore)."""

    def __init__(self, root: str | os.PathLike):
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
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
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

    def _dir_and_name_prefix(self, prefix: str) -> tuple[Path, str, str]:
        if prefix.rstrip("/"):
            _check_key(prefix.rstrip("/"))
        if prefix == "" or prefix.endswith("/"):
            return self.root / prefix, "", prefix
        d, _, name = prefix.rpartition("/")
        return (self.root / d if d else self.root), name, (d + "/" if d else "")

    def list(self, prefix: str = "", recursive: bool = True) -> Iterator[ObjectInfo]:
        """Objects whose key starts with ``prefix``, sorted by key; non-recursive lists only the
        objects directly under the last ``/`` of the prefix (delimiter listing, objects only)."""
        base, name_prefix, key_base = self._dir_and_name_prefix(prefix)
        yield from self._walk(base, name_prefix, key_base, recursive)

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

    def list_prefixes(self, prefix: str = "") -> Iterator[str]:
        """Common prefixes (``<prefix><dir>/``) directly under ``prefix``: S3 delimiter semantics."""
        base, name_prefix, key_base = self._dir_and_name_prefix(prefix)
        try:
            names = sorted(e.name for e in os.scandir(base)
                           if e.is_dir(follow_symlinks=False) and e.name.startswith(name_prefix))
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

    def delete_many(self, keys: Iterable[str]) -> list[tuple[str, str]]:
        return [(k, f"{c}: {m}") for k, c, m in self.delete_batch(list(keys)) if c != "NoSuchKey"]

    def delete_batch(self, keys: list[str]) -> list[tuple[str, str, str]]:
        """Delete ``keys``; returns (key, code, message) for the keys that failed, ``NoSuchKey`` for
        missing ones. Directories left empty are pruned once per batch, not once per key."""
        failed: list[tuple[str, str, str]] = []
        parents: set[str] = set()
        root = str(self.root)
        base = root + "/"
        for k in keys:
            if not k or k[0] == "/" or "." in k:  # the fast path needs no full check: no "." means no ./..
                _check_key(k)
            path = base + k
            try:
                os.unlink(path)
            except FileNotFoundError:
                failed.append((k, "NoSuchKey", "not found"))
                continue
            except OSError as exc:
                failed.append((k, errno.errorcode.get(exc.errno or 0, type(exc).__name__), str(exc)))
                continue
            parents.add(path.rpartition("/")[0])
        for d in sorted(parents, key=len, reverse=True):
            while d != root and d.startswith(root + os.sep):
                try:
                    os.rmdir(d)
                except OSError:
                    break
                d = os.path.dirname(d)
        return failed


def make_s3_client(options: S3Options, max_attempts: int = 5):
    """A boto3 S3 client for ``options`` (checksums only when required: non-AWS endpoints).
    ``max_attempts`` counts the first request: 1 means no botocore retries (the deleter retries
    and counts by itself)."""
    import boto3
    from botocore.config import Config

    cfg = Config(
        region_name=options.region,
        s3={"addressing_style": "path" if options.path_style else "auto"},
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
        retries={"total_max_attempts": max_attempts, "mode": "standard"},
    )
    return boto3.session.Session().client(
        "s3", endpoint_url=options.endpoint_url, aws_access_key_id=options.access_key_id,
        aws_secret_access_key=options.secret_access_key, aws_session_token=options.session_token,
        config=cfg)


class S3Storage:
    """Objects under ``s3://bucket/prefix`` through boto3."""

    def __init__(self, bucket: str, prefix: str, options: S3Options | None = None, client=None):
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.options = options or S3Options()
        self.client = client or make_s3_client(self.options)
        self._raw_client = None
        self.uri = f"s3://{bucket}/{self.prefix}" if self.prefix else f"s3://{bucket}"
        self._base = self.prefix + "/" if self.prefix else ""

    def full_uri(self, key: str) -> str:
        return f"{self.uri}/{key}"

    def _key(self, key: str) -> str:
        return self._base + _check_key(key)

    def put(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data)

    def _is_missing(self, exc: Exception) -> bool:
        code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
        return code in ("NoSuchKey", "404", "NotFound")

    def get(self, key: str) -> bytes:
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"].read()
        except self.client.exceptions.ClientError as exc:
            if self._is_missing(exc):
                raise ObjectNotFound(self.full_uri(key)) from None
            raise

    def open_input(self, key: str) -> IO[bytes]:
        """The object in a seekable temporary file (in memory up to 64 MiB)."""
        tmp = tempfile.SpooledTemporaryFile(max_size=64 << 20)
        try:
            resp = self.client.get_object(Bucket=self.bucket, Key=self._key(key))
            shutil.copyfileobj(resp["Body"], tmp, 1 << 20)
        except self.client.exceptions.ClientError as exc:
            tmp.close()
            if self._is_missing(exc):
                raise ObjectNotFound(self.full_uri(key)) from None
            raise
        tmp.seek(0)
        return tmp  # type: ignore[return-value]

    def exists(self, key: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=self._key(key))
            return True
        except self.client.exceptions.ClientError as exc:
            if self._is_missing(exc):
                return False
            raise

    def list(self, prefix: str = "", recursive: bool = True) -> Iterator[ObjectInfo]:
        kwargs = {"Bucket": self.bucket, "Prefix": self._base + prefix}
        if not recursive:
            kwargs["Delimiter"] = "/"
        strip = len(self._base)
        for page in self.client.get_paginator("list_objects_v2").paginate(**kwargs):
            for o in page.get("Contents", ()):
                yield ObjectInfo(o["Key"][strip:], int(o["Size"]), o["LastModified"].timestamp())

    def list_prefixes(self, prefix: str = "") -> Iterator[str]:
        strip = len(self._base)
        for page in self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=self._base + prefix, Delimiter="/"):
            for cp in page.get("CommonPrefixes", ()):
                yield cp["Prefix"][strip:]

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(key))

    def delete_batch(self, keys: list[str]) -> list[tuple[str, str, str]]:
        """One DeleteObjects request (quiet mode, <= 1,000 keys) without botocore retries.
        Returns (key, code, message) for keys failed inside a 200 answer; a failed request raises."""
        if len(keys) > S3_MAX_DELETE:
            raise ValueError(f"DeleteObjects takes at most {S3_MAX_DELETE} keys, got {len(keys)}")
        if not keys:
            return []
        if self._raw_client is None:
            self._raw_client = make_s3_client(self.options, max_attempts=1)
        resp = self._raw_client.delete_objects(
            Bucket=self.bucket, Delete={"Objects": [{"Key": self._key(k)} for k in keys], "Quiet": True})
        strip = len(self._base)
        return [(e["Key"][strip:], str(e.get("Code", "")), str(e.get("Message", ""))) for e in resp.get("Errors", ())]

    def delete_many(self, keys: Iterable[str]) -> list[tuple[str, str]]:
        """DeleteObjects in chunks of 1000; returns [(key, error)] for keys that failed."""
        failed: list[tuple[str, str]] = []
        batch: list[str] = []

        def flush() -> None:
            if not batch:
                return
            resp = self.client.delete_objects(
                Bucket=self.bucket, Delete={"Objects": [{"Key": self._key(k)} for k in batch], "Quiet": True})
            strip = len(self._base)
            for err in resp.get("Errors", ()):
                failed.append((err["Key"][strip:], f"{err.get('Code')}: {err.get('Message')}"))
            batch.clear()

        for k in keys:
            batch.append(k)
            if len(batch) >= S3_MAX_DELETE:
                flush()
        flush()
        return failed


def open_storage(uri: str, s3_options: S3Options | None = None,
                 local_root: str | os.PathLike | None = None) -> LocalStorage | S3Storage:
    """The storage for a namespace URI (``local_root``: lakeFS's ``blockstore.local.path``, needed
    for ``local://`` namespaces). ``uri`` and ``full_uri`` keep the namespace as lakeFS names it."""
    ns = parse_namespace(uri, local_root)
    if ns.scheme == "local":
        st = LocalStorage(ns.prefix)
        st.uri = str(ns)
        return st
    return S3Storage(ns.bucket, ns.prefix, s3_options)
