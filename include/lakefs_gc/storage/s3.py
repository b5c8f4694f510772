"""
S3 and S3-compatible object stores through boto3 (no Hadoop connector).

What a sweep deletes stays restorable under bucket versioning: its DeleteObjects leaves a delete
marker on top of the version it hid. A restore removes the marker (DeleteObject with its version
id) only when it is the key's latest version and was made while the sweep ran; a newer write is
latest and is left alone (a write racing the restore stays latest: removing a marker below it
changes nothing).
"""

from __future__ import annotations

import builtins
import os
import shutil
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import IO, TYPE_CHECKING, Any

from lakefs_gc.contract import STILL_BILLED, Freeing, Restorability
from lakefs_gc.storage.base import (
    MD5_HEX,
    CloudStorage,
    ObjectNotFound,
    reaching,
    spool_download,
    unreachable_line,
    where,
)
from lakefs_gc.storage.billing import s3_freeing
from lakefs_gc.storage.info import ObjectInfo
from lakefs_gc.storage.native import s3_store
from lakefs_gc.storage.restoring import (
    DELETED_AGAIN,
    NO_VERSION,
    PRESENT,
    RESTORED,
    RETENTION_PASSED,
    WOULD_RESTORE,
    WRITTEN_SINCE,
    SweptKeys,
)
from lakefs_gc.storage.settings import S3Options
from lakefs_gc.timestamps import iso
from lakefs_gc.words import plural

if TYPE_CHECKING:
    from obstore.store import S3Store

S3_MAX_DELETE = 1000
S3_MAX_ATTEMPTS = 5


def _etag(value: str | None) -> str | None:
    """Return an ETag as lakeFS records a checksum: quotes and spaces stripped (httputil.StripQuotesAndSpaces)."""
    value = (value or "").strip().strip('"').strip()
    return value or None


def _botocore_connection_errors() -> tuple[type[BaseException], ...]:
    from botocore.exceptions import ConnectionError as BotoConnectionError

    return (BotoConnectionError,)


def _unreachable_message(self: S3Storage, exc: BaseException, method: str, args: tuple[object, ...]) -> str:
    endpoint = self.options.endpoint_url or f"AWS S3 ({self.options.region})"
    why = {
        "EndpointConnectionError": "connection failed",
        "ConnectTimeoutError": "connect timed out",
        "ReadTimeoutError": "read timed out",
        "ConnectionClosedError": "connection closed",
    }.get(type(exc).__name__, "connection error")
    return unreachable_line(
        f"S3 endpoint {endpoint} is unreachable ({why}) after the client's attempts",
        method,
        where(self, args),
        str(exc),
        "endpoint_url and region_name in the extra of the storage connection (storage_conn_id in the GC config)",
    )


_reaching = reaching(_botocore_connection_errors, _unreachable_message)


# With the keys given, every client comes from one session per process: its loader keeps the S3
# service model, which a new session reads and parses again (about 0.17 s a client against 0.02 s;
# a run in a task opens its storage a few dozen times)
_shared_session = None
_shared_lock = threading.Lock()


def _forget_shared() -> None:
    global _shared_session, _shared_lock
    _shared_session, _shared_lock = None, threading.Lock()  # a fork's child: no lock another thread held


os.register_at_fork(after_in_child=_forget_shared)


def make_s3_client(options: S3Options, max_attempts: int = S3_MAX_ATTEMPTS) -> Any:
    """
    Return a boto3 S3 client for ``options`` (checksums only when required: non-AWS endpoints).

    ``max_attempts`` counts the first request: 1 means no botocore retries (the deleter retries
    and counts by itself).
    """
    global _shared_session
    import boto3
    from botocore.config import Config

    cfg = Config(
        region_name=options.region,
        s3={"addressing_style": "path" if options.path_style else "auto"},
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
        retries={"total_max_attempts": max_attempts, "mode": "standard"},
    )
    kwargs = dict(
        endpoint_url=options.endpoint_url,
        aws_access_key_id=options.access_key_id,
        aws_secret_access_key=options.secret_access_key,
        aws_session_token=options.session_token,
        config=cfg,
    )
    if not options.access_key_id:  # the default chain: resolved as a new session resolves it, every time
        return boto3.session.Session().client("s3", **kwargs)
    with _shared_lock:  # a session is not thread-safe; the clients it makes are
        if _shared_session is None:
            _shared_session = boto3.session.Session()
        return _shared_session.client("s3", **kwargs)


class S3Storage(CloudStorage):
    """Objects under ``s3://bucket/prefix``: boto3, and obstore for listing slices."""

    max_delete_batch = S3_MAX_DELETE
    listed_etag = True  # the ETag: content_md5 asks whether it is the MD5
    unreachable_message = _unreachable_message

    def __init__(self, bucket: str, prefix: str, options: S3Options | None = None, client: Any | None = None):
        self.bucket = bucket
        self._root(f"s3://{bucket}/{prefix.strip('/')}", prefix)
        self.options = options or S3Options()
        self.client = client or make_s3_client(self.options)
        self._raw_client: Any | None = None  # boto3's client without retries, for delete_batch

    def _open_native(self) -> S3Store:
        return s3_store(self.bucket, self.prefix, self.options)

    @_reaching
    def put(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self._name(key), Body=data)

    def _is_missing(self, exc: Exception) -> bool:
        code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
        return code in ("NoSuchKey", "404", "NotFound")

    @_reaching
    def get(self, key: str) -> bytes:
        try:
            data: bytes = self.client.get_object(Bucket=self.bucket, Key=self._name(key))["Body"].read()
            return data
        except self.client.exceptions.ClientError as exc:
            if self._is_missing(exc):
                raise ObjectNotFound(self.full_uri(key)) from None
            raise

    @_reaching
    def open_input(self, key: str) -> IO[bytes]:
        """Return the object in a seekable temporary file (in memory up to 64 MiB)."""
        return spool_download(
            lambda f: shutil.copyfileobj(
                self.client.get_object(Bucket=self.bucket, Key=self._name(key))["Body"], f, 1 << 20
            ),
            lambda e: isinstance(e, self.client.exceptions.ClientError) and self._is_missing(e),
            self.full_uri(key),
        )

    @_reaching
    def exists(self, key: str) -> bool:
        return self._head(key) is not None

    @_reaching
    def stat(self, key: str) -> ObjectInfo | None:
        return self._head(key)

    @_reaching
    def content_md5(self, key: str) -> str | None:
        """
        Return the ETag when it is the content's MD5.

        It is for one-part objects not encrypted with KMS or a customer key (S3's ETag is then an
        opaque value, or a digest of the parts' digests).
        """
        r = self._head_response(key)
        if r is None or r.get("SSECustomerAlgorithm") or str(r.get("ServerSideEncryption", "")).startswith("aws:kms"):
            return None
        etag = _etag(r.get("ETag"))
        return etag if etag and MD5_HEX.fullmatch(etag) else None

    def _head(self, key: str) -> ObjectInfo | None:
        r = self._head_response(key)
        if r is None:
            return None
        return ObjectInfo(key, int(r["ContentLength"]), r["LastModified"].timestamp(), _etag(r.get("ETag")))

    def _head_response(self, key: str) -> dict[str, Any] | None:
        """HeadObject's answer, None when the object does not exist."""
        try:
            response: dict[str, Any] = self.client.head_object(Bucket=self.bucket, Key=self._name(key))
            return response
        except self.client.exceptions.ClientError as exc:
            if self._is_missing(exc):
                return None
            raise

    @_reaching
    def list(self, prefix: str = "", recursive: bool = True, start_after: str | None = None) -> Iterator[ObjectInfo]:
        kwargs = {"Bucket": self.bucket, "Prefix": self._base + prefix}
        if not recursive:
            kwargs["Delimiter"] = "/"
        if start_after:
            kwargs["StartAfter"] = self._base + start_after
        strip = len(self._base)
        for page in self.client.get_paginator("list_objects_v2").paginate(**kwargs):
            for o in page.get("Contents", ()):
                yield ObjectInfo(o["Key"][strip:], int(o["Size"]), o["LastModified"].timestamp(), _etag(o.get("ETag")))

    @_reaching
    def list_prefixes(self, prefix: str = "") -> Iterator[str]:
        strip = len(self._base)
        for page in self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self._base + prefix, Delimiter="/"
        ):
            for cp in page.get("CommonPrefixes", ()):
                yield cp["Prefix"][strip:]

    @_reaching
    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._name(key))

    def delete_batch(self, keys: builtins.list[str]) -> builtins.list[tuple[str, str, str]]:
        """
        Delete ``keys`` in one DeleteObjects request (quiet mode, <= 1,000 keys) without botocore retries.

        Returns (key, code, message) for keys failed inside a 200 answer; a failed request raises.
        """
        if len(keys) > S3_MAX_DELETE:
            raise ValueError(f"DeleteObjects takes at most {S3_MAX_DELETE} keys, got {len(keys)}")
        if not keys:
            return []
        if self._raw_client is None:
            self._raw_client = make_s3_client(self.options, max_attempts=1)
        resp = self._raw_client.delete_objects(
            Bucket=self.bucket, Delete={"Objects": [{"Key": self._name(k)} for k in keys], "Quiet": True}
        )
        strip = len(self._base)
        return [(e["Key"][strip:], str(e.get("Code", "")), str(e.get("Message", ""))) for e in resp.get("Errors", ())]

    def soft_delete_days(self) -> None:
        """None: S3 keeps deleted objects by versioning (:meth:`restorability`), not soft delete."""
        return None

    def restorability(
        self, now: datetime, quarantine_days: int = 0, quarantine_until: str | None = None
    ) -> Restorability:
        """Return what bucket versioning keeps: the deleted versions, to the fewest NoncurrentDays of its lifecycle rules."""
        try:
            status = self.client.get_bucket_versioning(Bucket=self.bucket).get("Status")
        except Exception as exc:
            return Restorability("s3 versioning", None, None, f"cannot read the bucket's versioning ({exc})")
        if status != "Enabled":
            return Restorability(
                "none", False, None, f"bucket versioning is {(status or 'off').lower()}: deleted objects are gone"
            )
        try:
            days = self._noncurrent_days()
        except Exception as exc:
            return Restorability(
                "s3 versioning",
                True,
                None,
                f"bucket versioning keeps the deleted versions; the lifecycle rules could not be read ({exc})",
            )
        if days is None:
            return Restorability(
                "s3 versioning",
                True,
                None,
                "bucket versioning keeps the deleted versions; no lifecycle rule expires them",
            )
        return Restorability(
            "s3 versioning",
            True,
            iso(now + timedelta(days=days)),
            f"bucket versioning keeps the deleted versions; a lifecycle rule expires noncurrent "
            f"versions after {plural(days, 'day')}",
        )

    def freeing(self, now: datetime, quarantine_days: int = 0, quarantine_until: str | None = None) -> Freeing:
        """Return what a delete now does to the bill: versioning, and the lifecycle rules that cover the namespace's ``data/``."""
        try:
            status = self.client.get_bucket_versioning(Bucket=self.bucket).get("Status")
        except Exception as exc:
            return Freeing(
                STILL_BILLED, None, "unknown", f"cannot read the bucket's versioning ({exc}): counted as still billed"
            )
        try:
            rules = self._lifecycle_rules() if status in ("Enabled", "Suspended") else []
        except Exception as exc:
            return Freeing(
                STILL_BILLED,
                None,
                "s3 versioning",
                f"bucket versioning keeps the deleted versions; the lifecycle rules could not be read ({exc}): "
                f"counted as still billed",
            )
        return s3_freeing(status, rules, self._base + "data/", now)

    def _lifecycle_rules(self) -> builtins.list[dict[str, Any]]:
        """Return the bucket's lifecycle rules (none without a lifecycle configuration)."""
        try:
            rules: builtins.list[dict[str, Any]] = self.client.get_bucket_lifecycle_configuration(
                Bucket=self.bucket
            ).get("Rules", [])
        except Exception as exc:
            if "NoSuchLifecycleConfiguration" in str(exc):
                return []
            raise
        return rules

    def _noncurrent_days(self) -> int | None:
        """
        Return the fewest NoncurrentDays of the bucket's enabled lifecycle rules.

        Every rule, whatever its filter: the earliest a deleted version may expire (the undo's
        figure; the bill's, :meth:`freeing`, counts only the rules that cover the namespace).
        """
        rules = self._lifecycle_rules()
        days = [
            int(r["NoncurrentVersionExpiration"]["NoncurrentDays"])
            for r in rules
            if r.get("Status") == "Enabled" and (r.get("NoncurrentVersionExpiration") or {}).get("NoncurrentDays")
        ]
        return min(days) if days else None

    def restore_key(self, key: str, run: SweptKeys, dry_run: bool, now: datetime) -> tuple[str, str]:
        """Remove the sweep's delete marker when it is the key's latest version: the version it hid is current again."""
        full = self._name(key)
        versions: builtins.list[dict[str, Any]] = []
        markers: builtins.list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": full}
        while True:
            page = self.client.list_object_versions(**kwargs)
            versions += [v for v in page.get("Versions", ()) if v["Key"] == full]
            markers += [m for m in page.get("DeleteMarkers", ()) if m["Key"] == full]
            if not page.get("IsTruncated"):
                break
            kwargs.update(KeyMarker=page["NextKeyMarker"], VersionIdMarker=page.get("NextVersionIdMarker") or "")
            if page["NextKeyMarker"] > full:
                break
        latest = next((x for x in versions + markers if x.get("IsLatest")), None)
        if latest is None:
            return NO_VERSION, "the bucket keeps no version of it (versioning was off when it was deleted)"
        if latest in versions:
            # a delete marker of the sweep below the current version: written again since
            if any(run.in_window(m["LastModified"]) and m["LastModified"] <= latest["LastModified"] for m in markers):
                return (
                    WRITTEN_SINCE,
                    f"version {latest['VersionId']} written {iso(latest['LastModified'])} stays current",
                )
            return PRESENT, f"version {latest['VersionId']} is current (not deleted, or restored already)"
        if not run.in_window(latest["LastModified"]):
            start, end = run.window()
            return DELETED_AGAIN, (
                f"its delete marker {latest['VersionId']} is from {iso(latest['LastModified'])}, "
                f"outside the sweep ({start} to {end})"
            )
        hidden = [v for v in versions if v["LastModified"] <= latest["LastModified"]]
        if not hidden:
            return RETENTION_PASSED, "only the sweep's delete marker is left: the version it hid has expired"
        prev = max(hidden, key=lambda v: v["LastModified"])
        # every marker on top of that version: a sweep whose part was re-sent on a retry (killed half
        # way) deleted the key twice, and removing only the newest marker would leave it deleted
        above = sorted(
            (m for m in markers if m["LastModified"] >= prev["LastModified"]), key=lambda m: m["LastModified"]
        )
        if any(not run.in_window(m["LastModified"]) for m in above):
            start, end = run.window()
            return DELETED_AGAIN, (
                f"a delete marker above version {prev['VersionId']} is from outside the sweep ({start} to {end})"
            )
        ids = ", ".join(m["VersionId"] for m in reversed(above))
        if dry_run:
            return WOULD_RESTORE, f"remove delete marker {ids}: version {prev['VersionId']} current again"
        for m in reversed(above):  # newest first: at every moment the key is deleted or restored, never older
            self.client.delete_object(Bucket=self.bucket, Key=full, VersionId=m["VersionId"])
        return RESTORED, f"delete marker {ids} removed: version {prev['VersionId']} is current again"
