"""The chaos bench's writers and checker against lakeFS 1.84 on moto server (no Docker): the writers'
operations take effect, and the checker finds each thing it must (a live object gone, a delete outside
every mark's candidates, garbage left) and nothing else."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

import lakefs_sdk
import pytest

from lakefs_gc.report import formats
from lakefs_gc.report.layout import UNIFIED
from lakefs_gc.storage import open_storage
from lakefs_sandbox.chaos.checker import Checker
from lakefs_sandbox.chaos.writers import Writers

pytestmark = [pytest.mark.e2e]


@pytest.fixture
def chaos_repo(real_lakefs, moto_server):
    server = real_lakefs("s3")
    bucket = moto_server.create_bucket(f"chaos-{uuid.uuid4().hex[:8]}")
    s3 = moto_server.client()
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    repo = f"chaos-{uuid.uuid4().hex[:8]}"
    client = server.client()
    client.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=f"s3://{bucket}/{repo}", default_branch="main")
    )
    client.objects_api.upload_object(repo, "main", "base.bin", content=b"base")
    client.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message="base"))
    return client, repo, s3, bucket


def test_writers_change_the_repository_and_the_checker_finds_a_loss_an_outside_delete_and_garbage(
    chaos_repo, moto_server
):
    client, repo, s3, bucket = chaos_repo
    writers = Writers(2, client, repo, s3, bucket, seed=7, pace=0.02)
    writers.start()
    time.sleep(6)
    writers.stop()
    ok, failed, commits = writers.totals()
    assert not failed, [t.stats.last_error for t in writers.threads]
    assert {"upload", "commit", "branch"} <= set(ok), ok  # the common operations took effect
    assert commits

    storage = open_storage(f"s3://{bucket}/{repo}", moto_server.s3_options())
    checker = Checker(client, repo, s3, bucket, repo, storage)
    clean = checker.check(quiet_cutoff=datetime.now(UTC) - timedelta(days=1), ever_committed=commits)
    assert clean.live > 1
    assert (clean.lost, clean.outside, clean.garbage_left, clean.delete_markers) == ([], [], [], 0)

    # a live object deleted behind lakeFS's back: lost, and a delete no mark confirmed
    live = sorted(checker.live())
    victim = next(k for k in live if k.startswith("data/"))
    s3.delete_object(Bucket=bucket, Key=f"{repo}/{victim}")
    found = checker.check()
    assert found.lost == [victim]
    assert found.outside == [victim]
    assert found.delete_markers == 1

    # the same delete listed by a mark's confirmed candidates: not outside (the loss stays a loss)
    formats.write_addresses(storage, f"{UNIFIED}m1/deleted/part-00000.parquet", [victim])
    assert checker.check().outside == []
    # a mark whose sweep succeeded but left one of its candidates: forgotten
    kept_back = next(k for k in live if k.startswith("data/") and k != victim)
    formats.write_addresses(storage, f"{UNIFIED}m2/deleted/part-00000.parquet", [kept_back])
    assert checker.check(swept_mark="m2").forgotten == [kept_back]
    assert checker.check(swept_mark="m1").forgotten == []
    s3.delete_object(Bucket=bucket, Key=f"{repo}/{victim}")  # the same key deleted again: counted apart
    assert checker.check().deleted_twice == 1

    # an object nothing references, older than the quiet run's cutoff: garbage left
    s3.put_object(Bucket=bucket, Key=f"{repo}/data/gabandoned/orphan", Body=b"x")
    after = datetime.now(UTC) + timedelta(seconds=5)
    left = checker.check(quiet_cutoff=after, ever_committed=commits)
    assert "data/gabandoned/orphan" in left.garbage_left  # (beside the writers' own garbage: abandoned writes)
    assert checker.check(quiet_cutoff=after - timedelta(minutes=10), ever_committed=commits).garbage_left == []
