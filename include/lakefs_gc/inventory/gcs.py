"""
Google Cloud Storage inventory reports (Storage Insights): a report's manifest and where reports are.

A report configuration (``ReportConfig``: ``object_metadata_report_options`` {``metadata_fields``,
``storage_filters`` {``bucket``}, ``storage_destination_options`` {``bucket``,
``destination_path``}}, ``csv_options`` or ``parquet_options``) writes each report as shards
``<REPORT_CONFIG_ID>_<SNAPSHOT_TIME>_<n>.csv`` (or ``.parquet``) under its destination path, and,
once every shard is written, a manifest ``<REPORT_CONFIG_ID>_<SNAPSHOT_TIME>_manifest.json`` with
``report_config``, ``records_processed``, ``snapshot_time``, ``shard_count`` and
``report_shards_file_names``. A report covers its whole source bucket. T_inv is ``snapshot_time``
("all the data in an inventory report is captured at the snapshot"). The manifest gives no size or
checksum of its shards: the check can only see that each is there.

The field names follow Google's documentation of the manifest and of ``ReportConfig``; the
configuration inside a manifest is read with its snake_case names and, failing those, the
camelCase ones of the JSON API.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

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
    parent,
    parse_time,
    refuse,
    role_fields,
)
from lakefs_gc.storage.namespace import GCS
from lakefs_gc.words import plural

if TYPE_CHECKING:
    from lakefs_gc.storage.base import Storage

TITLE = "GCS inventory report"
MANIFEST_SUFFIX = "manifest.json"
NAMES = {KEY: ("name",), SIZE: ("size",), LAST_MODIFIED: ("updated",), CHECKSUM: ("md5Hash",)}
SNAPSHOT_IN_NAME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?")


def _get(obj: Mapping[str, Any], snake: str) -> Any:
    """Return ``obj[snake]``, else its camelCase form's value (None when neither)."""
    if snake in obj:
        return obj[snake]
    head, *rest = snake.split("_")
    return obj.get(head + "".join(w.title() for w in rest))


def _object(obj: Mapping[str, Any], snake: str) -> Mapping[str, Any]:
    value = _get(obj, snake)
    return value if isinstance(value, dict) else {}


def parse(data: bytes, key: str, uri: str) -> InventoryManifest:
    """Parse a GCS inventory report manifest read from ``key`` (full URI ``uri``)."""
    obj = load_json(data, uri, TITLE)
    config = need(obj, "report_config", dict, uri, TITLE)
    options = _object(config, "object_metadata_report_options")
    metadata = _get(options, "metadata_fields")
    if not isinstance(metadata, list) or not all(isinstance(f, str) for f in metadata):
        raise refuse(uri, "its report_config has no metadata_fields list: the manifest is corrupt or not a report's")
    source = _get(_object(options, "storage_filters"), "bucket")
    names = need(obj, "report_shards_file_names", list, uri, TITLE)
    if not all(isinstance(n, str) and n for n in names):
        raise refuse(uri, "its report_shards_file_names holds something other than file names: it is corrupt")
    shard_count = need(obj, "shard_count", int, uri, TITLE)
    records = need(obj, "records_processed", int, uri, TITLE)
    file_format = _format(config, names, uri)
    columns = tuple(metadata)
    unusable = []
    if shard_count != len(names):
        unusable.append(
            f"it names {plural(len(names), 'shard')} but says it has {plural(shard_count, 'shard')}: "
            "the report is partial; wait for the next one"
        )
    return InventoryManifest(
        provider=GCS,
        id=uri,
        manifest_key=key,
        checksum_key=None,
        manifest_md5=md5_hex(data),
        version="",
        source_bucket=source if isinstance(source, str) else "",
        source_prefixes=("",),
        excluded_prefixes=(),
        snapshot_time=parse_time(need(obj, "snapshot_time", str, uri, TITLE), "snapshot_time", uri),
        format=file_format,
        columns=columns,
        fields=role_fields(columns, NAMES),
        files=tuple(DataFile(_shard_key(key, n), None, None) for n in names),
        complete=not unusable,
        status="complete" if not unusable else "partial",
        object_count=records,
        unusable=tuple(unusable),
    )


def _format(config: Mapping[str, Any], names: list[str], uri: str) -> str:
    """CSV or Parquet: the configuration's options say, else the shards' names."""
    if _get(config, "parquet_options") is not None:
        return PARQUET
    if _get(config, "csv_options") is not None:
        return CSV
    endings = {n.rpartition(".")[2].lower() for n in names}
    if endings == {"csv"}:
        return CSV
    if endings == {"parquet"}:
        return PARQUET
    raise refuse(uri, "neither its report_config nor its shards' names say whether it is CSV or Parquet")


def _shard_key(manifest_key: str, name: str) -> str:
    """
    Return a shard's key in the destination bucket.

    A bare file name sits beside the manifest; ``gs://<bucket>/<path>`` is ``<path>``; another path
    is taken as the key in the bucket.
    """
    if name.startswith("gs://"):
        return name[len("gs://") :].partition("/")[2]
    return parent(manifest_key) + name if "/" not in name else name.lstrip("/")


def candidates(storage: Storage, prefix: str, name: str = "") -> Iterator[str]:
    """
    Yield the keys of the report manifests under ``prefix``, newest first.

    ``storage`` is the destination bucket's root, ``prefix`` the configuration's destination path
    (the fixed part before any ``{...}`` placeholder), ``name`` the report configuration's id (its
    UUID) to keep only that configuration's reports ("" keeps all). Newest by the snapshot time in
    the file's name.
    """
    base = prefix.strip("/") + "/" if prefix.strip("/") else ""
    keys = []
    for info in storage.list(base):
        filename = info.key.rpartition("/")[2]
        if filename.endswith(MANIFEST_SUFFIX) and (not name or filename.startswith(name)):
            stamp = SNAPSHOT_IN_NAME.search(filename)
            keys.append((stamp.group(0) if stamp else "", info.key))
    for _, key in sorted(keys, reverse=True):
        yield key


SPEC = ProviderSpec(
    kind=GCS,
    title=TITLE,
    formats=(CSV, PARQUET),
    column_names={KEY: "name", SIZE: "size", LAST_MODIFIED: "updated", CHECKSUM: "md5Hash"},
    fields_setting="the metadata_fields of the report configuration",
    parse=parse,
    candidates=candidates,
)
