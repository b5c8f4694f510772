"""lakeFS's graveler layer over SSTables: ranges, metaranges and their identifiers (reference 3.4.3-3.4.5).

A range maps an object path to a graveler value whose data is a protobuf ``catalog.Entry``; a
metarange maps a range's max key to a value whose identity is the range ID (ASCII hex) and whose
data is a protobuf ``committed.RangeData``. The ``type`` user property tells them apart.
"""

from __future__ import annotations

import hashlib
import io
import re
import struct
from collections.abc import Iterable, Iterator
from typing import BinaryIO, NamedTuple

from lakefs_gc.proto.catalog_pb2 import Entry as _EntryPB
from lakefs_gc.proto.committed_pb2 import RangeData as _RangeDataPB
from lakefs_gc.sstable import SSTableError, SSTableReader, SSTableWriter, get_uvarint, put_uvarint

RANGES_TYPE = "ranges"
METARANGES_TYPE = "metaranges"

BY_PREFIX_DEPRECATED, RELATIVE, FULL = 0, 1, 2
ADDRESS_TYPE_NAMES = {BY_PREFIX_DEPRECATED: "BY_PREFIX_DEPRECATED", RELATIVE: "RELATIVE", FULL: "FULL"}

# lakeFS range-cutting defaults (reference 3.4.1): committed.permanent.*
DEFAULT_MIN_RANGE_SIZE = 0
DEFAULT_MAX_RANGE_SIZE = 20 << 20
DEFAULT_RANGE_RAGGEDNESS = 50_000


class GravelerError(SSTableError):
    """A table that is a valid SSTable but not a valid graveler range/metarange."""


# ---------------------------------------------------------------------------------------------
# The graveler value: zigzag varint len | identity | zigzag varint len | data (trailing ignored)
# ---------------------------------------------------------------------------------------------

def _put_varint(out: bytearray, v: int) -> None:
    put_uvarint(out, (v << 1) if v >= 0 else ~(v << 1))


def encode_value(identity: bytes, data: bytes) -> bytes:
    out = bytearray()
    _put_varint(out, len(identity))
    out += identity
    _put_varint(out, len(data))
    out += data
    return bytes(out)


def decode_value(value: bytes) -> tuple[bytes, bytes]:
    """Split a graveler value into (identity, data). Raises ValueError on a malformed value."""
    # Fast path: both lengths fit a one-byte zigzag varint (identity is 32 or 64 bytes).
    b = value[0]
    if b < 0x80:
        ilen, pos = b, 1
    else:
        ilen, pos = get_uvarint(value, 0)
    if ilen & 1:
        raise ValueError("negative identity length")
    ilen >>= 1
    start = pos
    iend = pos + ilen
    if iend >= len(value):
        raise ValueError("identity length runs past the end of the value")
    b = value[iend]
    if b < 0x80:
        dlen, pos = b, iend + 1
    else:
        dlen, pos = get_uvarint(value, iend)
    if dlen & 1:
        raise ValueError("negative data length")
    dlen >>= 1
    if pos + dlen > len(value):
        raise ValueError("data length runs past the end of the value")
    return value[start:iend], value[pos:pos + dlen]


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


_NO_METADATA: dict[str, str] = {}  # shared default; entries are read-only values


class Entry(NamedTuple):
    """A lakeFS catalog entry (what a range record holds for one object).

    A NamedTuple rather than a dataclass: ranges hold millions of these and tuple construction
    is several times cheaper (see bench/sstable_bench.py). Treat ``metadata`` as read-only.
    """

    address: str
    size: int
    etag: str
    last_modified_seconds: int = 0
    last_modified_nanos: int = 0
    metadata: dict[str, str] = _NO_METADATA
    address_type: int = RELATIVE
    content_type: str = ""

    def identity(self) -> bytes:
        """sha256(Int64(size) + String(etag) + StringMap(metadata) [+ String(content_type)])."""
        h = hashlib.sha256()
        h.update(_ident_int64(self.size))
        h.update(_ident_string(self.etag))
        h.update(_ident_string_map(self.metadata))
        if self.content_type:
            h.update(_ident_string(self.content_type))
        return h.digest()

    def to_proto_bytes(self) -> bytes:
        pb = _EntryPB(address=self.address, size=self.size, e_tag=self.etag,
                      address_type=self.address_type, content_type=self.content_type)
        pb.last_modified.seconds = self.last_modified_seconds
        pb.last_modified.nanos = self.last_modified_nanos
        pb.metadata.update(self.metadata)
        return pb.SerializeToString(deterministic=True)

    def to_value(self) -> bytes:
        return encode_value(self.identity(), self.to_proto_bytes())


class RangeInfo(NamedTuple):
    """One range as a metarange lists it."""

    id: str
    min_key: bytes
    max_key: bytes
    count: int
    estimated_size: int

    def to_value(self) -> bytes:
        pb = _RangeDataPB(min_key=self.min_key, max_key=self.max_key, estimated_size=self.estimated_size,
                          count=self.count)
        return encode_value(self.id.encode("ascii"), pb.SerializeToString(deterministic=True))


class _IdHasher:
    """Range/metarange ID: sha256 over `len(key)key|len(value)value|` per record, then the
    ident string-map of the writer metadata before min/max/count/size are added (reference 3.4.5)."""

    def __init__(self):
        self._h = hashlib.sha256()

    def add(self, key: bytes, value: bytes) -> None:
        self._h.update(b"%d%s|%d%s|" % (len(key), key, len(value), value))

    def finish(self, metadata: dict[str, str]) -> str:
        self._h.update(_ident_string_map(metadata))
        return self._h.hexdigest()


def compute_table_id(records: Iterable[tuple[bytes, bytes]], table_type: str, extra_metadata: dict[str, str] | None = None) -> str:
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
        w.add(key, entry.to_value())
    return w.finish()


def write_metarange(dst: BinaryIO, ranges: Iterable[RangeInfo], **sst_options) -> str:
    """Write a metarange over ranges sorted by max key; returns the metarange ID (= file name)."""
    w = GravelerTableWriter(dst, METARANGES_TYPE, **sst_options)
    for r in ranges:
        w.add(r.max_key, r.to_value())
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


def should_break_at_key(key: bytes, current_size: int, min_size: int = DEFAULT_MIN_RANGE_SIZE,
                        max_size: int = DEFAULT_MAX_RANGE_SIZE, raggedness: int = DEFAULT_RANGE_RAGGEDNESS) -> bool:
    """lakeFS's DiskWriter.ShouldBreakAtKey: cut after ``key`` when the range reached its maximum
    size, or passed its minimum and fnv64a(key) % raggedness == 0 (content-defined, so unchanged
    ranges keep their boundaries and IDs between commits)."""
    if current_size >= max_size:
        return True
    if current_size < min_size:
        return False
    return _fnv64a(key) % raggedness == 0


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------

def table_type(reader: SSTableReader) -> str | None:
    t = reader.properties.get("type")
    return t if isinstance(t, str) else None


def _require_type(reader: SSTableReader, want: str) -> None:
    got = table_type(reader)
    if got != want:
        raise GravelerError(reader.path, f"table type property is {got!r}, expected {want!r}")
    if "entity" in reader.properties:
        raise GravelerError(reader.path, f"table has an 'entity' property ({reader.properties['entity']!r}): a repository dump, not a commit's {want}")


class RangeRecord(NamedTuple):
    key: bytes
    identity: bytes
    entry: Entry


def iter_range(reader: SSTableReader) -> Iterator[RangeRecord]:
    """Fully decode every record of a range (key, identity, catalog.Entry)."""
    _require_type(reader, RANGES_TYPE)
    from_bytes = _EntryPB.FromString
    new_entry = tuple.__new__
    path = reader.path
    for block in reader.iter_blocks():
        for key, value in block:
            try:
                identity, data = decode_value(value)
                pb = from_bytes(data)
            except Exception as exc:  # malformed value or protobuf
                raise GravelerError(path, f"record {key!r}: cannot decode graveler value ({exc})") from None
            ts = pb.last_modified
            md = pb.metadata
            entry = new_entry(Entry, (pb.address, pb.size, pb.e_tag, ts.seconds, ts.nanos,
                                      dict(md) if md else _NO_METADATA, pb.address_type, pb.content_type))
            yield new_entry(RangeRecord, (key, identity, entry))


def iter_range_addresses(reader: SSTableReader) -> Iterator[list[tuple[str, int]]]:
    """Per data block, the (address, address_type) of every record: what GC needs from a range."""
    _require_type(reader, RANGES_TYPE)
    from_bytes = _EntryPB.FromString
    path = reader.path
    for block in reader.iter_blocks():
        out = []
        append = out.append
        for key, value in block:
            try:
                pb = from_bytes(decode_value(value)[1])
            except Exception as exc:
                raise GravelerError(path, f"record {key!r}: cannot decode graveler value ({exc})") from None
            append((pb.address, pb.address_type))
        yield out


def iter_metarange(reader: SSTableReader) -> Iterator[tuple[bytes, RangeInfo]]:
    """Decode every record of a metarange: (key = range max key, RangeInfo)."""
    _require_type(reader, METARANGES_TYPE)
    for key, value in reader:
        try:
            identity, data = decode_value(value)
            pb = _RangeDataPB.FromString(data)
            rid = identity.decode("ascii")
        except Exception as exc:
            raise GravelerError(reader.path, f"record {key!r}: cannot decode metarange value ({exc})") from None
        if not re.fullmatch(r"[0-9a-f]{64}", rid):
            raise GravelerError(reader.path, f"record {key!r}: range ID {rid!r} is not 64 hex characters")
        yield key, RangeInfo(rid, pb.min_key, pb.max_key, pb.count, pb.estimated_size)


def recompute_id(reader: SSTableReader) -> str:
    """The table's ID from its content: for a lakeFS-written table it equals its file name."""
    t = table_type(reader)
    if t is None:
        raise GravelerError(reader.path, "no 'type' property: not a graveler range or metarange")
    return compute_table_id(reader, t)


# ---------------------------------------------------------------------------------------------
# Addresses (reference 4.3 step 4)
# ---------------------------------------------------------------------------------------------

_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


def normalize_address(address: str, address_type: int, namespace: str | tuple[str, ...]) -> str | None:
    """Map a committed entry's address to a namespace-relative address, or None if it lies outside.

    RELATIVE: kept. FULL: made relative when inside the namespace, dropped (None) when outside.
    BY_PREFIX_DEPRECATED: without a URI scheme it is relative; with one it is treated as FULL.
    The namespace may or may not end with '/'; "inside" means under ``namespace + '/'``, so
    ``s3://bucket/repo2/x`` is not inside ``s3://bucket/repo``. ``namespace`` may be a tuple of
    every URI that names the namespace root (``NamespaceURI.roots()``: on lakeFS's local blockstore
    ``local://repo1`` and ``local:///<root>/repo1``).
    An unknown address type raises ValueError: guessing could unprotect a live object.
    """
    if address_type == RELATIVE:
        return address
    if address_type not in (FULL, BY_PREFIX_DEPRECATED):
        raise ValueError(f"unknown address_type {address_type} for address {address!r}")
    if address_type == BY_PREFIX_DEPRECATED and not _SCHEME_RE.match(address):
        return address
    for root in ((namespace,) if isinstance(namespace, str) else namespace):
        prefix = root.rstrip("/") + "/"
        if address.startswith(prefix):
            return address[len(prefix):] or None
    return None
