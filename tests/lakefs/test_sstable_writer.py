"""Writer: round trips through our reader (property-based) and through RocksDB's sst_dump."""

from __future__ import annotations

import io
import os

from hypothesis import HealthCheck, given, settings, strategies as st

from lakefs_gc.lakefs import graveler
from lakefs_gc.lakefs.graveler import Entry
from lakefs_gc.lakefs.sstable import INDEX_BINARY_SEARCH, INDEX_TWO_LEVEL, SNAPPY_COMPRESSION, SSTableReader
from lakefs_sandbox import graveler_writer
from lakefs_sandbox.sstable_writer import write_table
from tests.support import sstdump
from tests.support.golden import LAKEFS_SST, require_golden


def _roundtrip(records, **opts):
    buf = io.BytesIO()
    write_table(buf, records, {"type": "test"}, **opts)
    buf.seek(0)
    r = SSTableReader(buf, name="<memory>")
    return r, list(r)


keys = st.lists(st.binary(min_size=0, max_size=40), unique=True, max_size=300).map(sorted)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keys, st.data())
def test_random_keys_and_values_round_trip(ks, data):
    values = [data.draw(st.binary(max_size=200)) for _ in ks]  # includes empty values
    records = list(zip(ks, values))
    r, got = _roundtrip(records)
    assert got == records
    assert r.properties["rocksdb.num.entries"] == len(records)
    assert r.user_properties == {"type": "test"}


@settings(max_examples=60, deadline=None)
@given(
    st.binary(min_size=0, max_size=300),
    st.lists(st.binary(max_size=8), unique=True, min_size=1, max_size=200),
    st.integers(min_value=64, max_value=1024),
    st.integers(min_value=1, max_value=32),
)
def test_long_shared_prefixes_small_blocks_and_restart_intervals(prefix, suffixes, block_size, restart):
    records = [(prefix + s, s * 3) for s in sorted(suffixes)]
    records.sort()
    r, got = _roundtrip(records, block_size=block_size, block_restart_interval=restart, index_block_size=128)
    assert got == records


def test_many_blocks_and_a_two_level_index_at_default_settings():
    records = [(b"some/long/common/prefix/%09d" % i, os.urandom(20) * 3) for i in range(40_000)]
    r, got = _roundtrip(records)
    assert got == records
    assert r.index_type == INDEX_TWO_LEVEL  # the index passed 4 KiB
    assert r.properties["rocksdb.num.data.blocks"] > 500
    assert r.properties["rocksdb.index.partitions"] > 1


def test_small_table_has_a_one_level_index_and_no_compression_when_it_does_not_help():
    r, got = _roundtrip([(b"k", os.urandom(100))])
    assert got == [(b"k", got[0][1])]
    assert r.index_type == INDEX_BINARY_SEARCH


def test_compressible_blocks_are_snappy():
    records = [(b"key%06d" % i, b"a" * 100) for i in range(200)]
    buf = io.BytesIO()
    write_table(buf, records)
    buf.seek(0)
    r = SSTableReader(buf)
    first = next(r.data_block_handles())
    assert r.read_raw_block(first)[1] == SNAPPY_COMPRESSION
    assert list(r) == records


def test_empty_table_round_trips():
    r, got = _roundtrip([])
    assert got == []


def _entries(n, prefix="data/gqv3epl4fd2o8m3men70/"):
    return [
        (
            b"path/to/object-%07d" % i,
            Entry(
                f"{prefix}c{i:019d}",
                i * 7,
                f"{i:032x}",
                1_700_000_000 + i,
                i % 1_000_000_000,
                {"k": str(i)} if i % 3 == 0 else {},
                graveler.RELATIVE,
                "text/plain" if i % 2 else "",
            ),
        )
        for i in range(n)
    ]


def test_graveler_range_and_metarange_round_trip_with_ids_matching_file_names(tmp_path):
    ranges = []
    chunks = [_entries(5000)[i : i + 1000] for i in range(0, 5000, 1000)]
    for chunk in chunks:
        info, data = graveler_writer.range_to_bytes(chunk)
        (tmp_path / info.id).write_bytes(data)
        ranges.append(info)
    mid, data = graveler_writer.metarange_to_bytes(ranges)
    (tmp_path / mid).write_bytes(data)

    with SSTableReader(tmp_path / mid) as r:
        assert graveler_writer.recompute_id(r) == mid
        listed = [rng for _, rng in graveler.iter_metarange(r)]
    assert [x.id for x in listed] == [x.id for x in ranges]
    got = []
    for rng in listed:
        with SSTableReader(tmp_path / rng.id) as r:
            assert graveler_writer.recompute_id(r) == rng.id
            assert r.user_properties["count"] == str(rng.count)
            got.extend((x.key, x.entry) for x in graveler.iter_range(r))
    assert got == [kv for c in chunks for kv in c]


def test_rewriting_lakefs_ranges_reproduces_their_ids():
    require_golden()
    for name, prefix in (("range.sst", "a83af763"), ("range-56569996.sst", "56569996")):
        with SSTableReader(LAKEFS_SST / name) as r:
            recs = [(x.key, x.entry) for x in graveler.iter_range(r)]
        info, data = graveler_writer.range_to_bytes(recs)
        assert info.id.startswith(prefix)
        r2 = SSTableReader(io.BytesIO(data))
        assert [(x.key, x.entry) for x in graveler.iter_range(r2)] == recs


# --- read back by an implementation that is not ours: RocksDB's sst_dump ---------------------


def test_sst_dump_reads_our_plain_tables(tmp_path):
    records = [(b"k%05d" % i, (b"v" * (i % 50))) for i in range(3000)]  # includes empty values
    path = tmp_path / "plain.sst"
    with open(path, "wb") as f:
        write_table(f, records)
    assert sstdump.scan(str(path)) == records


def test_sst_dump_reads_our_two_level_graveler_range(tmp_path):
    recs = _entries(30_000)
    info, data = graveler_writer.range_to_bytes(recs)
    path = tmp_path / info.id
    path.write_bytes(data)
    with SSTableReader(path) as r:
        assert r.index_type == INDEX_TWO_LEVEL
        assert graveler_writer.recompute_id(r) == path.name
    scanned = sstdump.scan(str(path))
    assert scanned == [(k, graveler_writer.entry_value(e)) for k, e in recs]
    props = sstdump.properties(str(path))
    assert "# index partitions" in props
    assert "[static]" in props


def test_sst_dump_reads_our_metarange(tmp_path):
    infos = []
    for chunk in (_entries(10)[:5], _entries(10)[5:]):
        info, _ = graveler_writer.range_to_bytes(chunk)
        infos.append(info)
    mid, data = graveler_writer.metarange_to_bytes(infos)
    path = tmp_path / mid
    path.write_bytes(data)
    scanned = sstdump.scan(str(path))
    assert [k for k, _ in scanned] == [i.max_key for i in infos]
    assert [graveler.decode_value(v)[0].decode() for _, v in scanned] == [i.id for i in infos]


def test_reading_memory_does_not_grow_with_file_size(tmp_path):
    import tracemalloc

    def peak_for(n):
        path = tmp_path / f"t{n}.sst"
        with open(path, "wb") as f:
            graveler_writer.write_range(f, ((b"k/%09d" % i, Entry(f"data/s/{i:020d}", i, "e" * 32)) for i in range(n)))
        tracemalloc.start()
        count = 0
        with SSTableReader(path) as r:
            for block in graveler.iter_range_addresses(r):
                count += len(block)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert count == n
        return peak, path.stat().st_size

    small_peak, small_size = peak_for(20_000)
    big_peak, big_size = peak_for(200_000)
    assert big_size > 9 * small_size
    assert big_peak < 2 * small_peak, (small_peak, big_peak)
