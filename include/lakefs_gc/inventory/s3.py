"""
Amazon S3 Inventory: its manifest, its schema and where its reports are.

AWS's layout (Amazon S3 User Guide, "Locating your inventory list"), in the destination bucket::

    <destination-prefix>/<source-bucket>/<config-ID>/YYYY-MM-DDTHH-MMZ/manifest.json
    <destination-prefix>/<source-bucket>/<config-ID>/YYYY-MM-DDTHH-MMZ/manifest.checksum
    <destination-prefix>/<source-bucket>/<config-ID>/data/<uuid>.csv.gz | .orc | .parquet

``manifest.checksum`` is the MD5 (hex) of ``manifest.json``; the manifest names each data file by
its key in the destination bucket with its size and ``MD5checksum``. ``creationTimestamp`` (ms
since the epoch, a string) is when the scan of the source began: T_inv. ``fileSchema`` is the
column names for CSV (``Bucket, Key, ..., Size, LastModifiedDate, ETag, ...``), an ORC
``struct<...>`` or a Parquet ``message s3.inventory { ... }`` (snake_case names) otherwise.

The manifest does not say which prefix the inventory configuration filters on (its
``Filter.Prefix``): :attr:`InventoryManifest.source_prefixes` is None and the check asks for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lakefs_gc.inventory.manifest import (
    CHECKSUM,
    CSV,
    KEY,
    LAST_MODIFIED,
    ORC,
    PARQUET,
    SIZE,
    DataFile,
    InventoryManifest,
    ProviderSpec,
    load_json,
    md5_hex,
    need,
    normal_md5,
    parent,
    refuse,
    role_fields,
)
from lakefs_gc.storage.namespace import S3

if TYPE_CHECKING:
    from lakefs_gc.storage.base import Storage

TITLE = "S3 Inventory"
VERSION = "2016-11-30"  # the only manifest version AWS documents
MANIFEST = "manifest.json"
CHECKSUM_FILE = "manifest.checksum"
RUN_FOLDER = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}Z")  # YYYY-MM-DDTHH-MMZ
FORMATS = {"CSV": CSV, "ORC": ORC, "PARQUET": PARQUET}

# role -> the column's name in a CSV schema, then in an ORC or Parquet one
NAMES = {
    KEY: ("Key", "key"),
    SIZE: ("Size", "size"),
    LAST_MODIFIED: ("LastModifiedDate", "last_modified_date"),
    CHECKSUM: ("ETag", "e_tag"),
}
VERSION_ID, IS_LATEST, IS_DELETE_MARKER = (
    ("VersionId", "version_id"),
    ("IsLatest", "is_latest"),
    ("IsDeleteMarker", "is_delete_marker"),
)


def schema_columns(file_format: str, file_schema: str, where: str) -> tuple[str, ...]:
    """
    Return the column names of a manifest's ``fileSchema``.

    CSV: the names, comma-separated; ORC: ``struct<name:type,...>``; Parquet:
    ``message <name> { <repetition> <type> <name> [(<annotation>)]; ... }``.
    """
    text = file_schema.strip()
    if file_format == CSV:
        columns = [c.strip() for c in text.split(",")]
    elif file_format == ORC:
        if not (text.startswith("struct<") and text.endswith(">")):
            raise refuse(where, f"its ORC fileSchema does not read struct<...>: {text[:80]!r}")
        columns = [part.partition(":")[0].strip() for part in _top_level(text[len("struct<") : -1])]
    else:
        start, end = text.find("{"), text.rfind("}")
        if not text.startswith("message") or start < 0 or end < start:
            raise refuse(where, f"its Parquet fileSchema does not read message ... {{ ... }}: {text[:80]!r}")
        columns = []
        for part in text[start + 1 : end].split(";"):
            words = part.split()
            if words:
                if len(words) < 3:
                    raise refuse(where, f"its Parquet fileSchema has a field without a name: {part.strip()!r}")
                columns.append(words[2])
    if not all(columns):
        raise refuse(where, f"its fileSchema has an empty column name: {text[:80]!r}")
    return tuple(columns)


def _top_level(inner: str) -> list[str]:
    """Split ``inner`` on the commas outside ``<...>``."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    return parts


def parse(data: bytes, key: str, uri: str) -> InventoryManifest:
    """Parse an S3 Inventory ``manifest.json`` read from ``key`` (full URI ``uri``)."""
    obj = load_json(data, uri, TITLE)
    source = need(obj, "sourceBucket", str, uri, TITLE)
    version = obj.get("version")
    version = version if isinstance(version, str) else ""
    raw_format = need(obj, "fileFormat", str, uri, TITLE)
    file_format = FORMATS.get(raw_format.strip().upper())
    if file_format is None:
        raise refuse(uri, f"its fileFormat {raw_format!r} is not one S3 Inventory writes (CSV, ORC, Parquet)")
    columns = schema_columns(file_format, need(obj, "fileSchema", str, uri, TITLE), uri)
    created = obj.get("creationTimestamp")
    if isinstance(created, bool) or not isinstance(created, (str, int)) or not str(created).strip().isdigit():
        raise refuse(uri, f"its creationTimestamp {created!r} is not milliseconds since the epoch: it is corrupt")
    snapshot = datetime.fromtimestamp(int(str(created).strip()) / 1000, UTC)
    files = tuple(_data_file(f, uri) for f in need(obj, "files", list, uri, TITLE))
    fields = role_fields(columns, NAMES)
    unusable: list[str] = []
    if version != VERSION:
        unusable.append(f"its version is {version!r}, not {VERSION!r}, the one AWS documents and this GC reads")
    all_versions = any(name in columns for name in (*VERSION_ID, *IS_LATEST))
    if all_versions and not (_has(columns, IS_LATEST) and _has(columns, IS_DELETE_MARKER)):
        unusable.append(
            "its rows are object versions but its schema lacks IsLatest or IsDeleteMarker: the current "
            "objects cannot be told apart; configure the inventory with IncludedObjectVersions Current"
        )
    return InventoryManifest(
        provider=S3,
        id=uri,
        manifest_key=key,
        checksum_key=parent(key) + CHECKSUM_FILE,
        manifest_md5=md5_hex(data),
        version=version,
        source_bucket=source,
        source_prefixes=None,
        excluded_prefixes=(),
        snapshot_time=snapshot,
        format=file_format,
        columns=columns,
        fields=fields,
        files=files,
        complete=True,  # S3 writes the manifest once the data files are written
        status="complete",
        all_versions=all_versions,
        unusable=tuple(unusable),
    )


def _has(columns: tuple[str, ...], names: tuple[str, str]) -> bool:
    return any(n in columns for n in names)


def _data_file(entry: Any, uri: str) -> DataFile:
    if not isinstance(entry, dict):
        raise refuse(uri, f"an entry of its files is a {type(entry).__name__}, not an object: it is corrupt")
    md5 = need(entry, "MD5checksum", str, uri, TITLE)
    return DataFile(need(entry, "key", str, uri, TITLE), need(entry, "size", int, uri, TITLE), normal_md5(md5))


def candidates(storage: Storage, prefix: str, name: str = "") -> Iterator[str]:
    """
    Yield the ``manifest.json`` keys of the runs under ``prefix``, newest first.

    ``prefix``: ``<destination-prefix>/<source-bucket>/<config-ID>`` in the destination bucket
    (``storage`` is the bucket's root). ``name`` is unused (the configuration's id is in the prefix).
    """
    base = prefix.strip("/") + "/" if prefix.strip("/") else ""
    runs = [p for p in storage.list_prefixes(base) if RUN_FOLDER.fullmatch(p[len(base) :].rstrip("/"))]
    for run in sorted(runs, reverse=True):
        yield run + MANIFEST


SPEC = ProviderSpec(
    kind=S3,
    title=TITLE,
    formats=(CSV, ORC, PARQUET),
    column_names={KEY: "Key", SIZE: "Size", LAST_MODIFIED: "LastModifiedDate", CHECKSUM: "ETag"},
    fields_setting="the OptionalFields of the S3 inventory configuration",
    parse=parse,
    candidates=candidates,
)
