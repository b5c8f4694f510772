"""
lakeFS's graveler layer over SSTables: reading ranges and metaranges (reference 3.4.3-3.4.5).

A range maps an object path to a graveler value whose data is a protobuf ``catalog.Entry``; a
metarange maps a range's max key to a value whose identity is the range ID (ASCII hex) and whose
data is a protobuf ``committed.RangeData``. The ``type`` user property tells them apart.

Writing tables and computing their identifiers is ``lakefs_sandbox.graveler_writer`` (emulator, tests).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

# (the generated modules build their classes at import: mypy sees no Entry, no RangeData)
from lakefs_gc.lakefs.proto.catalog_pb2 import Entry as _EntryPB  # type: ignore[attr-defined]
from lakefs_gc.lakefs.proto.committed_pb2 import RangeData as _RangeDataPB  # type: ignore[attr-defined]
from lakefs_gc.lakefs.sstable import SSTableError, SSTableReader, get_uvarint

RANGES_TYPE = "ranges"
METARANGES_TYPE = "metaranges"

BY_PREFIX_DEPRECATED, RELATIVE, FULL = 0, 1, 2
ADDRESS_TYPE_NAMES = {BY_PREFIX_DEPRECATED: "BY_PREFIX_DEPRECATED", RELATIVE: "RELATIVE", FULL: "FULL"}


class GravelerError(SSTableError):
    """A table that is a valid SSTable but not a valid graveler range/metarange."""


# ---------------------------------------------------------------------------------------------
# The graveler value: zigzag varint len | identity | zigzag varint len | data (trailing ignored)
# ---------------------------------------------------------------------------------------------


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
    return value[start:iend], value[pos : pos + dlen]


_NO_METADATA: dict[str, str] = {}  # shared default; entries are read-only values


class Entry(NamedTuple):
    """
    A lakeFS catalog entry (what a range record holds for one object).

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


class RangeInfo(NamedTuple):
    """One range as a metarange lists it."""

    id: str
    min_key: bytes
    max_key: bytes
    count: int  # type: ignore[assignment]  # a field named as tuple's count method
    estimated_size: int


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
        raise GravelerError(
            reader.path,
            f"table has an 'entity' property ({reader.properties['entity']!r}): a repository dump, not a commit's {want}",
        )


class RangeRecord(NamedTuple):
    """One record of a range: its key, its value's identity and the entry it holds."""

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
            entry = new_entry(
                Entry,
                (
                    pb.address,
                    pb.size,
                    pb.e_tag,
                    ts.seconds,
                    ts.nanos,
                    dict(md) if md else _NO_METADATA,
                    pb.address_type,
                    pb.content_type,
                ),
            )
            yield new_entry(RangeRecord, (key, identity, entry))


def iter_range_addresses(reader: SSTableReader) -> Iterator[list[tuple[str, int]]]:
    """Per data block, the (address, address_type) of every record: what GC needs from a range."""
    for block in iter_range_identities(reader):
        yield [(address, address_type) for address, address_type, *_ in block]


def iter_range_identities(reader: SSTableReader) -> Iterator[list[tuple[str, int, bytes, int, str]]]:
    """
    Per data block, (address, address_type, path, size, checksum) of every record.

    What the staged check needs besides the address (lakefs_gc.listing.staged).
    """
    _require_type(reader, RANGES_TYPE)
    from_bytes = _EntryPB.FromString
    path = reader.path
    for block in reader.iter_blocks():
        out: list[tuple[str, int, bytes, int, str]] = []
        append = out.append
        for key, value in block:
            try:
                pb = from_bytes(decode_value(value)[1])
            except Exception as exc:
                raise GravelerError(path, f"record {key!r}: cannot decode graveler value ({exc})") from None
            append((pb.address, pb.address_type, key, pb.size, pb.e_tag))
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


# ---------------------------------------------------------------------------------------------
# Addresses (reference 4.3 step 4)
# ---------------------------------------------------------------------------------------------

_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


def normalize_address(address: str, address_type: int, namespace: str | tuple[str, ...]) -> str | None:
    """
    Map a committed entry's address to a namespace-relative address, or None if it lies outside.

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
    for root in (namespace,) if isinstance(namespace, str) else namespace:
        prefix = root.rstrip("/") + "/"
        if address.startswith(prefix):
            return address[len(prefix) :] or None
    return None
