"""
Google Cloud Storage through ``google-cloud-storage`` (lakeFS's ``gs`` blockstore), and obstore.

Deletes are single ``objects.delete`` calls run in parallel (``DELETE_THREADS``), each with its own
outcome (404 for a missing object), through obstore (Rust's object_store: the request built and
sent without the GIL) where it names the same object, else through the library (a key
:func:`lakefs_gc.storage.native.plain_key` refuses, or the native client switched off). Against
fake-gcs-server on 2 cores the library's calls were the client's CPU's limit: 579 keys/s, the
library's own sequential ``Bucket.delete_blobs`` as fast; through obstore 1,171 keys/s, the same
outcomes (``python -m bench delete --backends gcs``, with and without ``LAKEFS_GC_NATIVE_LISTING=0``). The library's JSON batch reports per-call outcomes only
through private state (and cannot read fake-gcs-server's batch answer); obstore's bulk delete stops
at the first error, so each key is its own call here.

What a sweep deletes stays restorable under the bucket's soft delete: a restore restores the
soft-deleted generation deleted while the sweep ran, with ``ifGenerationMatch=0`` (GCS refuses it
if an object of that name exists).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import IO, TYPE_CHECKING

from lakefs_gc.contract import STILL_BILLED, Freeing, Restorability
from lakefs_gc.storage import native
from lakefs_gc.storage.base import (
    CloudStorage,
    ObjectNotFound,
    hex_md5,
    reaching,
    spool_download,
    unreachable_line,
    where,
)
from lakefs_gc.storage.billing import gcs_freeing
from lakefs_gc.storage.info import ObjectInfo
from lakefs_gc.storage.restoring import DELETED_AGAIN, NO_VERSION, RESTORED, WOULD_RESTORE, WRITTEN_SINCE, SweptKeys
from lakefs_gc.storage.settings import GCSOptions
from lakefs_gc.timestamps import iso
from lakefs_gc.words import plural

if TYPE_CHECKING:
    import google.auth.credentials
    from google.api_core.retry import Retry
    from google.cloud.storage import Client
    from obstore.store import GCSStore

GCS_MAX_DELETE = 100  # keys per delete_batch call (as many as a JSON batch would carry)
DELETE_THREADS = 16  # parallel delete calls (one process, 2 cores, 2,000 deletes on fake-gcs-server: 16 threads
# 590/s, 8 threads 304/s, 32 threads 502/s, the sequential library loop 271/s)
DEFAULT_PROJECT = "lakefs-gc"  # listing and reading a bucket need no project; the client wants one
READ_RETRY_SECONDS = 30  # the library's retries of reads and writes (its default: 120 s), then a clear error


def _retry() -> Retry:
    """Return the library's default retry (429, 5xx, connection errors), bounded to READ_RETRY_SECONDS."""
    from google.cloud.storage.retry import DEFAULT_RETRY

    retry: Retry = DEFAULT_RETRY.with_timeout(READ_RETRY_SECONDS)
    return retry


def make_gcs_client(options: GCSOptions) -> Client:
    """
    Return a ``storage.Client`` for ``options``.

    Anonymous (an emulator), an access token, or Application Default Credentials.
    """
    from google.cloud import storage

    credentials: google.auth.credentials.Credentials | None
    if options.anonymous:
        from google.auth.credentials import AnonymousCredentials

        credentials = AnonymousCredentials()  # type: ignore[no-untyped-call]  # google-auth leaves it unannotated
    elif options.access_token:
        from google.oauth2.credentials import Credentials

        credentials = Credentials(options.access_token)  # type: ignore[no-untyped-call]  # likewise
    else:
        credentials = None
    client_options = {"api_endpoint": options.endpoint_url} if options.endpoint_url else None
    return storage.Client(
        project=options.project or DEFAULT_PROJECT, credentials=credentials, client_options=client_options
    )


def _code(exc: BaseException) -> str:
    """Return an HTTP status for an API error, ``ConnectionError`` for a transport one."""
    status = getattr(exc, "code", None)
    if isinstance(status, int):
        return str(status)
    name = type(exc).__name__
    return "ConnectionError" if "Connection" in name or "Timeout" in name else name


def _precondition_failed(exc: BaseException) -> bool:
    """Whether GCS refused a call for its precondition (412: ``ifGenerationMatch``)."""
    return "412" in str(exc) or "Precondition" in type(exc).__name__


def _gcs_connection_errors() -> tuple[type[BaseException], ...]:
    from google.api_core.exceptions import RetryError
    from requests.exceptions import ConnectionError as RequestsConnectionError

    return (RequestsConnectionError, RetryError)


def _unreachable_message(self: GCSStorage, exc: BaseException, method: str, args: tuple[object, ...]) -> str:
    endpoint = self.options.endpoint_url or "Google Cloud Storage"
    return unreachable_line(
        f"GCS endpoint {endpoint} is unreachable or kept failing for {READ_RETRY_SECONDS} s of retries",
        method,
        where(self, args),
        f"{type(exc).__name__}: {exc}",
        "the "
        "google_cloud_platform storage connection (storage_conn_id in the GC config; "
        "STORAGE_EMULATOR_HOST for an emulator)",
    )


_reaching = reaching(_gcs_connection_errors, _unreachable_message)


class GCSStorage(CloudStorage):
    """Objects under ``gs://bucket/prefix``: google-cloud-storage, and obstore for listing slices."""

    max_delete_batch = GCS_MAX_DELETE
    sdk_listed_md5 = True  # md5Hash
    unreachable_message = _unreachable_message

    def __init__(self, bucket: str, prefix: str, options: GCSOptions | None = None, client: Client | None = None):
        self.options = options or GCSOptions()
        self.client = client or make_gcs_client(self.options)
        self.bucket_name = bucket
        self._root(f"gs://{bucket}/{prefix.strip('/')}", prefix)
        self.bucket = self.client.bucket(bucket)
        self._pool: ThreadPoolExecutor | None = None
        self._deleting: GCSStore | None = None

    def _open_native(self) -> GCSStore:
        return native.gcs_store(self.bucket_name, self.prefix, self.options)

    def _delete_store(self) -> GCSStore | None:
        """Return the obstore store the deletes go through (no retries of its own); None when switched off."""
        if not native.enabled():
            return None
        if self._deleting is None:
            self._deleting = native.gcs_store(self.bucket_name, self.prefix, self.options, for_deletes=True)
        return self._deleting

    @_reaching
    def put(self, key: str, data: bytes) -> None:
        self.bucket.blob(self._name(key)).upload_from_string(data, retry=_retry())

    @_reaching
    def get(self, key: str) -> bytes:
        from google.api_core.exceptions import NotFound

        try:
            data: bytes = self.bucket.blob(self._name(key)).download_as_bytes(retry=_retry())
            return data
        except NotFound:
            raise ObjectNotFound(self.full_uri(key)) from None

    @_reaching
    def open_input(self, key: str) -> IO[bytes]:
        """Return the object in a seekable temporary file (in memory up to 64 MiB)."""
        from google.api_core.exceptions import NotFound

        return spool_download(
            lambda f: self.bucket.blob(self._name(key)).download_to_file(f, retry=_retry()),
            lambda e: isinstance(e, NotFound),
            self.full_uri(key),
        )

    @_reaching
    def stat(self, key: str) -> ObjectInfo | None:
        b = self.bucket.get_blob(self._name(key), retry=_retry())
        return None if b is None else ObjectInfo(key, int(b.size), b.updated.timestamp(), hex_md5(b.md5_hash))

    def content_md5(self, key: str) -> str | None:
        """Return md5Hash in hex (GCS keeps none for composite objects)."""
        info = self.stat(key)
        return info.checksum if info else None

    @_reaching
    def list(self, prefix: str = "", recursive: bool = True, start_after: str | None = None) -> Iterator[ObjectInfo]:
        """Objects under ``prefix`` in name order (GCS lists by name), after ``start_after``."""
        strip = len(self._base)
        after = self._base + start_after if start_after else None
        kwargs = {"prefix": self._base + prefix, "retry": _retry()}
        if not recursive:
            kwargs["delimiter"] = "/"
        if after is not None:
            kwargs["start_offset"] = after  # inclusive: the key itself is skipped below
        for b in self.client.list_blobs(self.bucket_name, **kwargs):
            if after is not None and b.name <= after:
                continue
            yield ObjectInfo(b.name[strip:], int(b.size), b.updated.timestamp(), hex_md5(b.md5_hash))

    @_reaching
    def list_prefixes(self, prefix: str = "") -> Iterator[str]:
        strip = len(self._base)
        blobs = self.client.list_blobs(self.bucket_name, prefix=self._base + prefix, delimiter="/", retry=_retry())
        for _ in blobs:  # the prefixes are collected while the pages are read
            pass
        for p in sorted(blobs.prefixes):
            yield p[strip:]

    @_reaching
    def delete(self, key: str) -> None:
        self.bucket.delete_blob(self._name(key), retry=_retry())

    def delete_batch(self, keys: builtins.list[str]) -> builtins.list[tuple[str, str, str]]:
        """
        Delete up to 100 keys with parallel single calls, without the clients' retries.

        Returns (key, code, message) for each key that failed; the code is the HTTP status (``404``
        for a missing object) or ``ConnectionError``. Through obstore for a key it names as the
        library does, else through the library (counted in the native fallbacks).
        """
        if len(keys) > GCS_MAX_DELETE:
            raise ValueError(f"delete_batch takes at most {GCS_MAX_DELETE} keys, got {len(keys)}")
        if self._pool is None:
            self._pool = ThreadPoolExecutor(DELETE_THREADS, thread_name_prefix="gcs-delete")
        store = self._delete_store()

        def one(key: str) -> tuple[str, str, str] | None:
            name = self._name(key)  # refuses a key outside the namespace, whichever client deletes it
            if store is not None:
                if native.plain_key(key):
                    try:
                        failed = native.delete_outcome(store, key)
                    except (TypeError, ValueError):  # a path object_store refuses: nothing was sent
                        native.count("gcs delete: a key object_store refuses as a path")
                    else:
                        return None if failed is None else (key, *failed)
                else:
                    native.count("gcs delete: a key object_store names otherwise")
            try:
                self.bucket.delete_blob(name, retry=None, timeout=60)
            except Exception as exc:
                return key, _code(exc), str(exc)[:500]
            return None

        return [r for r in self._pool.map(one, keys) if r is not None]

    def soft_delete_days(self) -> None:
        """None: the bucket's soft delete is :meth:`restorability`'s to report."""
        return None

    def restorability(
        self, now: datetime, quarantine_days: int = 0, quarantine_until: str | None = None
    ) -> Restorability:
        """Return what the bucket's soft delete policy keeps."""
        try:
            self.bucket.reload()
            seconds = int(self.bucket.soft_delete_policy.retention_duration_seconds or 0)
        except Exception as exc:
            return Restorability("gcs soft delete", None, None, f"cannot read the bucket's soft delete policy ({exc})")
        if not seconds:
            return Restorability("none", False, None, "the bucket's soft delete is off: deleted objects are gone")
        return Restorability(
            "gcs soft delete",
            True,
            iso(now + timedelta(seconds=seconds)),
            f"soft delete keeps deleted objects {plural(seconds // 86400, 'day')}",
        )

    def freeing(self, now: datetime, quarantine_days: int = 0, quarantine_until: str | None = None) -> Freeing:
        """Return what a delete now does to the bill: the bucket's soft delete policy, object versioning and lifecycle rules."""
        try:
            self.bucket.reload()
            seconds = int(self.bucket.soft_delete_policy.retention_duration_seconds or 0)
            versioning = bool(self.bucket.versioning_enabled)
            rules = [dict(r) for r in self.bucket.lifecycle_rules]
        except Exception as exc:
            return Freeing(
                STILL_BILLED, None, "unknown", f"cannot read the bucket's settings ({exc}): counted as still billed"
            )
        return gcs_freeing(versioning, seconds, rules, self._base + "data/", now)

    def restore_key(self, key: str, run: SweptKeys, dry_run: bool, now: datetime) -> tuple[str, str]:
        """Restore the generation soft-deleted while the sweep ran, only when no object of that name exists."""
        name = self._name(key)
        gens = [b for b in self.client.list_blobs(self.bucket_name, prefix=name, soft_deleted=True) if b.name == name]
        if not gens:
            return (
                (WRITTEN_SINCE, "an object of that name exists: left alone")
                if self.exists(key)
                else (NO_VERSION, "no soft-deleted generation (soft delete off, or its retention passed)")
            )
        ours = [b for b in gens if run.in_window(getattr(b, "soft_delete_time", None))]
        if not ours:
            return DELETED_AGAIN, "soft-deleted outside the sweep's time"
        gen = max(ours, key=lambda b: b.generation)
        if self.exists(key):
            return WRITTEN_SINCE, "an object of that name exists: left alone"
        if dry_run:
            return WOULD_RESTORE, f"restore generation {gen.generation}"
        try:
            self.bucket.restore_blob(name, generation=gen.generation, if_generation_match=0)
        except Exception as exc:
            if _precondition_failed(exc):
                return WRITTEN_SINCE, "an object of that name was written during the restore: left alone"
            raise
        return RESTORED, f"generation {gen.generation} restored (soft delete)"
