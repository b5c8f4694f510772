"""
Azure Blob Inventory: a rule run's manifest and where the runs are.

Microsoft's layout (Azure Storage blob inventory, "Inventory output"), in the rule's destination
container::

    YYYY/MM/DD/HH-MM-SS/<ruleName>/<ruleName>-manifest.json
    YYYY/MM/DD/HH-MM-SS/<ruleName>/<ruleName>-manifest.checksum
    YYYY/MM/DD/HH-MM-SS/<ruleName>/<ruleName>[_<n>].csv | .parquet

The manifest (``destinationContainer``, ``endpoint``, ``files`` [{``blob``, ``size``}],
``inventoryStartTime``, ``inventoryCompletionTime``, ``ruleDefinition`` {``filters``, ``format``,
``objectType``, ``schedule``, ``schemaFields``}, ``ruleName``, ``status``, ``summary``
{``objectCount``, ``totalObjectSize``}, ``version``) is written when the run begins with
``status`` ``Pending``, and gets its completion status (``Succeeded``, ``Failed``...) at the end;
the checksum file (the manifest's MD5) is written last and marks the run complete. A rule's
``prefixMatch`` entries start with the container's name (``container1/foo``); none means every blob
of the account, and the inventory names each blob ``<container>/<blob>``. T_inv is
``inventoryStartTime``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from lakefs_gc.inventory.manifest import (
    CHECKSUM,
    CSV,
    KEY,
    LAST_MODIFIED,
    PARQUET,
    SIZE,
    DataFile,
    InventoryManifest,
    ProviderSpec,
    load_json,
    md5_hex,
    need,
    normal_md5,
    optional,
    parse_time,
    refuse,
    role_fields,
)
from lakefs_gc.storage.namespace import AZURE

if TYPE_CHECKING:
    from lakefs_gc.storage.base import Storage

TITLE = "Azure Blob Inventory"
VERSION = "1.0"  # the manifest version Microsoft documents
SUCCEEDED, PENDING = "Succeeded", "Pending"
FORMATS = {"csv": CSV, "parquet": PARQUET}
NAMES = {KEY: ("Name",), SIZE: ("Content-Length",), LAST_MODIFIED: ("Last-Modified",), CHECKSUM: ("Content-MD5",)}
# YYYY/ MM/ DD/ HH-MM-SS/: the folders of a run, each level newest first
LEVELS = (re.compile(r"\d{4}"), re.compile(r"\d{2}"), re.compile(r"\d{2}"), re.compile(r"\d{2}-\d{2}-\d{2}"))
# rows the GC must not read as current blobs, and the filter that adds them
EXTRA_ROWS = {
    "includeBlobVersions": "blob versions",
    "includeSnapshots": "snapshots",
    "includeDeleted": "deleted blobs",
}


def account_of(endpoint: str) -> str:
    """
    Return the storage account of a blob endpoint.

    ``https://<account>.blob.core.windows.net``, or the first path segment on an emulator's
    ``http://127.0.0.1:10000/<account>``.
    """
    parts = urlsplit(endpoint.strip())
    host = parts.hostname or ""
    try:
        ipaddress.ip_address(host)
        path_style = True
    except ValueError:
        path_style = host == "localhost"
    if path_style:
        return parts.path.strip("/").partition("/")[0]
    return host.partition(".")[0]


def parse(data: bytes, key: str, uri: str) -> InventoryManifest:
    """Parse an Azure Blob Inventory ``<ruleName>-manifest.json`` read from ``key`` (full URI ``uri``)."""
    obj = load_json(data, uri, TITLE)
    rule = need(obj, "ruleName", str, uri, TITLE)
    status = need(obj, "status", str, uri, TITLE)
    definition = need(obj, "ruleDefinition", dict, uri, TITLE)
    filters = optional(definition, "filters", dict, uri, TITLE) or {}
    raw_format = need(definition, "format", str, uri, TITLE)
    file_format = FORMATS.get(raw_format.strip().lower())
    if file_format is None:
        raise refuse(uri, f"its format {raw_format!r} is not one Azure Blob Inventory writes (csv, parquet)")
    columns = tuple(_strings(need(definition, "schemaFields", list, uri, TITLE), "schemaFields", uri))
    version = obj.get("version")
    version = version if isinstance(version, str) else ""
    summary = optional(obj, "summary", dict, uri, TITLE) or {}
    count = summary.get("objectCount")
    unusable: list[str] = []
    if status != SUCCEEDED:
        unusable.append(
            f"its run's status is {status!r}, not {SUCCEEDED!r}: "
            + ("the run is still going; wait for it to finish" if status == PENDING else "the run did not finish")
        )
    object_type = optional(definition, "objectType", str, uri, TITLE)
    if object_type is not None and object_type != "blob":
        unusable.append(f"rule {rule!r} lists {object_type}s, not blobs: set its objectType to blob")
    for flag, rows in EXTRA_ROWS.items():
        if filters.get(flag) is True:
            unusable.append(f"rule {rule!r} has {flag} true: its rows include {rows}; set it to false")
    if version != VERSION:
        unusable.append(f"its version is {version!r}, not {VERSION!r}, the one Microsoft documents and this GC reads")
    prefixes = tuple(_strings(optional(filters, "prefixMatch", list, uri, TITLE) or [], "prefixMatch", uri))
    return InventoryManifest(
        provider=AZURE,
        id=uri,
        manifest_key=key,
        checksum_key=_checksum_key(key),
        manifest_md5=md5_hex(data),
        version=version,
        source_bucket=account_of(need(obj, "endpoint", str, uri, TITLE)),
        source_prefixes=tuple(p for p in prefixes if p) if any(prefixes) else ("",),
        excluded_prefixes=tuple(
            _strings(optional(filters, "excludePrefix", list, uri, TITLE) or [], "excludePrefix", uri)
        ),
        snapshot_time=parse_time(need(obj, "inventoryStartTime", str, uri, TITLE), "inventoryStartTime", uri),
        format=file_format,
        columns=columns,
        fields=role_fields(columns, NAMES),
        files=tuple(_data_file(f, uri) for f in need(obj, "files", list, uri, TITLE)),
        complete=status == SUCCEEDED,
        status=status,
        object_count=count if isinstance(count, int) and not isinstance(count, bool) else None,
        unusable=tuple(unusable),
    )


def _checksum_key(key: str) -> str:
    return key[: -len("-manifest.json")] + "-manifest.checksum" if key.endswith("-manifest.json") else key + ".checksum"


def _strings(values: list[Any], name: str, uri: str) -> list[str]:
    if not all(isinstance(v, str) for v in values):
        raise refuse(uri, f"the manifest's {name} holds something other than strings: it is corrupt")
    return values


def _data_file(entry: Any, uri: str) -> DataFile:
    if not isinstance(entry, dict):
        raise refuse(uri, f"an entry of its files is a {type(entry).__name__}, not an object: it is corrupt")
    md5 = optional(entry, "md5", str, uri, TITLE)
    return DataFile(
        need(entry, "blob", str, uri, TITLE).lstrip("/"),
        need(entry, "size", int, uri, TITLE),
        None if md5 is None else normal_md5(md5),
    )


def candidates(storage: Storage, prefix: str, name: str) -> Iterator[str]:
    """
    Yield the manifest keys of rule ``name``'s runs, newest first.

    ``storage`` is the rule's destination container (``prefix`` is "" unless the runs sit deeper).
    A run folder without this rule's manifest belongs to another rule and is passed over.
    """
    if not name:
        raise ValueError("an Azure Blob Inventory is found by its rule's name: give it")
    base = prefix.strip("/") + "/" if prefix.strip("/") else ""
    for run in _runs(storage, base, 0):
        key = f"{run}{name}/{name}-manifest.json"
        if storage.exists(key):
            yield key


def _runs(storage: Storage, base: str, level: int) -> Iterator[str]:
    if level == len(LEVELS):
        yield base
        return
    below = [p for p in storage.list_prefixes(base) if LEVELS[level].fullmatch(p[len(base) :].rstrip("/"))]
    for folder in sorted(below, reverse=True):
        yield from _runs(storage, folder, level + 1)


SPEC = ProviderSpec(
    kind=AZURE,
    title=TITLE,
    formats=(CSV, PARQUET),
    column_names={KEY: "Name", SIZE: "Content-Length", LAST_MODIFIED: "Last-Modified", CHECKSUM: "Content-MD5"},
    fields_setting="the schemaFields of the inventory rule",
    parse=parse,
    candidates=candidates,
)
