"""
rs/xid ids as lakeFS uses them (reference 2.2-2.3).

12 bytes: 4-byte big-endian unix seconds | 3-byte machine id | 2-byte pid | 3-byte counter, printed
as 20 lowercase base32hex characters (order-preserving). lakeFS's *descending* ids (data slices,
GC run ids) use the time ``(64060588800 - now) mod 2**32``, so newer ids sort first.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import os
import socket
import struct
import threading

UNIX_YEAR_4000 = 64060588800

_machine = hashlib.md5(socket.gethostname().encode()).digest()[:3]
_pid = struct.pack(">H", os.getpid() & 0xFFFF)
_lock = threading.Lock()
_counter = itertools.count(int.from_bytes(os.urandom(3), "big"))


def xid_from_parts(seconds: int, machine: bytes = _machine, pid: bytes = _pid, counter: int | None = None) -> str:
    if counter is None:
        with _lock:
            counter = next(_counter)
    raw = struct.pack(">I", seconds & 0xFFFFFFFF) + machine + pid + (counter & 0xFFFFFF).to_bytes(3, "big")
    return base64.b32hexencode(raw).decode("ascii").lower()[:20]


def new_xid(now: float) -> str:
    """Return an ascending xid at time ``now`` (object names, uncommitted parquet file names)."""
    return xid_from_parts(int(now))


def new_descending_xid(now: float) -> str:
    """LakeFS's descending id (slices, run ids): xid time = (64060588800 - now) truncated to uint32."""
    return xid_from_parts(UNIX_YEAR_4000 - int(now))


def xid_raw_seconds(xid: str) -> int:
    """Return the 4-byte time field of an xid."""
    if len(xid) != 20:
        raise ValueError(f"not an xid: {xid!r}")
    raw = base64.b32hexdecode(xid.upper() + "====")
    return struct.unpack(">I", raw[:4])[0]


def xid_time(xid: str) -> int:
    """Creation time (unix seconds) of an ascending xid."""
    return xid_raw_seconds(xid)


def descending_xid_time(xid: str) -> int:
    """Creation time of a descending xid, for dates 1966-2102 (reference 2.3)."""
    return UNIX_YEAR_4000 - (xid_raw_seconds(xid) + 14 * 2**32)
