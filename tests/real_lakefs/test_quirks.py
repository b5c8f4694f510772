"""lakeFS 1.84's own quirk, on lakeFS itself: after a commit that has metadata (here a merge
commit) is cherry-picked, lakeFS answers 404 "commit not found" for that commit's full id until
the server restarts (the cherry-pick writes its origin into the cached source commit's metadata
map, ``pkg/graveler/graveler.go``, ``CherryPick``); shorter prefixes still resolve. lakeFS's own
GC crashes on it. Ours must fail closed (deleting nothing) or succeed, and lose nothing live.
A server of its own: the quirk lasts until a restart, and would poison the shared servers.
The emulator reproduces it with injected faults (``tests/runs/test_random_histories.py``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import lakefs_sdk
import pytest

from tests.conftest import ns_storage, start_real_lakefs
from tests.runs.test_random_histories import Place, merged_history
from tests.support import history

pytestmark = pytest.mark.spark


def test_a_cherry_picked_merge_commit_lakefs_answers_404_for_never_makes_the_gc_delete_live_data(spark, tmp_path):
    server = start_real_lakefs(tmp_path / "lakefs")
    try:
        name = "quirk"
        client, ns, roots, h, merge = merged_history(server, name)
        history.set_rules(client, name, [h])
        # the oracle before the quirk (it reads commits by id); the cherry-pick adds b3's new tree
        now = datetime.now(UTC) + timedelta(seconds=30)
        keep, _ = history.oracle(client, name, [h], roots, now.timestamp())
        client.branches_api.cherry_pick(name, "b3", lakefs_sdk.CherryPickCreation(ref=merge, parent_number=1))
        keep |= history._list_addresses(client, name, "b3", roots, h.linked)
        with pytest.raises(lakefs_sdk.exceptions.NotFoundException):  # the quirk, reproduced
            client.commits_api.get_commit(name, merge)
        assert client.commits_api.get_commit(name, merge[:16]).id == merge  # a prefix still resolves
        client.objects_api.upload_object(name, "b1", "obj/garbage.bin", content=b"staged, then reset")
        client.branches_api.reset_branch(name, "b1", lakefs_sdk.ResetCreation(type="reset"))
        before = {o.key for o in ns_storage(ns).list("data/", recursive=True)}
        try:
            Place(server).collect(name, spark, tmp_path / "work", now, run_id="quirk")
            failed = None
        except Exception as exc:
            failed = exc
        after = {o.key for o in ns_storage(ns).list("data/", recursive=True)}
        assert keep <= after, f"live objects lost: {sorted(keep - after)}"
        if failed is not None:
            assert after == before, "the GC failed but deleted first"
        outcome = (
            f"failed closed: {type(failed).__name__} {' '.join(str(failed).split())[:200]}"
            if failed
            else f"succeeded, deleting {len(before - after)}"
        )
        print(f"\non lakeFS itself the GC {outcome}")
    finally:
        server.stop()
