"""Whole inventories written into a storage in each provider's documented layout (tests/inventory/documented.py).

Each builder writes data files, the manifest and (S3, Azure) its checksum file, and returns the
manifest's key. ``edit`` changes the manifest's JSON before it is written (the checksum is of what
is written), ``checksum`` replaces the checksum file's content, ``files`` are the data files'
contents.

``inventory_of`` (and ``s3_inventory_of``, ``azure_inventory_of``, ``gcs_inventory_of``) write an
inventory of a bucket or container as it is now, from a listing of it: each provider's columns and
names, in CSV or Parquet (and S3's ORC; the forms are our reading of each provider's
documentation: S3's CSV gzip, no header, keys URL-encoded; Azure's CSV with a header row and its
``Name`` as ``<container>/<blob>``, times with seven fraction digits; GCS's CSV with a header row;
Parquet times as timestamps; ORC's ``struct<...>`` of S3's snake_case names, times as ORC
``timestamp`` without a zone, in UTC).
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
from collections.abc import Callable
from datetime import datetime

from tests.inventory import documented

S3_CSV_SCHEMA = "Bucket, Key, Size, LastModifiedDate, ETag, StorageClass"
Edit = Callable[[dict], None] | None


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _write_manifest(storage, key: str, manifest: dict, edit: Edit, checksum_key: str | None, checksum: str | None):
    if edit is not None:
        edit(manifest)
    raw = json.dumps(manifest, indent=2).encode()
    storage.put(key, raw)
    if checksum_key is not None:
        storage.put(checksum_key, (checksum if checksum is not None else _md5(raw)).encode())
    return key


def s3_inventory(
    storage,
    taken: datetime,
    *,
    source_bucket: str = "lakefs-data",
    prefix: str = "inventories/lakefs-data/gc-daily",
    files: tuple[bytes, ...] = (b"lakefs-data,repo1/data/a,3,2024-01-01T00:00:00.000Z,abc,STANDARD\n",),
    schema: str = S3_CSV_SCHEMA,
    file_format: str = "CSV",
    edit: Edit = None,
    checksum: str | None = None,
) -> str:
    """An S3 Inventory run under ``prefix`` (``<destination-prefix>/<source-bucket>/<config-ID>``)."""
    run = f"{prefix}/{taken:%Y-%m-%dT%H-%MZ}"
    entries = []
    for i, data in enumerate(files):
        key = f"{prefix}/data/{taken:%Y%m%d%H%M}-{i}.{file_format.lower()}"
        storage.put(key, data)
        entries.append({"key": key, "size": len(data), "MD5checksum": _md5(data)})
    manifest = json.loads(documented.S3_CSV_MANIFEST)
    manifest.update(
        sourceBucket=source_bucket,
        creationTimestamp=str(int(taken.timestamp() * 1000)),
        fileFormat=file_format,
        fileSchema=schema,
        files=entries,
    )
    return _write_manifest(storage, f"{run}/manifest.json", manifest, edit, f"{run}/manifest.checksum", checksum)


def azure_inventory(
    storage,
    taken: datetime,
    *,
    rule: str = "lakefs-gc",
    endpoint: str = "https://lakefsdata.blob.core.windows.net",
    prefix_match: tuple[str, ...] = ("lakefs/repo1",),
    files: tuple[bytes, ...] = (b"Name,Content-Length,Last-Modified\nlakefs/repo1/data/a,3,2024-01-01T00:00:00Z\n",),
    status: str = "Succeeded",
    edit: Edit = None,
    checksum: str | None = None,
    file_format: str = "CSV",
    schema_fields: tuple[str, ...] = ("Name", "Content-Length", "Last-Modified", "Content-MD5"),
    objects: int | None = None,
) -> str:
    """An Azure Blob Inventory run of rule ``rule`` at the destination container's root (``objects``: its summary's count)."""
    run = f"{taken:%Y/%m/%d/%H-%M-%S}/{rule}"
    entries = []
    for i, data in enumerate(files):
        key = f"{run}/{rule}_{i}.{file_format.lower()}"
        storage.put(key, data)
        entries.append({"blob": key, "size": len(data)})
    manifest = copy.deepcopy(json.loads(documented.AZURE_MANIFEST))
    manifest.update(
        endpoint=endpoint,
        files=entries,
        inventoryStartTime=f"{taken:%Y-%m-%dT%H:%M:%SZ}",
        ruleName=rule,
        status=status,
    )
    manifest["ruleDefinition"]["filters"]["prefixMatch"] = list(prefix_match)
    manifest["ruleDefinition"].update(format=file_format, schemaFields=list(schema_fields))
    if objects is not None:
        manifest["summary"]["objectCount"] = objects
    key = f"{run}/{rule}-manifest.json"
    return _write_manifest(storage, key, manifest, edit, f"{run}/{rule}-manifest.checksum", checksum)


def gcs_inventory(
    storage,
    taken: datetime,
    *,
    config_id: str = "4c3e2a10-8f6b-4d2e-9a71-0b5c6d7e8f90",
    source_bucket: str = "lakefs-data",
    destination_path: str = "inventory",
    files: tuple[bytes, ...] = (b"bucket,name,size,updated\nlakefs-data,repo1/data/a,3,2024-01-01T00:00:00Z\n",),
    edit: Edit = None,
    file_format: str = "CSV",
    records: int | None = None,
) -> str:
    """A GCS inventory report of configuration ``config_id`` under ``destination_path``."""
    stem = f"{config_id}_{taken:%Y-%m-%dT%H:%M}"
    names = []
    for i, data in enumerate(files):
        names.append(f"{stem}_{i}.{file_format.lower()}")
        storage.put(f"{destination_path}/{names[-1]}", data)
    manifest = json.loads(documented.GCS_MANIFEST)
    options = manifest["report_config"]["object_metadata_report_options"]
    options["storage_filters"]["bucket"] = source_bucket
    if file_format.lower() == "parquet":
        del manifest["report_config"]["csv_options"]
        manifest["report_config"]["parquet_options"] = {}
    manifest.update(
        snapshot_time=f"{taken:%Y-%m-%dT%H:%M:%SZ}",
        shard_count=len(names),
        report_shards_file_names=names,
        records_processed=len(files) if records is None else records,
    )
    return _write_manifest(storage, f"{destination_path}/{stem}_manifest.json", manifest, edit, None, None)


def s3_inventory_of(
    source, bucket: str, dest, taken: datetime, prefix: str, objects=None, more_files: tuple[bytes, ...] = (), **kw
) -> int:
    """
    An S3 Inventory of bucket ``bucket`` (``source``: its root storage) as it is now, taken at ``taken``.

    One data file of every object (gzip CSV, keys URL-encoded, times in milliseconds; or Parquet
    with ``file_format="Parquet"``, ORC with ``file_format="ORC"``), written under ``prefix`` of
    ``dest`` in AWS's layout; ``kw`` as :func:`s3_inventory`'s; ``objects``: the bucket's listing, when the caller has it; ``more_files``:
    data files written after that one. Return the rows.
    """
    objects = list(source.list("", recursive=True)) if objects is None else objects
    file_format = kw.get("file_format", "CSV")
    if file_format.lower() == "parquet":
        kw.setdefault("schema", S3_PARQUET_SCHEMA)
        kw.setdefault("files", (_s3_parquet(objects, bucket), *more_files))
    if file_format.lower() == "orc":
        kw.setdefault("schema", S3_ORC_SCHEMA)
        kw.setdefault("files", (s3_orc(_s3_columns(objects, bucket)), *more_files))
    kw.setdefault("files", (_s3_csv(objects, bucket), *more_files))
    kw.setdefault("source_bucket", bucket)
    s3_inventory(dest, taken, prefix=prefix, **kw)
    return len(objects)


def azure_inventory_of(
    source,
    container: str,
    account_url: str,
    dest,
    taken: datetime,
    objects=None,
    more_files: tuple[bytes, ...] = (),
    **kw,
) -> int:
    """
    An Azure Blob Inventory of container ``container`` (``source``: its root storage) as it is now, taken at ``taken``.

    One data file (CSV or Parquet: ``file_format``) whose rows name each blob ``<container>/<blob>``,
    of a rule whose prefixMatch is the container, written at ``dest``'s root (the rule's
    destination container) in Microsoft's layout; ``account_url`` the manifest's ``endpoint``;
    ``kw`` as :func:`azure_inventory`'s; ``objects`` and ``more_files`` as :func:`s3_inventory_of`'s. Return the rows.
    """
    objects = list(source.list("", recursive=True)) if objects is None else objects
    parquet = kw.get("file_format", "CSV").lower() == "parquet"
    columns = {
        "Name": [f"{container}/{o.key}" for o in objects],
        "Creation-Time": [o.last_modified for o in objects],
        "Last-Modified": [o.last_modified for o in objects],
        "Content-Length": [o.size for o in objects],
        "BlobType": ["BlockBlob"] * len(objects),
        "AccessTier": ["Hot"] * len(objects),
    }
    kw.setdefault("files", (_parquet(columns) if parquet else _csv(columns, _azure_time), *more_files))
    kw.setdefault("prefix_match", (container,))
    azure_inventory(dest, taken, endpoint=account_url, schema_fields=tuple(columns), objects=len(objects), **kw)
    return len(objects)


def gcs_inventory_of(
    source,
    bucket: str,
    dest,
    taken: datetime,
    destination_path: str = "inventory",
    objects=None,
    more_files: tuple[bytes, ...] = (),
    **kw,
) -> int:
    """
    A GCS inventory report of bucket ``bucket`` (``source``: its root storage) as it is now, taken at ``taken``.

    One shard (CSV with a header row, or Parquet: ``file_format``) of the documented manifest's
    metadata fields, written under ``destination_path`` of ``dest``; ``kw`` as
    :func:`gcs_inventory`'s; ``objects`` and ``more_files`` as :func:`s3_inventory_of`'s. Return the rows.
    """
    objects = list(source.list("", recursive=True)) if objects is None else objects
    parquet = kw.get("file_format", "CSV").lower() == "parquet"
    n = len(objects)
    columns = {
        "project": ["lakefs-gc-tests"] * n,
        "bucket": [bucket] * n,
        "name": [o.key for o in objects],
        "location": ["US"] * n,
        "size": [o.size for o in objects],
        "timeCreated": [o.last_modified for o in objects],
        "updated": [o.last_modified for o in objects],
        "storageClass": ["STANDARD"] * n,
        "etag": [""] * n,
        "md5Hash": [""] * n,
    }
    kw.setdefault("files", (_parquet(columns) if parquet else _csv(columns, _gcs_time), *more_files))
    gcs_inventory(dest, taken, source_bucket=bucket, destination_path=destination_path, records=n, **kw)
    return len(objects)


S3_PARQUET_SCHEMA = (
    "message s3.inventory { required binary bucket (UTF8); required binary key (UTF8); optional int64 size; "
    "optional int64 last_modified_date (TIMESTAMP_MILLIS); optional binary e_tag (UTF8); "
    "optional binary storage_class (UTF8); }"
)
S3_ORC_SCHEMA = (
    "struct<bucket:string,key:string,size:bigint,last_modified_date:timestamp,e_tag:string,storage_class:string>"
)
TIME_COLUMNS = ("Creation-Time", "Last-Modified", "timeCreated", "updated")


def _utc(epoch: float) -> datetime:
    from datetime import UTC

    return datetime.fromtimestamp(epoch, UTC)


def _s3_csv(objects, bucket: str) -> bytes:
    from urllib.parse import quote_plus

    rows = []
    for o in objects:
        modified = _utc(o.last_modified).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        rows.append(f'"{bucket}","{quote_plus(o.key)}","{o.size}","{modified}","{o.checksum or ""}","STANDARD"\n')
    return gzip.compress("".join(rows).encode())


def _s3_columns(objects, bucket: str) -> dict[str, list]:
    return {
        "bucket": [bucket] * len(objects),
        "key": [o.key for o in objects],
        "size": [o.size for o in objects],
        "last_modified_date": [o.last_modified for o in objects],
        "e_tag": [o.checksum for o in objects],
        "storage_class": ["STANDARD"] * len(objects),
    }


def _s3_parquet(objects, bucket: str) -> bytes:
    return _parquet(_s3_columns(objects, bucket))


def s3_orc(columns: dict[str, list], **write) -> bytes:
    """
    An S3 ORC data file of ``columns`` (S3's snake_case names): ``last_modified_date`` (seconds since
    the epoch) as an ORC ``timestamp`` (no zone, UTC), ``size`` a ``bigint``, ``is_latest`` and
    ``is_delete_marker`` booleans, the rest strings; ``write``: ``pyarrow.orc.write_table``'s options
    (``stripe_size=1, batch_size=1``: a stripe a row).
    """
    import io

    import pyarrow as pa
    import pyarrow.orc as orc

    types = {"size": pa.int64(), "is_latest": pa.bool_(), "is_delete_marker": pa.bool_()}
    arrays = {}
    for name, values in columns.items():
        if name == "last_modified_date":
            ms = [None if v is None else int(v * 1000) for v in values]
            arrays[name] = pa.array(ms, pa.int64()).cast(pa.timestamp("ms"))
        else:
            arrays[name] = pa.array(values, types.get(name, pa.string()))
    buf = io.BytesIO()
    orc.write_table(pa.table(arrays), buf, **write)
    return buf.getvalue()


def _azure_time(epoch: float) -> str:
    """Azure's form: seven fraction digits (``2021-05-26T13:25:36.1234560Z``)."""
    t = _utc(epoch)
    return f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond:06d}0Z"


def _gcs_time(epoch: float) -> str:
    return _utc(epoch).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _csv(columns: dict[str, list], time_text: Callable[[float], str]) -> bytes:
    """A CSV file with a header row; times as ``time_text`` writes them."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in zip(*columns.values()):
        writer.writerow([time_text(v) if c in TIME_COLUMNS else v for c, v in zip(columns, row)])
    return out.getvalue().encode()


def _parquet(columns: dict[str, list]) -> bytes:
    """A Parquet file; times as timestamps (milliseconds, UTC), sizes as int64."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = {}
    for name, values in columns.items():
        if name in TIME_COLUMNS or name == "last_modified_date":
            arrays[name] = pa.array([int(v * 1000) for v in values], pa.int64()).cast(pa.timestamp("ms", tz="UTC"))
        elif name in ("size", "Content-Length"):
            arrays[name] = pa.array(values, pa.int64())
        else:
            arrays[name] = pa.array(values, pa.string())
    buf = io.BytesIO()
    pq.write_table(pa.table(arrays), buf)
    return buf.getvalue()
