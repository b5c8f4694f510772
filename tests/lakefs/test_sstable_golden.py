"""The reader on real files written by lakeFS (pebble) and by RocksDB (tests/golden/)."""

from __future__ import annotations

import pytest

from lakefs_gc.lakefs import graveler
from lakefs_gc.lakefs.graveler import FULL, RELATIVE
from lakefs_gc.lakefs.sstable import INDEX_TWO_LEVEL, LevelDBTableError, SSTableReader
from lakefs_sandbox.graveler_writer import entry_identity, recompute_id
from tests.support.golden import LAKEFS_SST, PEBBLE, h_txt_records, require_golden

require_golden()

H_TABLES = sorted(p.name for p in PEBBLE.glob("h*.sst"))


def test_all_seven_rocksdb_variants_are_present():
    assert len(H_TABLES) == 7


@pytest.mark.parametrize("name", H_TABLES)
def test_rocksdb_tables_read_back_h_txt_exactly(name):
    expected = h_txt_records()
    assert len(expected) == 1710
    with SSTableReader(PEBBLE / name) as r:
        got = list(r)
    assert got == expected  # same words, same counts, same order


def test_two_level_index_variant_uses_index_type_2():
    with SSTableReader(PEBBLE / "h.no-compression.two_level_index.sst") as r:
        assert r.index_type == INDEX_TWO_LEVEL


def test_leveldb_table_is_refused_with_the_leveldb_error():
    with pytest.raises(LevelDBTableError) as ei:
        SSTableReader(PEBBLE / "h.ldb")
    assert "h.ldb" in str(ei.value)
    assert "LevelDB" in str(ei.value)


def test_range_sst_decodes_to_the_two_documented_records():
    with SSTableReader(LAKEFS_SST / "range.sst") as r:
        assert graveler.table_type(r) == "ranges"
        recs = list(graveler.iter_range(r))
    assert [x.key for x in recs] == [b"a/b/c/no", b"a/b/c/yes"]
    no, yes = (x.entry for x in recs)
    assert (no.address, no.size, no.etag, no.last_modified_seconds, no.last_modified_nanos, no.address_type) == (
        "b0c968736d8f42a2b1c6284835f08226",
        11,
        "664c688b4ea9c56730daacfc3d70aeed",
        1628163584,
        471124555,
        RELATIVE,
    )
    assert (yes.address, yes.size, yes.etag, yes.last_modified_seconds, yes.last_modified_nanos, yes.address_type) == (
        "fdf87fcf9ec849f98514ddb7e041ad56",
        4,
        "eb4585ad9fe0426781ed7c49252f8225",
        1628163573,
        589644914,
        RELATIVE,
    )
    # each record's identity is the entry identity lakeFS computes
    assert all(x.identity == entry_identity(x.entry) for x in recs)


RANGE_ID = "a83af763ba098c15369d9d6d723731eb9ce18b8dfac4f88c6f1287e772393d0e"


def test_metarange_sst_decodes_to_its_one_record():
    with SSTableReader(LAKEFS_SST / "metarange.sst") as r:
        assert graveler.table_type(r) == "metaranges"
        recs = list(graveler.iter_metarange(r))
    assert len(recs) == 1
    key, rng = recs[0]
    assert key == b"a/b/c/yes"
    assert (rng.id, rng.min_key, rng.max_key, rng.estimated_size, rng.count) == (
        RANGE_ID,
        b"a/b/c/no",
        b"a/b/c/yes",
        1190,
        2,
    )


def test_recomputed_range_id_is_the_id_the_metarange_references():
    with SSTableReader(LAKEFS_SST / "range.sst") as r:
        assert recompute_id(r) == RANGE_ID
    with SSTableReader(LAKEFS_SST / "metarange.sst") as r:
        assert recompute_id(r) == "732d4016245c5547113e0cd0f1a588fc55e36c21f460ac670cca4396922f5c11"


def test_ok1_yields_105_records():
    with SSTableReader(LAKEFS_SST / "ok1.sst") as r:
        recs = list(graveler.iter_range(r))
    assert len(recs) == 105
    assert recs[0].key == b"first"
    assert recs[-1].key == b"xyzzy"


def test_production_range_reads_completely_and_its_id_matches_its_name():
    path = LAKEFS_SST / "range-56569996.sst"
    with SSTableReader(path) as r:
        assert r.index_type == INDEX_TWO_LEVEL
        recs = list(graveler.iter_range(r))
        assert recompute_id(r).startswith("56569996")
    assert len(recs) == 13868 == int(r.properties["count"])
    assert recs[0].key == b"common-crawl-hive-analysis/CC-MAIN-2014-23/part-m-01364.gz"
    assert recs[-1].key == b"phishing-domains/domains.csv"
    # an imported range: FULL addresses outside any namespace, plus one RELATIVE object
    types = [x.entry.address_type for x in recs]
    assert types.count(FULL) == 13867
    assert types.count(RELATIVE) == 1
    assert all(x.entry.address.startswith("s3://oz-repo/") for x in recs if x.entry.address_type == FULL)
    assert [x.key for x in recs] == sorted(x.key for x in recs)
    assert all(x.identity == entry_identity(x.entry) for x in recs)


def test_data_blocks_are_yielded_one_at_a_time():
    with SSTableReader(LAKEFS_SST / "range-56569996.sst") as r:
        sizes = [len(b) for b in r.iter_blocks()]
    assert len(sizes) == 1306
    assert sum(sizes) == 13868
    assert max(sizes) < 100
