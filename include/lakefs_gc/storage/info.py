"""
One listed object, as every storage adapter and the native listing give it.

Its own module so that the adapters (:mod:`lakefs_gc.storage.base`) and the native listing
(:mod:`lakefs_gc.storage.native`), which the adapters call, both name it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ObjectInfo"]


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    """One listed object. ``key`` is relative to the namespace root."""

    key: str
    size: int
    last_modified: float  # epoch seconds
    # What the store says of the content, in the form lakeFS records an object's checksum when it
    # writes it (hex, no quotes): S3's ETag as given (a multipart one ends in "-<parts>" and is
    # not the content's MD5), Azure's Content-MD5 and GCS's md5Hash in hex; None when the store
    # has none (local files, Azure blobs put in blocks, GCS composite objects). Only the staged
    # check compares it (lakefs_gc.listing.staged).
    checksum: str | None = None
