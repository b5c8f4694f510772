"""Faults at every step: lakeFS answering 500/503/429, dropping the connection, failing page k of
``prepare_uncommited``, an async prepare task that fails or never completes; changes racing the
run; two runs at once; a step re-run over a killed attempt's leftovers.

Every case ends in either a complete correct run (the garbage gone, every live object there) or a
failed run that deleted nothing, with a message naming the cause. The steps run in-process on the
shared SparkSession (the jobs' own functions); the emulator injects the faults
(include/lakefs_sandbox/emulator/faults.py).
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import lakefs_sdk
import pytest

from lakefs_gc.contract import STEP_INPUTS, RunSettings, StepInputs
from lakefs_gc.errors import LakeFSGCError
from lakefs_gc.lakefs.client import LakeFSClient
from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY, storage_ref
from lakefs_gc.steps.mark_uncommitted import mark_uncommitted
from lakefs_gc.steps.prepare_run import prepare_run
from lakefs_sandbox import inprocess
from tests.conftest import ns_rel, ns_storage, start_emulator, stop_process

pytestmark = pytest.mark.spark
DAY = 86400
SETTINGS = RunSettings(
    min_age_seconds=0, unsafe_min_age_override=True, max_delete_share=1.0, prepare_commits_timeout_seconds=20
)
FAST_RETRIES = {"max_retries": 3, "backoff_base": 0.01, "backoff_max": 0.05}


def later() -> datetime:
    """The run's clock, a little ahead of the test's last write: with a minimum age of 0 the cutoff
    is the start, and a file written a moment ago must count as older than it."""
    return datetime.now(UTC) + timedelta(seconds=2)


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    """One emulator paging prepare_uncommited by one row (three staged objects: four pages)."""
    e = start_emulator(tmp_path_factory.mktemp("faults"), "--uncommitted-page-size", "1")
    yield e
    stop_process(e.proc)


@pytest.fixture
def repo(emu, request):
    """A repository with committed, staged and garbage objects; (name, namespace, live, garbage)."""
    name = "f-" + request.node.name.lower().replace("_", "-").replace("[", "-").replace("]", "")[:40].strip("-")
    name = f"{name}-{int(time.time() * 1000) % 100000}"
    c = emu.client()
    ns = emu.namespace(name)
    c.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=name, storage_namespace=ns, default_branch="main")
    )

    def up(branch, path, content=None):
        content = content or f"{name}/{path}/{time.time()}".encode()
        return ns_rel(ns, c.objects_api.upload_object(name, branch, path, content=content).physical_address)

    committed = up("main", "committed.bin", b"committed bytes")
    old = up("main", "overwritten.bin")
    c.commits_api.commit(name, "main", lakefs_sdk.CommitCreation(message="c1", date=int(time.time() - 10 * DAY)))
    up("main", "overwritten.bin")  # the committed version stays (HEAD); this one is staged
    c.commits_api.commit(name, "main", lakefs_sdk.CommitCreation(message="c2", date=int(time.time() - 9 * DAY)))
    staged = {up("main", f"staged/{i}.bin") for i in range(3)}
    dropped = up("main", "dropped.bin")
    c.objects_api.delete_object(name, "main", "dropped.bin")
    # the committed object's bytes under another path, dropped: a candidate the staged check asks about
    copy_dropped = up("main", "copy.bin", b"committed bytes")
    c.objects_api.delete_object(name, "main", "copy.bin")
    c.branches_api.create_branch(name, lakefs_sdk.BranchCreation(name="dev", source="main"))
    on_deleted_branch = up("dev", "dev.bin")
    c.branches_api.delete_branch(name, "dev")
    c.repositories_api.set_gc_rules(name, lakefs_sdk.GarbageCollectionRules(default_retention_days=1, branches=[]))
    garbage = {old, dropped, copy_dropped, on_deleted_branch}
    live = {k for k in ns_keys(ns) if k.startswith("data/")} - garbage
    assert {committed, *staged} <= live
    return name, ns, live, garbage


def ns_keys(ns: str) -> set[str]:
    return {o.key for o in ns_storage(ns).list("", recursive=True)}


def gc(emu, spark, tmp_path, name: str, until: str = "save_report", settings: RunSettings = SETTINGS):
    env = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
    with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key, **FAST_RETRIES) as client:
        ctx = prepare_run(
            client,
            name,
            settings,
            now=later(),
            airflow_run_id=f"run-{time.time()}",
            work_dir=str(tmp_path / "work"),
            local_root=emu.local_root,
            parallelism=1,
            lakefs_retries=FAST_RETRIES,
        )
        return inprocess.run_steps(spark, ctx, client, env, until=until)


def assert_collected(ns, live, garbage):
    keys = ns_keys(ns)
    assert live <= keys, f"live objects lost: {sorted(live - keys)}"
    assert not garbage & keys, f"garbage left: {sorted(garbage & keys)}"


def assert_untouched(ns, before):
    keys = ns_keys(ns)
    data_before = {k for k in before if not k.startswith("_lakefs/")}
    assert data_before <= keys, f"deleted by a failed run: {sorted(data_before - keys)}"


# every lakeFS call a run makes (listObjects: with the full staged check, the Param the last field)
ENDPOINTS = [
    ("GET", r"/api/v1/repositories/[^/]+$", "getRepository"),
    ("GET", r"/settings/gc_rules$", "getGCRules"),
    ("GET", r"/api/v1/config$", "getConfig"),
    ("GET", r"/config/garbage-collection$", "getGarbageCollectionConfig"),
    ("POST", r"/gc/prepare_uncommited$", "prepareGarbageCollectionUncommitted"),
    ("POST", r"/gc/prepare_commits/async$", "prepareGarbageCollectionCommitsAsync"),
    ("GET", r"/gc/prepare_commits/status$", "prepareGarbageCollectionCommitsStatus"),
    ("GET", r"/metadata/meta_range/", "getMetaRange"),
    ("GET", r"/metadata/range/", "getRange"),
    ("GET", r"/branches$", "listBranches"),
    ("GET", r"/commits$", "logCommits"),
    ("GET", r"/objects/stat$", "statObject"),
    ("GET", r"/objects/ls$", "listObjects", "full"),
]


def _settings(endpoint: tuple) -> RunSettings:
    return replace(SETTINGS, staged_check=endpoint[3]) if len(endpoint) > 3 else SETTINGS


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=[e[2] for e in ENDPOINTS])
def test_transient_lakefs_faults_on_every_endpoint_are_retried_and_the_run_is_correct(
    emu, spark, repo, tmp_path, endpoint
):
    method, path, op = endpoint[:3]
    name, ns, live, garbage = repo
    emu.set_faults(
        {"method": method, "path": path, "times": 1, "status": 503},
        {"method": method, "path": path, "times": 1, "status": 429},
        {"method": method, "path": path, "times": 1, "drop": True},
    )
    try:
        gc(emu, spark, tmp_path, name, settings=_settings(endpoint))
        fired = sum(r["fired"] for r in emu.faults())
    finally:
        emu.set_faults()
    assert fired == 3, f"{op}: the faults did not fire ({fired})"
    assert_collected(ns, live, garbage)


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=[e[2] for e in ENDPOINTS])
def test_a_lakefs_endpoint_that_keeps_failing_fails_the_run_and_deletes_nothing(emu, spark, repo, tmp_path, endpoint):
    method, path, op = endpoint[:3]
    name, ns, live, garbage = repo
    before = ns_keys(ns)
    emu.set_faults({"method": method, "path": path, "times": -1, "status": 500})
    try:
        if op == "prepareGarbageCollectionCommitsAsync":
            # a server whose async route answers 500 is served by the synchronous call instead
            gc(emu, spark, tmp_path, name)
            assert_collected(ns, live, garbage)
            return
        with pytest.raises(Exception) as e:  # noqa: PT011 - its message is checked below (500, injected fault)
            gc(emu, spark, tmp_path, name, settings=_settings(endpoint))
    finally:
        emu.set_faults()
    assert "500" in str(e.value), f"{op}: {e.value}"
    assert "injected fault" in str(e.value), f"{op}: {e.value}"
    assert_untouched(ns, before)


@pytest.mark.parametrize("page", [0, 1, 3])
def test_prepare_uncommitted_failing_on_page_k(emu, spark, repo, tmp_path, page):
    name, ns, live, garbage = repo
    before = ns_keys(ns)
    rule = {"method": "POST", "path": r"/gc/prepare_uncommited$", "skip": page}
    emu.set_faults({**rule, "times": 2, "status": 503})  # transient: retried, the run is correct
    try:
        gc(emu, spark, tmp_path, name, until="compute_candidates")
        emu.set_faults({**rule, "times": -1, "status": 500})  # persistent: the run fails, nothing deleted
        with pytest.raises(Exception, match="500"):
            gc(emu, spark, tmp_path, name)
    finally:
        emu.set_faults()
    assert_untouched(ns, before)
    gc(emu, spark, tmp_path, name)
    assert_collected(ns, live, garbage)


def test_an_async_prepare_task_that_fails_or_never_completes(emu, spark, repo, tmp_path):
    name, ns, live, garbage = repo
    before = ns_keys(ns)
    status = {"method": "GET", "path": r"/gc/prepare_commits/status$", "times": -1, "status": 200}
    emu.set_faults(
        {
            **status,
            "body": {
                "task_id": "t1",
                "completed": True,
                "update_time": "2026-11-23T00:00:00Z",
                "error": {"message": "internal error: out of memory"},
            },
        }
    )
    try:
        with pytest.raises(LakeFSGCError, match="prepare_commits failed.*out of memory"):
            gc(emu, spark, tmp_path, name)
        emu.set_faults({**status, "body": {"task_id": "t1", "completed": False, "update_time": "2026-11-23T00:00:00Z"}})
        with pytest.raises(LakeFSGCError, match="did not complete within 2s"):
            gc(emu, spark, tmp_path, name, settings=replace(SETTINGS, prepare_commits_timeout_seconds=2))
    finally:
        emu.set_faults()
    assert_untouched(ns, before)


def test_a_commit_a_branch_and_a_staged_object_racing_the_run_are_kept(emu, spark, repo, tmp_path):
    """Between mark_uncommitted and compute_candidates: the staged objects are committed, a branch
    is created and a new object staged. Nothing live is lost."""
    name, ns, live, garbage = repo
    c = emu.client()
    env = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
    time.sleep(2)  # the run's real start: what the fixture wrote is older than the cutoff, what races it newer
    with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key, **FAST_RETRIES) as client:
        ctx = prepare_run(
            client,
            name,
            SETTINGS,
            now=datetime.now(UTC),
            airflow_run_id="race",
            work_dir=str(tmp_path / "work"),
            local_root=emu.local_root,
            parallelism=1,
        )
        results = {"mark_uncommitted": mark_uncommitted(client, ctx, storage_ref(ctx, env).open())}
        c.commits_api.commit(name, "main", lakefs_sdk.CommitCreation(message="racing"))
        c.branches_api.create_branch(name, lakefs_sdk.BranchCreation(name="late", source="main"))
        late = ns_rel(ns, c.objects_api.upload_object(name, "late", "late.bin", content=b"late").physical_address)
        for step in ("list_committed", "list_slices", "compute_candidates", "delete"):
            results[step] = inprocess.SPARK_STEPS[step](
                spark, StepInputs(ctx, {k: results.get(k) for k in STEP_INPUTS[step]}), env
            )
    assert_collected(ns, live | {late}, garbage)


def _feature_branch(emu, name, ns):
    """A live branch ``feature`` with a commit of its own and staged objects (some written through
    the link flow, which lakeFS's uncommitted mark omits on the local blockstore).
    Returns (committed on feature only, staged on feature)."""
    from lakefs_gc.storage import parse_namespace
    from lakefs_sandbox.seed import link_object

    c = emu.client()
    c.branches_api.create_branch(name, lakefs_sdk.BranchCreation(name="feature", source="main"))
    own = ns_rel(ns, c.objects_api.upload_object(name, "feature", "own.bin", content=b"own").physical_address)
    c.commits_api.commit(name, "feature", lakefs_sdk.CommitCreation(message="feature work"))
    staged = {ns_rel(ns, c.objects_api.upload_object(name, "feature", "wip.bin", content=b"wip").physical_address)}
    staged.add(
        ns_rel(
            ns,
            link_object(
                c, name, "feature", "linked.bin", b"linked", ns_storage(ns), parse_namespace(ns, emu.local_root).roots()
            ),
        )
    )
    return own, staged


def _run_deleting_feature(emu, spark, name, tmp_path, before_step: str | None, delete_during_walk: bool = False):
    """Run every step; delete branch ``feature`` right before ``before_step`` (or, with
    ``delete_during_walk``, while list_committed's retention walk reads the log)."""
    import threading

    c = emu.client()
    env = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
    results: dict = {}
    deleter = None
    with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key, **FAST_RETRIES) as client:
        ctx = prepare_run(
            client,
            name,
            SETTINGS,
            now=later(),
            airflow_run_id=f"mid-{time.time()}",
            work_dir=str(tmp_path / "work"),
            local_root=emu.local_root,
            parallelism=1,
        )
        for step in ("mark_uncommitted", "list_committed", "list_slices", "compute_candidates", "delete"):
            if step == before_step:
                c.branches_api.delete_branch(name, "feature")
            if step == "list_committed" and delete_during_walk:
                # the walk's first log read is held back while the branch goes
                emu.set_faults({"method": "GET", "path": r"/commits$", "times": 1, "delay": 1.5, "through": True})
                deleter = threading.Timer(0.5, lambda: c.branches_api.delete_branch(name, "feature"))
                deleter.start()
            try:
                if step == "mark_uncommitted":
                    results[step] = mark_uncommitted(client, ctx, storage_ref(ctx, env).open())
                else:
                    results[step] = inprocess.SPARK_STEPS[step](
                        spark, StepInputs(ctx, {k: results.get(k) for k in STEP_INPUTS[step]}), env
                    )
            finally:
                if deleter is not None:
                    deleter.join(10)
                    emu.set_faults()
                    deleter = None
    return results


@pytest.mark.parametrize("when", ["before_mark", "before_list_committed", "during_retention_walk"])
def test_a_branch_deleted_mid_run_loses_nothing_still_referenced(emu, spark, repo, tmp_path, when):
    """lakeFS #9772: branches come and go while GC runs. A branch deleted between prepare_run and
    mark_uncommitted, between the mark and list_committed, or while the retention walk reads its
    log: the run completes, keeps everything still referenced (main's objects, and the deleted
    branch's commit, which lakeFS keeps as a dangling commit within the retention), and keeps or
    collects the deleted branch's staged objects (unreferenced once it is gone)."""
    name, ns, live, garbage = repo
    own, staged = _feature_branch(emu, name, ns)
    before = {"before_mark": "mark_uncommitted", "before_list_committed": "list_committed"}.get(when)
    results = _run_deleting_feature(
        emu, spark, name, tmp_path, before, delete_during_walk=when == "during_retention_walk"
    )
    keys = ns_keys(ns)
    assert live | {own} <= keys, f"referenced objects lost: {sorted((live | {own}) - keys)}"
    assert not garbage & keys, f"garbage left: {sorted(garbage & keys)}"
    if when == "before_mark":  # gone before the mark: its staged objects are garbage now
        assert not staged & keys
        assert results["mark_uncommitted"].staged_branches_gone == ()  # never listed
    else:  # lakeFS's mark saw them staged: kept this run (a later run collects them); the link-flow
        # one its mark lacks (local) is kept by the full check, which listed the branch before it
        # went, and may go with the check on the candidates, which finds the branch gone: its
        # staged entries are unreferenced, as lakeFS's own GC judges them
        assert {k for k in staged if "," not in k} <= keys
    assert results["delete"].counts.failed == 0


def test_two_runs_of_one_repository_at_once_are_harmless(emu, spark, repo, tmp_path):
    name, ns, live, garbage = repo
    first = gc(emu, spark, tmp_path / "a", name, until="list_slices")  # run A marks ...
    gc(emu, spark, tmp_path / "b", name)  # ... run B runs whole and sweeps ...
    assert_collected(ns, live, garbage)
    env = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
    with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key, **FAST_RETRIES) as client:
        ctx = prepare_run(
            client,
            name,
            SETTINGS,
            now=later(),
            airflow_run_id="a2",
            work_dir=str(tmp_path / "a2"),
            local_root=emu.local_root,
            parallelism=1,
        )
    for step in ("compute_candidates", "delete"):  # ... then A finishes on its own mark
        first[step] = inprocess.SPARK_STEPS[step](
            spark, StepInputs(ctx, {k: first.get(k) for k in STEP_INPUTS[step]}), env
        )
    assert first["delete"].counts.failed == 0
    assert first["delete"].counts.already_gone == first["delete"].counts.keys  # B took them already
    assert first["delete"].counts.deleted == 0
    assert_collected(ns, live, garbage)


def test_steps_rerun_over_a_killed_attempts_leftovers(emu, spark, repo, tmp_path):
    """A killed attempt leaves partial Parquet in the work dir and partial report parts; the retry
    overwrites and clears them and the run is correct."""
    name, ns, live, garbage = repo
    work = tmp_path / "work" / name
    st = ns_storage(ns)
    results = gc(emu, spark, tmp_path, name, until="compute_candidates")
    mark = results["mark_uncommitted"].run_id
    for sub in ("committed", "listed"):  # leftovers of a killed attempt of the listing steps
        for d in work.glob(f"*/{sub}"):
            (d / "part-99999-killed.parquet").write_bytes(b"PAR1 not really")
    st.put(f"_lakefs/retention/gc/unified/{mark}/deleted/part-09999.parquet", b"garbage of a killed attempt")
    # the retried steps of the same run, in order
    env = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
    with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key, **FAST_RETRIES) as client:
        ctx = prepare_run(
            client,
            name,
            SETTINGS,
            now=later(),
            airflow_run_id="retry",
            work_dir=str(tmp_path / "work"),
            local_root=emu.local_root,
            parallelism=1,
        )
    for step in ("list_committed", "list_slices", "compute_candidates", "delete"):
        results[step] = inprocess.SPARK_STEPS[step](
            spark, StepInputs(ctx, {k: results.get(k) for k in STEP_INPUTS[step]}), env
        )
    assert_collected(ns, live, garbage)
    assert not st.exists(f"_lakefs/retention/gc/unified/{mark}/deleted/part-09999.parquet")


def test_s3_errors_on_list_get_put_are_retried_or_fail_the_run_deleting_nothing(
    lakefs_emulator_factory, moto_server, spark, tmp_path
):
    from lakefs_gc.storage import S3Options
    from tests.support.faulty_s3 import FaultyS3Proxy

    emu = lakefs_emulator_factory("--grace-period", "1", s3=moto_server)
    bucket = moto_server.create_bucket("faults-s3")
    name = "s3-faults"
    ns = emu.namespace(name, bucket=bucket)
    c = emu.client()
    c.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=name, storage_namespace=ns, default_branch="main")
    )
    storage = ns_storage(ns, moto_server)
    live = {ns_rel(ns, c.objects_api.upload_object(name, "main", "kept.bin", content=b"kept").physical_address)}
    c.commits_api.commit(name, "main", lakefs_sdk.CommitCreation(message="c", date=int(time.time() - DAY)))
    live.add(ns_rel(ns, c.objects_api.upload_object(name, "main", "staged.bin", content=b"s").physical_address))
    garbage = ns_rel(ns, c.objects_api.upload_object(name, "main", "gone.bin", content=b"g").physical_address)
    c.objects_api.delete_object(name, "main", "gone.bin")
    c.repositories_api.set_gc_rules(name, lakefs_sdk.GarbageCollectionRules(default_retention_days=1, branches=[]))
    keys = lambda: {o.key for o in storage.list("", recursive=True)}
    before = keys()

    def run(fail):
        proxy = FaultyS3Proxy(moto_server.endpoint_url, fail=fail).start()
        s3 = S3Options(
            endpoint_url=proxy.url, access_key_id=moto_server.access_key, secret_access_key=moto_server.secret_key
        )
        env = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key, **s3.to_env()}
        try:
            with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key, **FAST_RETRIES) as client:
                ctx = prepare_run(
                    client,
                    name,
                    SETTINGS,
                    now=later(),
                    airflow_run_id=f"s3-{time.time()}",
                    work_dir=str(tmp_path / "work"),
                    storage_options=s3,
                    parallelism=1,
                    lakefs_retries=FAST_RETRIES,
                )
                return inprocess.run_steps(spark, ctx, client, env), proxy.stats
        finally:
            proxy.stop()

    for kind in ("list", "get", "put"):  # every such request fails: the run fails, deleting nothing
        with pytest.raises(Exception, match="InternalError|injected|500"):
            run({kind: -1})
        assert before <= keys(), f"a run that failed on S3 {kind} deleted something"
    results, stats = run({"list": 2, "get": 2, "put": 2})  # a few failures: absorbed by the S3 client's retries
    assert (stats["failed_list"], stats["failed_get"], stats["failed_put"]) == (2, 2, 2)
    assert live <= keys()
    assert garbage not in keys()
    assert results["delete"].counts.deleted >= 1


def test_lakefs_timing_out_is_retried_then_fails_closed(emu, spark, repo, tmp_path):
    """A lakeFS that answers later than the client's timeout: a slow answer now and then is retried;
    one that never comes in time fails the run, deleting nothing."""
    name, ns, live, garbage = repo
    before = ns_keys(ns)
    slow = {
        "method": "GET",
        "path": r"/api/v1/repositories/[^/]+$",
        "delay": 3.0,
        "status": 200,
        "body": {"message": "too late"},
    }

    def run_with_timeout():
        env = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
        with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key, request_timeout=1.0, **FAST_RETRIES) as client:
            ctx = prepare_run(
                client,
                name,
                SETTINGS,
                now=later(),
                airflow_run_id=f"slow-{time.time()}",
                work_dir=str(tmp_path / "work"),
                local_root=emu.local_root,
                parallelism=1,
                lakefs_retries=FAST_RETRIES,
            )
            return inprocess.run_steps(spark, ctx, client, env)

    emu.set_faults({**slow, "times": -1})
    try:
        with pytest.raises(Exception, match="(?i)timeout|timed out"):
            run_with_timeout()
        assert_untouched(ns, before)
        emu.set_faults({**slow, "times": 1})
        run_with_timeout()
    finally:
        emu.set_faults()
    assert_collected(ns, live, garbage)


def test_compute_candidates_killed_mid_way_then_retried(emu, spark, repo, tmp_path):
    """The one step that writes into the namespace, killed (SIGKILL to spark-submit, its JVM and
    Python workers) once its mark has started, then run again as a task retry: the mark is whole,
    the sweep correct."""
    import os
    import signal
    import subprocess

    from lakefs_gc.placement import PROPERTIES
    from tests.support.spark import prepare

    name, ns, live, garbage = repo
    st = ns_storage(ns)
    env = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
    results = gc(emu, spark, tmp_path, name, until="list_slices")
    with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key, **FAST_RETRIES) as client:
        ctx = prepare_run(
            client,
            name,
            SETTINGS,
            now=later(),
            airflow_run_id="killed",
            work_dir=str(tmp_path / "work"),
            local_root=emu.local_root,
            parallelism=1,
        )
    # the earlier steps' results, on this run's context (same listing, same mark)
    inputs = StepInputs(ctx, {k: results[k] for k in STEP_INPUTS["compute_candidates"]})
    mark = results["mark_uncommitted"].run_id
    started = f"_lakefs/retention/gc/unified/{mark}/summary.json"
    cmd, job_env, result_path = prepare("compute_candidates", inputs, tmp_path / "r", env)
    # on executors: its mark is written by Spark jobs, a window to kill it in (the driver writes a
    # few addresses' mark in milliseconds); the retry below decides on the driver
    cmd[1:1] = ["--conf", f"{PROPERTIES['driver_max_addresses']}=0"]
    with open(tmp_path / "killed.log", "wb") as log:
        proc = subprocess.Popen(cmd, env=job_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and proc.poll() is None and not st.exists(started):
                time.sleep(0.02)
            killed = proc.poll() is None
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    assert killed, "the job finished before it could be killed:\n" + (tmp_path / "killed.log").read_text()[-2000:]
    assert not result_path.exists()
    assert live <= ns_keys(ns)  # a killed mark deletes nothing
    # the retry
    results["compute_candidates"] = inprocess.SPARK_STEPS["compute_candidates"](spark, inputs, env)
    results["delete"] = inprocess.SPARK_STEPS["delete"](
        spark, StepInputs(ctx, {k: results.get(k) for k in STEP_INPUTS["delete"]}), env
    )
    assert results["compute_candidates"].to_delete == len(garbage)
    assert_collected(ns, live, garbage)
