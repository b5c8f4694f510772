"""Whole inventories written into a storage in each provider's documented layout (tests/inventory/documented.py).

Each builder writes data files, the manifest and (S3, Azure) its checksum file, and returns the
manifest's key. ``edit`` changes the manifest's JSON before it is written (the checksum is of what
is written), ``checksum`` replaces the checksum file's content, ``files`` are the data files'
contents.
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
) -> str:
    """An Azure Blob Inventory run of rule ``rule`` at the destination container's root."""
    run = f"{taken:%Y/%m/%d/%H-%M-%S}/{rule}"
    entries = []
    for i, data in enumerate(files):
        key = f"{run}/{rule}_{i}.csv"
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
    manifest["ruleDefinition"]["schemaFields"] = ["Name", "Content-Length", "Last-Modified", "Content-MD5"]
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
) -> str:
    """A GCS inventory report of configuration ``config_id`` under ``destination_path``."""
    stem = f"{config_id}_{taken:%Y-%m-%dT%H:%M}"
    names = []
    for i, data in enumerate(files):
        names.append(f"{stem}_{i}.csv")
        storage.put(f"{destination_path}/{names[-1]}", data)
    manifest = json.loads(documented.GCS_MANIFEST)
    options = manifest["report_config"]["object_metadata_report_options"]
    options["storage_filters"]["bucket"] = source_bucket
    manifest.update(
        snapshot_time=f"{taken:%Y-%m-%dT%H:%M:%SZ}",
        shard_count=len(names),
        report_shards_file_names=names,
        records_processed=len(files),
    )
    return _write_manifest(storage, f"{destination_path}/{stem}_manifest.json", manifest, edit, None, None)


def s3_inventory_of(source, bucket: str, dest, taken: datetime, prefix: str, **kw) -> int:
    """
    An S3 Inventory of bucket ``bucket`` (``source``: its root storage) as it is now, taken at ``taken``.

    One gzip CSV data file of every object (keys URL-encoded, times in milliseconds), written
    under ``prefix`` of ``dest`` in AWS's layout; ``kw`` as :func:`s3_inventory`'s. Return the rows.
    """
    from datetime import UTC
    from urllib.parse import quote_plus

    rows = []
    for o in source.list("", recursive=True):
        modified = datetime.fromtimestamp(o.last_modified, UTC).isoformat(timespec="milliseconds")
        rows.append(
            f'"{bucket}","{quote_plus(o.key)}","{o.size}","{modified.replace("+00:00", "Z")}",'
            f'"{o.checksum or ""}","STANDARD"\n'
        )
    kw.setdefault("files", (gzip.compress("".join(rows).encode()),))
    kw.setdefault("source_bucket", bucket)
    s3_inventory(dest, taken, prefix=prefix, **kw)
    return len(rows)
