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
    """Random histories ``seeds`` in one new repository of ``emu`` (the emulator, or lakeFS itself,
    where cherry-picks take plain commits only: tests/real_lakefs/test_histories.py)."""
    client = emu.client()
    name = f"space-{next(_repos)}"
    ns = emu.namespace(name)
    roots = parse_namespace(ns, emu.local_root).roots()
    history.create(client, name, ns)
    storage = ns_storage(ns)

    def build(seed):
        return history.apply(
            emu.client(),
            name,
            ns,
            roots,
            history.ops(seed, STEPS),
            prefix=f"h{seed}-",
            storage=storage,
            cherry_pick_any=not getattr(emu, "real", False),
        )

    with ThreadPoolExecutor(4) as pool:
        histories = list(pool.map(build, seeds))
    history.set_rules(client, name, histories)
    return client, name, roots, storage, histories


@pytest.mark.parametrize("seeds", [list(range(0, HISTORIES // 2)), list(range(HISTORIES // 2, HISTORIES))])
def test_the_attribution_equals_the_api_oracle_to_the_byte(lakefs_emulator, seeds):
    check_attribution(lakefs_emulator, seeds)


def check_attribution(emu, seeds: list[int]) -> None:
    """Histories ``seeds`` built on ``emu``: the attribution equals the API oracle, every class and fate occurs."""
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
        got, _ = attribute_here(
            gc_client,
            name,
            storage,
            roots,
            emu.local_root,
            ((k, s, t) for k, (s, t) in listed.items()),
            deleted,
            cutoff_ms,
            default_days=1,
            branch_days={b: d for h in histories for b, d in h.rules[1].items()},
            now=now.timestamp(),
        )
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
        c = client.commits_api.commit(
            name, "main", lakefs_sdk.CommitCreation(message=body.decode(), date=int(now - days_ago * 86400))
        )
        if body == b"v1":
            client.tags_api.create_tag(name, lakefs_sdk.TagCreation(id="v1", ref=c.id))
    client.repositories_api.set_gc_rules(name, lakefs_sdk.GarbageCollectionRules(default_retention_days=1, branches=[]))
    storage = ns_storage(ns)
    listed = {o.key: (o.size, int(o.last_modified * 1000)) for o in storage.list("data/")}
    with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key) as gc_client:
        got, _ = attribute_here(
            gc_client,
            name,
            storage,
            roots,
            emu.local_root,
            ((k, s, t) for k, (s, t) in listed.items()),
            set(),
            int(now * 1000) + 60_000,
            default_days=1,
            branch_days={},
            now=now + 1,
        )
    r = got.as_dict()
    assert r["tags"] == {"v1": {"objects": 1, "bytes": 2}}
    assert r["classes"][HELD_BACK] == {"objects": 1, "bytes": 2}
    assert r["branches"]["main"]["alone"]["retention"] == {"objects": 1, "bytes": 9}
    assert r["branches"]["main"]["alone"]["head"] == {"objects": 1, "bytes": 10}
    assert r["total"] == {"objects": 3, "bytes": 21}


# ---------------------------------------------------------------------------------------------
# What if: predicted from the run's data and the commit graph, then checked by a real run


WHATIF_REPOS = 5
WHATIF_PER_REPO = 10  # histories per repository, one change each: 50 predictions, each judged by a run


def _gc_run(emu, name: str, work, now: datetime, run_id: str) -> None:
    """A clean GC run of ``name``, every Spark step in this process without Spark (a small repository's path)."""
    from lakefs_gc.contract import RunSettings
    from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY
    from lakefs_gc.steps.prepare_run import prepare_run
    from lakefs_sandbox.inprocess import run_steps

    settings = RunSettings(
        min_age_seconds=0, unsafe_min_age_override=True, confirm_after_seconds=0, max_delete_share=1.0, flow="clean"
    )
    secrets = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
    with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key) as gc_client:
        ctx = prepare_run(
            gc_client,
            name,
            settings,
            now=now,
            airflow_run_id=run_id,
            work_dir=str(work),
            local_root=emu.local_root,
            parallelism=1,
        )
        run_steps(None, ctx, gc_client, secrets)


def _listed(storage) -> dict[str, tuple[int, int]]:
    return {o.key: (o.size, int(o.last_modified * 1000)) for o in storage.list("data/")}


@pytest.mark.parametrize("repo_index", range(WHATIF_REPOS))
def test_whatif_predicts_exactly_what_the_next_run_frees(lakefs_emulator, tmp_path, repo_index):
    """Per history, one change (a branch deleted, or a branch's rule shortened), priced by
    ``whatif_here`` from the run's own data, then made in lakeFS and collected by a real run:
    the objects and bytes that run frees are the prediction, exactly."""
    seeds = list(range(100 + repo_index * WHATIF_PER_REPO, 100 + (repo_index + 1) * WHATIF_PER_REPO))
    check_whatif(lakefs_emulator, tmp_path, seeds)


def check_whatif(emu, tmp_path, seeds: list[int]) -> None:
    """One change per history of ``seeds`` (built in one repository of ``emu``), each predicted then judged by a run."""
    import lakefs_sdk

    from lakefs_gc.gc.attribution import Change
    from lakefs_gc.listing.holders import whatif_here

    client, name, roots, storage, histories = _build(emu, seeds)
    rules = {b: d for h in histories for b, d in h.rules[1].items()}
    now = datetime.now(UTC) + timedelta(seconds=2)
    _gc_run(emu, name, tmp_path, now, f"first-{name}")  # the garbage of the histories themselves, gone
    freed_any = 0
    for i, seed in enumerate(seeds):
        live = sorted(
            b.id for b in client.branches_api.list_branches(name, amount=1000).results if b.id.startswith(f"h{seed}-")
        )
        if not live:
            continue
        branch = live[len(live) // 2]
        change = Change(delete_branch=branch) if i % 2 == 0 else Change(branch=branch, days=0)
        listed = _listed(storage)
        cutoff_ms = int(now.timestamp() * 1000)
        freed: set[str] = set()
        with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key) as gc_client:
            predicted = whatif_here(
                gc_client,
                name,
                storage,
                roots,
                emu.local_root,
                ((k, s, t) for k, (s, t) in listed.items()),
                cutoff_ms,
                1,
                rules,
                now.timestamp(),
                change,
                collect=freed,
            )
        if change.delete_branch is not None:
            client.branches_api.delete_branch(name, branch)
            rules.pop(branch, None)
        else:
            rules[branch] = 0
        client.repositories_api.set_gc_rules(
            name,
            lakefs_sdk.GarbageCollectionRules(
                default_retention_days=1,
                branches=[
                    lakefs_sdk.GarbageCollectionRule(branch_id=b, retention_days=d) for b, d in sorted(rules.items())
                ],
            ),
        )
        _gc_run(emu, name, tmp_path, now, f"after-{i}-{name}")
        left = _listed(storage)
        gone = set(listed) - set(left)
        actual = (len(gone), sum(listed[k][0] for k in gone))
        assert freed == gone, (seed, change.describe(), sorted(freed - gone), sorted(gone - freed))
        assert (predicted.freed.objects, predicted.freed.bytes) == actual
        freed_any += bool(actual[0])
    assert freed_any >= len(seeds) // 4  # the changes free something, not only nothing
