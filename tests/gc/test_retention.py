"""The documented retention, kept even where lakeFS's own list leaves it out.

lakeFS's server-side walk stops at a commit another branch's walk already visited with a retention
at least as long, even when that walk did not keep it. The emulator copies that walk on purpose.
Here branch ``short`` is created from commit ``q`` (six days old) and commits on top of it an hour
ago: the documentation promises ``q`` (short's HEAD as of one day ago) is kept; lakeFS's list can
lack it when ``main``'s walk passed ``q`` first. The object only ``q`` references must survive.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from types import SimpleNamespace

import lakefs_sdk
import pytest

from lakefs_gc.contract import RunSettings
from lakefs_gc.gc.retention import branch_window
from lakefs_gc.lakefs.client import LakeFSClient
from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY
from lakefs_gc.steps.prepare_run import prepare_run
from lakefs_sandbox.inprocess import run_steps
from tests.conftest import ns_rel, ns_storage

DAY = 86400


def test_branch_window_is_head_the_window_and_the_first_commit_before_it():
    log = [SimpleNamespace(id=i, creation_date=t) for i, t in enumerate([100, 90, 80, 70, 60])]
    assert [c.id for c in branch_window(log, 75)] == [0, 1, 2, 3]  # 70 is the first at or before 75
    assert [c.id for c in branch_window(log, 200)] == [0]  # an old HEAD is kept alone
    assert [c.id for c in branch_window(log, 0)] == [0, 1, 2, 3, 4]
    assert [c.id for c in branch_window(log, 80)] == [0, 1, 2]  # "after" is strict, as lakeFS's


def _history(client, repo: str, ns: str) -> tuple[str, str, str, str]:
    """(address only q references, q, main's HEAD, short's HEAD)."""
    now = time.time()
    client.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=ns, default_branch="main")
    )
    x = client.objects_api.upload_object(repo, "main", "x.bin", content=f"x-{repo}".encode())
    q = client.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message="q", date=int(now - 6 * DAY)))
    client.objects_api.delete_object(repo, "main", "x.bin")
    client.objects_api.upload_object(repo, "main", "y.bin", content=b"y")
    head = client.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message="h", date=int(now - 5 * DAY)))
    client.branches_api.create_branch(repo, lakefs_sdk.BranchCreation(name="short", source=q.id))
    client.objects_api.delete_object(repo, "short", "x.bin")
    client.objects_api.upload_object(repo, "short", "z.bin", content=f"z-{repo}".encode())
    short = client.commits_api.commit(repo, "short", lakefs_sdk.CommitCreation(message="s", date=int(now - 3600)))
    client.repositories_api.set_gc_rules(repo, lakefs_sdk.GarbageCollectionRules(default_retention_days=1, branches=[]))
    return ns_rel(ns, x.physical_address), q.id, head.id, short.id


@pytest.mark.spark
def test_a_commit_lakefs_list_lacks_is_kept_and_counted(spark, lakefs_emulator, tmp_path):
    emu = lakefs_emulator
    client = emu.client()
    # lakeFS walks starting points in commit-id order: main's HEAD must come first for the bug
    for attempt in range(40):
        repo = f"retention-{attempt}"
        ns = emu.namespace(repo)
        x, q, head, short = _history(client, repo, ns)
        if head < short:
            break
    else:
        pytest.fail("no history with main's HEAD sorting before short's in 40 attempts")
    env = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
    settings = RunSettings(min_age_seconds=0, unsafe_min_age_override=True, max_delete_share=1.0)
    with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key) as gc_client:
        listed = gc_client.prepare_commits(repo)
        csv = ns_storage(ns).get(ns_rel(ns, listed["gc_commits_location"])).decode()
        assert q not in csv, "the emulator's walk (lakeFS's) was expected to leave q out"
        ctx = prepare_run(
            gc_client,
            repo,
            settings,
            now=datetime.now(UTC),
            airflow_run_id="retention",
            work_dir=str(tmp_path / "work"),
            local_root=emu.local_root,
            parallelism=1,
        )
        results = run_steps(spark, ctx, gc_client, env)
    assert ns_storage(ns).exists(x), "the object of short's HEAD as of one day ago was deleted"
    assert results["list_committed"].commits_lakefs_lacked >= 1
    assert results["list_committed"].documented_commits >= 3
