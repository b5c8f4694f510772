"""The incremental flow (lakefs_gc.gc.flow, issue 18): an incremental run after a clean one, on the
emulator, step by step in one process (the steps' own functions, the shared SparkSession).

The traps come first: the design's step 1 and step 2, as written, delete a live committed object
that was staged when the previous run marked (or written after it) and committed before that run
listed its commits. Both runs here keep it, because an incremental run subtracts every address
its chain's committed listings found.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import lakefs_sdk
import pytest

from lakefs_gc.contract import STEP_INPUTS, RunSettings, StepInputs
from lakefs_gc.errors import LakeFSGCError
from lakefs_gc.lakefs.client import LakeFSClient
from lakefs_gc.report import layout
from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY, storage_ref
from lakefs_gc.steps import STEP_FUNCTIONS, run_on_spark
from lakefs_gc.steps.prepare_run import prepare_run
from lakefs_sandbox.inprocess import run_steps
from tests.conftest import ns_rel, ns_storage

pytestmark = pytest.mark.spark

NOW_SETTINGS = dict(min_age_seconds=0, unsafe_min_age_override=True, max_delete_share=1.0, confirm_after_seconds=0)


class Repo:
    """A repository on the emulator (local:// namespace) and the GC run by hand on it."""

    def __init__(self, emu, tmp_path, name: str):
        self.emu, self.tmp, self.name = emu, tmp_path, name
        self.c = emu.client()
        self.ns = emu.namespace(name)
        self.c.repositories_api.create_repository(
            lakefs_sdk.RepositoryCreation(name=name, storage_namespace=self.ns, default_branch="main")
        )
        self.c.repositories_api.set_gc_rules(
            name, lakefs_sdk.GarbageCollectionRules(default_retention_days=1, branches=[])
        )
        self.env = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
        self.runs = 0

    def upload(self, path: str, data: bytes = b"x", branch: str = "main") -> str:
        return ns_rel(self.ns, self.c.objects_api.upload_object(self.name, branch, path, content=data).physical_address)

    def commit(self, branch: str = "main") -> str:
        return self.c.commits_api.commit(self.name, branch, lakefs_sdk.CommitCreation(message="c")).id

    def keys(self) -> set[str]:
        return {o.key for o in ns_storage(self.ns).list("data/", recursive=True)}

    def summary(self, mark_id: str) -> dict:
        return json.loads(ns_storage(self.ns).get(layout.summary_key(mark_id)))

    def start(self, client, **settings):
        """prepare_run of a new run (cutoff: two seconds from now unless min_age_seconds says)."""
        self.runs += 1
        return prepare_run(
            client,
            self.name,
            RunSettings(**{**NOW_SETTINGS, **settings}),
            now=datetime.now(UTC) + timedelta(seconds=2),
            airflow_run_id=f"run-{self.runs}",
            work_dir=str(self.tmp / "work"),
            local_root=self.emu.local_root,
            parallelism=1,
        )

    def steps(self, spark, client, ctx, steps: list[str], results: dict) -> dict:
        st = storage_ref(ctx, self.env).open()
        for step in steps:
            if step == "mark_uncommitted":
                results[step] = STEP_FUNCTIONS[step](client, ctx, st)
                continue
            inputs = StepInputs(ctx, {k: results.get(k) for k in STEP_INPUTS[step]})
            results[step] = (
                STEP_FUNCTIONS[step](st, inputs)
                if step == "save_report"
                else run_on_spark(step, spark, inputs, self.env)
            )
        return results

    def run(self, spark, **settings):
        with self.client() as client:
            ctx = self.start(client, **settings)
            return ctx, run_steps(spark, ctx, client, self.env)

    def client(self):
        return LakeFSClient(self.emu.api_url, self.emu.access_key, self.emu.secret_key)


@pytest.fixture
def repo(lakefs_emulator, tmp_path, request):
    return Repo(lakefs_emulator, tmp_path, f"inc-{request.node.name[:20].replace('_', '-')}-{int(time.time()) % 10000}")


def test_step_one_trap_staged_at_the_mark_then_committed_before_the_committed_listing(spark, repo):
    repo.upload("base.bin")
    repo.commit()
    live = repo.upload("live.bin")  # staged when run 1 marks
    with repo.client() as client:
        ctx = repo.start(client, flow="clean")
        results = repo.steps(spark, client, ctx, ["mark_uncommitted"], {})
        repo.commit()  # committed after run 1's mark, before its committed listing
        repo.steps(
            spark,
            client,
            ctx,
            ["list_committed", "list_slices", "compute_candidates", "delete", "save_report"],
            results,
        )
    assert live in repo.keys()
    ctx2, r2 = repo.run(spark, flow="incremental")
    # run 2: live.bin is in run 1's staged set, in no new commit and not staged now: only run 1's
    # committed listing protects it
    assert ctx2.flow == "incremental"
    assert ctx2.base.mark_id == results["mark_uncommitted"].run_id
    assert r2["list_committed"].new_commits == 0
    assert r2["list_committed"].ranges == 0
    assert r2["compute_candidates"].carried_checked == 0  # subtracted before any check
    assert live in repo.keys(), "the incremental run deleted a live committed object"
    assert bytes(repo.c.objects_api.get_object(repo.name, "main", "live.bin")) == b"x"


def test_step_two_trap_written_after_the_mark_in_a_slice_too_young_then_committed(spark, repo):
    repo.upload("base.bin")
    repo.commit()
    with repo.client() as client:
        # run 1: an hour's minimum age: every slice of this test is too young to list
        ctx = repo.start(client, flow="clean", min_age_seconds=3600)
        results = repo.steps(spark, client, ctx, ["mark_uncommitted"], {})
        live = repo.upload("late.bin")  # written after run 1's mark ...
        repo.commit()  # ... committed before its committed listing
        repo.steps(
            spark,
            client,
            ctx,
            ["list_committed", "list_slices", "compute_candidates", "delete", "save_report"],
            results,
        )
    assert results["list_slices"].slices_skipped >= 1
    assert results["list_slices"].listed_objects == 0
    garbage = repo.upload("tmp.bin")
    repo.c.objects_api.delete_object(repo.name, "main", "tmp.bin")
    ctx2, r2 = repo.run(spark, flow="incremental")
    # run 2 lists the slice run 1 skipped; late.bin is in no new commit and not staged
    assert r2["list_slices"].listed_objects >= 3
    assert live in repo.keys(), "the incremental run deleted a live committed object"
    assert garbage not in repo.keys(), "the garbage in the slice run 1 skipped is collected"
    s = repo.summary(r2["mark_uncommitted"].run_id)
    assert s["flow"] == "incremental"
    assert s["base_run"] == results["mark_uncommitted"].run_id
    assert s["deleted"] == 1
    assert "the next clean run collects them" in s["not_covered"]


def test_an_incremental_run_reads_only_what_changed_and_collects_it(spark, lakefs_emulator_factory, tmp_path):
    # a new slice every second (lakeFS: every hour or 50,000 objects), so that runs see old and new slices
    repo = Repo(lakefs_emulator_factory("--slice-interval", "1"), tmp_path, "inc-what-changed")
    for i in range(3):
        repo.upload(f"old{i}.bin")
    repo.commit()
    old_garbage = repo.upload("old-tmp.bin")
    repo.c.objects_api.delete_object(repo.name, "main", "old-tmp.bin")
    staged = repo.upload("staged.bin")  # staged across both runs, then dropped
    time.sleep(1.2)
    repo.upload("newest-slice.bin")  # run 1's newest slice: staged.bin's is older, run 2 does not list it
    ctx1, r1 = repo.run(spark, flow="auto")
    assert ctx1.flow == "clean"
    assert ctx1.flow_reason == "auto: no earlier successful run"
    assert old_garbage not in repo.keys()
    assert staged in repo.keys()
    s1 = repo.summary(r1["mark_uncommitted"].run_id)
    assert s1["incremental_state"]["runs_in_chain"] == 1
    assert s1["flow"] == "clean"

    repo.c.branches_api.reset_branch(repo.name, "main", lakefs_sdk.ResetCreation(type="object", path="staged.bin"))
    time.sleep(1.2)
    overwritten = repo.upload("old0.bin", b"v2")  # the committed old0 stays live in the commit
    repo.commit()
    new_garbage = repo.upload("new-tmp.bin")
    repo.c.objects_api.delete_object(repo.name, "main", "new-tmp.bin")
    before = repo.keys()
    ctx2, r2 = repo.run(spark, max_delete_share=0.5)  # auto: builds on run 1
    assert ctx2.flow == "incremental"
    assert ctx2.flow_reason.startswith(f"auto: builds on run {ctx2.base.mark_id}")
    com, sl, cand = r2["list_committed"], r2["list_slices"], r2["compute_candidates"]
    assert com.new_commits == 1
    assert com.ranges >= 1
    assert com.ranges_known >= 0
    assert sl.slices_before_base >= 1
    assert not sl.root_listed
    assert sl.listed_objects < r1["list_slices"].listed_objects
    assert cand.carried_checked == 1
    assert cand.carried_candidates == 1  # staged.bin, staged in run 1, reset since
    assert before - repo.keys() == {staged, new_garbage}
    assert overwritten in repo.keys()
    s2 = repo.summary(r2["mark_uncommitted"].run_id)
    st = s2["incremental_state"]
    assert st["runs_in_chain"] == 2
    assert st["clean_run_id"] == r1["mark_uncommitted"].run_id
    # the guard compares with the chain's clean listing too: 2 of the few objects listed now would be refused
    assert s2["guard_objects"] == r1["list_slices"].listed_objects + sl.listed_objects > 4 * s2["deleted"]
    assert len(st["committed_dirs"]) == 2

    ctx3, _ = repo.run(spark, flow="auto")  # chains on
    assert ctx3.flow == "incremental"
    assert ctx3.base.runs_in_chain == 2


def test_a_lost_part_of_the_base_fails_closed_and_auto_or_clean_then_recovers(spark, repo):
    repo.upload("a.bin")
    repo.commit()
    _, r1 = repo.run(spark, flow="clean")
    mark = r1["mark_uncommitted"].run_id
    st = ns_storage(repo.ns)
    [part, *_] = sorted(o.key for o in st.list(layout.state_committed_dir(mark)))
    st.delete(part)
    garbage = repo.upload("tmp.bin")
    repo.c.objects_api.delete_object(repo.name, "main", "tmp.bin")
    with pytest.raises(LakeFSGCError, match=r"holds 0 address part\(s\), the run that wrote it wrote 1.*flow=clean"):
        repo.run(spark, flow="incremental")
    assert garbage in repo.keys()
    ctx, _ = repo.run(spark, flow="clean")
    assert ctx.flow == "clean"
    assert garbage not in repo.keys()
