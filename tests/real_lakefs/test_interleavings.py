"""What happens in the repository between two GC tasks, on lakeFS itself: before each task of a
run (``mark_uncommitted``, ``list_committed``, ``list_slices``, ``compute_candidates``, ``delete``,
``save_report``), the same changes land at once, each on its own objects and branches:

* the ordering trap: an object staged on main when the run started is committed, then overwritten
  and committed again (its first address now lives only in a commit within retention); the same
  for a link-flow entry, which lakeFS's mark lacks on the local blockstore;
* main's re-staged entries (a copy onto itself, the same bytes uploaded again) and a staged object
  committed;
* a branch with a staged object and a link-flow entry reset;
* a branch with a staged object deleted;
* a branch created from main, with a new object committed on it;
* a branch holding an entry re-staged with its HEAD's identity hard-reset to its earlier commit.

Whatever the gap, nothing the oracle (lakeFS's API only) says to keep at the end of the run is
lost, with either staged check (the full listing in ``mark_uncommitted``, or the check on the
candidates in ``compute_candidates``, which reads the commits made since ``list_committed``).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import lakefs_sdk
import pytest

from lakefs_gc.contract import STAGED_CHECKS
from lakefs_gc.listing.uncommitted import address_keys
from lakefs_gc.storage import parse_namespace
from tests.conftest import ns_storage
from tests.runs.test_random_histories import SETTINGS, Place
from tests.support import history

pytestmark = pytest.mark.spark
GAPS = ("mark_uncommitted", "list_committed", "list_slices", "compute_candidates", "delete", "save_report")
STEPS = [
    ("upload", 0, 1),
    ("upload", 0, 2),
    ("upload", 0, 3),
    ("commit", 0, 1.0),
    ("branch", 0, 0),  # b1
    ("upload", 1, 4),
    ("commit", 1, 1.0),
    ("upload", 1, 5),
    ("link", 1, 6, 0.9),
    ("restage", 0, 1, 0.1),
    ("restage", 0, 2, 0.9),  # main: a copy onto itself, the same bytes again
    ("upload", 0, 7),  # main: the trap's object, staged
    ("link", 0, 10, 0.5),  # main: the trap for a link-flow entry (local:
    # lakeFS's mark lacks it)
    ("branch", 0, 1),  # b3
    ("upload", 2, 8),
]  # b3: staged


def _changes(client, repo: str, hard_reset_to: str) -> None:
    o, b, c = client.objects_api, client.branches_api, client.commits_api
    # lakeFS accepts it with the same-identity entry staged, keeps the entry, which is a change then
    # (test_lakefs_facts.py): lakeFS's mark lacked it, the HEAD recorded at the mark has its identity
    lakefs_sdk.ExperimentalApi(client.branches_api.api_client).hard_reset_branch(repo, "hr", hard_reset_to)
    c.commit(repo, "main", lakefs_sdk.CommitCreation(message="commits the staged"))
    o.upload_object(repo, "main", "obj/7.bin", content=b"overwritten during the run")
    o.upload_object(repo, "main", "obj/10.bin", content=b"the linked one overwritten during the run")
    c.commit(repo, "main", lakefs_sdk.CommitCreation(message="overwrites"))
    b.reset_branch(repo, "b1", lakefs_sdk.ResetCreation(type="reset"))
    b.delete_branch(repo, "b3")
    b.create_branch(repo, lakefs_sdk.BranchCreation(name="late", source="main"))
    o.upload_object(repo, "late", "obj/9.bin", content=b"written during the run")
    c.commit(repo, "late", lakefs_sdk.CommitCreation(message="late"))


@pytest.mark.parametrize("staged_check", STAGED_CHECKS)
@pytest.mark.parametrize("gap", GAPS)
def test_changes_between_two_tasks_never_cost_a_live_object(gap, staged_check, real_lakefs, spark, tmp_path):
    server = real_lakefs("local")
    repo = f"gap-{gap.replace('_', '-')}-{staged_check[0]}-{uuid.uuid4().hex[:6]}"
    ns = server.namespace(repo)
    roots = parse_namespace(ns, server.local_root).roots()
    storage = ns_storage(ns)
    client = server.client()
    history.create(client, repo, ns)
    h = history.apply(client, repo, ns, roots, STEPS, storage=storage, same_identity=True)
    assert h.done.get("restage_same_identity") == 2, h.done
    assert h.done.get("link") == 2, h.done
    assert [x.id for x in client.branches_api.list_branches(repo).results] == ["b1", "b3", "main"]
    # a branch holding an entry re-staged with its HEAD's identity, hard-reset during the run
    o, c = client.objects_api, client.commits_api
    client.branches_api.create_branch(repo, lakefs_sdk.BranchCreation(name="hr", source="main"))
    o.upload_object(repo, "hr", "hr/x.bin", content=b"first")
    hard_reset_to = c.commit(repo, "hr", lakefs_sdk.CommitCreation(message="hr 1")).id
    o.upload_object(repo, "hr", "hr/x.bin", content=b"second")
    c.commit(repo, "hr", lakefs_sdk.CommitCreation(message="hr 2"))
    restaged = history._rel(roots, o.upload_object(repo, "hr", "hr/x.bin", content=b"second").physical_address)
    history.set_rules(client, repo, [h])
    # the cutoff a little after the last write, and the run after the cutoff: what the changes write
    # is newer than the cutoff, as it always is with a real minimum age (a day at least)
    now = datetime.now(UTC) + timedelta(seconds=1)
    time.sleep(2)
    trap = history._rel(roots, client.objects_api.stat_object(repo, "main", "obj/7.bin").physical_address)
    linked_trap = address_keys(
        client.objects_api.stat_object(repo, "main", "obj/10.bin").physical_address, roots, server.local_root
    )

    def between(step: str) -> None:
        if step == gap:
            _changes(client, repo, hard_reset_to)

    _, results = Place(server).collect(
        repo,
        spark,
        tmp_path / "work",
        now,
        run_id=f"gap-{repo}",
        between=between,
        settings=replace(SETTINGS, staged_check=staged_check),
    )
    cand = results["compute_candidates"]
    if staged_check == "candidates" and gap in ("list_slices", "compute_candidates"):
        # the commits landed after list_committed read lakeFS's list: the check read them, and kept
        # the link-flow entry's object (lakeFS's mark lacks it) that only the first of them references
        assert cand.commits_since == 3, cand
        assert cand.committed_since_kept == 1, cand
    # the oracle at the end: its retention windows end no earlier than the run's
    keep, _ = history.oracle(client, repo, [h], roots, datetime.now(UTC).timestamp())
    after = {o.key for o in storage.list("data/", recursive=True)}
    assert trap in keep, "the trap's first address must be live at the end (a commit within retention)"
    assert linked_trap
    assert linked_trap <= keep
    assert restaged in keep, "hr reads its re-staged entry at the end"
    lost = keep - after
    if lost:  # where lakeFS shows them: which ref, which path
        where = []
        for ref in [b.id for b in client.branches_api.list_branches(repo).results] + [
            c.id for c in client.refs_api.log_commits(repo, "main", amount=100).results
        ]:
            for o in client.objects_api.list_objects(repo, ref, amount=1000).results:
                if history._rel(roots, o.physical_address) in lost:
                    where.append(f"{ref[:12]}:{o.path}")
        pytest.fail(f"changes before {gap}: live objects lost: {sorted(lost)}, shown at {where}; history: {h.done}")
