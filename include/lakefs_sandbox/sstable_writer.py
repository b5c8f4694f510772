"""
Write RocksDB block-based tables as lakeFS does through pebble (reference 3.4.1).

Format v2, CRC32C, Snappy when it saves at least 1/8, 4 KiB blocks, restart interval 16, a
two-level index once the index passes 4 KiB, string user properties.

Used by the lakeFS emulator and the tests; the GC itself only reads tables
(``lakefs_gc.lakefs.sstable``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import BinaryIO

import cramjam
import crc32c as _crc32c

from lakefs_gc.lakefs.sstable import (
    BLOCK_TRAILER_LEN,
    INDEX_BINARY_SEARCH,
    INDEX_TWO_LEVEL,
    NO_COMPRESSION,
    PROP_INDEX_TYPE,
    PROPERTIES_BLOCK,
    ROCKSDB_MAGIC,
    SNAPPY_COMPRESSION,
    BlockHandle,
    mask_crc,
    put_uvarint,
    uvarint_bytes,
)

SET_TRAILER = b"\x01" + b"\x00" * 7  # seqnum 0, kind SET: what lakeFS writes for every key


def block_crc(contents: bytes, block_type: int) -> int:
    return mask_crc(_crc32c.crc32c(bytes((block_type,)), _crc32c.crc32c(contents)))


class _BlockBuilder:
    def __init__(self, restart_interval: int):
        self.restart_interval = restart_interval
        self.buf = bytearray()
        self.restarts: list[int] = []
        self.counter = 0
        self.last_key = b""
        self.entries = 0

    def add(self, key: bytes, value: bytes) -> None:
        buf = self.buf
        if self.counter % self.restart_interval == 0:
            self.restarts.append(len(buf))
            shared = 0
        else:
            last = self.last_key
            m = min(len(last), len(key))
            shared = 0
            while shared < m and last[shared] == key[shared]:
                shared += 1
        self.counter += 1
        put_uvarint(buf, shared)
        put_uvarint(buf, len(key) - shared)
        put_uvarint(buf, len(value))
        buf += key[shared:]
        buf += value
        self.last_key = key
        self.entries += 1

    def estimated_size(self) -> int:
        return len(self.buf) + 4 * (len(self.restarts) + 1)

    def finish(self) -> bytes:
        restarts = self.restarts or [0]
        return bytes(self.buf) + struct.pack(f"<{len(restarts)}I", *restarts) + struct.pack("<I", len(restarts))

    def empty(self) -> bool:
        return self.entries == 0


class SSTableWriter:
    """
    Write a RocksDB v2 block-based table like pebble does for lakeFS (reference 3.4.1).

    Keys must be added in strictly increasing bytewise order; they are stored as internal keys
    with seqnum 0 / kind SET. ``finish(user_properties)`` writes index, properties, metaindex
    and footer, and returns the file's size.
    """

    def __init__(
        self,
        dst: BinaryIO,
        block_size: int = 4096,
        block_restart_interval: int = 16,
        block_size_threshold: int = 90,
        index_block_size: int = 4096,
        compression: bool = True,
    ):
        self._f = dst
        self.block_size = block_size
        self.size_threshold = (block_size * block_size_threshold + 99) // 100
        self.index_block_size = index_block_size
        self.restart_interval = block_restart_interval
        self.compression = compression
        self._offset = 0
        self._data = _BlockBuilder(block_restart_interval)
        self._index_parts: list[_BlockBuilder] = [_BlockBuilder(1)]
        self._last_key: bytes | None = None
        self.num_entries = 0
        self.raw_key_size = 0
        self.raw_value_size = 0
        self.num_data_blocks = 0
        self.data_size = 0
        self._finished = False

    def add(self, key: bytes, value: bytes) -> None:
        if self._finished:
            raise RuntimeError("SSTableWriter.add after finish")
        if self._last_key is not None and key <= self._last_key:
            raise ValueError(f"keys must be strictly increasing: {key!r} after {self._last_key!r}")
        ikey = key + SET_TRAILER
        if self._should_flush(len(ikey), len(value)):
            self._flush_data_block()
        self._data.add(ikey, value)
        self._last_key = key
        self.num_entries += 1
        self.raw_key_size += len(ikey)
        self.raw_value_size += len(value)

    def _should_flush(self, klen: int, vlen: int) -> bool:
        # pebble's sstable.shouldFlush: flush at the target size; between the threshold and the
        # target, flush if the next entry would take the block over the target.
        if self._data.empty():
            return False
        size = self._data.estimated_size()
        if size >= self.block_size:
            return True
        if size < self.size_threshold:
            return False
        new_size = size + klen + vlen + 3 * 5 + (4 if self._data.counter % self.restart_interval == 0 else 0)
        return new_size > self.block_size

    def _write_block(self, contents: bytes, allow_compression: bool) -> BlockHandle:
        btype = NO_COMPRESSION
        if allow_compression and self.compression:
            compressed = bytes(cramjam.snappy.compress_raw(contents))
            if len(compressed) < len(contents) - len(contents) // 8:
                contents, btype = compressed, SNAPPY_COMPRESSION
        handle = BlockHandle(self._offset, len(contents))
        trailer = bytes((btype,)) + struct.pack("<I", block_crc(contents, btype))
        self._f.write(contents)
        self._f.write(trailer)
        self._offset += len(contents) + BLOCK_TRAILER_LEN
        return handle

    def _flush_data_block(self) -> None:
        if self._data.empty():
            return
        last = self._data.last_key
        handle = self._write_block(self._data.finish(), True)
        self.num_data_blocks += 1
        self.data_size += handle.size + BLOCK_TRAILER_LEN
        part = self._index_parts[-1]
        # A new index partition once the current one passes the index block size (pebble's
        # IndexBlockSize): with more than one partition the index is two-level.
        if not part.empty() and part.estimated_size() >= self.index_block_size:
            part = _BlockBuilder(1)
            self._index_parts.append(part)
        part.add(last, handle.encode())
        self._data = _BlockBuilder(self.restart_interval)

    def finish(self, user_properties: dict[str, str] | None = None) -> int:
        if self._finished:
            raise RuntimeError("SSTableWriter.finish called twice")
        self._flush_data_block()
        self._finished = True
        two_level = len(self._index_parts) > 1
        if two_level:
            top = _BlockBuilder(1)
            index_size = 0
            for part in self._index_parts:
                h = self._write_block(part.finish(), False)
                index_size += h.size + BLOCK_TRAILER_LEN
                top.add(part.last_key, h.encode())
            top_contents = top.finish()
            top_level_size = len(top_contents)
            index_contents = top_contents
        else:
            index_contents = self._index_parts[0].finish()
            index_size = 0
            top_level_size = 0
        # pebble writes the properties block before the index block.
        props: dict[bytes, bytes] = {}
        for name, value in (user_properties or {}).items():
            props[name.encode()] = value.encode() if isinstance(value, str) else bytes(value)
        varints = {
            b"rocksdb.num.entries": self.num_entries,
            b"rocksdb.raw.key.size": self.raw_key_size,
            b"rocksdb.raw.value.size": self.raw_value_size,
            b"rocksdb.data.size": self.data_size,
            b"rocksdb.num.data.blocks": self.num_data_blocks,
            b"rocksdb.filter.size": 0,
            b"rocksdb.deleted.keys": 0,
            b"rocksdb.merge.operands": 0,
            b"rocksdb.num.range-deletions": 0,
            b"rocksdb.format.version": 0,
            b"rocksdb.fixed.key.length": 0,
            b"rocksdb.column.family.id": 0x7FFFFFFF,
            b"rocksdb.index.key.is.user.key": 0,
            b"rocksdb.index.value.is.delta.encoded": 0,
            b"rocksdb.creation.time": 0,
            b"rocksdb.oldest.key.time": 0,
            b"rocksdb.external_sst_file.global_seqno": 0,
            # index.size covers all index blocks (partitions + top level), set below
        }
        if two_level:
            varints[b"rocksdb.index.partitions"] = len(self._index_parts)
            varints[b"rocksdb.top-level.index.size"] = top_level_size
            varints[b"rocksdb.index.size"] = index_size + top_level_size + BLOCK_TRAILER_LEN
        else:
            varints[b"rocksdb.index.size"] = len(index_contents) + BLOCK_TRAILER_LEN
        for k, v in varints.items():
            props[k] = uvarint_bytes(v)
        props[PROP_INDEX_TYPE] = struct.pack("<I", INDEX_TWO_LEVEL if two_level else INDEX_BINARY_SEARCH)
        props[b"rocksdb.comparator"] = b"leveldb.BytewiseComparator"
        props[b"rocksdb.merge.operator"] = b"pebble.concatenate"
        props[b"rocksdb.compression"] = b"Snappy" if self.compression else b"NoCompression"
        props[b"rocksdb.property.collectors"] = b"[static]" if user_properties else b"[]"
        props[b"rocksdb.prefix.extractor.name"] = b"nullptr"
        props[b"rocksdb.column.family.name"] = b""
        props[b"rocksdb.compression_options"] = (
            b"window_bits=-14; level=32767; strategy=0; max_dict_bytes=0; zstd_max_train_bytes=0; enabled=0; "
        )
        # pebble marks its tables as external files (version 2, global seqno 0), like RocksDB's
        # SstFileWriter; RocksDB rejects a global seqno property without the version.
        props[b"rocksdb.external_sst_file.version"] = struct.pack("<I", 2)
        props[b"rocksdb.block.based.table.prefix.filtering"] = b"0"
        props[b"rocksdb.block.based.table.whole.key.filtering"] = b"0"
        pb = _BlockBuilder(self.restart_interval)
        for k in sorted(props):
            pb.add(k, props[k])
        props_handle = self._write_block(pb.finish(), False)
        index_handle = self._write_block(index_contents, False)
        mb = _BlockBuilder(self.restart_interval)
        mb.add(PROPERTIES_BLOCK, props_handle.encode())
        metaindex_handle = self._write_block(mb.finish(), False)
        handles = metaindex_handle.encode() + index_handle.encode()
        footer = bytes((1,)) + handles + b"\x00" * (40 - len(handles)) + struct.pack("<I", 2) + ROCKSDB_MAGIC
        self._f.write(footer)
        self._offset += len(footer)
        return self._offset


def write_table(
    dst: BinaryIO, records: Iterable[tuple[bytes, bytes]], user_properties: dict[str, str] | None = None, **options
) -> int:
    """Write sorted (key, value) records as one table; returns the number of bytes written."""
    w = SSTableWriter(dst, **options)
    for k, v in records:
        w.add(k, v)
    return w.finish(user_properties)
