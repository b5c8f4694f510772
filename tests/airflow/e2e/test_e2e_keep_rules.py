"""The config's keep rules through the real GC DAG (``dag.test()``) against the lakeFS emulator, with
``tests/airflow/e2e/test_e2e.py``'s seeded repository: each rule keeps the objects it names (what is
left in storage), the report names what each kept, and ``lakefs-gc explain`` answers "kept by the
rule ..." for each. A file of its own so that the test runners spread the long end-to-end tests.
"""

from __future__ import annotations

import json

import lakefs_sdk
import pytest

from lakefs_sandbox.seed import DELETED
from tests.airflow.e2e.test_e2e import TARGET, TASKS, _load_dag, _seed_env, _states, clock_for
from tests.support import history

pytestmark = [pytest.mark.spark, pytest.mark.e2e]

KEEP = {
    "tags_days": "forever",
    "branches": [{"pattern": "ma*", "last": 2}],
    "paths": ["archive/**"],
}


@pytest.mark.skipif(TARGET is not None, reason="moves the emulator's clock")
def test_each_keep_rule_keeps_what_it_names_in_a_dag_run(lakefs_emulator_factory, monkeypatch, tmp_path, airflow_db):
    from lakefs_gc.explain import explain
    from lakefs_gc.storage import parse_namespace

    env = _seed_env(lakefs_emulator_factory, monkeypatch, tmp_path, "e2e-keep")
    repo, client = env.manifest.repository, env.client
    roots = parse_namespace(env.manifest.namespace, env.local_root).roots()
    by_label = {o.label: o for o in env.manifest.objects}
    overwritten = by_label["overwritten; only in expired commits"].address  # in main~3 ("add over.csv")
    gone = by_label["deleted from main; only in expired commits"].address  # in main~1 ("add gone.csv")
    # the path rule's hardest case: a commit no branch or tag reaches (its branch deleted), expired
    clock_for(env.emu)("old")
    client.branches_api.create_branch(repo, lakefs_sdk.BranchCreation(name="side", source="main"))
    side = history._rel(
        roots, client.objects_api.upload_object(repo, "side", "archive/side.csv", content=b"x\n").physical_address
    )
    client.commits_api.commit(repo, "side", lakefs_sdk.CommitCreation(message="archive"))
    client.branches_api.delete_branch(repo, "side")
    add_over = client.refs_api.log_commits(repo, "main", amount=10).results[3]
    assert add_over.message == "add over.csv", [c.message for c in client.refs_api.log_commits(repo, "main").results]
    client.tags_api.create_tag(repo, lakefs_sdk.TagCreation(id="v1", ref=add_over.id))
    clock_for(env.emu)("fresh")
    named = {overwritten, gone, side}
    garbage = env.manifest.expected(DELETED) - named
    assert garbage
    assert {overwritten, gone} <= env.manifest.expected(DELETED)
    env.dag = _load_dag(monkeypatch, tmp_path, repo, env.lakefs_conn, env.aws_conn, keep=KEEP)
    env.wait_until_old()
    before = env.keys()
    assert named <= before

    dr, tis = env.run()
    assert dr.state == "success", _states(tis)
    assert _states(tis) == dict.fromkeys(TASKS, "success"), _states(tis)
    after = env.keys()
    assert named <= after, f"objects a keep rule names were deleted: {sorted(named - after)}"
    assert not garbage & after, f"garbage no rule names was left: {sorted(garbage & after)}"
    assert all(o.address in after for o in env.manifest.objects if o.expect != DELETED)

    mark = tis["mark_uncommitted"].xcom_pull(task_ids="mark_uncommitted")["run_id"]
    summary = json.loads(env.storage.get(f"_lakefs/retention/gc/unified/{mark}/summary.json"))
    kept = {k["rule"]: k for k in summary["kept_by_rules"]}
    assert (kept["tags_days: forever"]["commits"], kept["tags_days: forever"]["added"]) == (1, 1), kept
    assert (kept["branches 'ma*' (last 2)"]["commits"], kept["branches 'ma*' (last 2)"]["added"]) == (2, 1), kept
    assert kept["paths 'archive/**'"]["addresses"] == 1, kept

    for address, rule in (
        (overwritten, "tags_days: forever"),
        (gone, "branches 'ma*' (last 2)"),
        (side, "paths 'archive/**'"),
    ):
        ex = explain(env.storage, address, roots)
        assert ex.verdict == f"kept by the rule {rule}", "\n".join(ex.lines())
