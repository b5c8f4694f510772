"""What every storage adapter offers: the :class:`Storage` protocol, the listed-object record and
the errors."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Protocol


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


class Storage(Protocol):
    """A storage namespace: relative keys under one root."""

    uri: str
    max_delete_batch: int  # most keys one delete_batch call takes

    def full_uri(self, key: str) -> str: ...
    def put(self, key: str, data: bytes) -> None: ...
    def get(self, key: str) -> bytes: ...
    def open_input(self, key: str) -> IO[bytes]: ...
    def exists(self, key: str) -> bool: ...
    def stat(self, key: str) -> ObjectInfo | None:
        """The object's size and last modification, None when it does not exist."""
        ...
    def list(self, prefix: str = "", recursive: bool = True, start_after: str | None = None) -> Iterator[ObjectInfo]:
        """Objects under ``prefix`` sorted by key (UTF-8 byte order), only those after ``start_after``."""
        ...
    def list_prefixes(self, prefix: str = "") -> Iterator[str]: ...
    def delete(self, key: str) -> None: ...

    def delete_batch(self, keys: list[str]) -> list[tuple[str, str, str]]:
        """Delete up to ``max_delete_batch`` keys (one request where the store has a batch call);
        (key, code, message) of each key that failed (``NoSuchKey``, ``BlobNotFound`` or ``404``
        for a missing one). A failed request raises. The deleter's only call."""
        ...
