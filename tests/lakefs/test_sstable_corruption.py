"""Refusals: every bad input raises a typed SSTableError naming the file; nothing crashes."""

from __future__ import annotations

import contextlib
import io
import struct

import pytest
from hypothesis import given, settings, strategies as st

from lakefs_gc.lakefs import graveler
from lakefs_gc.lakefs.graveler import Entry
from lakefs_gc.lakefs.sstable import (
    FOOTER_LEN,
    ChecksumMismatchError,
    NotRocksDBTableError,
    SSTableError,
    SSTableReader,
    TruncatedTableError,
    UnsupportedFormatError,
)
from lakefs_sandbox import graveler_writer
from lakefs_sandbox.sstable_writer import block_crc, write_table
from tests.support.golden import LAKEFS_SST, require_golden


def _table(n=2000) -> bytes:
    buf = io.BytesIO()
    write_table(buf, [(b"key/%06d" % i, b"value-%d" % i) for i in range(n)], {"type": "test"})
    return buf.getvalue()


def _read_all(data: bytes, name="bad.sst"):
    r = SSTableReader(io.BytesIO(data), name=name)
    return list(r)


def _first_data_block(data: bytes):
    r = SSTableReader(io.BytesIO(data))
    return next(r.data_block_handles())


def test_flipping_one_byte_in_a_data_block_is_caught_by_the_crc_with_its_offset():
    data = bytearray(_table())
    h = _first_data_block(bytes(data))
    data[h.offset + h.size // 2] ^= 0x01
    with pytest.raises(ChecksumMismatchError) as ei:
        _read_all(bytes(data), "flipped.sst")
    assert ei.value.offset == h.offset
    assert "flipped.sst" in str(ei.value)
    assert f"offset {h.offset}" in str(ei.value)


def test_a_byte_flip_in_a_golden_lakefs_range_is_caught():
    require_golden()
    data = bytearray((LAKEFS_SST / "range-56569996.sst").read_bytes())
    data[100_000] ^= 0x40
    with pytest.raises(ChecksumMismatchError):
        list(graveler.iter_range(SSTableReader(io.BytesIO(bytes(data)), name="range-56569996.sst")))


def test_empty_file_is_refused(tmp_path):
    p = tmp_path / "empty.sst"
    p.write_bytes(b"")
    with pytest.raises(TruncatedTableError, match="empty.sst: empty file"):
        SSTableReader(p)


def test_bad_magic_is_refused():
    data = bytearray(_table())
    data[-1] ^= 0xFF
    with pytest.raises(NotRocksDBTableError, match="bad magic"):
        _read_all(bytes(data))


def test_non_table_file_is_refused():
    with pytest.raises(NotRocksDBTableError):
        _read_all(b"this is dummy data - created by lakeFS to check accessibility" * 3, "dummy")


@pytest.mark.parametrize("keep", [1, 7, 8, 52, 53, 100, 1000, -1, -5, -53, -54, -200])
def test_truncation_is_refused(keep):
    data = _table()
    cut = data[:keep] if keep > 0 else data[: len(data) + keep]
    with pytest.raises(SSTableError):
        _read_all(cut, "cut.sst")


def test_truncated_in_the_middle_names_truncation():
    data = _table()
    # keep the footer but drop half of the file in front of it: handles then point past the end
    cut = data[: len(data) // 2] + data[-FOOTER_LEN:]
    with pytest.raises(TruncatedTableError, match="truncated"):
        _read_all(cut)


def test_unsupported_checksum_type_xxhash64_is_refused():
    data = bytearray(_table())
    data[-FOOTER_LEN] = 3  # xxHash64
    with pytest.raises(UnsupportedFormatError, match="xxHash64"):
        _read_all(bytes(data))


def test_unknown_compression_type_zstd_is_refused():
    data = bytearray(_table())
    h = _first_data_block(bytes(data))
    contents = bytes(data[h.offset : h.offset + h.size])
    data[h.offset + h.size] = 7  # zstd, with a CRC that matches, as a zstd writer would produce
    data[h.offset + h.size + 1 : h.offset + h.size + 5] = struct.pack("<I", block_crc(contents, 7))
    with pytest.raises(UnsupportedFormatError, match="zstd"):
        _read_all(bytes(data))


def test_format_version_other_than_2_is_refused():
    data = bytearray(_table())
    data[-12:-8] = struct.pack("<I", 5)
    with pytest.raises(UnsupportedFormatError, match="format version 5"):
        _read_all(bytes(data))


def test_range_reader_refuses_a_metarange_and_a_plain_table():
    info, _ = graveler_writer.range_to_bytes([(b"a", Entry("data/x/y", 1, "e"))])
    _, meta = graveler_writer.metarange_to_bytes([info])
    with pytest.raises(graveler.GravelerError, match="'metaranges', expected 'ranges'"):
        list(graveler.iter_range(SSTableReader(io.BytesIO(meta))))
    with pytest.raises(graveler.GravelerError, match="'test'"):
        list(graveler.iter_range(SSTableReader(io.BytesIO(_table(3)))))


def test_graveler_value_that_is_not_protobuf_is_refused():
    buf = io.BytesIO()
    write_table(buf, [(b"a", graveler_writer.encode_value(b"x" * 32, b"\xff\xff\xff"))], {"type": "ranges"})
    with pytest.raises(graveler.GravelerError, match="cannot decode"):
        list(graveler.iter_range(SSTableReader(io.BytesIO(buf.getvalue()))))


def test_graveler_value_decoding():
    assert graveler.decode_value(graveler_writer.encode_value(b"id", b"data") + b"trailing") == (b"id", b"data")
    assert graveler.decode_value(graveler_writer.encode_value(b"i" * 200, b"d" * 5000)) == (b"i" * 200, b"d" * 5000)
    for bad in (b"\x01", b"\x04ab", b"\x04abcd\x41"):  # negative length, short identity, short data
        with pytest.raises((ValueError, IndexError)):
            graveler.decode_value(bad)


_TABLE = _table(300)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=len(_TABLE) - 1), st.integers(min_value=1, max_value=255))
def test_any_single_byte_corruption_reads_or_fails_cleanly(pos, xor):
    data = bytearray(_TABLE)
    data[pos] ^= xor
    try:
        got = _read_all(bytes(data))
    except SSTableError:
        return
    # a flip that is not caught can only be in bytes no reader interprets (footer padding)
    assert got == _read_all(_TABLE)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_never_crash_the_reader(blob):
    with contextlib.suppress(SSTableError):
        _read_all(blob)
