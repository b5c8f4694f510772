"""Where the bytes go (issue 43): the attribution read on one process (lakefs_gc.listing.holders)
equals, to the byte, an oracle computed from lakeFS's public API only (tests/support/history.py,
``space_oracle``), on random histories built on the emulator: HEADs alone and shared, retention
windows, staged entries per branch, tags' commits, and the unreferenced by fate."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from lakefs_gc.gc.attribution import DELETED, HELD_BACK, YOUNG
from lakefs_gc.lakefs.client import LakeFSClient
from lakefs_gc.listing.holders import attribute_here
from lakefs_gc.storage import parse_namespace
from tests.conftest import ns_storage
from tests.support import history

HISTORIES = 24
STEPS = 24
_repos = itertools.count()


def _build(emu, seeds: list[int]):
    client = emu.client()
    name = f"space-{next(_repos)}"
    ns = emu.namespace(name)
    roots = parse_namespace(ns, emu.local_root).roots()
    history.create(client, name, ns)
    storage = ns_storage(ns)

    def build(seed):
        return history.apply(emu.client(), name, ns, roots, history.ops(seed, STEPS), prefix=f"h{seed}-",
                             storage=storage)

    with ThreadPoolExecutor(4) as pool:
        histories = list(pool.map(build, seeds))
    history.set_rules(client, name, histories)
    return client, name, roots, storage, histories


@pytest.mark.parametrize("seeds", [list(range(0, HISTORIES // 2)), list(range(HISTORIES // 2, HISTORIES))])
def test_the_attribution_equals_the_api_oracle_to_the_byte(lakefs_emulator, seeds):
    emu = lakefs_emulator
    client, name, roots, storage, histories = _build(emu, seeds)
    now = datetime.now(UTC) + timedelta(seconds=2)
    listed = {o.key: (o.size, int(o.last_modified * 1000)) for o in storage.list("data/")}
    _, go = history.oracle(client, name, histories, roots, now.timestamp())
    # a third of the garbage "deleted", and a cutoff in the middle of the writes: every fate occurs
    deleted = set(sorted(go & set(listed))[::3])
    times = sorted(t for _, t in listed.values())
    cutoff_ms = times[len(times) // 2]
    want = history.space_oracle(client, name, histories, roots, now.timestamp(), listed, deleted, cutoff_ms)
    with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key) as gc_client:
        got, _ = attribute_here(gc_client, name, storage, roots, emu.local_root,
                                ((k, s, t) for k, (s, t) in listed.items()), deleted, cutoff_ms,
                                default_days=1, branch_days={b: d for h in histories for b, d in h.rules[1].items()},
                                now=now.timestamp())
    result = got.as_dict()
    result.pop("sharing")
    assert result == want
    # the histories exercise every class and fate, sharing, and the tags
    assert all(result["classes"][c]["objects"] for c in ("head", "retention", "staged", DELETED, HELD_BACK, YOUNG))
    assert any(b["shared"]["head"]["objects"] for b in result["branches"].values())
    assert result["total"]["bytes"] == sum(s for s, _ in listed.values())


def test_an_object_only_a_tag_reads_is_unreferenced_and_named_by_its_tag(lakefs_emulator):
    """lakeFS's GC keeps no commit for a tag: the first version of ``x``, read only by tag ``v1``'s
    commit (outside main's window), is unreferenced (here: old, not deleted, so held back), and the
    tag is named; the second version is in main's window (retention), the third its HEAD."""
    import lakefs_sdk

    emu = lakefs_emulator
    client, name = emu.client(), f"space-{next(_repos)}"
    ns = emu.namespace(name)
    roots = parse_namespace(ns, emu.local_root).roots()
    history.create(client, name, ns)
    now = datetime.now(UTC).timestamp()
    for days_ago, body in ((10, b"v1"), (9, b"v2-longer"), (0.001, b"v3-longest")):
        client.objects_api.upload_object(name, "main", "x", content=body)
        c = client.commits_api.commit(name, "main", lakefs_sdk.CommitCreation(message=body.decode(),
                                                                              date=int(now - days_ago * 86400)))
        if body == b"v1":
            client.tags_api.create_tag(name, lakefs_sdk.TagCreation(id="v1", ref=c.id))
    client.repositories_api.set_gc_rules(name, lakefs_sdk.GarbageCollectionRules(default_retention_days=1, branches=[]))
    storage = ns_storage(ns)
    listed = {o.key: (o.size, int(o.last_modified * 1000)) for o in storage.list("data/")}
    with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key) as gc_client:
        got, _ = attribute_here(gc_client, name, storage, roots, emu.local_root,
                                ((k, s, t) for k, (s, t) in listed.items()), set(), int(now * 1000) + 60_000,
                                default_days=1, branch_days={}, now=now + 1)
    r = got.as_dict()
    assert r["tags"] == {"v1": {"objects": 1, "bytes": 2}}
    assert r["classes"][HELD_BACK] == {"objects": 1, "bytes": 2}
    assert r["branches"]["main"]["alone"]["retention"] == {"objects": 1, "bytes": 9}
    assert r["branches"]["main"]["alone"]["head"] == {"objects": 1, "bytes": 10}
    assert r["total"] == {"objects": 3, "bytes": 21}
