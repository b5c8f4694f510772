"""
An S3 Inventory's rows, read into Arrow: each object's key, size and last-modified time under a prefix.

Only S3 Inventory's CSV (gzip, no header row, the columns of the manifest's ``fileSchema``, keys
URL-encoded) and Parquet data files so far; ORC, Azure's and GCS's files are not read yet. Rows
are streamed a batch at a time (``pyarrow.csv.open_csv``, ``ParquetFile.iter_batches``), so memory
stays bounded by the batch, not the file. In an all-versions inventory only the latest version of
each key counts, and not when it is a delete marker. Not yet used by the GC (docs/inventory.md).

The CSV keys are decoded as ``application/x-www-form-urlencoded`` (``+`` is a space, ``%2B`` a
plus), as AWS encodes keys elsewhere (event notifications, ``EncodingType=url``); to be checked on
a real inventory of keys with spaces and pluses.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING
from urllib.parse import unquote_plus

from lakefs_gc.inventory.manifest import CSV, KEY, LAST_MODIFIED, PARQUET, SIZE, DataFile, InventoryManifest
from lakefs_gc.inventory.s3 import IS_DELETE_MARKER, IS_LATEST
from lakefs_gc.storage.namespace import S3

if TYPE_CHECKING:
    import pyarrow as pa

    from lakefs_gc.storage.base import Storage

BLOCK_SIZE = 8 << 20  # bytes of CSV per batch


def rows_schema() -> pa.Schema:
    """Return the schema of the rows read: ``key`` (as the inventory names it, decoded), ``size``, ``last_modified``."""
    import pyarrow as pa

    return pa.schema([("key", pa.string()), ("size", pa.int64()), ("last_modified", pa.timestamp("ms", tz="UTC"))])


def iter_rows(
    manifest: InventoryManifest, storage: Storage, data: DataFile, prefix: str = ""
) -> Iterator[pa.RecordBatch]:
    """
    Yield the rows of data file ``data`` whose key starts with ``prefix``, as batches of :func:`rows_schema`.

    ``storage`` is the destination bucket's root. Keys are as the inventory names them (the source
    bucket's keys): the caller makes them relative to its namespace.
    """
    if manifest.provider != S3 or manifest.format not in (CSV, PARQUET):
        raise ValueError(
            f"{manifest.id}: its {manifest.format} data files are not read yet (only S3 Inventory's CSV and Parquet are)"
        )
    missing = manifest.missing_fields
    if missing:
        raise ValueError(f"{manifest.id}: its schema lacks {', '.join(missing)} (verify() refuses it)")
    batches = (
        _csv_batches(manifest, storage, data) if manifest.format == CSV else _parquet_batches(manifest, storage, data)
    )
    for batch in batches:
        out = _select(manifest, batch, prefix)
        if out.num_rows:
            yield out


def read_rows(manifest: InventoryManifest, storage: Storage, data: DataFile, prefix: str = "") -> pa.Table:
    """Return :func:`iter_rows` as one table."""
    import pyarrow as pa

    return pa.Table.from_batches(list(iter_rows(manifest, storage, data, prefix)), schema=rows_schema())


def _version_columns(manifest: InventoryManifest) -> list[str]:
    if not manifest.all_versions:
        return []
    return [next(c for c in names if c in manifest.columns) for names in (IS_LATEST, IS_DELETE_MARKER)]


def _csv_batches(manifest: InventoryManifest, storage: Storage, data: DataFile) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    wanted = [manifest.fields[r] for r in (KEY, SIZE, LAST_MODIFIED)] + _version_columns(manifest)
    with storage.open_input(data.key) as raw:
        stream = pa.CompressedInputStream(pa.PythonFile(raw, mode="r"), "gzip")
        reader = pacsv.open_csv(
            stream,
            read_options=pacsv.ReadOptions(column_names=list(manifest.columns), block_size=BLOCK_SIZE),
            convert_options=pacsv.ConvertOptions(
                include_columns=wanted, column_types=dict.fromkeys(wanted, pa.string()), strings_can_be_null=True
            ),
        )
        yield from reader


def _parquet_batches(manifest: InventoryManifest, storage: Storage, data: DataFile) -> Iterator[pa.RecordBatch]:
    import pyarrow.parquet as pq

    wanted = [manifest.fields[r] for r in (KEY, SIZE, LAST_MODIFIED)] + _version_columns(manifest)
    with storage.open_input(data.key) as raw:
        yield from pq.ParquetFile(raw).iter_batches(columns=wanted)


def _select(manifest: InventoryManifest, batch: pa.RecordBatch, prefix: str) -> pa.RecordBatch:
    """Keep the current objects under ``prefix``; keys decoded (CSV), sizes and times typed."""
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = batch.column(manifest.fields[KEY])
    if manifest.format == CSV:
        keys = _decoded(keys)
    keep = pc.starts_with(keys, prefix) if prefix else pc.is_valid(keys)
    versions = _version_columns(manifest)
    if versions:
        latest, marker = (_truthy(batch.column(c)) for c in versions)
        keep = pc.and_(keep, pc.and_(latest, pc.invert(marker)))
    keep = pc.fill_null(keep, False)
    size = batch.column(manifest.fields[SIZE])
    modified = batch.column(manifest.fields[LAST_MODIFIED])
    return pa.RecordBatch.from_arrays(
        [
            pc.filter(keys, keep),
            pc.filter(size, keep).cast(pa.int64()),
            pc.filter(modified, keep).cast(pa.timestamp("ms", tz="UTC")),
        ],
        schema=rows_schema(),
    )


def _truthy(column: pa.Array) -> pa.Array:
    """Return a boolean column as it is, a CSV's ``true``/``false`` text as booleans."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_boolean(column.type):
        return column
    return pc.equal(pc.utf8_lower(column), "true")


def _decoded(keys: pa.Array) -> pa.Array:
    """URL-decode the keys that need it (those with ``%`` or ``+``), the rest as they are."""
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = pc.match_substring_regex(keys, r"[%+]")
    if not pc.any(encoded).as_py():
        return keys
    values = keys.to_pylist()
    for i in pc.indices_nonzero(encoded).to_pylist():
        values[i] = unquote_plus(values[i])
    return pa.array(values, pa.string())
