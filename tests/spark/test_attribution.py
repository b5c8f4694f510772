"""Where the bytes go on Spark's executors (lakefs_gc.listing.holders.spark_groups): the same groups, hence the
same report, as the one-process reading (lakefs_gc.listing.holders, itself judged by the API oracle
in tests/listing/test_holders.py), on random histories built on the emulator: with a run's deleted
candidates, and with none given (every old unreferenced object, as ``lakefs-gc space`` counts)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lakefs_gc.gc.attribution import TAG, Holders, attribute, bit_numbers, commit_holders
from lakefs_gc.lakefs.client import LakeFSClient
from lakefs_gc.listing.holders import address_masks, groups, range_masks, spark_groups, staged_masks
from lakefs_gc.listing.uncommitted import api_staged
from lakefs_gc.spark.runtime import StorageRef
from tests.listing.test_holders import _build
from tests.support import history

pytestmark = pytest.mark.spark


def test_bits_are_the_holder_numbers_of_a_set():
    assert bit_numbers(0) == []
    assert bit_numbers(0b1011) == [0, 1, 3]
    assert bit_numbers(1 << 200) == [200]  # any number of holders


def test_the_executors_sum_the_namespace_as_one_process_does(spark, lakefs_emulator):
    emu = lakefs_emulator
    client, name, roots, storage, histories = _build(emu, list(range(300, 310)))
    now = datetime.now(UTC) + timedelta(seconds=2)
    listed = [(o.key, o.size, int(o.last_modified * 1000)) for o in storage.list("data/")]
    _, go = history.oracle(client, name, histories, roots, now.timestamp())
    deleted = set(sorted(go & {a for a, _, _ in listed})[::2])
    cutoff_ms = sorted(t for _, _, t in listed)[len(listed) // 2]
    rules = {b: d for h in histories for b, d in h.rules[1].items()}
    ns = client.repositories_api.get_repository(name).storage_namespace
    sref = StorageRef(ns, None, emu.local_root)
    with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key) as gc_client:
        holders = Holders()
        kept = commit_holders(gc_client, name, 1, rules, now.timestamp())
        ranges = range_masks(gc_client, name, storage, roots, kept, holders)
        masks = address_masks(gc_client, name, storage, roots, kept, holders)  # the same numbering: read here
        staged = staged_masks(api_staged(gc_client, name, roots, emu.local_root).by_branch, holders)
    for a, m in staged.items():
        masks[a] = masks.get(a, 0) | m
    tag_bits = holders.mask(h for h in holders.holders if h.kind == TAG)
    assert tag_bits, "the histories have tags"
    listed_df = spark.createDataFrame(listed, "address string, size long, last_modified_ms long")
    for given in (deleted, None):
        want = groups(listed, masks, tag_bits, given, cutoff_ms)
        deleted_df = None if given is None else spark.createDataFrame([(a,) for a in sorted(given)], "address string")
        got = spark_groups(spark, sref, ranges, staged, listed_df, deleted_df, cutoff_ms, tag_bits, 2)
        assert got == want
        report = attribute(((m, s, n, b) for (m, s), (n, b) in got.items()), holders).as_dict()
        assert report["total"]["objects"] == len(listed)
