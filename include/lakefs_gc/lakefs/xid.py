"""
rs/xid identifiers as lakeFS uses them for slices, objects and run ids (reference 2.2-2.3).

An xid is 12 bytes (4-byte big-endian seconds | machine | pid | counter) written as 20
characters of lowercase base32hex. Slice and run ids are *descending*: their seconds field holds
(64060588800 - t) truncated to 32 bits, so newer ids sort first.
"""

from __future__ import annotations

import re

_ALPHABET = "0123456789abcdefghijklmnopqrstuv"
_DECODE = {c: i for i, c in enumerate(_ALPHABET)}
XID_RE = re.compile(r"^[0-9a-v]{20}$")
UNIX_YEAR_4000 = 64060588800


def is_xid(s: str) -> bool:
    return bool(XID_RE.match(s))


def decode(s: str) -> bytes:
    if not is_xid(s):
        raise ValueError(f"not an xid: {s!r}")
    n = 0
    for c in s:
        n = (n << 5) | _DECODE[c]
    # 20 chars * 5 bits = 100 bits; the 96 id bits are the high ones
    return (n >> 4).to_bytes(12, "big")


def encode(raw: bytes) -> str:
    if len(raw) != 12:
        raise ValueError("an xid is 12 bytes")
    n = int.from_bytes(raw, "big") << 4
    return "".join(_ALPHABET[(n >> (5 * (19 - i))) & 31] for i in range(20))


def seconds_field(s: str) -> int:
    return int.from_bytes(decode(s)[:4], "big")


def ascending_time(s: str) -> int:
    """Unix seconds of an ordinary (ascending) xid, e.g. an object name."""
    return seconds_field(s)


def descending_time(s: str) -> int:
    """Unix seconds at which a descending xid (slice or run id) was made; valid for 1966-2102."""
    return UNIX_YEAR_4000 - (seconds_field(s) + 14 * 2**32)
