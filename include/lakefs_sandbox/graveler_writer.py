"""
Write lakeFS graveler tables: values, identities, table IDs and range cutting, as lakeFS does.

Range and metarange values, identities and table IDs as lakeFS computes them (reference
3.4.3-3.4.5), and lakeFS's content-defined range cutting.

Used by the lakeFS emulator and the tests; the GC only reads (``lakefs_gc.lakefs.graveler``).
"""

from __future__ import annotations

import hashlib
import io
import struct
from collections.abc import Iterable
from typing import BinaryIO

# protoc's Python modules (proto/) make their classes at import and have no .pyi stubs: mypy sees
# no Entry nor RangeData in them, hence the type: ignore below
from lakefs_gc.lakefs.graveler import METARANGES_TYPE, RANGES_TYPE, Entry, GravelerError, RangeInfo, table_type
from lakefs_gc.lakefs.proto.catalog_pb2 import Entry as _EntryPB  # type: ignore[attr-defined]
from lakefs_gc.lakefs.proto.committed_pb2 import RangeData as _RangeDataPB  # type: ignore[attr-defined]
from lakefs_gc.lakefs.sstable import SSTableReader, put_uvarint
from lakefs_sandbox.sstable_writer import SSTableWriter

# lakeFS range-cutting defaults (reference 3.4.1): committed.permanent.*
DEFAULT_MIN_RANGE_SIZE = 0
DEFAULT_MAX_RANGE_SIZE = 20 << 20
DEFAULT_RANGE_RAGGEDNESS = 50_000


def _put_varint(out: bytearray, v: int) -> None:
    put_uvarint(out, (v << 1) if v >= 0 else ~(v << 1))


def encode_value(identity: bytes, data: bytes) -> bytes:
    out = bytearray()
    _put_varint(out, len(identity))
    out += identity
    _put_varint(out, len(data))
    out += data
    return bytes(out)


# ---------------------------------------------------------------------------------------------
# ident marshalling (pkg/ident) and identifiers
# ---------------------------------------------------------------------------------------------


def _ident_int64(v: int) -> bytes:
    return b"\x02\x08" + struct.pack(">q", v)


def _ident_string(s: str | bytes) -> bytes:
    b = s.encode() if isinstance(s, str) else s
    return b"\x01" + _ident_int64(len(b)) + b


def _ident_string_map(m: dict[str, str]) -> bytes:
    out = [b"\x04", _ident_int64(len(m))]
    for k in sorted(m):
        out.append(_ident_string(k))
        out.append(_ident_string(m[k]))
    return b"".join(out)


def entry_identity(entry: Entry) -> bytes:
    """sha256(Int64(size) + String(etag) + StringMap(metadata) [+ String(content_type)])."""
    h = hashlib.sha256()
    h.update(_ident_int64(entry.size))
    h.update(_ident_string(entry.etag))
    h.update(_ident_string_map(entry.metadata))
    if entry.content_type:
        h.update(_ident_string(entry.content_type))
    return h.digest()


def entry_proto_bytes(entry: Entry) -> bytes:
    pb = _EntryPB(
        address=entry.address,
        size=entry.size,
        e_tag=entry.etag,
        address_type=entry.address_type,
        content_type=entry.content_type,
    )
    pb.last_modified.seconds = entry.last_modified_seconds
    pb.last_modified.nanos = entry.last_modified_nanos
    pb.metadata.update(entry.metadata)
    return pb.SerializeToString(deterministic=True)


def entry_value(entry: Entry) -> bytes:
    """Return the graveler value a range stores for ``entry``."""
    return encode_value(entry_identity(entry), entry_proto_bytes(entry))


def range_info_value(info: RangeInfo) -> bytes:
    """Return the graveler value a metarange stores for one range."""
    pb = _RangeDataPB(min_key=info.min_key, max_key=info.max_key, estimated_size=info.estimated_size, count=info.count)
    return encode_value(info.id.encode("ascii"), pb.SerializeToString(deterministic=True))


class _IdHasher:
    """
    Range/metarange ID, as lakeFS computes it (reference 3.4.5).

    sha256 over `len(key)key|len(value)value|` per record, then the ident string-map of the writer
    metadata before min/max/count/size are added.
    """

    def __init__(self):
        self._h = hashlib.sha256()

    def add(self, key: bytes, value: bytes) -> None:
        self._h.update(b"%d%s|%d%s|" % (len(key), key, len(value), value))

    def finish(self, metadata: dict[str, str]) -> str:
        self._h.update(_ident_string_map(metadata))
        return self._h.hexdigest()


def compute_table_id(
    records: Iterable[tuple[bytes, bytes]], table_type: str, extra_metadata: dict[str, str] | None = None
) -> str:
    h = _IdHasher()
    for k, v in records:
        h.add(k, v)
    return h.finish({"type": table_type, **(extra_metadata or {})})


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------


class GravelerTableWriter:
    """Write one range or metarange; computes its ID as lakeFS does, for the file name."""

    def __init__(self, dst: BinaryIO, table_type: str, **sst_options):
        if table_type not in (RANGES_TYPE, METARANGES_TYPE):
            raise ValueError(f"table type must be {RANGES_TYPE!r} or {METARANGES_TYPE!r}")
        self.table_type = table_type
        self._w = SSTableWriter(dst, **sst_options)
        self._h = _IdHasher()
        self.min_key: bytes | None = None
        self.max_key: bytes = b""
        self.count = 0

    def add(self, key: bytes, value: bytes) -> None:
        self._w.add(key, value)
        self._h.add(key, value)
        if self.min_key is None:
            self.min_key = key
        self.max_key = key
        self.count += 1

    def estimated_size(self) -> int:
        return self._w.data_size + self._w._data.estimated_size()

    def finish(self) -> RangeInfo:
        metadata = {"type": self.table_type}
        table_id = self._h.finish(metadata)
        props = dict(metadata)
        props["min_key"] = (self.min_key or b"").decode("utf-8", "surrogateescape")
        props["max_key"] = self.max_key.decode("utf-8", "surrogateescape")
        props["count"] = str(self.count)
        est = self.estimated_size()
        props["estimated_size_bytes"] = str(est)
        size = self._w.finish(props)
        return RangeInfo(table_id, self.min_key or b"", self.max_key, self.count, size)


def write_range(dst: BinaryIO, records: Iterable[tuple[bytes, Entry]], **sst_options) -> RangeInfo:
    """Write sorted (path, Entry) records as one range; returns its RangeInfo (id = file name)."""
    w = GravelerTableWriter(dst, RANGES_TYPE, **sst_options)
    for key, entry in records:
        w.add(key, entry_value(entry))
    return w.finish()


def write_metarange(dst: BinaryIO, ranges: Iterable[RangeInfo], **sst_options) -> str:
    """Write a metarange over ranges sorted by max key; returns the metarange ID (= file name)."""
    w = GravelerTableWriter(dst, METARANGES_TYPE, **sst_options)
    for r in ranges:
        w.add(r.max_key, range_info_value(r))
    return w.finish().id


def range_to_bytes(records: Iterable[tuple[bytes, Entry]], **sst_options) -> tuple[RangeInfo, bytes]:
    buf = io.BytesIO()
    info = write_range(buf, records, **sst_options)
    return info, buf.getvalue()


def metarange_to_bytes(ranges: Iterable[RangeInfo], **sst_options) -> tuple[str, bytes]:
    buf = io.BytesIO()
    mid = write_metarange(buf, ranges, **sst_options)
    return mid, buf.getvalue()


def _fnv64a(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def should_break_at_key(
    key: bytes,
    current_size: int,
    min_size: int = DEFAULT_MIN_RANGE_SIZE,
    max_size: int = DEFAULT_MAX_RANGE_SIZE,
    raggedness: int = DEFAULT_RANGE_RAGGEDNESS,
) -> bool:
    """
    Return whether to cut after ``key``, as lakeFS's DiskWriter.ShouldBreakAtKey does.

    Cut when the range reached its maximum size, or passed its minimum and fnv64a(key) %
    raggedness == 0 (content-defined, so unchanged ranges keep their boundaries and IDs between
    commits).
    """
    if current_size >= max_size:
        return True
    if current_size < min_size:
        return False
    return _fnv64a(key) % raggedness == 0


def recompute_id(reader: SSTableReader) -> str:
    """Return the table's ID from its content: for a lakeFS-written table it equals its file name."""
    t = table_type(reader)
    if t is None:
        raise GravelerError(reader.path, "no 'type' property: not a graveler range or metarange")
    return compute_table_id(reader, t)
