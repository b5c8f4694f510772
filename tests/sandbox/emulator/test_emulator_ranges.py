"""A 100,000-object commit is split into several ranges, and the next commit that changes one object
shares every range but the one holding that object (content-defined range boundaries, as lakeFS)."""

from __future__ import annotations

import time

import lakefs_sdk

from lakefs_gc.lakefs.graveler import iter_metarange, iter_range
from lakefs_gc.lakefs.sstable import SSTableReader
from lakefs_sandbox.graveler_writer import recompute_id
from tests.conftest import ns_storage
from tests.support.openapi import ResponseRecorder

N = 100_000


def read_metarange(storage, client, repo, mr_id):
    loc = client.metadata_api.get_meta_range(repo, mr_id).location
    with storage.open_input(loc) as f:
        return [ri for _, ri in iter_metarange(SSTableReader(f, name=mr_id))]


def test_100k_object_commit_splits_into_shared_ranges(lakefs_emulator_factory, tmp_path):
    src = tmp_path / "src"
    t0 = time.monotonic()
    for d in range(100):
        sub = src / f"part={d:03d}"
        sub.mkdir(parents=True)
        for i in range(N // 100):
            with open(sub / f"file-{i:05d}.parquet", "wb") as f:
                f.write(b"x")
    emu = lakefs_emulator_factory("--range-raggedness", "10000")
    client = emu.client()
    rec = ResponseRecorder(client)
    ns = emu.namespace("big")
    client.repositories_api.create_repository(lakefs_sdk.RepositoryCreation(name="big", storage_namespace=ns))
    task = client.import_api.import_start(
        "big",
        "main",
        lakefs_sdk.ImportCreation(
            paths=[lakefs_sdk.ImportLocation(type="common_prefix", path=f"local://{src}/", destination="tables/")],
            commit=lakefs_sdk.CommitCreation(message="100k objects"),
        ),
    )
    status = client.import_api.import_status("big", "main", task.id)
    assert status.completed
    assert status.ingested_objects == N
    first = status.commit
    storage = ns_storage(ns)
    ranges1 = read_metarange(storage, client, "big", first.meta_range_id)
    assert 3 <= len(ranges1) <= 40, len(ranges1)
    assert sum(r.count for r in ranges1) == N
    assert all(a.max_key < b.min_key for a, b in zip(ranges1, ranges1[1:]))
    keys = 0
    for r in ranges1:
        loc = client.metadata_api.get_range("big", r.id).location
        with storage.open_input(loc) as f:
            reader = SSTableReader(f, name=r.id)
            assert recompute_id(reader) == r.id
            keys += sum(1 for _ in iter_range(reader))
    assert keys == N

    # change one object in the middle: only its range is rewritten
    changed = "tables/part=050/file-00500.parquet"
    client.objects_api.upload_object("big", "main", changed, content=b"changed")
    second = client.commits_api.commit("big", "main", lakefs_sdk.CommitCreation(message="one change"))
    ranges2 = read_metarange(storage, client, "big", second.meta_range_id)
    ids1, ids2 = [r.id for r in ranges1], [r.id for r in ranges2]
    assert len(ids2) == len(ids1)
    new = [r for r in ranges2 if r.id not in ids1]
    assert len(new) == 1
    assert new[0].min_key <= changed.encode() <= new[0].max_key
    assert sum(a != b for a, b in zip(ids1, ids2)) == 1
    assert not rec.problems()
    assert time.monotonic() - t0 < 120
