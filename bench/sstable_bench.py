"""SSTable decoding throughput, beside a floor measured in the same run.

    .venv/bin/python -m bench sstable            (or: make bench)

Floor: read and decompress every data block (CRC checked) without parsing entries.
Then: block parsing (keys/values), full graveler decoding (value + protobuf catalog.Entry into
Entry objects), and the GC path (address and address type only). One core, best of N runs.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from lakefs_gc.lakefs import graveler
from lakefs_gc.lakefs.graveler import Entry
from lakefs_gc.lakefs.sstable import SSTableReader, iter_block_entries
from lakefs_sandbox import graveler_writer

GOLDEN = Path(os.environ.get("LAKEFS_GC_GOLDEN", Path(__file__).resolve().parents[1] / "tests" / "golden"))


def _best(fn, repeat):
    best = float("inf")
    result = None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


def floor(path):
    with SSTableReader(path) as r:
        n = 0
        for h in r.data_block_handles():
            n += len(r.read_block(h))
        return n


def blocks_only(path):
    with SSTableReader(path) as r:
        n = 0
        for h in r.data_block_handles():
            n += len(iter_block_entries(r.read_block(h), r.path, h.offset))
        return n


def full_graveler(path):
    with SSTableReader(path) as r:
        n = 0
        for _ in graveler.iter_range(r):
            n += 1
        return n


def gc_addresses(path):
    with SSTableReader(path) as r:
        return sum(len(b) for b in graveler.iter_range_addresses(r))


def bench_file(label, path, entries, repeat):
    print(
        f"\n{label}: {path.name if hasattr(path, 'name') else path} ({os.path.getsize(path):,} bytes, {entries:,} entries)"
    )
    t_floor, _ = _best(lambda: floor(path), repeat)
    print(
        f"  {'floor: read+CRC+decompress blocks':42s} {t_floor * 1000:9.1f} ms  {entries / t_floor:13,.0f} entries/s  1.00x floor time"
    )
    for name, fn in (
        ("block parsing (keys+values)", blocks_only),
        ("full graveler decoding (Entry objects)", full_graveler),
        ("GC path (address, address_type)", gc_addresses),
    ):
        t, n = _best(lambda fn=fn: fn(path), repeat)
        assert n == entries, (name, n, entries)
        print(f"  {name:42s} {t * 1000:9.1f} ms  {entries / t:13,.0f} entries/s  {t / t_floor:5.2f}x floor time")


def main(argv: list[str] | None = None) -> None:
    golden = GOLDEN / "lakefs-sst" / "range-56569996.sst"
    bench_file("lakeFS production range", golden, 13868, repeat=7)
    n = 1_000_000
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "synthetic.sst"
        t = time.perf_counter()
        with open(path, "wb") as f:
            info = graveler_writer.write_range(
                f,
                (
                    (
                        b"tables/events/date=2026-11-%02d/part-%07d.parquet" % (i * 28 // n + 1, i),
                        Entry(f"data/gqv3epl4fd2o8m3men70/c{i:019d}", 1000 + i, f"{i:032x}", 1_700_000_000 + i, 0),
                    )
                    for i in range(n)
                ),
            )
        tw = time.perf_counter() - t
        print(f"\nwriter: {n:,} entries in {tw:.1f} s ({n / tw:,.0f} entries/s), range id {info.id[:16]}...")
        bench_file("synthetic range written by our writer", path, n, repeat=2)


if __name__ == "__main__":
    main()
