"""The staged addresses of a run (``lakefs_gc.listing.uncommitted``): lakeFS's uncommitted mark, and
the defence against its blind spot.

lakeFS 1.84's mark leaves out a staged entry whose address is full and not written as the
namespace. On the local blockstore that is every object written the way lakeFS's clients write
large files: ``getPhysicalAddress`` (the resolved ``local:///<root>/<ns>/data/...`` form), write,
``linkPhysicalAddress``. The object is live and readable through lakeFS. These tests build that
history on the emulator (which omits such entries as lakeFS does), prove the mark lacks them, and
run the whole GC: the objects must still be in storage afterwards.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import lakefs_sdk
import pytest

from lakefs_gc.contract import RunSettings
from lakefs_gc.errors import LakeFSGCError
from lakefs_gc.lakefs.client import LakeFSClient
from lakefs_gc.listing import uncommitted
from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY, storage_ref
from lakefs_gc.steps.mark_uncommitted import mark_uncommitted
from lakefs_gc.steps.prepare_run import prepare_run
from lakefs_gc.storage import parse_namespace
from lakefs_sandbox.inprocess import run_steps
from lakefs_sandbox.seed import link_object
from tests.conftest import ns_rel, ns_storage

SETTINGS = RunSettings(min_age_seconds=0, unsafe_min_age_override=True, max_delete_share=1.0)
FAST_RETRIES = {"max_retries": 2, "backoff_base": 0.01, "backoff_max": 0.05}


# ---------------------------------------------------------------------------------------------
# address_keys: what lakeFS prints, as keys of the namespace (pure)


@pytest.mark.parametrize(
    ("printed", "want"),
    [
        # a relative entry, printed resolved
        ("local:///srv/lakefs/ns/r1/data/gA/oB", {"data/gA/oB"}),
        # the resolved form linked FULL: lakeFS prints the root twice (QualifiedKey.Format)
        ("local:///srv/lakefs/srv/lakefs/ns/r1/data/gA/oB,sig", {"data/gA/oB,sig"}),
        # the namespace as written
        ("local://ns/r1/data/gA/oB", {"data/gA/oB"}),
        # outside the namespace: a neighbour, another root, an import
        ("local:///srv/lakefs/ns/r10/data/gA/oB", set()),
        ("local:///srv/lakefs/srv/lakefs/ns/r10/data/gA/oB", set()),
        ("local:///elsewhere/file", set()),
        ("s3://bucket/r1/data/gA/oB", set()),
    ],
)
def test_address_keys_local(printed, want):
    roots = parse_namespace("local://ns/r1", "/srv/lakefs").roots()
    assert uncommitted.address_keys(printed, roots, "/srv/lakefs") == want


@pytest.mark.parametrize("ns", ["s3://bucket/r1", "s3://bucket/r1/"])
def test_address_keys_s3_with_and_without_trailing_slash(ns):
    roots = parse_namespace(ns).roots()
    assert uncommitted.address_keys("s3://bucket/r1/data/gA/oB,sig", roots, None) == {"data/gA/oB,sig"}
    assert uncommitted.address_keys("s3://bucket/r1/legacy-object", roots, None) == {"legacy-object"}
    assert uncommitted.address_keys("s3://bucket/r10/data/gA/oB", roots, None) == set()
    assert uncommitted.address_keys("s3://other/r1/data/gA/oB", roots, None) == set()


# ---------------------------------------------------------------------------------------------
# the hole, end to end on the emulator (local and s3 namespaces)


@pytest.fixture(params=["local", "s3"])
def emu(request, lakefs_emulator_factory, moto_server):
    if request.param == "s3":
        return lakefs_emulator_factory(s3=moto_server)
    return lakefs_emulator_factory()


def _new_repo(emu, moto_server, name):
    c = emu.client()
    bucket = ""
    if emu.blockstore_type == "s3":
        bucket = moto_server.create_bucket(name)
    ns = emu.namespace(name, bucket)
    c.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=name, storage_namespace=ns, default_branch="main")
    )
    c.repositories_api.set_gc_rules(name, lakefs_sdk.GarbageCollectionRules(default_retention_days=1, branches=[]))
    return c, ns


def _link(emu, moto_server, c, repo, ns, branch, path, data: bytes) -> str:
    """The link flow (``lakefs_sandbox.seed.link_object``); the object is live and readable."""
    address = link_object(
        c, repo, branch, path, data, ns_storage(ns, moto_server), parse_namespace(ns, emu.local_root).roots()
    )
    assert bytes(c.objects_api.get_object(repo, branch, path)) == data  # live and readable
    return address


def _keys(ns, moto_server):
    return {o.key for o in ns_storage(ns, moto_server).list("", recursive=True)}


def _gc(spark, emu, moto_server, repo, tmp_path, settings=SETTINGS):
    env = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
    if emu.blockstore_type == "s3":
        from lakefs_gc.storage.settings import ENV_ACCESS_KEY, ENV_SECRET_KEY

        env.update({ENV_ACCESS_KEY: moto_server.access_key, ENV_SECRET_KEY: moto_server.secret_key})
    s3 = moto_server.s3_options() if emu.blockstore_type == "s3" else None

    with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key, **FAST_RETRIES) as client:
        ctx = prepare_run(
            client,
            repo,
            settings,
            now=datetime.now(UTC) + timedelta(seconds=2),
            airflow_run_id=f"run-{time.time()}",
            work_dir=str(tmp_path / "work"),
            storage_options=s3,
            local_root=emu.local_root,
            parallelism=1,
        )
        return ctx, run_steps(spark, ctx, client, env)


@pytest.mark.spark
@pytest.mark.parametrize("staged_check", ["candidates", "full"])
def test_live_staged_objects_written_through_the_link_flow_survive_the_gc(
    spark, emu, moto_server, tmp_path, staged_check
):
    repo = f"link-{emu.blockstore_type}-{staged_check[0]}-{int(time.time() * 1000) % 100000}"
    c, ns = _new_repo(emu, moto_server, repo)
    up = c.objects_api.upload_object
    kept = ns_rel(ns, up(repo, "main", "committed.bin", content=b"committed").physical_address)
    c.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message="c1"))
    c.branches_api.create_branch(repo, lakefs_sdk.BranchCreation(name="dev", source="main"))
    linked = {
        ("main", "x.bin"): _link(emu, moto_server, c, repo, ns, "main", "x.bin", b"linked on main"),
        ("dev", "big/y.bin"): _link(emu, moto_server, c, repo, ns, "dev", "big/y.bin", b"linked on dev"),
        # a committed object overwritten by a linked one: the staged version is the live one
        ("main", "committed.bin"): _link(emu, moto_server, c, repo, ns, "main", "committed.bin", b"v2 linked"),
    }
    plain = ns_rel(ns, up(repo, "main", "plain.bin", content=b"plain").physical_address)
    # garbage: linked then deleted, uploaded then deleted
    gone_linked = _link(emu, moto_server, c, repo, ns, "main", "gone.bin", b"gone")
    c.objects_api.delete_object(repo, "main", "gone.bin")
    gone_plain = ns_rel(ns, up(repo, "dev", "tmp.bin", content=b"tmp").physical_address)
    c.objects_api.delete_object(repo, "dev", "tmp.bin")
    linked_keys = {k: ns_rel(ns, a) for k, a in linked.items()}
    garbage = {ns_rel(ns, gone_linked), gone_plain}
    assert set(linked_keys.values()) | {kept, plain} | garbage <= _keys(ns, moto_server)

    # the hole: lakeFS's own mark (the emulator omits them exactly as lakeFS 1.84 does)
    with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key) as client:
        run_id, locations, _ = client.prepare_uncommitted_all(repo)
    roots = parse_namespace(ns, emu.local_root).roots()
    marked = uncommitted.lakefs_mark_addresses(ns_storage(ns, moto_server), roots, run_id, tuple(locations))
    assert plain in marked
    omitted = set(linked_keys.values()) - marked
    if emu.blockstore_type == "local":
        assert omitted == set(linked_keys.values()), "the emulator no longer reproduces lakeFS's blind spot"
    else:  # on S3 the handed-out address is the namespace as written: lakeFS marks it RELATIVE
        assert not omitted

    ctx, results = _gc(spark, emu, moto_server, repo, tmp_path, replace(SETTINGS, staged_check=staged_check))
    after = _keys(ns, moto_server)
    assert set(linked_keys.values()) | {kept, plain} <= after, "a live staged object was deleted"
    assert not garbage & after, f"garbage left: {sorted(garbage & after)}"
    for (branch, path), _ in linked.items():
        assert bytes(c.objects_api.get_object(repo, branch, path))  # still readable through lakeFS
    unc, cand = results["mark_uncommitted"], results["compute_candidates"]
    mark = unc.run_id
    summary = json.loads(ns_storage(ns, moto_server).get(f"_lakefs/retention/gc/unified/{mark}/summary.json"))
    assert summary["success"]
    assert summary["staged_check"] == staged_check
    if staged_check == "candidates":  # lakeFS is asked about the candidates only: the linked garbage's path
        assert unc.staged_branches == 0
        assert unc.heads_file
        assert not unc.staged_file
        assert cand.staged_kept == len(omitted)
        assert summary["staged_kept"] == len(omitted)
        return
    assert unc.staged_branches == 2
    assert unc.staged_entries_checked == 4
    assert unc.staged_addresses_lakefs_omitted == len(omitted)
    assert summary["staged_addresses_lakefs_omitted"] == len(omitted)
    if omitted:  # the addresses lakeFS lacked are kept beside the mark, in lakeFS's format
        assert summary["staged_file"] == f"_lakefs/retention/gc/unified/{mark}/staged/lakefs-omitted"
        st = ns_storage(ns, moto_server)
        assert set(uncommitted.file_addresses(st, summary["staged_file"], roots)) == omitted


@pytest.mark.spark
def test_a_second_run_over_the_same_staged_link_entries_keeps_them(spark, emu, moto_server, tmp_path):
    """Each run reads the API again: nothing relies on an earlier run's file."""
    repo = f"again-{emu.blockstore_type}-{int(time.time() * 1000) % 100000}"
    c, ns = _new_repo(emu, moto_server, repo)
    c.objects_api.upload_object(repo, "main", "a", content=b"a")
    c.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message="c1"))
    key = ns_rel(ns, _link(emu, moto_server, c, repo, ns, "main", "x.bin", b"x"))
    for _ in range(2):
        _gc(spark, emu, moto_server, repo, tmp_path)
        assert key in _keys(ns, moto_server)


# ---------------------------------------------------------------------------------------------
# reading the staged entries: complete, or the run fails closed


@pytest.fixture
def local_emu(lakefs_emulator_factory):
    return lakefs_emulator_factory()


def _mark(emu, repo, tmp_path):
    env = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
    with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key, **FAST_RETRIES) as client:
        ctx = prepare_run(
            client,
            repo,
            replace(SETTINGS, staged_check="full"),
            now=datetime.now(UTC),
            airflow_run_id=f"m-{time.time()}",
            work_dir=str(tmp_path / "work"),
            local_root=emu.local_root,
            parallelism=1,
        )
        return mark_uncommitted(client, ctx, storage_ref(ctx, env).open())


def _staged_repo(emu, name, n=3):
    c, ns = _new_repo(emu, None, name)
    c.objects_api.upload_object(name, "main", "a", content=b"a")
    c.commits_api.commit(name, "main", lakefs_sdk.CommitCreation(message="c1"))
    c.branches_api.create_branch(name, lakefs_sdk.BranchCreation(name="dev", source="main"))
    keys = {ns_rel(ns, _link(emu, None, c, name, ns, "dev", f"p{i}", b"x")) for i in range(n)}
    return c, ns, keys


def test_every_page_of_a_branch_listing_is_read(local_emu, tmp_path):
    _, _, keys = _staged_repo(local_emu, "pages", n=2501)  # three pages of listObjects (1,000 each)
    unc = _mark(local_emu, "pages", tmp_path)
    assert unc.staged_entries_checked == 2501
    assert unc.staged_addresses_lakefs_omitted == 2501
    # main (a), dev (a + 2,501), and the HEAD commit of each (a)
    assert unc.staged_objects_listed == 1 + 2502 + 1 + 1


@pytest.mark.parametrize(
    ("path", "status", "error", "message"),
    [
        (r"/refs/dev/objects/ls$", 500, Exception, "500"),
        (r"/refs/dev/objects/ls$", 403, LakeFSGCError, "listObjects of branch 'dev'.*403.*fs:ListObjects"),
        # lakeFS still lists the branch: a 404 is not "deleted meanwhile"
        (r"/refs/dev/objects/ls$", 404, LakeFSGCError, "listObjects of branch 'dev'.*404"),
        # the HEAD commit's listing, which the branch's is compared against
        (
            r"/refs/[0-9a-f]{16,}/objects/ls$",
            403,
            LakeFSGCError,
            "listObjects of commit [0-9a-f]+, the HEAD lakeFS lists for branch '(main|dev)'.*403.*fs:ListObjects",
        ),
        (r"/refs/[0-9a-f]{16,}/objects/ls$", 404, LakeFSGCError, "listObjects of commit.*404.*restart lakeFS"),
    ],
)
def test_staged_entries_that_cannot_be_read_fail_the_mark_naming_them(
    local_emu, tmp_path, path, status, error, message
):
    repo = f"unread-{status}-{'branch' if 'dev' in path else 'commit'}"
    _staged_repo(local_emu, repo)
    local_emu.set_faults({"method": "GET", "path": path, "times": -1, "status": status})
    try:
        with pytest.raises(error, match=message):
            _mark(local_emu, repo, tmp_path)
    finally:
        local_emu.set_faults()


def test_a_branch_deleted_while_it_is_listed_is_skipped(local_emu, tmp_path):
    """lakeFS #9772: branches come and go mid-run. The listing of ``dev`` is held back 1.5 s while
    the branch is deleted; lakeFS then answers 404 and no longer lists it: its staged entries are
    unreferenced (as lakeFS's own mark treats them) and the mark completes."""
    c, _, _ = _staged_repo(local_emu, "racing")
    local_emu.set_faults({"method": "GET", "path": r"/refs/dev/objects/ls$", "times": 1, "delay": 1.5, "through": True})
    deleter = threading.Timer(0.5, lambda: c.branches_api.delete_branch("racing", "dev"))
    deleter.start()
    try:
        unc = _mark(local_emu, "racing", tmp_path)
    finally:
        deleter.join(10)
        local_emu.set_faults()
    assert unc.staged_branches_gone == ("dev",)
    assert unc.staged_entries_checked == 0
