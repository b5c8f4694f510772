"""The two live-data holes of the last round, on lakeFS itself and every blockstore: entries that
lakeFS's own uncommitted mark leaves out, kept while a branch reads them and collected once nothing
does.

* an object staged through the link flow (``getPhysicalAddress``, the client writes,
  ``linkPhysicalAddress``): on the local blockstore lakeFS 1.84 hands out the resolved
  ``local:///`` address and its mark omits it; on the other blockstores it is checked too;
* a committed object staged again with its committed identity: its bytes uploaded again to the
  same path, and the object copied onto itself (``copyObject`` copies to a new address; lakeFS's
  uncommitted diff skips the entry, its identity being HEAD's).

Each scenario: staged past the cutoff, a GC run keeps every staged address (and lakeFS still reads
the bytes); then the branch is reset (the staged entries dropped, nothing references the addresses)
and the next run collects them, leaving the committed objects.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import lakefs_sdk
import pytest

from lakefs_gc.storage import parse_namespace
from tests.conftest import ns_storage
from tests.runs.test_random_histories import SETTINGS, Place
from tests.support import history

pytestmark = pytest.mark.spark
STEPS = [
    ("upload", 0, 1),
    ("upload", 0, 2),
    ("commit", 0, 1.0),
    ("restage", 0, 1, 0.1),  # obj/1.bin copied onto itself
    ("restage", 0, 2, 0.9),  # obj/2.bin's bytes uploaded again
    ("link", 0, 3, 0.9),
]  # obj/3.bin through the link flow, linked


def _gc(server, name: str, spark, work, staged_check: str = "candidates"):
    return Place(server, server.store).collect(
        name,
        spark,
        work,
        datetime.now(UTC) + timedelta(seconds=2),
        run_id=f"holes-{uuid.uuid4().hex[:6]}",
        settings=replace(SETTINGS, staged_check=staged_check),
    )[1]


# the check on the candidates on every blockstore; the full one where lakeFS's mark differs (local
# omits the link-flow entry, S3 has it): its listing is the same code on every blockstore
@pytest.mark.parametrize(
    ("kind", "staged_check"),
    [(k, "candidates") for k in ("local", "s3", "azure", "gs")] + [("local", "full"), ("s3", "full")],
)
def test_entries_lakefs_marks_omit_are_kept_while_read_and_collected_once_gone(
    kind, staged_check, real_lakefs, spark, tmp_path, moto_server
):
    server = real_lakefs(kind)
    store = server.store
    bucket = moto_server.create_bucket(f"holes-{uuid.uuid4().hex[:8]}") if kind == "s3" else "holes"
    name = f"holes-{kind}-{uuid.uuid4().hex[:6]}"
    ns = server.namespace(name, bucket)
    roots = parse_namespace(ns, server.local_root).roots()
    storage = ns_storage(ns, store)
    client = server.client()
    history.create(client, name, ns)
    h = history.apply(client, name, ns, roots, STEPS, storage=storage, same_identity=True)
    history.set_rules(client, name, [h])
    assert h.done.get("restage_same_identity") == 2, h.done
    assert h.done.get("link") == 1, h.done
    head = client.branches_api.get_branch(name, "main").commit_id
    committed = {o.path: o for o in client.objects_api.list_objects(name, head).results}
    staged = {o.path: o for o in client.objects_api.list_objects(name, "main").results}
    assert set(staged) == {"obj/1.bin", "obj/2.bin", "obj/3.bin"}
    for path in ("obj/1.bin", "obj/2.bin"):  # a new address, the committed identity
        assert staged[path].physical_address != committed[path].physical_address
        assert staged[path].checksum == committed[path].checksum
    diff = client.branches_api.diff_branch(name, "main").results
    assert {d.path for d in diff} == {"obj/3.bin"}, "lakeFS's uncommitted diff lists a same-identity entry"
    staged_keys = {history._rel(roots, staged[p].physical_address) for p in ("obj/1.bin", "obj/2.bin")} | set(
        h.linked.values()
    )
    committed_keys = {history._rel(roots, o.physical_address) for o in committed.values()}
    assert all("://" not in k for k in staged_keys | committed_keys), staged_keys | committed_keys

    # 1. staged past the cutoff, read by main: kept
    results = _gc(server, name, spark, tmp_path / "work", staged_check)
    after = {o.key for o in storage.list("data/", recursive=True)}
    assert staged_keys | committed_keys <= after, f"live objects lost: {sorted((staged_keys | committed_keys) - after)}"
    for path in staged:
        assert bytes(client.objects_api.get_object(name, "main", path)), path
    cand = results["compute_candidates"]
    if staged_check == "full":
        omitted = results["mark_uncommitted"].staged_addresses_lakefs_omitted
        print(f"\n{kind}: lakeFS's mark omitted {omitted} of 3 staged addresses; all kept")
    else:  # the two re-staged ones on every blockstore, and on local the link-flow one, found among the candidates
        assert cand.staged_kept == (3 if kind == "local" else 2), cand
        print(
            f"\n{kind}: {cand.staged_suspicious} suspicious candidate(s), {cand.staged_stats} statObject call(s), "
            f"{cand.staged_kept} kept"
        )

    # 2. the branch reset: nothing reads them any more; the next run collects them
    client.branches_api.reset_branch(name, "main", lakefs_sdk.ResetCreation(type="reset"))
    _gc(server, name, spark, tmp_path / "work", staged_check)
    after = {o.key for o in storage.list("data/", recursive=True)}
    assert committed_keys <= after, f"committed objects lost: {sorted(committed_keys - after)}"
    assert not staged_keys & after, f"garbage left: {sorted(staged_keys & after)}"


@pytest.mark.parametrize("kind", ["local", "s3", "azure", "gs"])
def test_a_large_object_staged_again_with_its_identity_is_kept_where_the_store_checksum_differs(
    kind, real_lakefs, spark, tmp_path, moto_server
):
    """12 MiB: lakeFS uploads it in parts, so S3's ETag is ``<md5 of part md5s>-3`` and Azure keeps
    no Content-MD5 (test_lakefs_facts.py); lakeFS's checksum is the content's MD5 on every
    blockstore. The check cannot compare the store's checksum there and falls back to the size:
    the same bytes uploaded again (lakeFS's mark skips the entry) are kept, then collected."""
    import os

    server = real_lakefs(kind)
    bucket = moto_server.create_bucket(f"large-{uuid.uuid4().hex[:8]}") if kind == "s3" else "large"
    name = f"large-{kind}-{uuid.uuid4().hex[:6]}"
    ns = server.namespace(name, bucket)
    roots = parse_namespace(ns, server.local_root).roots()
    storage = ns_storage(ns, server.store)
    client = server.client()
    history.create(client, name, ns)
    data = os.urandom(12 * 1024 * 1024)
    first = client.objects_api.upload_object(name, "main", "big.bin", content=data)
    client.commits_api.commit(name, "main", lakefs_sdk.CommitCreation(message="big"))
    again = client.objects_api.upload_object(name, "main", "big.bin", content=data)
    assert again.physical_address != first.physical_address
    assert again.checksum == first.checksum
    assert not client.branches_api.diff_branch(name, "main").results, "lakeFS's diff lists a same-identity entry"
    history.set_rules(client, name, [])
    keys = {history._rel(roots, a.physical_address) for a in (first, again)}
    listed = {o.key: o.checksum for o in storage.list("data/", recursive=True)}
    if kind in ("s3", "azure"):  # the store's checksum is not lakeFS's here: the fallback is what is tested
        assert all(listed[k] != first.checksum for k in keys), listed

    results = _gc(server, name, spark, tmp_path / "work")
    assert keys <= {o.key for o in storage.list("data/", recursive=True)}, "the live re-staged object was deleted"
    cand = results["compute_candidates"]
    assert cand.staged_suspicious == 1, cand
    assert cand.staged_kept == 1, cand
    client.branches_api.reset_branch(name, "main", lakefs_sdk.ResetCreation(type="reset"))
    _gc(server, name, spark, tmp_path / "work")
    after = {o.key for o in storage.list("data/", recursive=True)}
    assert history._rel(roots, first.physical_address) in after
    assert history._rel(roots, again.physical_address) not in after
