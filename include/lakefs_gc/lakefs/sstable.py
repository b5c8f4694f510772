"""
RocksDB block-based tables as lakeFS writes them through pebble (reference 3.4.1-3.4.2).

Reader: footer (format version 2, RocksDB magic) -> metaindex -> properties -> index (type 0, or
type 2 two-level) -> data blocks, each checked against its masked CRC32C and decompressed (none or
Snappy). Keys are internal keys; the 8-byte trailer is checked (kind SET) and stripped. Entries are
produced one data block at a time, so memory does not grow with the file.

The writer (for the emulator and tests) is ``lakefs_sandbox.sstable_writer``; the GC only reads.

Every refusal is an ``SSTableError`` naming the file and what is wrong: nothing here guesses.
"""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Iterator
from typing import IO

import cramjam
import crc32c as _crc32c

ROCKSDB_MAGIC = bytes.fromhex("f7cff485b741e288")  # 0x88e241b785f4cff7 little-endian
LEVELDB_MAGIC = bytes.fromhex("57fb808b247547db")  # 0xdb4775248b80fb57 little-endian
FOOTER_LEN = 53  # checksum type (1) + two handles padded to 40 + format version (4) + magic (8)
BLOCK_TRAILER_LEN = 5  # compression type (1) + masked crc32c (4)

CHECKSUM_NAMES = {0: "none", 1: "CRC32C", 2: "xxHash", 3: "xxHash64", 4: "XXH3"}
COMPRESSION_NAMES = {0: "none", 1: "Snappy", 2: "zlib", 3: "bzip2", 4: "LZ4", 5: "LZ4HC", 6: "xpress", 7: "zstd"}
NO_COMPRESSION, SNAPPY_COMPRESSION = 0, 1
INDEX_BINARY_SEARCH, INDEX_HASH_SEARCH, INDEX_TWO_LEVEL = 0, 1, 2
KIND_SET = 1

PROPERTIES_BLOCK = b"rocksdb.properties"
PROP_INDEX_TYPE = b"rocksdb.block.based.table.index.type"
# rocksdb.* numeric properties are varints; the index type is a fixed32 (reference 3.4.2).
_FIXED32_PROPS = {PROP_INDEX_TYPE, b"rocksdb.external_sst_file.version"}
_VARINT_PROPS = {
    b"rocksdb.data.size",
    b"rocksdb.index.size",
    b"rocksdb.filter.size",
    b"rocksdb.raw.key.size",
    b"rocksdb.raw.value.size",
    b"rocksdb.num.data.blocks",
    b"rocksdb.num.entries",
    b"rocksdb.deleted.keys",
    b"rocksdb.merge.operands",
    b"rocksdb.num.range-deletions",
    b"rocksdb.format.version",
    b"rocksdb.fixed.key.length",
    b"rocksdb.column.family.id",
    b"rocksdb.index.partitions",
    b"rocksdb.top-level.index.size",
    b"rocksdb.index.key.is.user.key",
    b"rocksdb.index.value.is.delta.encoded",
    b"rocksdb.creation.time",
    b"rocksdb.oldest.key.time",
    b"rocksdb.file.creation.time",
    b"rocksdb.external_sst_file.global_seqno",
}


class SSTableError(Exception):
    """A table that cannot be read safely. ``path`` names the file, ``reason`` what is wrong."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class NotRocksDBTableError(SSTableError):
    """Bad magic: not a RocksDB block-based table."""


class LevelDBTableError(NotRocksDBTableError):
    """A LevelDB table (legacy 48-byte footer and magic); lakeFS never writes these."""


class TruncatedTableError(SSTableError):
    """The file is empty or shorter than a handle in it says."""


class ChecksumMismatchError(SSTableError):
    """A block's masked CRC32C does not match its contents."""

    def __init__(self, path: str, reason: str, offset: int):
        super().__init__(path, reason)
        self.offset = offset


class UnsupportedFormatError(SSTableError):
    """A valid table using a feature lakeFS does not write (checksum, compression, index type...)."""


class CorruptBlockError(SSTableError):
    """A block whose structure is inconsistent (bad varints, restarts, handles)."""


def mask_crc(crc: int) -> int:
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def put_uvarint(out: bytearray, v: int) -> None:
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def uvarint_bytes(v: int) -> bytes:
    out = bytearray()
    put_uvarint(out, v)
    return bytes(out)


def get_uvarint(buf: bytes, pos: int, end: int | None = None) -> tuple[int, int]:
    """Decode an unsigned varint at ``pos``; returns (value, new position). Raises ValueError."""
    if end is None:
        end = len(buf)
    result = 0
    shift = 0
    while pos < end:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 64 bits")
    raise ValueError("varint runs past the end of the buffer")


class BlockHandle(tuple[int, int]):
    """Where a block lies in the file: (offset, size)."""

    __slots__ = ()

    def __new__(cls, offset: int, size: int) -> BlockHandle:
        return tuple.__new__(cls, (offset, size))

    @property
    def offset(self) -> int:
        return self[0]

    @property
    def size(self) -> int:
        return self[1]

    def encode(self) -> bytes:
        return uvarint_bytes(self[0]) + uvarint_bytes(self[1])

    @classmethod
    def decode(cls, buf: bytes, pos: int = 0) -> tuple[BlockHandle, int]:
        off, pos = get_uvarint(buf, pos)
        size, pos = get_uvarint(buf, pos)
        return cls(off, size), pos


def iter_block_entries(block: bytes, path: str = "<block>", offset: int = 0) -> list[tuple[bytes, bytes]]:
    """
    Decode one block (data, index, metaindex or properties): prefix-compressed keys with restarts.

    Returns the list of (key, value) of the block. Keys are as stored (internal keys for data and
    index blocks). The structure is checked: a corrupt block raises ``CorruptBlockError``.
    """
    n = len(block)
    if n < 4:
        raise CorruptBlockError(path, f"block at offset {offset} is too short ({n} bytes)")
    (num_restarts,) = struct.unpack_from("<I", block, n - 4)
    if num_restarts & 0x80000000:
        raise UnsupportedFormatError(
            path, f"block at offset {offset} uses a data-block hash index (not written by lakeFS)"
        )
    limit = n - 4 - 4 * num_restarts
    if num_restarts == 0 or limit < 0:
        raise CorruptBlockError(path, f"block at offset {offset} has an invalid restart count {num_restarts}")
    out: list[tuple[bytes, bytes]] = []
    append = out.append
    pos = 0
    key = b""
    try:
        while pos < limit:
            # Three varints; one byte each in the common case.
            shared = block[pos]
            if shared < 0x80:
                pos += 1
            else:
                shared, pos = get_uvarint(block, pos, limit)
            unshared = block[pos]
            if unshared < 0x80:
                pos += 1
            else:
                unshared, pos = get_uvarint(block, pos, limit)
            vlen = block[pos]
            if vlen < 0x80:
                pos += 1
            else:
                vlen, pos = get_uvarint(block, pos, limit)
            kend = pos + unshared
            vend = kend + vlen
            if shared > len(key) or vend > limit:
                raise CorruptBlockError(path, f"block at offset {offset}: entry at byte {pos} overruns the block")
            key = key[:shared] + block[pos:kend] if shared else block[pos:kend]
            append((key, block[kend:vend]))
            pos = vend
    except (IndexError, ValueError) as exc:
        raise CorruptBlockError(path, f"block at offset {offset}: malformed entry ({exc})") from None
    return out


def _decode_properties(raw: list[tuple[bytes, bytes]]) -> dict[str, object]:
    props: dict[str, object] = {}
    for k, v in raw:
        if k in _FIXED32_PROPS and len(v) == 4:
            props[k.decode()] = struct.unpack("<I", v)[0]
        elif k in _VARINT_PROPS:
            try:
                props[k.decode()] = get_uvarint(v, 0)[0]
            except ValueError:
                props[k.decode()] = v
        else:
            try:
                props[k.decode()] = v.decode()
            except UnicodeDecodeError:
                props[k.decode("latin-1")] = v
    return props


class SSTableReader:
    """
    A streaming reader over one table. ``source`` is a path or a seekable binary file object.

    Opening reads the footer, the metaindex, the properties and the top-level index; data blocks
    are read on demand by ``iter_blocks()`` / iteration.
    """

    def __init__(
        self, source: str | os.PathLike[str] | IO[bytes], name: str | None = None, verify_checksums: bool = True
    ):
        if isinstance(source, (str, os.PathLike)):
            self.path = name or os.fspath(source)
            self._f: IO[bytes] = open(source, "rb")
            self._owns = True
        else:
            self.path = name if name else getattr(source, "name", "<stream>")  # not `or`: mypy would type that Optional
            self._f = source
            self._owns = False
        self.verify_checksums = verify_checksums
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    # -- context manager -------------------------------------------------------------------
    def close(self) -> None:
        if self._owns:
            self._f.close()

    def __enter__(self) -> SSTableReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- opening ---------------------------------------------------------------------------
    def _open(self) -> None:
        f = self._f
        f.seek(0, io.SEEK_END)
        self.file_size = size = f.tell()
        if size == 0:
            raise TruncatedTableError(self.path, "empty file (0 bytes): not an SSTable")
        if size >= 8:
            f.seek(size - 8)
            magic = f.read(8)
            if magic == LEVELDB_MAGIC:
                raise LevelDBTableError(
                    self.path, "LevelDB table (magic 57fb808b247547db): lakeFS tables are RocksDB format version 2"
                )
            if magic != ROCKSDB_MAGIC:
                if size < FOOTER_LEN:
                    raise TruncatedTableError(
                        self.path,
                        f"file of {size} bytes is shorter than a table footer ({FOOTER_LEN}) and has no table magic",
                    )
                raise NotRocksDBTableError(
                    self.path,
                    f"bad magic {magic.hex()} (expected RocksDB {ROCKSDB_MAGIC.hex()}): not an SSTable, or truncated",
                )
        if size < FOOTER_LEN:
            raise TruncatedTableError(self.path, f"file of {size} bytes is shorter than a table footer ({FOOTER_LEN})")
        f.seek(size - FOOTER_LEN)
        footer = f.read(FOOTER_LEN)
        checksum_type = footer[0]
        (self.format_version,) = struct.unpack_from("<I", footer, FOOTER_LEN - 12)
        if self.format_version not in (1, 2):
            raise UnsupportedFormatError(
                self.path, f"table format version {self.format_version} is not supported (lakeFS writes version 2)"
            )
        if checksum_type != 1:
            raise UnsupportedFormatError(
                self.path,
                f"checksum type {checksum_type} ({CHECKSUM_NAMES.get(checksum_type, 'unknown')}) is not supported: only CRC32C",
            )
        try:
            self.metaindex_handle, pos = BlockHandle.decode(footer, 1)
            self.index_handle, _ = BlockHandle.decode(footer, pos)
        except ValueError as exc:
            raise CorruptBlockError(self.path, f"footer block handles are malformed ({exc})") from None
        data_end = size - FOOTER_LEN
        for what, h in (("metaindex", self.metaindex_handle), ("index", self.index_handle)):
            if h.offset + h.size + BLOCK_TRAILER_LEN > data_end:
                raise TruncatedTableError(
                    self.path,
                    f"{what} block handle (offset {h.offset}, size {h.size}) points past the end of a {size}-byte file: truncated?",
                )

        meta = iter_block_entries(self.read_block(self.metaindex_handle), self.path, self.metaindex_handle.offset)
        try:
            self.meta_blocks = {k.decode("latin-1"): BlockHandle.decode(v)[0] for k, v in meta}
        except ValueError:
            raise CorruptBlockError(self.path, "metaindex block has a malformed block handle") from None
        props_handle = self.meta_blocks.get(PROPERTIES_BLOCK.decode())
        if props_handle is None:
            raise CorruptBlockError(self.path, "metaindex has no rocksdb.properties block")
        self.properties = _decode_properties(
            iter_block_entries(self.read_block(props_handle), self.path, props_handle.offset)
        )
        self.index_type = self.properties.get(PROP_INDEX_TYPE.decode(), INDEX_BINARY_SEARCH)
        if self.index_type not in (INDEX_BINARY_SEARCH, INDEX_HASH_SEARCH, INDEX_TWO_LEVEL):
            raise UnsupportedFormatError(
                self.path, f"index type {self.index_type} is not supported (0 binary search, 2 two-level)"
            )
        # A hash-search index (1) keeps an ordinary binary-search index block; the hash is a side structure.
        self._top_index = self._decode_index(self.index_handle)

    def _decode_index(self, handle: BlockHandle) -> list[tuple[bytes, BlockHandle]]:
        out = []
        for k, v in iter_block_entries(self.read_block(handle), self.path, handle.offset):
            try:
                h, _ = BlockHandle.decode(v)
            except ValueError:
                raise CorruptBlockError(
                    self.path, f"index block at offset {handle.offset} has a malformed block handle"
                ) from None
            out.append((k, h))
        return out

    # -- blocks ----------------------------------------------------------------------------
    def read_raw_block(self, handle: BlockHandle) -> tuple[bytes, int]:
        """Read a block and its trailer, check the CRC; returns (stored bytes, compression type)."""
        off, n = handle
        if off + n + BLOCK_TRAILER_LEN > self.file_size - FOOTER_LEN:
            raise TruncatedTableError(
                self.path, f"block at offset {off} (size {n}) runs past the end of the file: truncated?"
            )
        self._f.seek(off)
        buf = self._f.read(n + BLOCK_TRAILER_LEN)
        if len(buf) != n + BLOCK_TRAILER_LEN:
            raise TruncatedTableError(self.path, f"short read of block at offset {off}: truncated?")
        btype = buf[n]
        if self.verify_checksums:
            (stored,) = struct.unpack_from("<I", buf, n + 1)
            actual = mask_crc(_crc32c.crc32c(memoryview(buf)[: n + 1]))
            if stored != actual:
                raise ChecksumMismatchError(
                    self.path,
                    f"CRC32C mismatch in block at offset {off} (size {n}): stored {stored:08x}, computed {actual:08x}",
                    off,
                )
        return buf[:n], btype

    def read_block(self, handle: BlockHandle) -> bytes:
        raw, btype = self.read_raw_block(handle)
        if btype == NO_COMPRESSION:
            return raw
        if btype == SNAPPY_COMPRESSION:
            try:
                return bytes(cramjam.snappy.decompress_raw(raw))
            except Exception as exc:  # cramjam raises its own error types
                raise CorruptBlockError(
                    self.path, f"Snappy block at offset {handle.offset} does not decompress ({exc})"
                ) from None
        raise UnsupportedFormatError(
            self.path,
            f"block at offset {handle.offset} uses compression type {btype} ({COMPRESSION_NAMES.get(btype, 'unknown')}): only none and Snappy are supported",
        )

    def data_block_handles(self) -> Iterator[BlockHandle]:
        """Yield the handles of the data blocks in key order (a two-level index is expanded lazily)."""
        if self.index_type == INDEX_TWO_LEVEL:
            for _, part in self._top_index:
                for _, h in self._decode_index(part):
                    yield h
        else:
            for _, h in self._top_index:
                yield h

    def iter_blocks(self) -> Iterator[list[tuple[bytes, bytes]]]:
        """Yield the (user key, value) pairs of each data block, one block at a time."""
        path = self.path
        for h in self.data_block_handles():
            entries = iter_block_entries(self.read_block(h), path, h.offset)
            out: list[tuple[bytes, bytes]] = []
            append = out.append
            for ikey, value in entries:
                if len(ikey) < 8:
                    raise CorruptBlockError(
                        path, f"block at offset {h.offset}: key shorter than the 8-byte internal-key trailer"
                    )
                if ikey[-8] != KIND_SET:
                    raise UnsupportedFormatError(
                        path,
                        f"block at offset {h.offset}: key kind {ikey[-8]} is not SET (1); deletions are not expected in a lakeFS table",
                    )
                append((ikey[:-8], value))
            yield out

    def __iter__(self) -> Iterator[tuple[bytes, bytes]]:
        for block in self.iter_blocks():
            yield from block

    @property
    def user_properties(self) -> dict[str, str]:
        """Properties that are not ``rocksdb.*`` (lakeFS's static collector writes these)."""
        return {k: v for k, v in self.properties.items() if not k.startswith("rocksdb.") and isinstance(v, str)}
