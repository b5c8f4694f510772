"""
One inventory report's manifest, whichever provider wrote it: the record, its data files, the refusal.

Each provider module (:mod:`~lakefs_gc.inventory.s3`, :mod:`~lakefs_gc.inventory.azure`,
:mod:`~lakefs_gc.inventory.gcs`) parses its manifest into an :class:`InventoryManifest` and
describes itself with a :class:`ProviderSpec`; :mod:`~lakefs_gc.inventory.verify` judges the
record against a namespace. What a manifest makes unusable by itself (a run still pending, rows of
old versions, a format version this module does not know) the parser records in
:attr:`InventoryManifest.unusable`, and the check refuses with it: the parsers state facts, the
check decides.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from lakefs_gc.errors import Refusal
from lakefs_gc.storage.base import Storage

# The roles of the inventory's columns the GC reads: each object's key (or name), size and
# last-modified time are needed; its checksum is read where the inventory has it.
KEY, SIZE, LAST_MODIFIED, CHECKSUM = "key", "size", "last_modified", "checksum"
REQUIRED_ROLES = (KEY, SIZE, LAST_MODIFIED)
ROLES = (*REQUIRED_ROLES, CHECKSUM)

CSV, ORC, PARQUET = "CSV", "ORC", "Parquet"

_MD5_HEX = re.compile(r"[0-9a-fA-F]{32}")


class InventoryRefused(Refusal):
    """
    An inventory cannot serve as the listing of a namespace: the message says why and what to change.

    Stale, partial, corrupt, for another bucket or prefix, or without a field the GC needs. A
    :class:`~lakefs_gc.errors.Refusal`: running the task again within Airflow's retries reads the same
    inventory and gives the same answer, until the next inventory is delivered or a person changes
    the inventory's configuration (or the run's settings).
    """


@dataclass(frozen=True, slots=True)
class DataFile:
    """One data file a manifest names: its key in the destination storage, and what the manifest says of it."""

    key: str
    size: int | None  # None: the manifest gives none (GCS)
    md5: str | None  # lower-case hex when the manifest gave hex or base64 of 16 bytes; else as given; None: none given


@dataclass(frozen=True)
class InventoryManifest:
    """
    An inventory's manifest, parsed: what it covers, when it was taken, its schema and data files.

    ``snapshot_time`` is T_inv, when the provider began to scan the source: objects written after it
    may be missing from the inventory. ``source_prefixes`` are key prefixes within the source
    (Azure: ``<container>/<prefix>``, as an Azure inventory names its blobs), ``("",)`` for all of
    it, None where the manifest does not say (S3 Inventory's prefix filter is in its configuration
    only). ``fields`` maps each role (:data:`ROLES`) the schema has to its column.
    """

    provider: str  # lakefs_gc.storage.namespace.S3, AZURE or GCS
    id: str  # the manifest's full URI
    manifest_key: str  # its key in the destination storage
    checksum_key: str | None  # the file holding the manifest's MD5 (None: the provider writes none)
    manifest_md5: str  # MD5 (hex) of the manifest's bytes as read
    version: str  # the manifest format's version ("" where the provider writes none)
    source_bucket: str  # S3/GCS: the bucket; Azure: the storage account; "": not said
    source_prefixes: tuple[str, ...] | None
    excluded_prefixes: tuple[str, ...]
    snapshot_time: datetime
    format: str  # CSV, ORC or PARQUET
    columns: tuple[str, ...]
    fields: Mapping[str, str]
    files: tuple[DataFile, ...]
    complete: bool
    status: str  # the provider's word for the run ("Succeeded", "Pending", ...), "complete" where it writes none
    object_count: int | None = None  # objects the run reports (Azure summary.objectCount, GCS records_processed)
    all_versions: bool = False  # rows are object versions (S3 "All versions"): only the latest, not deleted, count
    unusable: tuple[str, ...] = ()  # why the manifest itself rules the inventory out (one line each)

    @property
    def missing_fields(self) -> tuple[str, ...]:
        """Return the roles the GC needs that the schema lacks."""
        return tuple(role for role in REQUIRED_ROLES if role not in self.fields)


@dataclass(frozen=True)
class ProviderSpec:
    """What the check needs to know of one provider's inventories."""

    kind: str  # lakefs_gc.storage.namespace.S3, AZURE or GCS
    title: str  # "S3 Inventory"
    formats: tuple[str, ...]  # the data formats it writes
    column_names: Mapping[str, str]  # role -> the provider's own name of the field, for messages
    fields_setting: str  # where a person adds a field
    parse: Callable[[bytes, str, str], InventoryManifest]  # (manifest bytes, its key, its full URI)
    # (destination storage, prefix, name) -> manifest keys, newest first
    candidates: Callable[[Storage, str, str], Iterator[str]]


def refuse(where: str, reason: str) -> InventoryRefused:
    """Return the refusal of inventory ``where`` for ``reason`` (one line)."""
    return InventoryRefused(f"inventory {where}: {' '.join(reason.split())}")


def md5_hex(data: bytes) -> str:
    """Return the MD5 of ``data`` in lower-case hex."""
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def normal_md5(value: str) -> str:
    """
    Return an MD5 as lower-case hex when it reads as one (hex, or base64 of 16 bytes), else as given.

    A manifest's checksum that reads as neither (the documented examples end in ``example``) is
    kept as it is and never matches a file's.
    """
    text = value.strip()
    if _MD5_HEX.fullmatch(text):
        return text.lower()
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return text
    return raw.hex() if len(raw) == 16 else text


def load_json(data: bytes, where: str, title: str) -> dict[str, Any]:
    """Return a manifest's JSON object, or refuse: the manifest is corrupt."""
    try:
        value = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise refuse(where, f"the manifest is not valid JSON ({exc}): it is corrupt or half-written") from None
    if not isinstance(value, dict):
        raise refuse(where, f"the manifest is not a JSON object: it is not a manifest of the kind expected ({title})")
    return value


def need(obj: Mapping[str, Any], name: str, kind: type, where: str, title: str) -> Any:
    """Return ``obj[name]`` when it is a ``kind`` (an int that is not a bool), else refuse naming the field."""
    value = obj.get(name)
    if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
        return value
    what = "missing" if value is None else f"a {type(value).__name__}, not a {kind.__name__}"
    raise refuse(
        where, f"the manifest's {name!r} is {what}: it is corrupt or not a manifest of the kind expected ({title})"
    )


def optional(obj: Mapping[str, Any], name: str, kind: type, where: str, title: str) -> Any:
    """Return ``obj[name]`` (None when absent) when it is a ``kind``, else refuse naming the field."""
    return None if obj.get(name) is None else need(obj, name, kind, where, title)


def parse_time(value: str, name: str, where: str) -> datetime:
    """Return an RFC 3339 time with its zone as an aware datetime, else refuse naming the field."""
    try:
        ts = datetime.fromisoformat(value.strip())
    except ValueError:
        raise refuse(where, f"the manifest's {name} {value!r} is not an RFC 3339 time: it is corrupt") from None
    if ts.tzinfo is None:
        raise refuse(where, f"the manifest's {name} {value!r} has no time zone: T_inv would be a guess")
    return ts.astimezone(UTC)


def role_fields(columns: tuple[str, ...], names: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    """Return role -> column for each role whose name (any of ``names[role]``) is among ``columns``."""
    have = set(columns)
    found: dict[str, str] = {}
    for role, candidates in names.items():
        for name in candidates:
            if name in have:
                found[role] = name
                break
    return found


def parent(key: str) -> str:
    """Return the folder of ``key`` with its trailing ``/`` ("" at the root)."""
    head, sep, _ = key.rpartition("/")
    return head + sep


__all__ = [
    "CHECKSUM",
    "CSV",
    "KEY",
    "LAST_MODIFIED",
    "ORC",
    "PARQUET",
    "REQUIRED_ROLES",
    "ROLES",
    "SIZE",
    "DataFile",
    "InventoryManifest",
    "InventoryRefused",
    "ProviderSpec",
]
