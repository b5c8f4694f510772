"""The whole GC flow without Airflow: a repository built through lakefs-sdk on the emulator, then
every step in one process (``lakefs_sandbox.inprocess.run_steps``: the jobs' step functions on the
shared SparkSession). Asserts on what is left in storage. The jobs through spark-submit are
tests/runs/test_jobs_local.py and the end-to-end DAG runs."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime

import lakefs_sdk
import pytest

from lakefs_gc import placement
from lakefs_gc.contract import RunSettings
from lakefs_gc.lakefs.client import LakeFSClient
from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY, storage_ref
from lakefs_gc.steps.prepare_run import prepare_run
from lakefs_sandbox.inprocess import run_steps
from tests.conftest import ns_rel, ns_storage

pytestmark = pytest.mark.spark
DAY = 86400


@pytest.mark.parametrize("ranges_read_by", ["driver", "executors", "task"])
def test_gc_jobs_against_the_emulator(spark, lakefs_emulator_factory, tmp_path, monkeypatch, ranges_read_by):
    """``ranges_read_by``: list_committed reads a few ranges on the driver, many on executors
    (``Placement.driver_read_max_entries``), or, without Spark, in the Airflow task's own process
    (``run_in_task``, ``spark.in_process_max_keys``); all three ways here, the same outcome."""
    if ranges_read_by == "executors":
        monkeypatch.setattr(placement, "DEFAULT", placement.Placement(driver_read_max_entries=0))
    if ranges_read_by == "task":  # every step the DAG's tasks run themselves for a small repository
        from lakefs_gc.contract import SPARK_STEPS
        from lakefs_gc.steps import run_in_task
        from lakefs_sandbox import inprocess

        def in_the_task(step):
            def here(inputs, environ, max_keys):
                return run_in_task(step, inputs, environ, max_keys)

            def ours(st) -> set[str]:  # what the GC wrote (lakeFS writes commits.csv when asked to prepare)
                return {o.key for o in st.list("", recursive=True) if "/gc/commits/" not in o.key}

            def run(spark, inputs, environ):
                st = storage_ref(inputs.context, environ).open()
                before = ours(st)
                assert here(inputs, environ, 0) is None  # more keys than that: spark-submit's
                assert ours(st) == before  # ... and nothing was written
                result = here(inputs, environ, 10_000)
                assert result is not None
                return result

            return run

        for step in SPARK_STEPS:
            monkeypatch.setitem(inprocess.SPARK_STEPS, step, in_the_task(step))
    emu = lakefs_emulator_factory("--uncommitted-page-size", "1")
    c = emu.client()
    emu.set_clock(offset=-10 * DAY)  # build history ten days ago: slices and commits are old
    ns = emu.namespace("gcrepo")
    repo = "gcrepo"
    c.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=ns, default_branch="main")
    )

    def up(branch, path, data):
        return c.objects_api.upload_object(repo, branch, path, content=data)

    def addr(stats):
        return ns_rel(ns, stats.physical_address)

    keep = addr(up("main", "keep.txt", b"keep"))
    c.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message="c1"))
    over_v1 = addr(up("main", "over.txt", b"v1"))
    c.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message="c2"))
    over_v2 = addr(up("main", "over.txt", b"v2"))
    c.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message="c3"))
    staged = addr(up("main", "staged.txt", b"staged"))
    tmp = addr(up("main", "tmp.txt", b"tmp"))
    c.objects_api.delete_object(repo, "main", "tmp.txt")
    # staging compaction (lakeFS's CompactedBaseMetaRangeID): compacted entries are still uncommitted
    compacted = addr(up("main", "compacted.txt", b"compacted"))
    compacted_gone = addr(up("main", "compacted-then-deleted.txt", b"cg"))
    assert emu.compact(repo, "main") >= 2
    assert bytes(c.objects_api.get_object(repo, "main", "compacted.txt")) == b"compacted"
    c.objects_api.delete_object(repo, "main", "compacted-then-deleted.txt")  # a tombstone over the compacted entry
    c.branches_api.create_branch(repo, lakefs_sdk.BranchCreation(name="dev", source="main"))
    dev_staged = addr(up("dev", "dev.txt", b"dev"))
    c.branches_api.delete_branch(repo, "dev")
    c.repositories_api.set_gc_rules(repo, lakefs_sdk.GarbageCollectionRules(default_retention_days=1, branches=[]))
    emu.set_clock(offset=0)

    storage = ns_storage(ns)
    root = storage.root
    old = time.time() - 10 * DAY
    for dirpath, _, files in os.walk(root / "data"):
        for f in files:
            os.utime(os.path.join(dirpath, f), (old, old))
    before = {o.key for o in storage.list("", recursive=True)}

    client = LakeFSClient(emu.api_url, emu.access_key, emu.secret_key)
    ctx = prepare_run(
        client,
        repo,
        RunSettings(),
        now=datetime.now(UTC),
        airflow_run_id="manual__jobs",
        work_dir=str(tmp_path / "work"),
        local_root=emu.local_root,
        parallelism=2,
    )
    env = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
    results = run_steps(spark, ctx, client, env)
    run_id = results["mark_uncommitted"].run_id
    assert results["mark_uncommitted"].pages >= 2  # page size 1: staged.txt on main, then an empty last page
    assert results["list_committed"].active_commits == 1  # only main's HEAD: 10 days old, retention 1 day
    after = {o.key for o in storage.list("", recursive=True)}
    deleted = before - after
    assert deleted == {over_v1, tmp, dev_staged, compacted_gone}, deleted
    for live in (keep, over_v2, staged, compacted, "_lakefs/dummy"):
        assert live in after
    assert all(k in after for k in before if k.startswith("_lakefs/") and "/unified/" not in k)
    assert results["delete"].counts.deleted == 4
    assert results["compute_candidates"].candidates == 4
    summary = json.loads(storage.get(f"_lakefs/retention/gc/unified/{run_id}/summary.json"))
    assert summary["run_id"] == run_id
    assert summary["success"] is True
    assert summary["deleted"] == 4
