"""
What every storage adapter offers.

The :class:`Storage` protocol, the listed-object record and the errors.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import logging
import re
import tempfile
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any, ClassVar, Concatenate, ParamSpec, Protocol, TypeVar, cast

from lakefs_gc.errors import Unreachable
from lakefs_gc.storage import native
from lakefs_gc.storage.namespace import _check_key

if TYPE_CHECKING:
    from datetime import datetime

    import pyarrow as pa
    from obstore.store import ObjectStore

    from lakefs_gc.contract import Freeing, Restorability
    from lakefs_gc.storage.info import ObjectInfo
    from lakefs_gc.storage.restoring import SweptKeys


class StorageError(Exception):
    """A storage operation failed (other than a missing object, which raises KeyError-like NotFound)."""


class ObjectNotFound(StorageError, KeyError):
    """The object does not exist."""


class Storage(Protocol):
    """A storage namespace: relative keys under one root."""

    uri: str
    max_delete_batch: int  # most keys one delete_batch call takes

    @property
    def listed_md5(self) -> bool:  # ObjectInfo.checksum as listed is the content's MD5 (when there is one)
        ...

    @property
    def hashes_locally(self) -> bool:  # content_md5 reads the bytes in this process (no request): ask it in one thread
        ...

    @property
    def quarantines(self) -> bool:  # a sweep with quarantine_days moves what it deletes into its quarantine folder
        ...

    def full_uri(self, key: str) -> str: ...
    def put(self, key: str, data: bytes) -> None: ...
    def get(self, key: str) -> bytes: ...
    def open_input(self, key: str) -> IO[bytes]: ...
    def exists(self, key: str) -> bool: ...
    def stat(self, key: str) -> ObjectInfo | None:
        """Return the object's size and last modification, None when it does not exist."""
        ...

    def content_md5(self, key: str) -> str | None:
        """
        Return the content's MD5 (hex) when the store vouches for it (or, local, computes it), else None.

        None: missing, or a store checksum that is not the content's MD5. The staged check's.
        """
        ...

    def list(self, prefix: str = "", recursive: bool = True, start_after: str | None = None) -> Iterator[ObjectInfo]:
        """Objects under ``prefix`` sorted by key (UTF-8 byte order), only those after ``start_after``."""
        ...

    def list_prefixes(self, prefix: str = "") -> Iterator[str]: ...
    def list_batches(self, prefix: str) -> Iterator[pa.RecordBatch]:
        """
        Every object under ``prefix`` (``.../``), in key order, as Arrow batches.

        Batches of :func:`lakefs_gc.storage.native.listed_schema`: the GC's listing of a slice.
        """
        ...

    def delete(self, key: str) -> None: ...

    def delete_batch(self, keys: builtins.list[str]) -> builtins.list[tuple[str, str, str]]:
        """
        Delete up to ``max_delete_batch`` keys (one request where the store has a batch call).

        Returns (key, code, message) of each key that failed (``NoSuchKey``, ``BlobNotFound`` or
        ``404`` for a missing one). A failed request raises. The deleter's only call.
        """
        ...

    def soft_delete_days(self) -> int | None:
        """
        Return the days the store's own soft delete keeps deleted objects (0: off), as the sweep reports them.

        None where the store gives no such figure (its :meth:`restorability` says what it keeps) or
        cannot say.
        """
        ...

    def restorability(
        self, now: datetime, quarantine_days: int = 0, quarantine_until: str | None = None
    ) -> Restorability:
        """
        Say what the store does with the objects a sweep deletes ``now`` (read from the store itself).

        ``quarantine_days``: the run's; ``quarantine_until``: the end the sweep's quarantine record
        gives, when it has one (a store that :attr:`quarantines`).
        """
        ...

    def freeing(self, now: datetime, quarantine_days: int = 0, quarantine_until: str | None = None) -> Freeing:
        """
        Say what a delete ``now`` does to the bill of the namespace's ``data/`` keys (read from the store itself).

        Freed now, on a date, or not until someone acts (:mod:`lakefs_gc.storage.billing`); what
        the store does not let the GC read counts as still billed. The arguments: :meth:`restorability`'s.
        """
        ...

    def restore_key(self, key: str, run: SweptKeys, dry_run: bool, now: datetime) -> tuple[str, str]:
        """
        Bring ``key``, deleted by a sweep of ``run``, back where the store still keeps it; never over a newer object.

        Returns its outcome (:data:`lakefs_gc.storage.restoring.OUTCOMES`) and a detail.
        ``dry_run``: say what it would do, change nothing.
        """
        ...


class StorageUnreachable(Unreachable):
    """
    The storage endpoint did not answer within the client library's attempts.

    Refused, unknown host, timed out.
    """


def unreachable_line(what: str, method: str, place: str, error: str, check: str) -> str:
    """Return the one line of a :class:`StorageUnreachable`: the endpoint, the call, the error, what to check."""
    return (
        f"{what} ({method} {place}: {error}): check {check}, that the endpoint is running and that this worker "
        f"can reach it"
    )


_S = TypeVar("_S")  # the storage a decorated method belongs to
_P = ParamSpec("_P")
_R = TypeVar("_R")


def reaching(
    connection_errors: Callable[[], tuple[type[BaseException], ...]],
    message: Callable[[_S, BaseException, str, tuple[object, ...]], str],
) -> Callable[[Callable[Concatenate[_S, _P], _R]], Callable[Concatenate[_S, _P], _R]]:
    """
    Make a decorator for a storage method that turns "could not connect" into one clear error.

    The library's "could not connect" errors (after its own attempts) become one
    :class:`StorageUnreachable` line, ``message(storage, exc, method, args)``, naming the endpoint
    and what to check; everything else (answers, even 5xx) propagates as it is.
    ``connection_errors`` is called at the first failure (the library is imported lazily).
    """

    def wrap(method: Callable[Concatenate[_S, _P], _R]) -> Callable[Concatenate[_S, _P], _R]:
        def unreachable(self: _S, exc: BaseException, args: tuple[object, ...]) -> StorageUnreachable:
            logging.getLogger(method.__module__).debug("%s: the last attempt's error", method.__name__, exc_info=exc)
            return StorageUnreachable(message(self, exc, method.__name__, args))

        if inspect.isgeneratorfunction(method):
            generator = cast("Callable[Concatenate[_S, _P], Iterator[object]]", method)

            @functools.wraps(method)
            def gen(self: _S, *args: _P.args, **kwargs: _P.kwargs) -> Iterator[object]:
                try:
                    yield from generator(self, *args, **kwargs)
                except Exception as exc:
                    if isinstance(exc, connection_errors()):
                        raise unreachable(self, exc, args) from None
                    raise

            return cast("Callable[Concatenate[_S, _P], _R]", gen)  # a generator function's result is its iterator

        @functools.wraps(method)
        def call(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return method(self, *args, **kwargs)
            except Exception as exc:
                if isinstance(exc, connection_errors()):
                    raise unreachable(self, exc, args) from None
                raise

        return call

    return wrap


MD5_HEX = re.compile(r"[0-9a-f]{32}")  # a checksum in the form of lakeFS's own (content MD5, hex)


def hex_md5(value: bytes | bytearray | str | None) -> str | None:
    """
    Return a content MD5 as lakeFS writes checksums (lower-case hex).

    Azure gives the raw 16 bytes, GCS base64 of them; anything else (absent, another length) is None.
    """
    import base64
    import binascii

    if not value:
        return None
    if isinstance(value, str):
        try:
            value = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return None
    return bytes(value).hex() if len(value) == 16 else None


def where(storage: CloudStorage, args: tuple[object, ...]) -> str:
    """Return the URI a failed call was about: the key's, else the namespace's."""
    return storage.full_uri(args[0]) if args and isinstance(args[0], str) and args[0] else storage.uri


def spool_download(
    download: Callable[[IO[bytes]], object], is_missing: Callable[[Exception], bool], uri: str
) -> IO[bytes]:
    """
    Run ``download`` (writing the object into the file it is given) into a seekable temporary file.

    The file is in memory up to 64 MiB; :class:`ObjectNotFound` naming ``uri`` when ``is_missing``
    says the error means the object is not there. Every adapter's ``open_input``.
    """
    tmp = tempfile.SpooledTemporaryFile(max_size=64 << 20)
    try:
        download(tmp)
    except Exception as exc:
        tmp.close()
        if is_missing(exc):
            raise ObjectNotFound(uri) from None
        raise
    tmp.seek(0)
    return tmp


class CloudStorage:
    """
    What the S3, Azure Blob and GCS adapters share.

    Keys under one prefix of a bucket or container, their URIs, and the listing into Arrow (through
    the native client where it serves, :mod:`lakefs_gc.storage.native`). A subclass sets ``uri``,
    ``prefix`` (:meth:`_root`) and its ``unreachable_message``, and makes its native store in
    :meth:`native_store`.
    """

    listed_etag = False  # the native listing's ETag is the checksum the SDK lists (S3's)
    hashes_locally = False  # content_md5 asks the store (a HEAD or a listing's field)
    quarantines = False  # the store keeps deleted objects its own way (versioning, soft delete)
    sdk_listed_md5 = False  # the SDK's listing carries the content MD5 (Azure's Content-MD5, GCS's md5Hash)
    # message(storage, exc, method, args) of reaching(): the storage is the subclass's own
    unreachable_message: ClassVar[Callable[[Any, BaseException, str, tuple[object, ...]], str]]
    _native: ObjectStore | None = None  # the obstore store, made on first use

    if TYPE_CHECKING:  # each subclass's own

        def stat(self, key: str) -> ObjectInfo | None: ...
        def list(
            self, prefix: str = "", recursive: bool = True, start_after: str | None = None
        ) -> Iterator[ObjectInfo]: ...

    @property
    def listed_md5(self) -> bool:
        """
        The listing's checksum is the content's MD5.

        Only the SDK's listing has it (Azure, GCS), and the native listing lists instead while it is on.
        """
        return self.sdk_listed_md5 and not native.enabled()

    def _root(self, uri: str, prefix: str) -> None:
        self.uri = uri.rstrip("/")
        self.prefix = prefix.strip("/")
        self._base = self.prefix + "/" if self.prefix else ""

    def full_uri(self, key: str) -> str:
        return f"{self.uri}/{key}"

    def _name(self, key: str) -> str:
        """Return the store's name of a namespace key (the namespace prefix joined; ``..`` refused)."""
        return self._base + _check_key(key)

    def exists(self, key: str) -> bool:  # stat reports an unreachable endpoint
        return self.stat(key) is not None

    def native_store(self) -> ObjectStore:
        """Return the obstore store of the namespace (made once, by :meth:`_open_native`)."""
        if self._native is None:
            self._native = self._open_native()
        return self._native

    def _open_native(self) -> ObjectStore:
        raise NotImplementedError

    def list_batches(self, prefix: str) -> Iterator[pa.RecordBatch]:
        """
        Every object under ``prefix`` (a ``.../`` prefix), in key order, as Arrow batches.

        Batches of :func:`lakefs_gc.storage.native.listed_schema`: through the native client, the SDK's
        :meth:`list` for what it cannot list (:func:`lakefs_gc.storage.native.listing_batches`).
        """
        try:
            yield from native.listing_batches(self.native_store, self.list, prefix, self.listed_etag)
        except StorageUnreachable:
            raise
        except Exception as exc:
            if native.is_connection_error(exc):
                logging.getLogger(__name__).debug("list_batches: the native client's error", exc_info=True)
                brief = RuntimeError(str(exc).splitlines()[0])  # obstore's message goes on with its debug tree
                raise StorageUnreachable(type(self).unreachable_message(self, brief, "list", (prefix,))) from None
            raise
