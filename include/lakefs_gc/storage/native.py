"""
Listing through a native client, straight into Arrow record batches.

The client is ``obstore`` (Python bindings of Rust's ``object_store``); the listing makes no Python
object per key.

boto3's ``list_objects_v2`` costs about 110 us of client CPU per key (a dict per key, parsed by
botocore); obstore's listing into Arrow about 3 to 4 us (``python -m bench list``). The GC lists
every slice of a namespace this way, on S3, Azure Blob and GCS alike; the rest of a store's calls
(reads, HEADs, deletes with their per-key outcomes) stay on the store's own SDK (README, "Which
client serves which store").

What the native listing cannot serve, the SDK lists (:func:`listing_batches`), and the
fallback is counted (:data:`FALLBACKS`):

- a key ``object_store`` refuses as a path (an empty segment ``a//b``, a ``.`` or ``..`` segment):
  the SDK lists the rest of the prefix, after the last key the native listing gave;
- a key listed out of order (a directory marker ``x/`` comes back from ``object_store`` as ``x``,
  which can collide with an object ``x``): the same;
- ``obstore`` not installed, or ``LAKEFS_GC_NATIVE_LISTING=0``: the SDK lists everything.

The listing's checksum column is S3's ETag (quotes stripped, as the SDK path gives it); Azure's
and GCS's native listings carry no content MD5 (their ETags are not one), so it is null there and
the store's ``listed_md5`` says so: the staged check asks the store (a HEAD through the SDK) about
the candidates whose size some committed entry has, as it does on S3.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa
    from arro3.core import RecordBatch
    from obstore.auth.boto3 import Boto3CredentialProvider
    from obstore.store import (
        AzureBearerToken,
        AzureConfig,
        AzureCredentialProvider as AzureProviderProtocol,  # obstore.auth.azure's has the same name
        AzureStore,
        ClientConfig,
        GCSConfig,
        GCSCredentialProvider,
        GCSStore,
        ObjectStore,
        RetryConfig,
        S3Config,
        S3Store,
    )

    from lakefs_gc.storage.info import ObjectInfo
    from lakefs_gc.storage.settings import AzureOptions, GCSOptions, S3Options

NATIVE_ENV = "LAKEFS_GC_NATIVE_LISTING"  # "0": every listing through the store's SDK
CHUNK = 10_000  # keys per Arrow batch from the native listing
CONNECT_TIMEOUT = "20s"
REQUEST_TIMEOUT = "120s"
MAX_RETRIES = 4  # after the first attempt, as the SDK clients (botocore: 5 attempts in all)
RETRY_TIMEOUT = timedelta(seconds=180)

# The listing's columns, in order, and their Spark types: the one definition of the Arrow schema of
# every listing batch (listed_schema), of the listing's Spark DDL (LISTED_DDL: list_slices) and of the
# columns read back (lakefs_gc.listing.slices). address: the key; last_modified_ms: epoch
# milliseconds; checksum: the store's, as ObjectInfo gives it, or null.
LISTED_COLUMNS = {"address": "string", "size": "long", "last_modified_ms": "long", "checksum": "string"}
LISTED_DDL = ", ".join(f"{name} {kind}" for name, kind in LISTED_COLUMNS.items())


@functools.cache
def listed_schema() -> pa.Schema:
    """Return the Arrow schema of a listing (:data:`LISTED_COLUMNS`)."""
    import pyarrow as pa

    arrow = {"string": pa.string(), "long": pa.int64()}
    return pa.schema([(name, arrow[kind]) for name, kind in LISTED_COLUMNS.items()])


# How often this process fell back to the SDK, by reason (tests and the bench read it)
FALLBACKS: dict[str, int] = {}
_lock = threading.Lock()


def enabled() -> bool:
    """Whether the native listing is installed and not switched off (``LAKEFS_GC_NATIVE_LISTING=0``)."""
    if os.environ.get(NATIVE_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    return _installed()


@functools.cache
def _installed() -> bool:
    try:
        import obstore  # noqa: F401
    except ImportError:
        return False
    return True


def count(reason: str) -> None:
    with _lock:
        FALLBACKS[reason] = FALLBACKS.get(reason, 0) + 1


def is_connection_error(exc: BaseException) -> bool:
    """
    Obstore's error when the endpoint did not answer after its retries.

    Refused, unknown host, timed out.
    """
    text = str(exc)
    return type(exc).__name__ == "GenericError" and ("error sending request" in text or "timed out" in text)


def _client_options(url: str | None) -> ClientConfig:
    return {
        "allow_http": bool(url and url.startswith("http://")),
        "connect_timeout": CONNECT_TIMEOUT,
        "timeout": REQUEST_TIMEOUT,
    }


def _retry() -> RetryConfig:
    return {"max_retries": MAX_RETRIES, "retry_timeout": RETRY_TIMEOUT}


class StaticToken:
    """
    A bearer token obtained on the Airflow side, as an obstore credential provider.

    The token comes from Azure's token credential or GCS's credentials; ``expires_on`` 0: asked
    again every 5 minutes.
    """

    def __init__(self, token: str, expires_on: int = 0):
        self._token, self._expires_on = token, int(expires_on or 0)

    def __call__(self) -> AzureBearerToken:  # GCS's GCSCredential is the same dict
        expires = (
            datetime.fromtimestamp(self._expires_on, UTC)
            if self._expires_on
            else datetime.now(UTC) + timedelta(minutes=5)
        )
        return {"token": self._token, "expires_at": expires}

    def __repr__(self) -> str:  # never print secrets
        return "StaticToken(...)"


def s3_store(bucket: str, prefix: str, options: S3Options) -> S3Store:
    """
    Return an obstore ``S3Store`` for ``s3://bucket/prefix`` reached as ``options`` say.

    The keys given (with a session token), else boto3's default chain through obstore's
    ``Boto3CredentialProvider`` (profiles, role assumption, instance roles), re-read before they
    expire; the endpoint path style as the SDK client's.
    """
    from obstore.store import S3Store

    config: S3Config = {"region": options.region, "virtual_hosted_style_request": not options.path_style}
    if options.endpoint_url:
        config["endpoint"] = options.endpoint_url
    provider: Boto3CredentialProvider | None = None
    if options.access_key_id:
        config.update({"access_key_id": options.access_key_id, "secret_access_key": options.secret_access_key or ""})
        if options.session_token:
            config["session_token"] = options.session_token
    else:
        from obstore.auth.boto3 import Boto3CredentialProvider

        provider = Boto3CredentialProvider(ttl=timedelta(minutes=5))
        config.update(provider.config)
        config["region"] = options.region
    return S3Store(
        bucket,
        prefix=prefix or None,
        config=config,
        client_options=_client_options(options.endpoint_url),
        retry_config=_retry(),
        credential_provider=provider,
    )


def azure_store(container: str, prefix: str, options: AzureOptions) -> AzureStore:
    """
    Return an obstore ``AzureStore`` for a container reached as ``options`` say.

    The account key, the SAS token, the access token, else ``DefaultAzureCredential``
    (azure-identity, through obstore's ``AzureCredentialProvider``).
    """
    from obstore.store import AzureStore

    config: AzureConfig = {"account_name": options.account_name, "endpoint": options.account_url}
    provider: AzureProviderProtocol | None = None
    if options.account_key:
        config["account_key"] = options.account_key
    elif options.sas_token:
        config["sas_key"] = options.sas_token.lstrip("?")
    elif options.access_token:
        provider = StaticToken(options.access_token, options.access_token_expires_on)
    else:
        from obstore.auth.azure import AzureCredentialProvider

        provider = AzureCredentialProvider()
    return AzureStore(
        container,
        prefix=prefix or None,
        config=config,
        client_options=_client_options(options.account_url),
        retry_config=_retry(),
        credential_provider=provider,
    )


def gcs_store(bucket: str, prefix: str, options: GCSOptions, for_deletes: bool = False) -> GCSStore:
    """
    Return an obstore ``GCSStore`` for ``gs://bucket/prefix`` reached as ``options`` say.

    Anonymous (an emulator), the access token, else Application Default Credentials (google-auth,
    through obstore's ``GoogleCredentialProvider``); an emulator's endpoint as the base URL.
    ``for_deletes``: no retries of its own (the deleter retries, and counts them), and an anonymous
    emulator given a placeholder bearer (object_store signs its deletes even when told to skip
    signing; an emulator ignores it, and a real bucket refuses an anonymous delete anyway).
    """
    from obstore.store import GCSStore

    config: GCSConfig = {}
    if options.endpoint_url:
        config["base_url"] = options.endpoint_url.rstrip("/")
    provider: GCSCredentialProvider | None = None
    if options.anonymous and for_deletes:
        provider = StaticToken("anonymous")
    elif options.anonymous:
        config["skip_signature"] = True
    elif options.access_token:
        provider = StaticToken(options.access_token)
    else:
        from obstore.auth.google import GoogleCredentialProvider

        provider = GoogleCredentialProvider()
    retry: RetryConfig = {"max_retries": 0, "retry_timeout": RETRY_TIMEOUT} if for_deletes else _retry()
    return GCSStore(
        bucket,
        prefix=prefix or None,
        config=config,
        client_options=_client_options(options.endpoint_url),
        retry_config=retry,
        credential_provider=provider,
    )


def plain_key(key: str) -> bool:
    """
    Whether ``key`` names the same object to object_store as to the SDK.

    object_store strips a leading or trailing ``/`` (a directory marker ``x/`` would be ``x``) and
    refuses an empty, ``.`` or ``..`` segment: such keys go through the SDK.
    """
    return bool(key) and all(seg not in ("", ".", "..") for seg in key.split("/"))


def delete_outcome(store: ObjectStore, key: str) -> tuple[str, str] | None:
    """
    Delete ``key`` (a :func:`plain_key`) through ``store`` once: None when deleted, else (code, message).

    ``TypeError`` or ``ValueError`` when object_store refuses the key as a path (nothing sent).

    The code as the SDK adapters give it: ``404`` for a missing object, the HTTP status of any other
    answer, ``ConnectionError`` when the endpoint did not answer.
    """
    import obstore

    try:
        obstore.delete(store, key)
    except (TypeError, ValueError):
        raise  # a path object_store refuses: nothing was sent, the caller's SDK deletes it
    except Exception as exc:
        text = str(exc)
        line = (text.splitlines() or [""])[0][:500]  # obstore's message goes on with its debug tree
        if isinstance(exc, FileNotFoundError):
            return "404", line
        if is_connection_error(exc):
            return "ConnectionError", line
        status = re.search(r"status code: (\d{3})", text)
        return (status.group(1) if status else type(exc).__name__), line
    return None


def _shape(batch: RecordBatch, prefix: str, etag_checksum: bool) -> pa.RecordBatch:
    """
    Return a native listing batch as the listing's columns: (address, size, last_modified_ms, checksum).

    A directory marker of the prefix itself (``data/<slice>/``, which object_store gives without
    its ``/``) keeps its key.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    b = pa.record_batch(batch)
    path = b.column("path")
    if prefix:
        path = pc.if_else(pc.equal(path, prefix.rstrip("/")), pa.scalar(prefix), path)
    ms = pc.divide(pc.cast(b.column("last_modified").cast(pa.timestamp("us", "UTC")), pa.int64()), 1000)
    if etag_checksum:
        etag = pc.utf8_trim(b.column("e_tag"), ' "')
        checksum = pc.if_else(pc.equal(etag, ""), pa.scalar(None, pa.string()), etag)
    else:
        checksum = pa.nulls(len(b), pa.string())
    return pa.record_batch(
        [pc.cast(path, pa.string()), pc.cast(b.column("size"), pa.int64()), ms, pc.cast(checksum, pa.string())],
        names=["address", "size", "last_modified_ms", "checksum"],
    )


class OutOfOrder(Exception):
    """The native listing gave a key not after the one before it."""


def _ordered_upto(batch: pa.RecordBatch, last: str | None) -> int:
    """Count the leading rows of ``batch`` that are strictly increasing (and after ``last``)."""
    import pyarrow.compute as pc

    col = batch.column(0)
    n = len(col)
    if n == 0:
        return 0
    if last is not None and not col[0].as_py() > last:
        return 0
    if n == 1:
        return 1
    ok = pc.greater(col.slice(1), col.slice(0, n - 1))
    if pc.all(ok).as_py():
        return n
    first_bad: int = pc.index(ok, False).as_py()
    return first_bad + 1


def native_batches(store: ObjectStore, prefix: str, etag_checksum: bool) -> Iterator[pa.RecordBatch]:
    """
    Arrow batches (address, size, last_modified_ms, checksum) of every object under ``prefix``.

    ``prefix`` is a ``.../`` prefix of the store; the batches come in key order. Raises
    :class:`OutOfOrder` (after the rows that were in order) or obstore's ``InvalidPathError``;
    ``listing_batches`` takes it from there.
    """
    import obstore

    last: str | None = None
    for raw in obstore.list(store, prefix, chunk_size=CHUNK, return_arrow=True):
        b = _shape(raw, prefix, etag_checksum)
        good = _ordered_upto(b, last)
        if good:
            yield b.slice(0, good) if good < len(b) else b
            last = b.column(0)[good - 1].as_py()
        if good < len(b):
            raise OutOfOrder(f"{b.column(0)[good].as_py()!r} listed after {last!r}")


def sdk_batches(infos: Iterable[ObjectInfo], size: int = CHUNK) -> Iterator[pa.RecordBatch]:
    """:class:`ObjectInfo` records (the SDK's listing) as the same Arrow batches."""
    import pyarrow as pa

    schema = listed_schema()
    cols: tuple[list[str], list[int], list[int], list[str | None]] = ([], [], [], [])
    for o in infos:
        cols[0].append(o.key)
        cols[1].append(o.size)
        cols[2].append(int(o.last_modified * 1000))
        cols[3].append(o.checksum)
        if len(cols[0]) >= size:
            yield pa.record_batch([pa.array(c, f.type) for c, f in zip(cols, schema)], schema=schema)
            cols = ([], [], [], [])
    if cols[0]:
        yield pa.record_batch([pa.array(c, f.type) for c, f in zip(cols, schema)], schema=schema)


def listing_batches(
    native: Callable[[], ObjectStore] | None,
    sdk_list: Callable[..., Iterator[ObjectInfo]],
    prefix: str,
    etag_checksum: bool,
) -> Iterator[pa.RecordBatch]:
    """
    Every object under ``prefix`` as Arrow batches.

    Through the native store ``native()`` makes when there is one, the SDK's
    ``sdk_list(prefix, start_after=...)`` for what it cannot list (the module's docstring).
    """
    last: str | None = None
    store = native() if native is not None and enabled() else None
    if store is None and native is not None and not _installed():
        count("obstore not installed")  # a listing that falls back, counted once
    if store is not None:
        try:
            for b in native_batches(store, prefix, etag_checksum):
                last = b.column(0)[len(b) - 1].as_py()
                yield b
            return
        except OutOfOrder:
            count("a key out of order (a directory marker)")
        except Exception as exc:
            from obstore.exceptions import InvalidPathError

            if not isinstance(exc, InvalidPathError):
                raise
            count("a key object_store refuses as a path")
    yield from sdk_batches(sdk_list(prefix, start_after=last))
