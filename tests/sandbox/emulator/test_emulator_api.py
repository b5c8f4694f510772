"""The lakeFS emulator's REST API, driven only through lakefs-sdk; every response is checked
against swagger.yml by the ``lakefs_client`` fixture."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import time
import uuid

import lakefs_sdk
import pyarrow.parquet as pq
import pytest
from lakefs_sdk.exceptions import ApiException

from lakefs_gc.lakefs.client import LakeFSClient
from lakefs_gc.lakefs.graveler import iter_metarange, iter_range
from lakefs_gc.lakefs.sstable import SSTableReader
from lakefs_sandbox.emulator.xid import descending_xid_time, xid_time
from tests.conftest import ns_rel, ns_storage
from tests.support.openapi import ResponseRecorder

XID = r"[0-9a-v]{20}"


def new_repo(client, emu, default_branch="main") -> tuple[str, str]:
    name = "repo-" + uuid.uuid4().hex[:10]
    ns = emu.namespace(name)
    client.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=name, storage_namespace=ns, default_branch=default_branch)
    )
    return name, ns


def status_of(fn, *args, **kwargs) -> tuple[int, dict]:
    with pytest.raises(ApiException) as ei:
        fn(*args, **kwargs)
    body = json.loads(ei.value.body) if ei.value.body else {}
    return ei.value.status, body


def commit(client, repo, branch, msg="c", **kw):
    return client.commits_api.commit(repo, branch, lakefs_sdk.CommitCreation(message=msg, **kw))


# ---------------------------------------------------------------------------------------------- config, auth


@pytest.mark.filterwarnings("ignore:GET /config:DeprecationWarning")
def test_config_endpoints(lakefs_client):
    cfg = lakefs_client.config_api.get_config()
    assert cfg.storage_config.blockstore_type == "local"
    assert lakefs_client.internal_api.get_storage_config().blockstore_type == "local"
    assert lakefs_client.internal_api.get_garbage_collection_config().grace_period == 86400
    assert lakefs_client.internal_api.get_lake_fs_version().version
    lakefs_client.health_check_api.health_check()


def test_bad_credentials_are_401(lakefs_emulator):
    c = lakefs_sdk.client.LakeFSClient(
        lakefs_sdk.Configuration(host=lakefs_emulator.api_url, username="nobody", password="wrong")
    )
    rec = ResponseRecorder(c)
    status, body = status_of(c.repositories_api.list_repositories)
    assert status == 401
    assert body["message"]
    assert not rec.problems()


def test_unimplemented_operations_answer_501(lakefs_client, lakefs_emulator):
    repo, _ = new_repo(lakefs_client, lakefs_emulator)
    status, body = status_of(lakefs_client.actions_api.list_repository_runs, repo)
    assert status == 501
    assert "not implemented" in body["message"]
    lakefs_client.recorder.records.clear()  # 501 is not in listRepositoryRuns' documented responses


# ---------------------------------------------------------------------------------------------- repositories


def test_repository_lifecycle(lakefs_client, lakefs_emulator):
    repo, ns = new_repo(lakefs_client, lakefs_emulator)
    r = lakefs_client.repositories_api.get_repository(repo)
    assert (r.id, r.default_branch, r.storage_namespace) == (repo, "main", ns)
    assert abs(r.creation_date - time.time()) < 60
    assert ns_storage(ns).get("_lakefs/dummy")  # written on create
    assert repo in [x.id for x in lakefs_client.repositories_api.list_repositories(amount=1000).results]
    # the initial commit
    head = lakefs_client.branches_api.get_branch(repo, "main")
    c = lakefs_client.commits_api.get_commit(repo, head.commit_id)
    assert (c.message, c.meta_range_id, c.parents) == ("Repository created", "", [])
    # conflicts and bad input
    assert (
        status_of(
            lakefs_client.repositories_api.create_repository,
            lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=ns + "-2"),
        )[0]
        == 409
    )
    assert (
        status_of(
            lakefs_client.repositories_api.create_repository,
            lakefs_sdk.RepositoryCreation(name="other-" + repo, storage_namespace=ns),
        )[0]
        == 400
    )
    assert (
        status_of(
            lakefs_client.repositories_api.create_repository,
            lakefs_sdk.RepositoryCreation(name="x" + repo, storage_namespace="s3://bucket/x"),
        )[0]
        == 400
    )
    lakefs_client.repositories_api.delete_repository(repo)
    assert status_of(lakefs_client.repositories_api.get_repository, repo)[0] == 404
    assert status_of(lakefs_client.repositories_api.delete_repository, repo)[0] == 404


def test_repository_list_pagination(lakefs_client, lakefs_emulator):
    prefix = "pg" + uuid.uuid4().hex[:6]
    names = sorted(f"{prefix}-{i}" for i in range(5))
    for n in names:
        lakefs_client.repositories_api.create_repository(
            lakefs_sdk.RepositoryCreation(name=n, storage_namespace=lakefs_emulator.namespace(n))
        )
    seen, after = [], ""
    while True:
        page = lakefs_client.repositories_api.list_repositories(prefix=prefix, after=after, amount=2)
        seen += [r.id for r in page.results]
        if not page.pagination.has_more:
            break
        after = page.pagination.next_offset
    assert seen == names


# ---------------------------------------------------------------------------------------------- branches


def test_branches(lakefs_client, lakefs_emulator):
    repo, _ = new_repo(lakefs_client, lakefs_emulator)
    b = lakefs_client.branches_api
    head = b.get_branch(repo, "main").commit_id
    assert b.create_branch(repo, lakefs_sdk.BranchCreation(name="dev", source="main")) == head
    b.create_branch(repo, lakefs_sdk.BranchCreation(name="hidden-one", source=head, hidden=True))
    assert [r.id for r in b.list_branches(repo).results] == ["dev", "main"]
    assert [r.id for r in b.list_branches(repo, show_hidden=True).results] == ["dev", "hidden-one", "main"]
    assert status_of(b.create_branch, repo, lakefs_sdk.BranchCreation(name="dev", source="main"))[0] == 409
    assert status_of(b.create_branch, repo, lakefs_sdk.BranchCreation(name="x", source="nope"))[0] == 404
    assert status_of(b.get_branch, repo, "nope")[0] == 404
    assert status_of(b.get_branch, "no-such-repo", "main")[0] == 404
    b.delete_branch(repo, "dev")
    assert status_of(b.get_branch, repo, "dev")[0] == 404
    assert status_of(b.delete_branch, repo, "dev")[0] == 404


def test_reset_branch_drops_staging(lakefs_client, lakefs_emulator):
    repo, _ = new_repo(lakefs_client, lakefs_emulator)
    o = lakefs_client.objects_api
    o.upload_object(repo, "main", "keep", content=b"k")
    commit(lakefs_client, repo, "main")
    for p in ("a/1", "a/2", "b/1", "c"):
        o.upload_object(repo, "main", p, content=p.encode())
    o.delete_object(repo, "main", "keep")
    br = lakefs_client.branches_api
    br.reset_branch(repo, "main", lakefs_sdk.ResetCreation(type="object", path="c"))
    br.reset_branch(repo, "main", lakefs_sdk.ResetCreation(type="common_prefix", path="a/"))
    assert sorted(x.path for x in o.list_objects(repo, "main").results) == ["b/1"]
    br.reset_branch(repo, "main", lakefs_sdk.ResetCreation(type="reset"))
    assert [x.path for x in o.list_objects(repo, "main").results] == ["keep"]
    assert status_of(commit, lakefs_client, repo, "main")[0] == 400  # nothing left to commit


# ---------------------------------------------------------------------------------------------- objects


def test_objects_upload_stat_get_list_delete(lakefs_client, lakefs_emulator):
    repo, ns = new_repo(lakefs_client, lakefs_emulator)
    o = lakefs_client.objects_api
    st = o.upload_object(repo, "main", "dir/file.txt", content=b"hello world")
    m = re.fullmatch(re.escape(f"local://{ns_storage(ns).root}") + rf"/data/({XID})/({XID})", st.physical_address)
    assert m, st.physical_address
    assert abs(descending_xid_time(m.group(1)) - time.time()) < 60
    assert abs(xid_time(m.group(2)) - time.time()) < 60
    assert (st.size_bytes, st.checksum, st.path_type) == (11, hashlib.md5(b"hello world").hexdigest(), "object")
    assert ns_storage(ns).get(ns_rel(ns, st.physical_address)) == b"hello world"
    assert o.stat_object(repo, "main", "dir/file.txt").physical_address == st.physical_address
    assert bytes(o.get_object(repo, "main", "dir/file.txt")) == b"hello world"
    assert status_of(o.stat_object, repo, "main", "missing")[0] == 404
    assert status_of(o.get_object, repo, "main", "missing")[0] == 404
    for i in range(5):
        o.upload_object(repo, "main", f"dir/n{i}", content=b"%d" % i)
    c1 = commit(lakefs_client, repo, "main", "first")
    # list on a commit and on the branch, with pagination and a delimiter
    paths = [x.path for x in o.list_objects(repo, c1.id, prefix="dir/", amount=1000).results]
    assert paths == ["dir/file.txt", "dir/n0", "dir/n1", "dir/n2", "dir/n3", "dir/n4"]
    page = o.list_objects(repo, "main", prefix="dir/", amount=4)
    assert [x.path for x in page.results] == paths[:4]
    assert page.pagination.has_more
    page2 = o.list_objects(repo, "main", prefix="dir/", after=page.pagination.next_offset)
    assert [x.path for x in page2.results] == paths[4:]
    assert not page2.pagination.has_more
    top = o.list_objects(repo, "main", delimiter="/")
    assert [(x.path, x.path_type) for x in top.results] == [("dir/", "common_prefix")]
    # delete: staged tombstone hides it on the branch but not on the commit
    o.delete_object(repo, "main", "dir/n0")
    assert status_of(o.stat_object, repo, "main", "dir/n0")[0] == 404
    assert o.stat_object(repo, c1.id, "dir/n0").size_bytes == 1
    # deleting what is not there (deleted already, or never was) succeeds and changes nothing, as
    # lakeFS 1.84's Graveler.Delete; a missing branch is still a 404
    assert o.delete_object(repo, "main", "dir/n0") is None
    assert o.delete_object(repo, "main", "never/was") is None
    assert status_of(o.stat_object, repo, "main", "dir/n0")[0] == 404
    assert [d.path for d in lakefs_client.branches_api.diff_branch(repo, "main").results] == ["dir/n0"]
    status, body = status_of(o.delete_object, repo, "nope", "dir/n1")
    assert (status, body["message"]) == (404, "branch not found")
    # the bulk delete: the same per path, no error for what is not there
    o.upload_object(repo, "main", "dir/bulk", content=b"b")
    res = o.delete_objects(repo, "main", lakefs_sdk.PathList(paths=["dir/bulk", "dir/n0", "never/was"]))
    assert res.errors == []
    assert status_of(o.stat_object, repo, "main", "dir/bulk")[0] == 404
    assert o.delete_objects(repo, "nope", lakefs_sdk.PathList(paths=["dir/n1"])).errors == []  # lakeFS: no error
    assert o.stat_object(repo, "main", "dir/n1").size_bytes == 1
    c2 = commit(lakefs_client, repo, "main", "delete n0")
    assert "dir/n0" not in [x.path for x in o.list_objects(repo, c2.id).results]
    # a short commit id works as a ref
    assert o.stat_object(repo, c1.id[:12], "dir/n0").size_bytes == 1


# ---------------------------------------------------------------------------------------------- staging


def test_physical_address_link_and_signature(lakefs_client, lakefs_emulator):
    """As lakeFS 1.84 (pkg/api/controller.go LinkPhysicalAddress): the address handed out carries
    ",<signature>" and is the object key the client writes; under "<namespace>/data/" it links as
    RELATIVE, signature kept, verified; on the local blockstore the address handed out is the
    resolved form, which does not start with the namespace as written, so it links as FULL."""
    repo, ns = new_repo(lakefs_client, lakefs_emulator)
    sa = lakefs_client.staging_api
    loc = sa.get_physical_address(repo, "main", "linked/obj")
    addr, sig = loc.physical_address.rsplit(",", 1)
    assert re.fullmatch(re.escape(f"local://{ns_storage(ns).root}") + rf"/data/{XID}/{XID}", addr)
    assert sig
    written = loc.physical_address[len("local://") :]  # the client writes the object itself, at the signed key
    os.makedirs(os.path.dirname(written), exist_ok=True)
    with open(written, "wb") as f:
        f.write(b"direct bytes")
    stats = sa.link_physical_address(
        repo,
        "main",
        "linked/obj",
        lakefs_sdk.StagingMetadata(staging=loc, checksum="etag-1", size_bytes=12, user_metadata={"owner": "me"}),
    )
    assert stats.physical_address == loc.physical_address
    assert stats.metadata == {"owner": "me"}
    assert bytes(lakefs_client.objects_api.get_object(repo, "main", "linked/obj")) == b"direct bytes"
    # stat prints a FULL local address as lakeFS's QualifiedKey.Format does: the root joined twice
    printed = lakefs_client.objects_api.stat_object(repo, "main", "linked/obj").physical_address
    assert printed == "local://" + os.path.normpath(f"{os.path.abspath(lakefs_emulator.root)}/{written}"), printed
    # the namespace-as-written form links RELATIVE, with its signature checked: the signature
    # covers repository, branch and path (lakeFS's getAddressJSON), so the address links under the
    # path and branch it was handed out for only
    rel = ns_rel(ns, sa.get_physical_address(repo, "main", "rel").physical_address)

    def link(path, address, branch="main"):
        return sa.link_physical_address(
            repo,
            branch,
            path,
            lakefs_sdk.StagingMetadata(
                staging=lakefs_sdk.StagingLocation(physical_address=address), checksum="e", size_bytes=1
            ),
        )

    _branch(lakefs_client, repo, "dev")
    for path, branch in (("other", "main"), ("rel", "dev")):
        status, body = status_of(link, path, f"{ns}/{rel}", branch)
        assert (status, body["message"]) == (400, "invalid address signature: invalid address"), (path, branch)
    assert link("rel", f"{ns}/{rel}").physical_address == f"{ns}/{rel}"
    assert status_of(link, "x", f"{ns}/{rel.rsplit(',', 1)[0]},0000")[0] == 400
    status, body = status_of(link, "x", f"{ns}/{rel.rsplit(',', 1)[0]},not+base64")
    assert status == 400
    assert body["message"].startswith('malformed address signature: {"Repository":"')
    # an external (full) address outside the namespace is linked as FULL without signature
    ext = sa.link_physical_address(
        repo,
        "main",
        "ext",
        lakefs_sdk.StagingMetadata(
            staging=lakefs_sdk.StagingLocation(physical_address="local:///elsewhere/file"), checksum="e", size_bytes=1
        ),
    )
    assert ext.physical_address == "local:///elsewhere/file"
    # a missing branch gets an address (lakeFS 1.84 looks up the repository only); linking it does not
    missing = sa.get_physical_address(repo, "nope", "p").physical_address
    status, body = status_of(link, "p", f"{ns}/{ns_rel(ns, missing)}", "nope")
    assert (status, body["message"]) == (404, "branch not found")
    assert status_of(sa.get_physical_address, "no-such-repo", "main", "p")[0] == 404
    # lakeFS's prepare_uncommited skips FULL addresses not under the namespace as written: the
    # resolved-form link is not reported (a lakeFS hazard on the local blockstore), the RELATIVE one is
    run = lakefs_client.internal_api.prepare_garbage_collection_uncommitted(repo)
    rows = {a for a, _ in read_uncommitted(ns, run.gc_uncommitted_location)}
    assert rel in rows
    assert not any(a.startswith("local://") for a in rows)


def test_physical_address_expires_after_grace_period(lakefs_emulator_factory):
    emu = lakefs_emulator_factory("--grace-period", "3600")
    client = emu.client()
    rec = ResponseRecorder(client)
    repo, _ = new_repo(client, emu)
    assert client.internal_api.get_garbage_collection_config().grace_period == 3600
    ns = client.repositories_api.get_repository(repo).storage_namespace

    def as_written(loc):  # the namespace-as-written form: the one lakeFS verifies (RELATIVE)
        return lakefs_sdk.StagingLocation(physical_address=f"{ns}/{ns_rel(ns, loc.physical_address)}")

    loc = as_written(client.staging_api.get_physical_address(repo, "main", "p"))
    emu.set_clock(advance=3700)
    status, body = status_of(
        client.staging_api.link_physical_address,
        repo,
        "main",
        "p",
        lakefs_sdk.StagingMetadata(staging=loc, checksum="e", size_bytes=1),
    )
    assert status == 400
    assert "expired" in body["message"]
    fresh = as_written(client.staging_api.get_physical_address(repo, "main", "p"))
    client.staging_api.link_physical_address(
        repo, "main", "p", lakefs_sdk.StagingMetadata(staging=fresh, checksum="e", size_bytes=1)
    )
    assert not rec.problems()


# ---------------------------------------------------------------------------------------------- commits


def test_commits_date_metadata_get_and_log(lakefs_client, lakefs_emulator):
    repo, ns = new_repo(lakefs_client, lakefs_emulator)
    o = lakefs_client.objects_api
    o.upload_object(repo, "main", "a", content=b"1")
    c1 = commit(lakefs_client, repo, "main", "one", date=1_600_000_000, metadata={"k": "v"})
    assert (c1.creation_date, c1.metadata, c1.message) == (1_600_000_000, {"k": "v"}, "one")
    assert re.fullmatch(r"[0-9a-f]{64}", c1.id)
    assert re.fullmatch(r"[0-9a-f]{64}", c1.meta_range_id)
    assert c1.committer == lakefs_emulator.access_key
    got = lakefs_client.commits_api.get_commit(repo, c1.id)
    assert got == c1
    assert status_of(commit, lakefs_client, repo, "main")[0] == 400  # no changes
    c2 = commit(lakefs_client, repo, "main", "empty", allow_empty=True)
    assert c2.parents == [c1.id]
    assert c2.meta_range_id == c1.meta_range_id
    log = lakefs_client.refs_api.log_commits(repo, "main")
    assert [c.message for c in log.results] == ["empty", "one", "Repository created"]
    page = lakefs_client.refs_api.log_commits(repo, "main", amount=1)
    assert page.pagination.has_more
    rest = lakefs_client.refs_api.log_commits(repo, "main", after=page.pagination.next_offset)
    assert [c.message for c in rest.results] == ["one", "Repository created"]
    assert status_of(lakefs_client.commits_api.get_commit, repo, "f" * 64)[0] == 404
    assert status_of(commit, lakefs_client, repo, "nope")[0] == 404
    # metadata locations and the SSTables behind them
    mr = lakefs_client.metadata_api.get_meta_range(repo, c1.meta_range_id)
    assert mr.location == f"_lakefs/{c1.meta_range_id}"
    st = ns_storage(ns)
    ranges = [ri for _, ri in iter_metarange(SSTableReader(st.open_input(mr.location)))]
    assert len(ranges) == 1
    rloc = lakefs_client.metadata_api.get_range(repo, ranges[0].id).location
    assert rloc == f"_lakefs/{ranges[0].id}"
    recs = list(iter_range(SSTableReader(st.open_input(rloc))))
    assert [r.key for r in recs] == [b"a"]
    assert recs[0].entry.address.startswith("data/")


# ---------------------------------------------------------------------------------------------- GC


def test_gc_rules(lakefs_client, lakefs_emulator):
    repo, ns = new_repo(lakefs_client, lakefs_emulator)
    ra = lakefs_client.repositories_api
    assert status_of(ra.get_gc_rules, repo)[0] == 404
    rules = lakefs_sdk.GarbageCollectionRules(
        default_retention_days=14, branches=[lakefs_sdk.GarbageCollectionRule(branch_id="main", retention_days=21)]
    )
    ra.set_gc_rules(repo, rules)
    assert ra.get_gc_rules(repo) == rules
    # without branch rules lakeFS 1.84 answers "branches": null, which lakefs-sdk's model refuses;
    # the GC's client reads the body itself
    ra.set_gc_rules(repo, lakefs_sdk.GarbageCollectionRules(default_retention_days=3, branches=[]))
    raw = ra.get_gc_rules_with_http_info(repo, _preload_content=False).raw_data
    assert json.loads(raw) == {"default_retention_days": 3, "branches": None}
    gc = LakeFSClient(lakefs_emulator.api_url, lakefs_emulator.access_key, lakefs_emulator.secret_key)
    assert gc.require_gc_rules(repo) == lakefs_sdk.GarbageCollectionRules(default_retention_days=3, branches=[])
    ra.set_gc_rules(repo, rules)
    # lakeFS keeps the rules as a binary protobuf in the namespace
    raw = ns_storage(ns).get("_lakefs/retention/gc/rules/config.json")
    assert raw == b"\x08\x0e\x12\x08\x0a\x04main\x10\x15"
    ra.delete_gc_rules(repo)
    assert status_of(ra.get_gc_rules, repo)[0] == 404
    assert ns_storage(ns).get("_lakefs/retention/gc/rules/config.json") == b""
    assert status_of(ra.get_gc_rules, "no-such-repo")[0] == 404


def test_prepare_commits_without_rules(lakefs_client, lakefs_emulator):
    repo, _ = new_repo(lakefs_client, lakefs_emulator)
    ia = lakefs_client.internal_api
    assert status_of(ia.prepare_garbage_collection_commits, repo)[0] == 404
    task = ia.prepare_garbage_collection_commits_async(repo)
    assert task.id.startswith("GCPC")
    st = ia.prepare_garbage_collection_commits_status(repo, task.id)
    # the exact words of lakeFS 1.84 (checked on a server): the async start does not check the rules
    assert st.completed
    assert st.result is None
    assert st.error.message == "get gc rules: not found"
    assert status_of(ia.prepare_garbage_collection_commits_status, repo, "GCPCunknown")[0] == 404
    from lakefs_gc.errors import NoGCRulesError

    with pytest.raises(NoGCRulesError, match="has no GC rules"):
        LakeFSClient(lakefs_emulator.api_url, lakefs_emulator.access_key, lakefs_emulator.secret_key).prepare_commits(
            repo, poll_initial=0.01
        )


def test_prepare_commits_writes_commits_csv(lakefs_client, lakefs_emulator):
    repo, ns = new_repo(lakefs_client, lakefs_emulator)
    lakefs_client.objects_api.upload_object(repo, "main", "a", content=b"1")
    c1 = commit(lakefs_client, repo, "main")
    lakefs_client.repositories_api.set_gc_rules(
        repo, lakefs_sdk.GarbageCollectionRules(default_retention_days=7, branches=[])
    )
    ia = lakefs_client.internal_api
    res = ia.prepare_garbage_collection_commits(repo)
    assert re.fullmatch(XID, res.run_id)
    assert abs(descending_xid_time(res.run_id) - time.time()) < 60
    full = f"local://{ns_storage(ns).root}"  # lakeFS formats locations with the resolved local path
    assert res.gc_commits_location == f"{full}/_lakefs/retention/gc/commits/run_id={res.run_id}/commits.csv"
    assert res.gc_addresses_location == f"{full}/_lakefs/retention/gc/addresses"  # no trailing "/", as lakeFS
    text = ns_storage(ns).get(ns_rel(ns, res.gc_commits_location)).decode()
    lines = text.splitlines()
    assert lines[0] == "commit_id,expired,metarange_id"
    initial = lakefs_client.commits_api.get_commit(repo, c1.parents[0])
    assert sorted(lines[1:]) == sorted([f"{c1.id},false,{c1.meta_range_id}", f"{initial.id},false,"])
    task = ia.prepare_garbage_collection_commits_async(repo)
    st = ia.prepare_garbage_collection_commits_status(repo, task.id)
    assert st.completed
    assert st.error is None
    assert st.result.gc_commits_location.endswith("/commits.csv")


def test_async_prepare_reports_running_first(lakefs_emulator_factory):
    emu = lakefs_emulator_factory("--prepare-commits-delay", "0.5")
    client = emu.client()
    rec = ResponseRecorder(client)
    repo, _ = new_repo(client, emu)
    client.repositories_api.set_gc_rules(repo, lakefs_sdk.GarbageCollectionRules(default_retention_days=1, branches=[]))
    task = client.internal_api.prepare_garbage_collection_commits_async(repo)
    first = client.internal_api.prepare_garbage_collection_commits_status(repo, task.id)
    assert not first.completed
    assert first.result is None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        st = client.internal_api.prepare_garbage_collection_commits_status(repo, task.id)
        if st.completed:
            break
        time.sleep(0.1)
    assert st.completed
    assert st.result.run_id
    assert not rec.problems()


def read_uncommitted(ns: str, location: str) -> list[tuple[str, int]]:
    st = ns_storage(ns)
    rel = ns_rel(ns, location).rstrip("/") + "/"
    rows = []
    for info in st.list(rel):
        t = pq.read_table(io.BytesIO(st.get(info.key)))
        rows += list(zip(t.column("physical_address").to_pylist(), t.column("creation_date").to_pylist()))
    return rows


def test_prepare_uncommitted_pages_and_empty_last_page(lakefs_emulator_factory):
    emu = lakefs_emulator_factory("--uncommitted-page-size", "2")
    client = emu.client()
    rec = ResponseRecorder(client)
    repo, ns = new_repo(client, emu)
    o = client.objects_api
    o.upload_object(repo, "main", "committed", content=b"c")
    commit(client, repo, "main")
    client.branches_api.create_branch(repo, lakefs_sdk.BranchCreation(name="b-hidden", source="main", hidden=True))
    expected = {}
    for branch, path in [("main", "x1"), ("main", "x2"), ("b-hidden", "h1"), ("main", "x3")]:
        expected[ns_rel(ns, o.upload_object(repo, branch, path, content=path.encode()).physical_address)] = path
    o.delete_object(repo, "main", "committed")  # a tombstone is not uncommitted data
    ia = client.internal_api
    responses, token = [], None
    for _ in range(10):
        resp = ia.prepare_garbage_collection_uncommitted(
            repo, lakefs_sdk.PrepareGCUncommittedRequest(continuation_token=token)
        )
        responses.append(resp)
        token = resp.continuation_token
        if not token:
            break
    # 4 rows, 2 per page: two full pages, then an empty last page whose location is ""
    assert len(responses) == 3
    assert len({r.run_id for r in responses}) == 1
    assert [bool(r.gc_uncommitted_location) for r in responses] == [True, True, False]
    loc = responses[0].gc_uncommitted_location
    run_id = responses[0].run_id
    assert loc == f"local://{ns_storage(ns).root}/_lakefs/retention/gc/uncommitted/{run_id}/uncommitted"
    files = list(ns_storage(ns).list(ns_rel(ns, loc) + "/"))
    assert len(files) == 2
    assert all(re.fullmatch(XID, f.key.rsplit("/", 1)[1]) for f in files)
    rows = read_uncommitted(ns, loc)
    assert sorted(a for a, _ in rows) == sorted(expected)
    assert all(abs(t - time.time()) < 120 for _, t in rows)
    # parquet schema and compression as lakeFS writes it
    meta = pq.ParquetFile(io.BytesIO(ns_storage(ns).get(files[0].key)))
    assert meta.schema_arrow.names == ["physical_address", "creation_date"]
    assert str(meta.schema_arrow.field("creation_date").type) == "int64"
    assert meta.metadata.row_group(0).column(0).compression == "GZIP"
    # invalid token
    bad = base64.b64encode(b"not json").decode()
    assert (
        status_of(
            ia.prepare_garbage_collection_uncommitted,
            repo,
            lakefs_sdk.PrepareGCUncommittedRequest(continuation_token=bad),
        )[0]
        == 400
    )
    assert not rec.problems()


# ---------------------------------------------------------------------------------------------- behaviour


def test_slices_roll_over_by_count_and_time(lakefs_emulator_factory):
    emu = lakefs_emulator_factory("--slice-size", "3", "--slice-interval", "600")
    client = emu.client()
    repo, ns = new_repo(client, emu)
    slices = []
    for i in range(7):
        st = client.objects_api.upload_object(repo, "main", f"o{i}", content=b"x")
        slices.append(ns_rel(ns, st.physical_address).split("/")[1])
    assert slices[0] == slices[2] != slices[3] == slices[5] != slices[6]
    emu.set_clock(advance=700)
    later = client.objects_api.upload_object(repo, "main", "late", content=b"x").physical_address
    later_slice = ns_rel(ns, later).split("/")[1]
    assert later_slice not in slices
    assert later_slice < min(slices)  # descending ids: the newer slice sorts first
    assert abs(descending_xid_time(later_slice) - (time.time() + 700)) < 60


def test_state_survives_restart(lakefs_emulator_factory, tmp_path):
    state = tmp_path / "state"
    emu = lakefs_emulator_factory(state=state)
    client = emu.client()
    repo, ns = new_repo(client, emu)
    client.objects_api.upload_object(repo, "main", "committed", content=b"c")
    c1 = commit(client, repo, "main", "persisted")
    client.objects_api.upload_object(repo, "main", "staged", content=b"s")
    client.repositories_api.set_gc_rules(repo, lakefs_sdk.GarbageCollectionRules(default_retention_days=3, branches=[]))
    emu.set_clock(offset=86400.0)
    from tests.conftest import stop_process

    stop_process(emu.proc)
    emu2 = lakefs_emulator_factory(state=state, root=emu.root)
    c2 = emu2.client()
    assert c2.branches_api.get_branch(repo, "main").commit_id == c1.id
    assert bytes(c2.objects_api.get_object(repo, "main", "staged")) == b"s"
    assert bytes(c2.objects_api.get_object(repo, "main", "committed")) == b"c"
    assert (
        LakeFSClient(emu2.api_url, emu2.access_key, emu2.secret_key).require_gc_rules(repo).default_retention_days == 3
    )
    assert abs(emu2.set_clock(advance=0)["offset"] - 86400.0) < 1e-6


def test_import_commits_full_addresses(lakefs_client, lakefs_emulator, tmp_path):
    repo, _ = new_repo(lakefs_client, lakefs_emulator)
    src = tmp_path / "import-src"
    (src / "sub").mkdir(parents=True)
    (src / "a.csv").write_bytes(b"a")
    (src / "sub" / "b.csv").write_bytes(b"bb")
    lakefs_client.objects_api.upload_object(repo, "main", "imported/old", content=b"gone after import")
    commit(lakefs_client, repo, "main")
    creation = lakefs_sdk.ImportCreation(
        paths=[lakefs_sdk.ImportLocation(type="common_prefix", path=f"local://{src}/", destination="imported/")],
        commit=lakefs_sdk.CommitCreation(message="import"),
    )
    head = lakefs_client.branches_api.get_branch(repo, "main").commit_id
    # a dirty branch (a staged object, or a staged delete of a committed one) is refused as lakeFS
    # 1.84 refuses it: the start answers 202, the status an error and not completed
    for make_dirty in (
        lambda: lakefs_client.objects_api.upload_object(repo, "main", "staged", content=b"s"),
        lambda: lakefs_client.objects_api.delete_object(repo, "main", "imported/old"),
    ):
        make_dirty()
        task = lakefs_client.import_api.import_start(repo, "main", creation)
        st = lakefs_client.import_api.import_status(repo, "main", task.id)
        assert not st.completed
        assert st.error.message == "import error: merge import: uncommitted changes (dirty branch)"
        assert st.commit is None
        assert lakefs_client.branches_api.get_branch(repo, "main").commit_id == head
        lakefs_client.branches_api.reset_branch(repo, "main", lakefs_sdk.ResetCreation(type="reset"))
    task = lakefs_client.import_api.import_start(repo, "main", creation)
    assert re.fullmatch(XID, task.id)  # lakeFS's import id: an xid
    st = lakefs_client.import_api.import_status(repo, "main", task.id)
    assert st.completed
    assert st.ingested_objects == 2
    assert st.commit.message == "import"
    assert st.commit.metadata == {".lakefs.merge.strategy": "source-wins"}
    assert st.commit.parents == [head]
    objs = {x.path: x for x in lakefs_client.objects_api.list_objects(repo, "main").results}
    assert sorted(objs) == ["imported/a.csv", "imported/sub/b.csv"]
    # a FULL local address prints through lakeFS's QualifiedKey.Format: under the blockstore root
    root = os.path.abspath(lakefs_emulator.root)
    assert objs["imported/sub/b.csv"].physical_address == "local://" + os.path.normpath(f"{root}/{src}/sub/b.csv")
    assert bytes(lakefs_client.objects_api.get_object(repo, "main", "imported/sub/b.csv")) == b"bb"


def test_list_merges_staging_with_commit_across_pages(lakefs_client, lakefs_emulator):
    repo, _ = new_repo(lakefs_client, lakefs_emulator)
    o = lakefs_client.objects_api
    for i in range(10):
        o.upload_object(repo, "main", f"k/{i}", content=b"c")
    o.upload_object(repo, "main", "other", content=b"c")
    commit(lakefs_client, repo, "main")
    o.upload_object(repo, "main", "k/3", content=b"staged")
    o.delete_object(repo, "main", "k/5")
    o.upload_object(repo, "main", "k/55", content=b"new")
    o.upload_object(repo, "main", "k/sub/x", content=b"new")
    expected = ["k/0", "k/1", "k/2", "k/3", "k/4", "k/55", "k/6", "k/7", "k/8", "k/9", "k/sub/x"]
    seen, after = [], ""
    while True:
        page = o.list_objects(repo, "main", prefix="k/", after=after, amount=3)
        seen += [x.path for x in page.results]
        if not page.pagination.has_more:
            break
        after = page.pagination.next_offset
    assert seen == expected
    assert o.stat_object(repo, "main", "k/3").size_bytes == 6
    grouped = o.list_objects(repo, "main", prefix="k/", delimiter="/", after="k/8")
    assert [(x.path, x.path_type) for x in grouped.results] == [("k/9", "object"), ("k/sub/", "common_prefix")]


def test_import_from_the_repository_namespace_is_refused_as_lakefs_does(lakefs_client, lakefs_emulator, tmp_path):
    """lakeFS's verifyImportPaths (pkg/catalog/catalog.go): an import path that starts with the
    namespace as written, or a prefix containing it, is refused (400). On the local blockstore the
    resolved form is a different string, so it is not refused (as in lakeFS)."""
    repo, ns = new_repo(lakefs_client, lakefs_emulator)

    def start(path, kind="common_prefix"):
        return status_of(
            lakefs_client.import_api.import_start,
            repo,
            "main",
            lakefs_sdk.ImportCreation(
                paths=[lakefs_sdk.ImportLocation(type=kind, path=path, destination="imp/")],
                commit=lakefs_sdk.CommitCreation(message="import"),
            ),
        )

    status, body = start(f"{ns}/data/")
    assert status == 400
    assert "in repository namespace" in body["message"]
    assert "invalid import source" in body["message"]
    assert start("local://ns/")[0] == 400  # a prefix that contains the namespace
    resolved = ns_storage(ns).root
    (resolved / "data" / "s").mkdir(parents=True)
    (resolved / "data" / "s" / "o").write_bytes(b"o")
    task = lakefs_client.import_api.import_start(
        repo,
        "main",
        lakefs_sdk.ImportCreation(
            paths=[
                lakefs_sdk.ImportLocation(type="common_prefix", path=f"local://{resolved}/data/", destination="imp/")
            ],
            commit=lakefs_sdk.CommitCreation(message="import"),
        ),
    )
    assert lakefs_client.import_api.import_status(repo, "main", task.id).completed


# ---------------------------------------------------------------------------------------------- copies, merges, tags


def _put(client, repo, branch, path, data: bytes, **meta):
    return client.objects_api.upload_object(
        repo, branch, path, content=data, _headers={f"x-lakefs-meta-{k}": v for k, v in meta.items()}
    )


def _read(client, repo, ref, path) -> bytes:
    return bytes(client.objects_api.get_object(repo, ref, path))


def test_copy_object_makes_a_full_copy_as_lakefs_does(lakefs_client, lakefs_emulator):
    """lakeFS 1.84's copyObject (Catalog.CopyEntry): the data is copied to a new relative address
    under data/ and staged on the destination; the source may be staged, on another branch, in a
    commit or a tag; `shallow: true` answers 501 (apiutil.BuildOptsFromParams)."""
    repo, ns = new_repo(lakefs_client, lakefs_emulator)
    o = lakefs_client.objects_api
    src = _put(lakefs_client, repo, "main", "src", b"one", owner="me")
    copied = o.copy_object(repo, "main", "same-branch", lakefs_sdk.ObjectCopyCreation(src_path="src"))  # staged source
    assert copied.physical_address != src.physical_address
    assert ns_rel(ns, copied.physical_address).startswith("data/")
    assert (copied.checksum, copied.size_bytes, copied.metadata, copied.content_type) == (
        src.checksum,
        src.size_bytes,
        {"owner": "me"},
        src.content_type,
    )
    assert ns_storage(ns).get(ns_rel(ns, copied.physical_address)) == b"one"
    c1 = commit(lakefs_client, repo, "main")
    lakefs_client.branches_api.create_branch(repo, lakefs_sdk.BranchCreation(name="dev", source="main"))
    _put(lakefs_client, repo, "main", "src", b"two")  # staged overwrite on main
    lakefs_client.tags_api.create_tag(repo, lakefs_sdk.TagCreation(id="v1", ref=c1.id))
    for dest, src_ref, want in (
        ("from-branch", "main", b"two"),
        ("from-commit", c1.id, b"one"),
        ("from-tag", "v1", b"one"),
    ):
        st = o.copy_object(repo, "dev", dest, lakefs_sdk.ObjectCopyCreation(src_path="src", src_ref=src_ref))
        assert _read(lakefs_client, repo, "dev", dest) == want
        assert ns_rel(ns, st.physical_address) not in {ns_rel(ns, x.physical_address) for x in (src, copied)}
    # a copy's address is new: overwriting or deleting the source leaves it readable
    o.delete_object(repo, "main", "src")
    assert _read(lakefs_client, repo, "main", "same-branch") == b"one"
    status, body = status_of(
        o.copy_object, repo, "main", "shallow", lakefs_sdk.ObjectCopyCreation(src_path="same-branch", shallow=True)
    )
    assert status == 501
    assert body["message"] == "Not Implemented"
    assert status_of(o.copy_object, repo, "main", "x", lakefs_sdk.ObjectCopyCreation(src_path="nope"))[0] == 404
    status, body = status_of(o.copy_object, repo, "gone", "x", lakefs_sdk.ObjectCopyCreation(src_path="src"))
    assert status == 404
    assert body["message"] == "branch 'gone' not found"


def test_copy_of_a_linked_object_reads_the_linked_bytes(lakefs_client, lakefs_emulator):
    """A copy of an object written through getPhysicalAddress + linkPhysicalAddress (FULL on the
    local blockstore) reads the client-written bytes and lands at a new relative address."""
    repo, ns = new_repo(lakefs_client, lakefs_emulator)
    sa = lakefs_client.staging_api
    loc = sa.get_physical_address(repo, "main", "linked")
    path = loc.physical_address[len("local://") :]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"linked bytes")
    sa.link_physical_address(
        repo, "main", "linked", lakefs_sdk.StagingMetadata(staging=loc, checksum="e", size_bytes=12)
    )
    st = lakefs_client.objects_api.copy_object(repo, "main", "copy", lakefs_sdk.ObjectCopyCreation(src_path="linked"))
    assert ns_storage(ns).get(ns_rel(ns, st.physical_address)) == b"linked bytes"


def _branch(client, repo, name, source="main"):
    client.branches_api.create_branch(repo, lakefs_sdk.BranchCreation(name=name, source=source))


def _head(client, repo, branch):
    return client.commits_api.get_commit(repo, client.branches_api.get_branch(repo, branch).commit_id)


def test_merge_commit_has_the_destination_as_first_parent(lakefs_client, lakefs_emulator):
    """lakeFS's Graveler.Merge: parents [destination HEAD, source commit] (a squash merge: the
    destination HEAD only), `.lakefs.merge.strategy` in the metadata, a three-way merge from the
    merge base (conflicts 409 unless dest-wins / source-wins), no changes 400, dirty branch 400."""
    repo, _ = new_repo(lakefs_client, lakefs_emulator)
    refs = lakefs_client.refs_api
    _put(lakefs_client, repo, "main", "a", b"a0")
    _put(lakefs_client, repo, "main", "b", b"b0")
    base = commit(lakefs_client, repo, "main", "base")
    _branch(lakefs_client, repo, "feat")
    _put(lakefs_client, repo, "feat", "a", b"a-feat")
    lakefs_client.objects_api.delete_object(repo, "feat", "b")
    _put(lakefs_client, repo, "feat", "f", b"f")
    f1 = commit(lakefs_client, repo, "feat", "feat")
    _put(lakefs_client, repo, "main", "m", b"m")
    m1 = commit(lakefs_client, repo, "main", "main")
    res = refs.merge_into_branch(repo, "feat", "main", merge=lakefs_sdk.Merge(metadata={"k": "v"}))
    merged = lakefs_client.commits_api.get_commit(repo, res.reference)
    assert merged.parents == [m1.id, f1.id]
    assert merged.id == _head(lakefs_client, repo, "main").id
    assert merged.metadata == {"k": "v", ".lakefs.merge.strategy": "default"}
    assert merged.message == "Merge 'feat' into 'main'"
    assert merged.generation == max(m1.generation, f1.generation) + 1
    listed = {x.path for x in lakefs_client.objects_api.list_objects(repo, "main").results}
    assert listed == {"a", "f", "m"}
    assert _read(lakefs_client, repo, "main", "a") == b"a-feat"
    first = [c.id for c in refs.log_commits(repo, "main", first_parent=True).results]
    assert first[:3] == [merged.id, m1.id, base.id]
    assert f1.id not in first
    assert f1.id in [c.id for c in refs.log_commits(repo, "main").results]
    # nothing new on the source: 400 "no changes" (allowed with allow_empty)
    status, body = status_of(refs.merge_into_branch, repo, "feat", "main")
    assert status == 400
    assert "no changes" in body["message"]  # reverted already
    # a dirty destination is refused
    _put(lakefs_client, repo, "feat", "a", b"a-feat-2")
    commit(lakefs_client, repo, "feat")
    _put(lakefs_client, repo, "main", "dirty", b"d")
    status, body = status_of(refs.merge_into_branch, repo, "feat", "main")
    assert status == 400
    assert "dirty branch" in body["message"]
    lakefs_client.branches_api.reset_branch(repo, "main", lakefs_sdk.ResetCreation(type="reset"))
    # both sides changed "a": conflict, then each strategy
    _put(lakefs_client, repo, "main", "a", b"a-main")
    commit(lakefs_client, repo, "main")
    status, body = status_of(refs.merge_into_branch, repo, "feat", "main")
    assert status == 409
    assert body == {"reference": ""}
    _branch(lakefs_client, repo, "main2")
    refs.merge_into_branch(repo, "feat", "main", merge=lakefs_sdk.Merge(strategy="dest-wins"))
    assert _read(lakefs_client, repo, "main", "a") == b"a-main"
    refs.merge_into_branch(repo, "feat", "main2", merge=lakefs_sdk.Merge(strategy="source-wins"))
    assert _read(lakefs_client, repo, "main2", "a") == b"a-feat-2"
    assert status_of(refs.merge_into_branch, repo, "feat", "main2", merge=lakefs_sdk.Merge(strategy="theirs"))[0] == 400
    # squash merge: one parent, the destination's HEAD
    _put(lakefs_client, repo, "feat", "s", b"s")
    f3 = commit(lakefs_client, repo, "feat")
    before = _head(lakefs_client, repo, "main")
    sq = refs.merge_into_branch(repo, "feat", "main", merge=lakefs_sdk.Merge(squash_merge=True, message="squash"))
    squashed = lakefs_client.commits_api.get_commit(repo, sq.reference)
    assert squashed.parents == [before.id]
    assert squashed.message == "squash"
    assert squashed.generation == max(before.generation, f3.generation) + 1
    assert _read(lakefs_client, repo, "main", "s") == b"s"
    assert status_of(refs.merge_into_branch, repo, "nope", "main")[0] == 404
    assert status_of(refs.merge_into_branch, repo, "feat", "nope")[0] == 404


def test_revert_and_cherry_pick_as_lakefs_does(lakefs_client, lakefs_emulator):
    """lakeFS's Graveler.Revert and CherryPick: one parent (the branch's HEAD); a merge commit
    needs a 1-based parent number (revert: 409 without, cherry-pick: 400); out of range 400;
    a cherry-pick keeps the commit's message and metadata and records its origin."""
    repo, _ = new_repo(lakefs_client, lakefs_emulator)
    br = lakefs_client.branches_api
    _put(lakefs_client, repo, "main", "a", b"a0")
    commit(lakefs_client, repo, "main")
    _branch(lakefs_client, repo, "feat")
    _put(lakefs_client, repo, "feat", "f", b"f")
    f1 = commit(lakefs_client, repo, "feat", "add f", metadata={"team": "x"})
    _put(lakefs_client, repo, "main", "a", b"a1")
    a1 = commit(lakefs_client, repo, "main", "a1")
    # revert a plain commit (parent_number 0): "a" back to a0
    br.revert_branch(repo, "main", lakefs_sdk.RevertCreation(ref=a1.id, parent_number=0))
    reverted = _head(lakefs_client, repo, "main")
    assert reverted.parents == [a1.id]
    assert reverted.message == f"Revert {a1.id}"
    assert _read(lakefs_client, repo, "main", "a") == b"a0"
    status, body = status_of(br.revert_branch, repo, "main", lakefs_sdk.RevertCreation(ref=a1.id, parent_number=0))
    assert status == 400
    assert "no changes" in body["message"]
    _put(lakefs_client, repo, "main", "a", b"a2")
    commit(lakefs_client, repo, "main", "a2")
    status, body = status_of(br.revert_branch, repo, "main", lakefs_sdk.RevertCreation(ref=a1.id, parent_number=0))
    assert status == 409
    assert body["message"] == "update branch: conflict found"  # "a" changed since a1 on both sides
    reverted = _head(lakefs_client, repo, "main")
    # cherry-pick feat's commit onto main
    picked = br.cherry_pick(repo, "main", lakefs_sdk.CherryPickCreation(ref=f1.id))
    assert picked.parents == [reverted.id]
    assert picked.message == "add f"
    assert picked.metadata == {"team": "x", "cherry-pick-origin": f1.id, "cherry-pick-committer": f1.committer}
    assert _read(lakefs_client, repo, "main", "f") == b"f"
    # a merge commit: revert needs parent_number (409 without), cherry-pick too (400 without)
    _put(lakefs_client, repo, "feat", "g", b"g")
    commit(lakefs_client, repo, "feat")
    merged = lakefs_client.commits_api.get_commit(
        repo, lakefs_client.refs_api.merge_into_branch(repo, "feat", "main").reference
    )
    for parent, status in ((0, 409), (3, 400)):
        assert (
            status_of(br.revert_branch, repo, "main", lakefs_sdk.RevertCreation(ref=merged.id, parent_number=parent))[0]
            == status
        )
    _branch(lakefs_client, repo, "other", source=a1.id)
    assert status_of(br.cherry_pick, repo, "other", lakefs_sdk.CherryPickCreation(ref=merged.id))[0] == 400
    on_other = br.cherry_pick(repo, "other", lakefs_sdk.CherryPickCreation(ref=merged.id, parent_number=1))
    assert on_other.parents == [a1.id]
    assert _read(lakefs_client, repo, "other", "g") == b"g"
    br.revert_branch(repo, "main", lakefs_sdk.RevertCreation(ref=merged.id, parent_number=1))
    assert status_of(lakefs_client.objects_api.stat_object, repo, "main", "g")[0] == 404
    # a dirty branch is refused; the root commit has no parent to cherry-pick against
    _put(lakefs_client, repo, "other", "dirty", b"d")
    assert status_of(br.cherry_pick, repo, "other", lakefs_sdk.CherryPickCreation(ref=f1.id))[0] == 400
    br.reset_branch(repo, "other", lakefs_sdk.ResetCreation(type="reset"))
    root = lakefs_client.refs_api.log_commits(repo, "main").results[-1]
    assert root.parents == []
    assert status_of(br.cherry_pick, repo, "other", lakefs_sdk.CherryPickCreation(ref=root.id))[0] == 400


def test_tags_are_refs_but_not_gc_starting_points(lakefs_client, lakefs_emulator):
    """Tags (create, get, list, delete, read through) and lakeFS's retention walk
    (pkg/graveler/retention: starting points are branch HEADs and ancestry leaves, never tags): a
    tagged commit left by a deleted branch is in commits.csv only when the walk keeps it."""
    repo, ns = new_repo(lakefs_client, lakefs_emulator)
    tags = lakefs_client.tags_api
    now = int(time.time())
    _put(lakefs_client, repo, "main", "a", b"a")
    c1 = commit(lakefs_client, repo, "main", date=now - 40 * 86400)
    _branch(lakefs_client, repo, "old")
    _put(lakefs_client, repo, "old", "x", b"x")
    x1 = commit(lakefs_client, repo, "old", date=now - 30 * 86400)
    _put(lakefs_client, repo, "old", "y", b"y")
    x2 = commit(lakefs_client, repo, "old", date=now - 20 * 86400)
    assert tags.create_tag(repo, lakefs_sdk.TagCreation(id="v1", ref=x1.id)).commit_id == x1.id
    assert tags.create_tag(repo, lakefs_sdk.TagCreation(id="v2", ref="old")).commit_id == x2.id
    assert tags.get_tag(repo, "v1").commit_id == x1.id
    assert status_of(tags.create_tag, repo, lakefs_sdk.TagCreation(id="v1", ref="main"))[0] == 409
    assert status_of(tags.create_tag, repo, lakefs_sdk.TagCreation(id="main", ref="main"))[0] == 409
    assert status_of(tags.create_tag, repo, lakefs_sdk.TagCreation(id="bad..tag", ref="main"))[0] == 400
    assert status_of(tags.create_tag, repo, lakefs_sdk.TagCreation(id="v9", ref="nope"))[0] == 404
    page = tags.list_tags(repo, amount=1)
    assert [t.id for t in page.results] == ["v1"]
    assert page.pagination.has_more
    assert [t.id for t in tags.list_tags(repo, after="v1").results] == ["v2"]
    assert [t.id for t in tags.list_tags(repo, prefix="v2").results] == ["v2"]
    lakefs_client.branches_api.delete_branch(repo, "old")
    # a tag is a ref: read through it, branch from it
    assert _read(lakefs_client, repo, "v1", "x") == b"x"
    _branch(lakefs_client, repo, "from-tag", source="v1")
    assert lakefs_client.branches_api.get_branch(repo, "from-tag").commit_id == x1.id
    lakefs_client.branches_api.delete_branch(repo, "from-tag")
    # retention 7 days: x2 (20 days old) is a dangling leaf outside the window, tagged or not
    lakefs_client.repositories_api.set_gc_rules(
        repo, lakefs_sdk.GarbageCollectionRules(default_retention_days=7, branches=[])
    )
    res = lakefs_client.internal_api.prepare_garbage_collection_commits(repo)
    rows = ns_storage(ns).get(ns_rel(ns, res.gc_commits_location)).decode().splitlines()[1:]
    kept = {line.split(",")[0] for line in rows}
    assert c1.id in kept
    assert not kept & {x1.id, x2.id}
    tags.delete_tag(repo, "v1")
    assert status_of(tags.get_tag, repo, "v1")[0] == 404
    assert status_of(tags.delete_tag, repo, "v1")[0] == 404
