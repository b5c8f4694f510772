"""
An inventory's rows, read into Arrow: each object's key, size, last-modified time (and checksum) under a prefix.

Read: S3 Inventory's CSV (gzip, no header row, the columns of the manifest's ``fileSchema``, keys
URL-encoded), ORC and Parquet files; Azure Blob Inventory's and GCS inventory reports' CSV (a
header row when the file has one: Azure always writes it, GCS with ``header_required``; keys as
they are) and Parquet files (neither writes ORC). Rows are streamed a batch at a time
(``pyarrow.csv.open_csv``, ``ParquetFile.iter_batches``, ``ORCFile.read_stripe``), so memory stays
bounded by the batch (an ORC stripe), not the file. In an all-versions S3 inventory only the latest
version of each key counts, and not when it is a delete marker.

The S3 CSV keys are decoded as ``application/x-www-form-urlencoded`` (``+`` is a space, ``%2B`` a
plus), as AWS encodes keys elsewhere (event notifications, ``EncodingType=url``); to be checked on
a real inventory of keys with spaces and pluses. Times are read as RFC 3339 / ISO 8601 text (any
number of fraction digits), RFC 1123 text (``Mon, 03 May 2021 02:47:10 GMT``), a Parquet or ORC
timestamp (one without a zone is UTC), or milliseconds since the epoch; sizes as integers or their
text. The checksum is S3's ETag (quotes stripped, as a LIST gives it); Azure's and GCS's rows give
none (null), as their native listings give none (:mod:`lakefs_gc.storage.native`).
"""

from __future__ import annotations

import csv
import hashlib
import zlib
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Protocol
from urllib.parse import unquote_plus

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
    refuse,
)
from lakefs_gc.inventory.s3 import IS_DELETE_MARKER, IS_LATEST
from lakefs_gc.storage.namespace import S3
from lakefs_gc.words import noun, verb

if TYPE_CHECKING:
    import pyarrow as pa

    from lakefs_gc.storage.base import Storage

BLOCK_SIZE = 8 << 20  # bytes of CSV per batch
PEEK = 64 << 10  # bytes read to find a CSV file's first line
GZIP_MAGIC = b"\x1f\x8b"
RFC1123 = "%a, %d %b %Y %H:%M:%S GMT"


class RowCounter(Protocol):
    """What counts the rows read: a Spark accumulator, or anything that adds."""

    def add(self, n: int, /) -> None: ...


def rows_schema(checksum: bool = False) -> pa.Schema:
    """Return the schema of the rows read: ``key`` (as the inventory names it, decoded), ``size``, ``last_modified`` (and ``checksum``)."""
    import pyarrow as pa

    fields = [("key", pa.string()), ("size", pa.int64()), ("last_modified", pa.timestamp("ms", tz="UTC"))]
    return pa.schema([*fields, ("checksum", pa.string())] if checksum else fields)


def readable(manifest: InventoryManifest) -> str | None:
    """Return why this module cannot read ``manifest``'s data files; None when it can."""
    if manifest.format not in (CSV, PARQUET) and not (manifest.format == ORC and manifest.provider == S3):
        return f"{manifest.id}: its {manifest.format} data files are not read yet (only CSV, Parquet and S3's ORC are)"
    missing = manifest.missing_fields
    if missing:
        return f"{manifest.id}: its schema lacks {', '.join(missing)} (verify() refuses it)"
    return None


def iter_rows(
    manifest: InventoryManifest,
    storage: Storage,
    data: DataFile,
    prefix: str = "",
    *,
    checksum: bool = False,
    read: RowCounter | None = None,
    check_md5: bool = False,
) -> Iterator[pa.RecordBatch]:
    """
    Yield the rows of data file ``data`` whose key starts with ``prefix``, as batches of :func:`rows_schema`.

    ``storage`` is the destination's root. Keys are as the inventory names them (S3, GCS: the
    source bucket's keys; Azure: ``<container>/<blob>``): the caller makes them relative to its
    namespace. ``checksum``: add the ``checksum`` column; ``read`` counts every row read, under
    ``prefix`` or not; ``check_md5``: hash the file first and refuse it
    (:class:`~lakefs_gc.inventory.manifest.InventoryRefused`) when it is not the MD5 its manifest
    gives (a file whose MD5 its store does not vouch for: ``VerifiedInventory.unchecked_md5``).
    """
    why = readable(manifest)
    if why is not None:
        raise ValueError(why)
    md5 = data.md5 if check_md5 else None
    read_file = {CSV: _csv_batches, ORC: _orc_batches}.get(manifest.format, _parquet_batches)
    batches = read_file(manifest, storage, data, md5)
    for batch in batches:
        if read is not None:
            read.add(batch.num_rows)
        out = _select(manifest, batch, prefix, checksum)
        if out.num_rows:
            yield out


def read_rows(
    manifest: InventoryManifest, storage: Storage, data: DataFile, prefix: str = "", *, checksum: bool = False
) -> pa.Table:
    """Return :func:`iter_rows` as one table."""
    import pyarrow as pa

    batches = list(iter_rows(manifest, storage, data, prefix, checksum=checksum))
    return pa.Table.from_batches(batches, schema=rows_schema(checksum))


def _wanted(manifest: InventoryManifest) -> list[str]:
    roles = [manifest.fields[r] for r in (KEY, SIZE, LAST_MODIFIED)]
    etag = _etag_column(manifest)
    return roles + ([etag] if etag else []) + _version_columns(manifest)


def _etag_column(manifest: InventoryManifest) -> str | None:
    """Return S3's ETag column, the checksum LIST gives (None for Azure and GCS: their MD5 is not one)."""
    return manifest.fields.get(CHECKSUM) if manifest.provider == S3 else None


def _version_columns(manifest: InventoryManifest) -> list[str]:
    if not manifest.all_versions:
        return []
    return [next(c for c in names if c in manifest.columns) for names in (IS_LATEST, IS_DELETE_MARKER)]


def _head(raw: IO[bytes]) -> tuple[bool, str, bool]:
    """
    Return whether the (seekable) file is gzip, its first line (decompressed), and whether it holds no line at all.

    A data file of no rows can be empty (S3's gzip of nothing, a GCS shard without a header row):
    Arrow's CSV reader refuses such a file, so it is told apart here. The file is rewound.
    """
    start = raw.read(PEEK)
    raw.seek(0)
    gz = start[:2] == GZIP_MAGIC
    text = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(start) if gz else start
    blank = len(start) < PEEK and not text.strip()  # the whole file was read, and it has no line
    return gz, text.split(b"\n", 1)[0].decode("utf-8", "replace").rstrip("\r"), blank


def _columns(manifest: InventoryManifest, first_line: str) -> tuple[list[str], int]:
    """
    Return the file's column names and the rows to skip.

    S3's CSV has no header row: the manifest's ``fileSchema``. Azure's and GCS's name their columns
    in a header row when they have one (the key's column among them): its names, in its order.
    """
    if manifest.provider != S3:
        header = next(csv.reader([first_line]), [])
        if manifest.fields[KEY] in header and manifest.fields[SIZE] in header:
            return header, 1
    return list(manifest.columns), 0


def _opened(manifest: InventoryManifest, storage: Storage, data: DataFile, md5: str | None) -> IO[bytes]:
    """Return the data file opened (seekable); with ``md5``, hashed first and refused when it differs."""
    raw = storage.open_input(data.key)
    if md5 is not None:
        digest = hashlib.md5(usedforsecurity=False)
        for chunk in iter(lambda: raw.read(1 << 20), b""):
            digest.update(chunk)
        raw.seek(0)
        if digest.hexdigest() != md5:
            raw.close()
            raise refuse(
                manifest.id,
                f"its data file {storage.full_uri(data.key)} has MD5 {digest.hexdigest()}, the manifest says "
                f"{md5}: the file was changed; wait for the next inventory",
            )
    return raw


def _csv_batches(
    manifest: InventoryManifest, storage: Storage, data: DataFile, md5: str | None
) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    with _opened(manifest, storage, data, md5) as raw:
        gz, first_line, blank = _head(raw)
        if blank:
            return
        names, skip = _columns(manifest, first_line)
        wanted = [c for c in _wanted(manifest) if c in names]
        stream: pa.NativeFile = pa.PythonFile(raw, mode="r")
        if gz:
            stream = pa.CompressedInputStream(stream, "gzip")
        reader = pacsv.open_csv(
            stream,
            read_options=pacsv.ReadOptions(column_names=names, skip_rows=skip, block_size=BLOCK_SIZE),
            convert_options=pacsv.ConvertOptions(
                include_columns=wanted, column_types=dict.fromkeys(wanted, pa.string()), strings_can_be_null=True
            ),
        )
        yield from reader


def _parquet_batches(
    manifest: InventoryManifest, storage: Storage, data: DataFile, md5: str | None
) -> Iterator[pa.RecordBatch]:
    import pyarrow.parquet as pq

    with _opened(manifest, storage, data, md5) as raw:
        file = pq.ParquetFile(raw)
        wanted = _wanted(manifest)
        _refuse_missing(manifest, storage, data, wanted, file.schema_arrow.names)
        yield from file.iter_batches(columns=wanted)


def _orc_batches(
    manifest: InventoryManifest, storage: Storage, data: DataFile, md5: str | None
) -> Iterator[pa.RecordBatch]:
    """S3's ORC: one batch per stripe, of the wanted columns (named as the ``fileSchema``'s ``struct<...>``)."""
    import pyarrow.orc as orc

    with _opened(manifest, storage, data, md5) as raw:
        file = orc.ORCFile(raw)
        wanted = _wanted(manifest)
        _refuse_missing(manifest, storage, data, wanted, file.schema.names)
        for stripe in range(file.nstripes):
            yield file.read_stripe(stripe, columns=wanted)


def _refuse_missing(
    manifest: InventoryManifest, storage: Storage, data: DataFile, wanted: list[str], names: list[str]
) -> None:
    """Refuse a typed data file (ORC, Parquet) that lacks a column its manifest's fileSchema names."""
    missing = [c for c in wanted if c not in names]
    if missing:
        raise refuse(
            manifest.id,
            f"its data file {storage.full_uri(data.key)} has no {noun(len(missing), 'column')} "
            f"{', '.join(missing)} (its columns: {', '.join(names)}), though the manifest's "
            f"fileSchema {verb(len(missing), 'names it', 'names them')}",
        )


def _select(manifest: InventoryManifest, batch: pa.RecordBatch, prefix: str, checksum: bool) -> pa.RecordBatch:
    """Keep the current objects under ``prefix``; keys decoded (S3 CSV), sizes and times typed."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = batch.schema.names
    keys = batch.column(manifest.fields[KEY])
    if manifest.format == CSV and manifest.provider == S3:
        keys = _decoded(keys)
    keep = pc.starts_with(keys, prefix) if prefix else pc.is_valid(keys)
    versions = _version_columns(manifest)
    if versions:
        latest, marker = (_truthy(batch.column(c)) for c in versions)
        keep = pc.and_(keep, pc.and_(latest, pc.invert(marker)))
    keep = pc.fill_null(keep, False)
    columns = [
        pc.filter(keys, keep),
        _sizes(pc.filter(batch.column(manifest.fields[SIZE]), keep)),
        _times(pc.filter(batch.column(manifest.fields[LAST_MODIFIED]), keep)),
    ]
    if checksum:
        etag = _etag_column(manifest)
        if etag and etag in names:
            columns.append(pc.utf8_trim(pc.filter(batch.column(etag), keep).cast(pa.string()), '"'))
        else:
            columns.append(pa.nulls(len(columns[0]), pa.string()))
    return pa.RecordBatch.from_arrays(columns, schema=rows_schema(checksum))


def _sizes(column: pa.Array) -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        column = pc.utf8_trim_whitespace(column)
    return column.cast(pa.int64())


def _times(column: pa.Array) -> pa.Array:
    """Return last-modified times as ``timestamp[ms, UTC]``, whatever form the file gives them in."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ms = pa.timestamp("ms", tz="UTC")
    if pa.types.is_timestamp(column.type):
        if column.type.tz is None:
            column = pc.assume_timezone(column, "UTC")
        return column.cast(ms, safe=False)
    if pa.types.is_integer(column.type):
        return column.cast(pa.int64()).cast(ms)
    text = pc.utf8_trim_whitespace(column.cast(pa.string()))
    rfc = pc.fill_null(pc.match_substring_regex(text, r"^[A-Za-z]"), False)  # RFC 1123 starts with the day's name
    if not pc.any(rfc).as_py():
        return text.cast(pa.timestamp("ns", tz="UTC")).cast(ms, safe=False)
    none = pa.scalar(None, pa.string())
    iso = pc.if_else(rfc, none, text).cast(pa.timestamp("ns", tz="UTC")).cast(ms, safe=False)
    named = pc.assume_timezone(pc.strptime(pc.if_else(rfc, text, none), format=RFC1123, unit="ms"), "UTC")
    return pc.if_else(rfc, named, iso)


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
