"""Hostile and odd inputs, each checked on what is left in storage: unexpected files under
``_lakefs/`` and ``data/``, corrupt or truncated metadata, odd object names, symlinks that point
out of a local namespace, an empty repository.

The steps run in-process on the shared SparkSession, against the shared emulator.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import lakefs_sdk
import pytest

from lakefs_gc.contract import RunSettings
from lakefs_gc.lakefs.client import LakeFSClient
from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY, storage_ref
from lakefs_gc.steps.prepare_run import prepare_run
from lakefs_sandbox.inprocess import run_steps
from tests.conftest import ns_rel, ns_storage

pytestmark = pytest.mark.spark
DAY = 86400
SETTINGS = RunSettings(min_age_seconds=0, unsafe_min_age_override=True, max_delete_share=1.0)
_counter = iter(range(10**6))


def build(emu):
    """A repository with a committed and a staged object under odd names, and one garbage object."""
    name = f"hostile-{next(_counter)}-{int(time.time()) % 10000}"
    c = emu.client()
    ns = emu.namespace(name)
    c.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=name, storage_namespace=ns, default_branch="main")
    )

    def up(path):
        return ns_rel(ns, c.objects_api.upload_object(name, "main", path, content=path.encode()).physical_address)

    committed = up("dir with space/ünïcødé 100%+plus.csv")
    c.commits_api.commit(name, "main", lakefs_sdk.CommitCreation(message="c", date=int(time.time() - DAY)))
    staged = up("staged/new\nline.txt")
    garbage = up("tmp/garbage.bin")
    c.objects_api.delete_object(name, "main", "tmp/garbage.bin")
    c.repositories_api.set_gc_rules(name, lakefs_sdk.GarbageCollectionRules(default_retention_days=7, branches=[]))
    return name, ns, {committed, staged}, garbage


def gc(emu, spark, tmp_path, name, settings=SETTINGS):
    env = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
    with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key) as client:
        # the clock a little ahead of the test's last write: with a minimum age of 0 the cutoff is the
        # start, and a file written a moment ago must count as older than it
        ctx = prepare_run(
            client,
            name,
            settings,
            now=datetime.now(UTC) + timedelta(seconds=2),
            airflow_run_id=f"h{time.time()}",
            work_dir=str(tmp_path / "work"),
            local_root=emu.local_root,
            parallelism=1,
        )
        return run_steps(spark, ctx, client, env)


def keys(ns):
    return {o.key for o in ns_storage(ns).list("", recursive=True)}


def test_unexpected_files_under_lakefs_and_data_neither_crash_nor_get_deleted_wrongly(spark, lakefs_emulator, tmp_path):
    name, ns, live, garbage = build(lakefs_emulator)
    st = ns_storage(ns)
    odd_lakefs = [
        "_lakefs/unexpected.txt",
        "_lakefs/retention/gc/unified/not-a-mark/whatever",
        "_lakefs/retention/gc/unified/broken/summary.json",
        "_lakefs/retention/gc/commits/stray.csv",
    ]
    for k in odd_lakefs:
        st.put(k, b"{not json")
    st.put("data/loose-file", b"x")  # directly under data/
    st.put("data/not-a-slice/deep/file", b"x")  # a child of data/ that is not an xid
    results = gc(
        lakefs_emulator, spark, tmp_path, name, settings=replace(SETTINGS, confirm_after_seconds=1)
    )  # reads the earlier marks: the broken ones are reported
    after = keys(ns)
    assert live <= after
    assert set(odd_lakefs) <= after
    cands = results["compute_candidates"]
    import pyarrow.parquet as pq

    listed = sorted(pq.read_table(results["list_slices"].listed_dir).column("address").to_pylist())
    assert cands.candidates == 3, (listed, results["list_slices"])  # the garbage, and the two stray objects under data/
    assert any(u.startswith("broken:") for u in cands.unreadable_marks)
    assert any(u.startswith("not-a-mark:") for u in cands.unreadable_marks)
    # delayed confirmation with no earlier mark: nothing deleted this time, the reason said
    assert cands.to_delete == 0
    assert garbage in after
    assert "no successful mark" in cands.held_back_reason


@pytest.mark.parametrize("damage", ["truncate", "zero", "garbage"])
def test_corrupt_uncommitted_parquet_and_ranges_fail_closed(spark, lakefs_emulator, tmp_path, damage):
    emu = lakefs_emulator
    name, ns, live, garbage = build(emu)
    st = ns_storage(ns)

    def hurt(key):
        data = st.get(key)
        st.put(key, {"truncate": data[: len(data) // 2], "zero": b"", "garbage": os.urandom(len(data))}[damage])

    # ranges and metaranges (every _lakefs/<id> table)
    tables = [o.key for o in st.list("_lakefs/", recursive=False) if o.key.count("/") == 1 and o.key != "_lakefs/dummy"]
    assert tables
    originals = {k: st.get(k) for k in tables}
    for k in tables:
        hurt(k)
    before = keys(ns)
    with pytest.raises(Exception):  # noqa: B017, PT011 - fails closed; what raises depends on the damage
        gc(emu, spark, tmp_path, name)
    assert {k for k in before if k.startswith("data/")} <= keys(ns)
    for k, v in originals.items():
        st.put(k, v)

    # the staged addresses lakeFS writes (damaged as soon as lakeFS wrote them: the uncommitted
    # folder is listed by the step, so damage every file lakeFS leaves there)
    env = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
    from lakefs_gc.contract import STEP_INPUTS, StepInputs
    from lakefs_gc.steps.mark_uncommitted import mark_uncommitted
    from lakefs_sandbox.inprocess import SPARK_STEPS

    with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key) as client:
        ctx = prepare_run(
            client,
            name,
            SETTINGS,
            now=datetime.now(UTC) + timedelta(seconds=2),
            airflow_run_id="corrupt-unc",
            work_dir=str(tmp_path / "work2"),
            local_root=emu.local_root,
            parallelism=1,
        )
        results = {"mark_uncommitted": mark_uncommitted(client, ctx, storage_ref(ctx, env).open())}
    run_id = results["mark_uncommitted"].run_id
    for o in list(st.list(f"_lakefs/retention/gc/uncommitted/{run_id}/", recursive=True)):
        hurt(o.key)
    for step in ("list_committed", "list_slices"):
        results[step] = SPARK_STEPS[step](spark, StepInputs(ctx, {k: results.get(k) for k in STEP_INPUTS[step]}), env)
    with pytest.raises(Exception):  # noqa: B017, PT011 - fails closed; what raises depends on the damage
        SPARK_STEPS["compute_candidates"](
            spark, StepInputs(ctx, {k: results.get(k) for k in STEP_INPUTS["compute_candidates"]}), env
        )
    assert live <= keys(ns)
    assert garbage in keys(ns)
    assert not any("/deleted/" in k for k in keys(ns) if k.startswith(f"_lakefs/retention/gc/unified/{run_id}/"))


def test_odd_object_names_are_collected_exactly(spark, lakefs_emulator, tmp_path):
    name, ns, live, garbage = build(lakefs_emulator)
    st = ns_storage(ns)
    slice_dir = sorted(live)[0].rsplit("/", 1)[0]
    odd = [
        f"{slice_dir}/{n}"
        for n in ("sp ace", "ünï", "100%", "a+b", "new\nline", "q?x=1&y", "k" * 200, "tab\there", "back\\slash")
    ]
    for k in odd:
        st.put(k, b"odd garbage")
    results = gc(lakefs_emulator, spark, tmp_path, name)
    after = keys(ns)
    assert live <= after
    assert not (set(odd) | {garbage}) & after, (
        sorted((set(odd) | {garbage}) & after),
        results["list_slices"],
        results["compute_candidates"],
        results["delete"],
    )


def test_symlinks_that_point_out_of_a_local_namespace_are_never_followed(spark, lakefs_emulator, tmp_path):
    name, ns, live, garbage = build(lakefs_emulator)
    root = ns_storage(ns).root
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.bin").write_bytes(b"not lakeFS's")
    (outside / "dir" / "inner.bin").write_bytes(b"not lakeFS's either")
    old = time.time() - 10 * DAY
    for p in (outside / "secret.bin", outside / "dir" / "inner.bin"):
        os.utime(p, (old, old))
    slice_dir = root / sorted(live)[0].rsplit("/", 1)[0]
    (slice_dir / "link-to-file").symlink_to(outside / "secret.bin")
    (root / "data" / "link-to-dir").symlink_to(outside / "dir", target_is_directory=True)
    (slice_dir / "link-to-dir").symlink_to(outside / "dir", target_is_directory=True)
    gc(lakefs_emulator, spark, tmp_path, name)
    assert (outside / "secret.bin").read_bytes() == b"not lakeFS's"
    assert (outside / "dir" / "inner.bin").read_bytes() == b"not lakeFS's either"
    assert live <= keys(ns)
    assert garbage not in keys(ns)


def test_an_empty_repository_and_a_branch_without_commits_of_its_own(spark, lakefs_emulator, tmp_path):
    c = lakefs_emulator.client()
    name = f"empty-{int(time.time()) % 100000}"
    ns = lakefs_emulator.namespace(name)
    c.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=name, storage_namespace=ns, default_branch="main")
    )
    c.branches_api.create_branch(name, lakefs_sdk.BranchCreation(name="idle", source="main"))
    c.repositories_api.set_gc_rules(name, lakefs_sdk.GarbageCollectionRules(default_retention_days=1, branches=[]))
    before = keys(ns)
    results = gc(lakefs_emulator, spark, tmp_path, name)
    assert results["compute_candidates"].candidates == 0
    assert results["delete"].counts.deleted == 0
    assert before <= keys(ns)
