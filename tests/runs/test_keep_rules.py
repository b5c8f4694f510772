"""The config's keep rules can only keep more, over generated histories (tests/support/history.py).

Random keep rules (tagged commits for N days or for ever, the last N commits of branches matching
a glob, paths never collected) on repositories of random histories: the candidates of a run with
the rules are a subset of the candidates of the same run without them, none of them is an object a
rule names (computed from lakeFS's API and ``fnmatch``, never the GC's code), and after a sweep
with the rules every object a rule names is still in storage. ``tests/real_lakefs/test_keep_rules.py``
runs the same on lakeFS 1.84 itself.
"""

from __future__ import annotations

import fnmatch
import os
import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from lakefs_gc.contract import BranchKeep, KeepRules
from lakefs_gc.report import formats, layout
from lakefs_gc.report.marks import parquet_parts
from lakefs_gc.storage import parse_namespace
from tests.runs.test_random_histories import SETTINGS, Place, _repos
from tests.support import history

pytestmark = pytest.mark.spark
HISTORIES = int(os.environ.get("LAKEFS_GC_KEEP_HISTORIES", "10"))  # in one repository
RULE_SETS = int(os.environ.get("LAKEFS_GC_KEEP_RULE_SETS", "4"))  # random rule sets, one mark-only run each
SEED_BASE = int(os.environ.get("LAKEFS_GC_HISTORY_SEED", "0")) + 70_000
DAY = 86400
BRANCH_GLOBS = ("*", "*-b1", "*-b2", "*-main", "*-f*", "h7*")
PATH_GLOBS = ("obj/[0-3].bin", "obj/1*.bin", "**/7.bin", "obj/?.bin", "obj/[!0-5].bin")


def random_rules(rng: random.Random) -> KeepRules:
    """Any mix of the three rules (none too)."""
    tags = rng.choice([None, "forever", 1, 3, 8])
    return KeepRules(
        tags_days=tags if isinstance(tags, int) else None,
        tags_forever=tags == "forever",
        branches=tuple(BranchKeep(rng.choice(BRANCH_GLOBS), rng.randint(1, 4)) for _ in range(rng.randint(0, 2))),
        paths=tuple(rng.sample(PATH_GLOBS, rng.randint(0, 2))),
    )


def _keys(client, repo, ref, roots, linked, paths=None) -> set[str]:
    """Namespace keys of the objects ``ref`` shows (at a path matching ``paths``, when given); imported ones left out."""
    entries = history._list_entries(client, repo, ref, roots, linked)
    return {key for p, (key, _) in entries.items() if paths is None or any(fnmatch.fnmatchcase(p, g) for g in paths)}


def named(client, repo: str, rules: KeepRules, roots, linked, now: float) -> set[str]:
    """The objects the rules name, from lakeFS's API alone: the tagged commits', the branches'
    last commits', and those at a matching path in any commit a branch or a tag reaches."""
    out: set[str] = set()
    tags = [(t.id, t.commit_id) for t in client.tags_api.list_tags(repo, amount=1000).results]
    branches = [(b.id, b.commit_id) for b in client.branches_api.list_branches(repo, amount=1000).results]
    for _, cid in tags:
        c = client.commits_api.get_commit(repo, cid)
        if rules.tags_forever or (rules.tags_days is not None and c.creation_date >= now - rules.tags_days * DAY):
            out |= _keys(client, repo, cid, roots, linked)
    for rule in rules.branches:
        for b, head in branches:
            if fnmatch.fnmatchcase(b, rule.pattern):
                log = client.refs_api.log_commits(repo, head, amount=rule.last, first_parent=True).results
                for c in log[: rule.last]:
                    out |= _keys(client, repo, c.id, roots, linked)
    if rules.paths:
        seen: set[str] = set()
        for _, head in branches + tags:
            for c in client.refs_api.log_commits(repo, head, amount=1000).results:
                if c.id not in seen:
                    seen.add(c.id)
                    out |= _keys(client, repo, c.id, roots, linked, rules.paths)
    return out


def candidates(storage, mark_id: str) -> set[str]:
    return {
        a for k in parquet_parts(storage, layout.candidates_dir(mark_id)) for a in formats.read_addresses(storage, k)
    }


def rules_only_keep_more(place: Place, spark, work, seed_base: int, histories: int, rule_sets: int) -> dict:
    """Build ``histories`` in one repository of ``place``; a mark without rules, one with each of
    ``rule_sets`` random rule sets, then a sweep with the last: judged as the module says."""
    emu = place.emu
    client = emu.client()
    name = f"keep-{seed_base}-{next(_repos)}"
    ns = emu.namespace(name, place.bucket)
    roots = parse_namespace(ns, emu.local_root).roots()
    history.create(client, name, ns)
    storage = place.storage(ns)
    outside, outside_storage = place.outside(name)
    built = [
        history.apply(
            emu.client(),
            name,
            ns,
            roots,
            history.ops(seed, 24),
            prefix=f"h{seed}-",
            outside=outside,
            storage=storage,
            outside_storage=outside_storage,
            cherry_pick_any=not getattr(emu, "real", False),
        )
        for seed in range(seed_base, seed_base + histories)
    ]
    history.set_rules(client, name, built)
    linked = {printed: key for h in built for printed, key in h.linked.items()}
    now = datetime.now(UTC) + timedelta(seconds=2)
    keep, _ = history.oracle(client, name, built, roots, now.timestamp())
    mark_only = replace(SETTINGS, mode="mark_only", flow="clean")
    _, plain = place.collect(name, spark, work, now, settings=mark_only, run_id=f"plain-{name}")
    without = candidates(storage, plain["mark_uncommitted"].run_id)
    rng = random.Random(seed_base)
    totals = {"without": len(without), "spared": 0, "named": 0}
    rules = KeepRules()
    for i in range(rule_sets):
        rules = random_rules(rng)
        _, res = place.collect(name, spark, work, now, settings=mark_only, run_id=f"r{i}-{name}", keep=rules)
        got = candidates(storage, res["mark_uncommitted"].run_id)
        names = named(client, name, rules, roots, linked, now.timestamp())
        assert got <= without, f"{rules}: candidates a run without the rules did not have: {sorted(got - without)}"
        assert not got & names, f"{rules}: objects the rules name are candidates: {sorted(got & names)}"
        assert len(res["list_committed"].kept_by_rules) == (rules.tags_days is not None or rules.tags_forever) + len(
            rules.branches
        ) + bool(rules.paths), res["list_committed"].kept_by_rules
        totals["spared"] += len(without - got)
        totals["named"] += len(names)
    # the sweep, with the last rule set and one of each kind added
    rules = replace(
        rules,
        tags_forever=True,
        tags_days=None,
        branches=(*rules.branches, BranchKeep("*", 2)),
        paths=(*rules.paths, "obj/[4-6].bin"),
    )
    names = named(client, name, rules, roots, linked, now.timestamp())
    place.collect(name, spark, work, now, settings=replace(SETTINGS, flow="clean"), run_id=f"sweep-{name}", keep=rules)
    after = {o.key for o in storage.list("data/", recursive=True)}
    assert keep <= after, f"live objects lost: {sorted(keep - after)}"
    assert names <= after, f"{rules}: objects the rules name were deleted: {sorted(names - after)}"
    assert without - names - keep, "the sweep had nothing to delete: the test proves nothing"
    return totals


def test_keep_rules_only_keep_more_over_random_histories(spark, lakefs_emulator, tmp_path):
    totals = rules_only_keep_more(Place(lakefs_emulator), spark, tmp_path / "work", SEED_BASE, HISTORIES, RULE_SETS)
    print(f"\nkeep rules: {totals}")
    assert totals["spared"], "no random rule set spared a candidate: the rules were never exercised"
