"""
Azure Blob Storage through ``azure-storage-blob`` (lakeFS's ``azure`` blockstore).

Deletes go through Blob Batch (at most 256 sub-requests per request, not atomic): each
sub-request's own status is that key's outcome (``BlobNotFound`` for a missing one), so a failure
inside a batch is never lost. Chosen over ``pyarrow.fs``'s Azure filesystem, whose ``DeleteFiles``
is a loop of single deletes with the first error raised.

What a sweep deletes stays restorable under the account's blob soft delete: a restore undeletes a
soft-deleted blob deleted while the sweep ran, only when no blob of that name exists.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from lakefs_gc.contract import Freeing, Restorability
from lakefs_gc.storage import native
from lakefs_gc.storage.base import (
    CloudStorage,
    ObjectNotFound,
    StorageError,
    hex_md5,
    reaching,
    spool_download,
    unreachable_line,
    where,
)
from lakefs_gc.storage.billing import azure_freeing
from lakefs_gc.storage.info import ObjectInfo
from lakefs_gc.storage.restoring import DELETED_AGAIN, NO_VERSION, RESTORED, WOULD_RESTORE, WRITTEN_SINCE, SweptKeys
from lakefs_gc.timestamps import iso
from lakefs_gc.words import plural

if TYPE_CHECKING:
    from azure.core.credentials import AccessToken, AzureSasCredential, TokenCredential
    from azure.storage.blob import BlobServiceClient, ContainerClient
    from obstore.store import AzureStore

    from lakefs_gc.storage.settings import AzureOptions

AZURE_MAX_DELETE = 256  # Blob Batch's limit of sub-requests per request
CLIENT_RETRIES = 3  # the SDK's own retries for reads and writes (the deleter retries by itself)


class StaticTokenCredential:
    """
    An OAuth access token obtained elsewhere, as the ``TokenCredential`` the SDK asks for.

    The token comes from the Airflow side, from the connection's token credential.
    """

    def __init__(self, token: str, expires_on: int):
        self._token, self._expires_on = token, int(expires_on)

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        from azure.core.credentials import AccessToken

        return AccessToken(self._token, self._expires_on)

    def __repr__(self) -> str:
        return "StaticTokenCredential(...)"


def azure_credential(options: AzureOptions) -> dict[str, str] | AzureSasCredential | TokenCredential:
    """Return the SDK credential for ``options``: account key, SAS, access token, else DefaultAzureCredential."""
    if options.account_key:
        return {"account_name": options.account_name, "account_key": options.account_key}
    if options.sas_token:
        from azure.core.credentials import AzureSasCredential

        return AzureSasCredential(options.sas_token.lstrip("?"))
    if options.access_token:
        return StaticTokenCredential(options.access_token, options.access_token_expires_on)
    from azure.identity import DefaultAzureCredential

    return DefaultAzureCredential()


def make_service_client(options: AzureOptions, retries: int | None = None) -> BlobServiceClient:
    """
    Return a ``BlobServiceClient`` for ``options``.

    The SDK's exponential retry with 1, 3, 5 s waits (its default waits 15 s and more), ``retries``
    attempts after the first (default ``CLIENT_RETRIES``; 0: none, the deleter retries and counts by
    itself).
    """
    from azure.storage.blob import BlobServiceClient, ExponentialRetry

    retries = CLIENT_RETRIES if retries is None else retries
    policy = ExponentialRetry(initial_backoff=1, increment_base=2, retry_total=retries)
    return BlobServiceClient(
        account_url=options.account_url,
        credential=azure_credential(options),
        retry_policy=policy,
        connection_timeout=20,
        read_timeout=120,
    )


def _azure_connection_errors() -> tuple[type[BaseException], ...]:
    from azure.core.exceptions import ServiceRequestError, ServiceResponseError

    return (ServiceRequestError, ServiceResponseError)


def _unreachable_message(self: AzureStorage, exc: BaseException, method: str, args: tuple[object, ...]) -> str:
    return unreachable_line(
        f"Azure Blob endpoint {self.options.account_url} is unreachable after the SDK's attempts",
        method,
        where(self, args),
        f"{type(exc).__name__}: {exc}",
        "the account URL the wasb "
        "storage connection gives (storage_conn_id in the GC config: host, or BlobEndpoint in its "
        "connection string)",
    )


_reaching = reaching(_azure_connection_errors, _unreachable_message)


class AzureStorage(CloudStorage):
    """
    Blobs under ``https://<account>.<domain>/<container>/<prefix>``.

    Through azure-storage-blob, and obstore for listing slices.
    """

    max_delete_batch = AZURE_MAX_DELETE
    sdk_listed_md5 = True  # Content-MD5
    unreachable_message = _unreachable_message

    def __init__(self, uri: str, account: str, container: str, prefix: str, options: AzureOptions):
        if not options.account_url:
            raise StorageError(f"{uri}: no Azure account URL (the storage connection gives it)")
        if options.account_name and options.account_name != account:
            raise StorageError(
                f"namespace {uri!r} is in storage account {account!r}, but the storage connection reaches account "
                f"{options.account_name!r} ({options.account_url}): fix the wasb connection (storage_conn_id)"
            )
        self._root(uri, prefix)
        self.container, self.options, self._account = container, options, account
        self.client = make_service_client(options).get_container_client(container)
        self._raw: ContainerClient | None = None  # the container's client without SDK retries, for delete_batch
        # Sub-request paths in a batch answer: [/<account> on Azurite]/<container>/<blob>
        self._path_base = urlsplit(options.account_url).path.rstrip("/") + f"/{container}/"

    def _open_native(self) -> AzureStore:
        options = self.options if self.options.account_name else replace(self.options, account_name=self._account)
        return native.azure_store(self.container, self.prefix, options)

    @_reaching
    def put(self, key: str, data: bytes) -> None:
        self.client.upload_blob(self._name(key), data, overwrite=True)

    @_reaching
    def get(self, key: str) -> bytes:
        from azure.core.exceptions import ResourceNotFoundError

        try:
            data: bytes = self.client.download_blob(self._name(key)).readall()
            return data
        except ResourceNotFoundError:
            raise ObjectNotFound(self.full_uri(key)) from None

    @_reaching
    def open_input(self, key: str) -> IO[bytes]:
        """Return the blob in a seekable temporary file (in memory up to 64 MiB)."""
        from azure.core.exceptions import ResourceNotFoundError

        return spool_download(
            lambda f: self.client.download_blob(self._name(key)).readinto(f),
            lambda e: isinstance(e, ResourceNotFoundError),
            self.full_uri(key),
        )

    @_reaching
    def stat(self, key: str) -> ObjectInfo | None:
        from azure.core.exceptions import ResourceNotFoundError

        try:
            p = self.client.get_blob_client(self._name(key)).get_blob_properties()
        except ResourceNotFoundError:
            return None
        return ObjectInfo(key, int(p.size), p.last_modified.timestamp(), hex_md5(p.content_settings.content_md5))

    def content_md5(self, key: str) -> str | None:
        """
        Return Content-MD5 in hex.

        Azure keeps one for blobs put in one call (and for any blob whose writer set it); None for
        blobs put in blocks without it.
        """
        info = self.stat(key)
        return info.checksum if info else None

    @_reaching
    def list(self, prefix: str = "", recursive: bool = True, start_after: str | None = None) -> Iterator[ObjectInfo]:
        """
        Blobs under ``prefix`` in name order (Azure lists in lexical order).

        Azure has no start-after, so earlier names are skipped here.
        """
        from azure.storage.blob import BlobPrefix

        strip = len(self._base)
        after = self._base + start_after if start_after else None
        items = (
            self.client.list_blobs(name_starts_with=self._base + prefix)
            if recursive
            else self.client.walk_blobs(name_starts_with=self._base + prefix, delimiter="/")
        )
        for b in items:
            if isinstance(b, BlobPrefix) or (after is not None and b.name <= after):
                continue
            yield ObjectInfo(
                b.name[strip:], int(b.size), b.last_modified.timestamp(), hex_md5(b.content_settings.content_md5)
            )

    @_reaching
    def list_prefixes(self, prefix: str = "") -> Iterator[str]:
        from azure.storage.blob import BlobPrefix

        strip = len(self._base)
        for b in self.client.walk_blobs(name_starts_with=self._base + prefix, delimiter="/"):
            if isinstance(b, BlobPrefix):
                yield b.name[strip:]

    @_reaching
    def delete(self, key: str) -> None:
        self.client.delete_blob(self._name(key))

    def delete_batch(self, keys: builtins.list[str]) -> builtins.list[tuple[str, str, str]]:
        """
        Delete ``keys`` in one Blob Batch request (<= 256 keys) without SDK retries.

        Returns (key, code, message) for each key whose sub-request failed (``BlobNotFound`` for a
        missing one); a key whose sub-response cannot be matched to it counts as failed
        (``BatchResponseUnmatched``, retried: deleting again is harmless). A failed request raises.
        """
        if len(keys) > AZURE_MAX_DELETE:
            raise ValueError(f"Blob Batch takes at most {AZURE_MAX_DELETE} keys, got {len(keys)}")
        if not keys:
            return []
        if self._raw is None:
            self._raw = make_service_client(self.options, retries=0).get_container_client(self.container)
        names = {self._name(k): k for k in keys}
        answers = self._raw.delete_blobs(*names, raise_on_any_failure=False)
        failed: builtins.list[tuple[str, str, str]] = []
        seen: set[str] = set()
        for r in answers:
            path = unquote(urlsplit(r.request.url).path)
            name = path[len(self._path_base) :] if path.startswith(self._path_base) else None
            key = names.get(name) if name is not None else None
            if key is None:
                continue
            seen.add(key)
            if not 200 <= r.status_code < 300:
                code = r.headers.get("x-ms-error-code") or str(r.status_code)
                failed.append((key, code, f"HTTP {r.status_code} {r.reason or ''}".strip()))
        failed += [
            (k, "BatchResponseUnmatched", "no sub-response for this key in the batch answer")
            for k in keys
            if k not in seen
        ]
        return failed

    def soft_delete_days(self) -> int | None:
        """
        Return the days the account keeps deleted blobs (its blob soft delete), 0 when off.

        None when the credential may not read the account's service properties.
        """
        try:
            policy = make_service_client(self.options).get_service_properties().get("delete_retention_policy")
        except Exception:
            return None
        return int(policy.days or 0) if policy is not None and policy.enabled else 0

    def restorability(
        self, now: datetime, quarantine_days: int = 0, quarantine_until: str | None = None
    ) -> Restorability:
        """Return what the account's blob soft delete keeps (:meth:`soft_delete_days`)."""
        days = self.soft_delete_days()
        if days is None:
            return Restorability(
                "azure soft delete",
                None,
                None,
                "the credential may not read the account's blob service properties: unknown",
            )
        if not days:
            return Restorability("none", False, None, "blob soft delete is off for the account: deleted blobs are gone")
        return Restorability(
            "azure soft delete",
            True,
            iso(now + timedelta(days=days)),
            f"blob soft delete keeps deleted blobs {plural(days, 'day')}",
        )

    def freeing(self, now: datetime, quarantine_days: int = 0, quarantine_until: str | None = None) -> Freeing:
        """Return what a delete now does to the bill: the account's blob soft delete and blob versioning."""
        return azure_freeing(self.soft_delete_days(), self.versioning(), now)

    def versioning(self) -> bool | None:
        """
        Return whether blob versioning is on, as the namespace's ``_lakefs/`` blobs show it; None: they cannot be listed.

        The data plane has no call for the setting (it is the account's, in Azure Resource
        Manager): a version id on any of the first 1,000 blobs lakeFS and the GC wrote there says
        it is on. Turned on after they were all written, it reads as off.
        """
        try:
            page: Iterable[Any] = next(
                self.client.list_blobs(
                    name_starts_with=self._base + "_lakefs/", include=["versions"], results_per_page=1000
                ).by_page(),
                [],
            )
            return any(getattr(b, "version_id", None) for b in page)
        except Exception:
            return None

    def restore_key(self, key: str, run: SweptKeys, dry_run: bool, now: datetime) -> tuple[str, str]:
        """Undelete the blob soft-deleted while the sweep ran, only when no blob of that name exists."""
        name = self._name(key)
        if self.exists(key):
            return WRITTEN_SINCE, "a blob of that name exists: left alone"
        deleted = [
            b
            for b in self.client.list_blobs(name_starts_with=name, include=["deleted"])
            if b.name == name and getattr(b, "deleted", False)
        ]
        if not deleted:
            return NO_VERSION, "no soft-deleted blob of that name (soft delete off, or its retention passed)"
        ours = [b for b in deleted if run.in_window(getattr(b, "deleted_time", None))]
        if not ours:
            return DELETED_AGAIN, "soft-deleted outside the sweep's time"
        if dry_run:
            return WOULD_RESTORE, "undelete the soft-deleted blob"
        self.client.get_blob_client(name).undelete_blob()
        return RESTORED, "undeleted (blob soft delete)"
