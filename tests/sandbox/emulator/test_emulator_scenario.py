"""A repository built through lakefs-sdk on the emulator, checked against a hand-made model with the
project's own SSTable reader and pyarrow: commits.csv, the uncommitted parquet and every active
commit's metarange/ranges hold exactly the predicted addresses. Runs on a ``local://`` namespace and
on an ``s3://`` namespace served by moto server.

History (ages in days, set through the commit API's ``date``), GC rules: default 7, main 30, dev 14::

    I(0) <- M1(40) <- M2(20) <- M3(10) <- M4(2)          main (30 d), rst (reset, no commits)
             ^         ^         ^         ^- K1(1)      hid (hidden branch)
             |         |         |- G1(3)                gone (deleted: G1 is a dangling leaf)
             |         |- D1(15) <- D2(1)                dev (14 d)
             |- S1(50)                                   stale (default 7 d)

Active (reference 4.7): main keeps M4..M1 (M1 = first commit before its window; I is not kept),
dev keeps D2, D1 (D1 is older than 14 d, so M2 is not kept *by dev*), stale keeps only its HEAD S1,
hid keeps K1, the dangling leaf G1 (3 d) keeps itself. The answer does not depend on the commit-id
walk order: main has the longest retention, and every other mark is on a path no one else walks.
"""

from __future__ import annotations

import csv
import io
import time
import uuid

import lakefs_sdk
import pyarrow.parquet as pq
import pytest

from lakefs_gc.lakefs.graveler import RELATIVE, iter_metarange, iter_range
from lakefs_gc.lakefs.sstable import SSTableReader
from lakefs_gc.storage import open_storage
from lakefs_sandbox.graveler_writer import entry_identity, recompute_id
from tests.conftest import ns_rel, ns_storage
from tests.support.openapi import ResponseRecorder

DAY = 86400


@pytest.fixture(params=["local", "s3"])
def env(request, lakefs_emulator_factory):
    """(emulator, namespace, storage) for a local:// or an s3:// (moto) namespace."""
    name = "scenario-" + uuid.uuid4().hex[:8]
    extra = ("--uncommitted-page-size", "2")
    if request.param == "local":
        emu = lakefs_emulator_factory(*extra)
        ns = emu.namespace(name)
        return emu, ns, ns_storage(ns)
    moto = request.getfixturevalue("moto_server")
    bucket = moto.create_bucket("lakefs-" + uuid.uuid4().hex[:10])
    emu = lakefs_emulator_factory(*extra, s3=moto)
    ns = emu.namespace(name, bucket=bucket)
    return emu, ns, open_storage(ns, moto.s3_options())


def test_scenario(env):
    emu, ns, storage = env
    c = emu.client()
    recorder = ResponseRecorder(c)
    repo = "scenario"
    now = int(time.time())
    c.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=ns, default_branch="main")
    )
    o, br = c.objects_api, c.branches_api

    def rel(uri: str) -> str:
        return ns_rel(ns, uri)

    def put(branch: str, path: str) -> str:
        return rel(
            o.upload_object(repo, branch, path, content=f"{branch}:{path}:{uuid.uuid4()}".encode()).physical_address
        )

    def commit(branch: str, age_days: float, msg: str):
        return c.commits_api.commit(
            repo,
            branch,
            lakefs_sdk.CommitCreation(message=msg, date=int(now - age_days * DAY), metadata={"scenario": msg}),
        )

    def branch(name: str, source: str, hidden: bool = False) -> None:
        br.create_branch(repo, lakefs_sdk.BranchCreation(name=name, source=source, hidden=hidden))

    model: dict[str, dict[str, str]] = {}  # commit id -> {path: address}
    commits = {}
    initial = br.get_branch(repo, "main").commit_id

    # main
    m1 = {"a": put("main", "a"), "b": put("main", "b"), "c": put("main", "c")}
    commits["M1"] = commit("main", 40, "M1")
    model["M1"] = dict(m1)
    branch("stale", commits["M1"].id)
    a2 = put("main", "a")
    o.delete_object(repo, "main", "b")
    commits["M2"] = commit("main", 20, "M2")
    model["M2"] = {"a": a2, "c": m1["c"]}
    branch("dev", commits["M2"].id)
    d1, c2 = put("main", "d"), put("main", "c")
    commits["M3"] = commit("main", 10, "M3")
    model["M3"] = {"a": a2, "c": c2, "d": d1}
    branch("gone", commits["M3"].id)
    a3 = put("main", "a")
    commits["M4"] = commit("main", 2, "M4")
    model["M4"] = {"a": a3, "c": c2, "d": d1}
    branch("hid", "main", hidden=True)
    branch("rst", "main")
    # dev
    e1, c_dev = put("dev", "e"), put("dev", "c")
    commits["D1"] = commit("dev", 15, "D1")
    model["D1"] = {"a": a2, "c": c_dev, "e": e1}
    f1 = put("dev", "f")
    commits["D2"] = commit("dev", 1, "D2")
    model["D2"] = dict(model["D1"], f=f1)
    # stale
    g1 = put("stale", "g")
    commits["S1"] = commit("stale", 50, "S1")
    model["S1"] = dict(model["M1"], g=g1)
    # gone: commit, stage, then delete the branch
    h1 = put("gone", "h")
    commits["G1"] = commit("gone", 3, "G1")
    model["G1"] = dict(model["M3"], h=h1)
    gone_staged = put("gone", "staged-on-deleted-branch")
    br.delete_branch(repo, "gone")
    # hid (hidden)
    k1 = put("hid", "k")
    commits["K1"] = commit("hid", 1, "K1")
    model["K1"] = dict(model["M4"], k=k1)
    j_staged = put("hid", "j")
    # rst: staged, then reset away
    reset_away = [put("rst", "r1"), put("rst", "r2")]
    br.reset_branch(repo, "rst", lakefs_sdk.ResetCreation(type="reset"))
    # staged on main and dev
    s1, a4 = put("main", "s1"), put("main", "a")
    o.delete_object(repo, "main", "d")  # a tombstone: no address
    loc = c.staging_api.get_physical_address(repo, "main", "linked")
    linked = rel(loc.physical_address)  # the object key includes ",<signature>", as in lakeFS
    storage.put(linked, b"written by the client")
    c.staging_api.link_physical_address(
        repo,
        "main",
        "linked",
        lakefs_sdk.StagingMetadata(
            staging=lakefs_sdk.StagingLocation(physical_address=f"{ns}/{linked}"), checksum="abc", size_bytes=21
        ),
    )
    s2 = put("dev", "s2")
    external = "s3://somewhere-else/x" if ns.startswith("s3://") else "local:///somewhere/else/x"
    c.staging_api.link_physical_address(
        repo,
        "dev",
        "ext",
        lakefs_sdk.StagingMetadata(
            staging=lakefs_sdk.StagingLocation(physical_address=external), checksum="e", size_bytes=1
        ),
    )

    c.repositories_api.set_gc_rules(
        repo,
        lakefs_sdk.GarbageCollectionRules(
            default_retention_days=7,
            branches=[
                lakefs_sdk.GarbageCollectionRule(branch_id="main", retention_days=30),
                lakefs_sdk.GarbageCollectionRule(branch_id="dev", retention_days=14),
            ],
        ),
    )

    # ---------------------------------------------------------------- commits.csv
    task = c.internal_api.prepare_garbage_collection_commits_async(repo)
    status = c.internal_api.prepare_garbage_collection_commits_status(repo, task.id)
    assert status.completed
    assert status.error is None
    text = storage.get(rel(status.result.gc_commits_location)).decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert text.splitlines()[0] == "commit_id,expired,metarange_id"
    active_names = {"M4", "M3", "M2", "M1", "D2", "D1", "S1", "K1", "G1"}
    assert {r["commit_id"]: r["metarange_id"] for r in rows} == {
        commits[n].id: commits[n].meta_range_id for n in active_names
    }
    assert {r["expired"] for r in rows} == {"false"}
    assert initial not in {r["commit_id"] for r in rows}

    # ---------------------------------------------------------------- metaranges and ranges
    committed: set[str] = set()
    for name in sorted(active_names):
        mr_id = commits[name].meta_range_id
        mr_loc = c.metadata_api.get_meta_range(repo, mr_id).location
        assert mr_loc == f"_lakefs/{mr_id}"
        with storage.open_input(mr_loc) as f:
            reader = SSTableReader(f, name=mr_id)
            assert recompute_id(reader) == mr_id
            ranges = [ri for _, ri in iter_metarange(reader)]
        content: dict[str, str] = {}
        for ri in ranges:
            r_loc = c.metadata_api.get_range(repo, ri.id).location
            with storage.open_input(r_loc) as f:
                reader = SSTableReader(f, name=ri.id)
                assert recompute_id(reader) == ri.id
                for rec in iter_range(reader):
                    assert rec.entry.address_type == RELATIVE
                    assert rec.identity == entry_identity(rec.entry)
                    content[rec.key.decode()] = rec.entry.address
        assert content == model[name], name
        committed |= set(content.values())

    # ---------------------------------------------------------------- uncommitted parquet
    uncommitted: list[tuple[str, int]] = []
    locations, token, run_ids = [], None, set()
    for _ in range(20):
        resp = c.internal_api.prepare_garbage_collection_uncommitted(
            repo, lakefs_sdk.PrepareGCUncommittedRequest(continuation_token=token)
        )
        run_ids.add(resp.run_id)
        locations.append(resp.gc_uncommitted_location)
        token = resp.continuation_token
        if not token:
            break
    assert token is None
    assert len(run_ids) == 1
    assert len(locations) == 3  # 5 rows, 2 per page
    run_id = run_ids.pop()
    assert {rel(x).rstrip("/") for x in locations} == {f"_lakefs/retention/gc/uncommitted/{run_id}/uncommitted"}
    files = list(storage.list(rel(locations[0]).rstrip("/") + "/"))
    assert len(files) == 3
    for fi in files:
        table = pq.read_table(io.BytesIO(storage.get(fi.key)))
        uncommitted += zip(table.column("physical_address").to_pylist(), table.column("creation_date").to_pylist())
    assert sorted(a for a, _ in uncommitted) == sorted([s1, a4, linked, s2, j_staged])
    assert all(abs(t - now) < 300 for _, t in uncommitted)

    # ---------------------------------------------------------------- what is left is garbage
    expected_committed = {a for n in active_names for a in model[n].values()}
    assert committed == expected_committed
    data = {i.key for i in storage.list("data/")}
    garbage = data - committed - {a for a, _ in uncommitted}
    # the inactive initial commit holds nothing; what nobody references any more:
    assert garbage == {gone_staged, *reset_away}
    assert storage.exists("_lakefs/dummy")
    assert not recorder.problems(), recorder.problems()
