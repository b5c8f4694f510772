"""The stack our users deploy, really up: ``docker-compose.yaml`` as it is, on images built here
(``scripts/stack_images.sh``: stand-ins for the official images under their names, and the stack's
own image from ``docker/Dockerfile``), run by Debian's ``docker-compose`` on the project's own
Docker engine.

What a user does: ``docker-compose up -d``; every service healthy (the stack's ``lakefs-seed``
has seeded ``sample-repo`` in the stack's lakeFS on the stack's S3, its commits dated back); the GC
page opened in Chromium, a bad value typed into its Run GC form (the field turns red with why,
nothing can be sent), then a run sent from it whose sweep the blast-radius guard would refuse, so it
waits for a person (``sweep.approval_above: guard``) and is approved on the task's Required Actions
tab in Airflow's UI; the run waited for through Airflow's REST API;
what is left in the bucket checked object by object against the seed's manifest; the run's counts,
wall time and the version read on the page. The stack runs with the chaos bench's override
(docker/chaos.compose.yaml: the same stack, its GC configuration with ``chaos-repo`` added), so the
short seeded chaos run (issue 56: ``python -m bench chaos``'s code, a kill of lakeFS and of a Spark
service while two writers use lakeFS, then the quiet run) shares it, after the end-to-end test;
``docker-compose down -v``. The engine is stopped by PID when the test started it.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request

import pytest

from bench.chaos import CHAOS_COMPOSE, chaos, clients
from lakefs_gc.contract import STEPS
from lakefs_sandbox.chaos.table import markdown, problems
from lakefs_sandbox.compose_stack import API, LONG_RUNNING, ONE_SHOTS, ROOT, Engine, Stack, dotenv

pytestmark = [pytest.mark.e2e]

DAG_ID = "lakefs_gc__sample-repo"
MIN_AGE_S = 20  # the run's min_age_seconds: the seeded objects must be older
RUN_DEADLINE_S = 600  # the DAG run, on a loaded machine
SCREENSHOT = ROOT / "docs" / "screenshots" / "stack-gc-page.png"
TRIGGER_SCREENSHOT = ROOT / "docs" / "screenshots" / "stack-trigger-bad-field.png"
APPROVAL_SCREENSHOT = ROOT / "docs" / "screenshots" / "stack-approve-sweep.png"
GUARD_SHARE = 0.01  # the run's max_delete_share: the seeded garbage is more, so the sweep asks a person
SERVICES = [*LONG_RUNNING, *ONE_SHOTS]


def _failed_task_logs(api: API, run_path: str, tis: dict[str, str]) -> str:
    """The logs of a run's failed tasks (their first try), through Airflow's REST API, for a failure's message."""
    out = []
    for task, state in tis.items():
        if state == "failed":
            try:
                lines = api.task_log(run_path, task)
                out.append(f"--- {task} ---\n" + "\n".join(lines[-80:]))
            except Exception as e:  # the message is for a person: say what could not be read
                out.append(f"--- {task}: log not readable: {e}")
    return "\n".join(out)


@pytest.fixture(scope="module")
def stack():
    engine = Engine.start()
    try:
        built = engine.build_images()
        print(f"stack images ready in {built:.0f} s")
        s = Stack(engine, project=f"lakefs-gc-test-{int(time.time())}", overrides=(CHAOS_COMPOSE,))
        try:
            t0 = time.monotonic()
            s.compose("up", "-d", "--no-build", timeout=600)
            up = s.wait_up(SERVICES)
            print(
                f"docker-compose up: every service healthy, the one-shots done, in {time.monotonic() - t0:.0f} s "
                f"(waited {up:.0f} s after up returned)"
            )
            yield s
        finally:
            t1 = time.monotonic()
            s.compose("down", "-v", "--timeout", "20", timeout=300, check=False)
            print(f"docker-compose down -v: {time.monotonic() - t1:.0f} s")
            assert not s.containers(), "containers left after docker-compose down -v"
    finally:
        engine.stop()


def test_the_stack_runs_the_gc_dag_end_to_end(stack, tmp_path):
    env = dotenv()
    base = f"http://127.0.0.1:{stack.ports['AIRFLOW_PORT']}"
    assert set(ONE_SHOTS) <= set(SERVICES)
    manifest = json.loads(
        stack.compose("exec", "-T", "airflow-scheduler", "cat", "/opt/lakefs-gc-work/sample-repo.manifest.json").stdout
    )
    deleted = {o["address"] for o in manifest["objects"] if o["expect"] == "deleted"}
    kept = {o["address"] for o in manifest["objects"] if o["expect"] == "kept"}
    assert deleted
    assert kept

    api = API(base)
    deadline = time.monotonic() + 300
    while True:  # the dag-processor has parsed the DAG file
        try:
            dag = api.call("GET", f"/api/v2/dags/{DAG_ID}")
            break
        except urllib.error.HTTPError as e:
            if e.code != 404 or time.monotonic() > deadline:
                raise
            time.sleep(3)
    assert not dag["is_paused"], "the stack creates its DAGs unpaused (manual runs only)"

    # the seeded objects older than the run's minimum age (the seed dated its commits back; the
    # objects themselves are as new as the seed)
    time.sleep(max(0.0, stack.finished_at("lakefs-seed") + MIN_AGE_S + 2 - time.time()))

    from playwright.sync_api import expect

    from tests.airflow.helpers import gc_page

    with gc_page(base, tmp_path / "profile") as page:
        # a person runs the GC from the page's form: a bad value turns its field red, with why, and
        # nothing can be sent until it is fixed
        page.get_by_test_id("gc-trigger-open").click()
        share = page.get_by_test_id("gc-param-max_delete_share").locator("input")
        share.fill("5")
        expect(page.get_by_test_id("gc-param-error-max_delete_share")).to_contain_text("must be at most 1, got 5")
        expect(page.get_by_test_id("gc-param-max_delete_share")).to_have_attribute("data-invalid", "true")
        expect(page.get_by_test_id("gc-trigger-run")).to_be_disabled()
        page.set_viewport_size({"width": 1400, "height": 1000})
        page.get_by_test_id("gc-param-max_delete_share").scroll_into_view_if_needed()
        TRIGGER_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(TRIGGER_SCREENSHOT))
        assert api.call("GET", f"/api/v2/dags/{DAG_ID}/dagRuns")["dag_runs"] == [], "a run from a refused form"
        share.fill(str(GUARD_SHARE))  # the guard would refuse: the sweep waits for a person (approval_above: guard)
        page.get_by_test_id("gc-param-min_age_seconds").locator("input").fill(str(MIN_AGE_S))
        page.get_by_test_id("gc-param-unsafe_min_age_override").locator("input").check()
        t0 = time.monotonic()
        page.get_by_test_id("gc-trigger-run").click()
        message = page.get_by_test_id("gc-trigger-message")
        expect(message).to_contain_text("queued")  # the notice of the run created, with a link to it
        run_id = re.search(r"Run (\S+) queued", message.inner_text()).group(1)

        path = f"/api/v2/dags/{DAG_ID}/dagRuns/{urllib.parse.quote(run_id)}"
        conf = api.call("GET", path)["conf"]
        assert (conf["mode"], conf["min_age_seconds"], conf["unsafe_min_age_override"], conf["max_delete_share"]) == (
            "mark_and_sweep",
            MIN_AGE_S,
            True,
            GUARD_SHARE,
        ), conf
        # the mark waits for a person: answered in Airflow's own UI, on the task's Required Actions tab
        ask = f"{path}/taskInstances/approve_sweep"
        while (asked := api.call("GET", ask)["state"]) not in ("awaiting_input", "deferred"):
            assert asked not in ("failed", "upstream_failed", "success"), (
                asked,
                stack.logs("airflow-scheduler", tail=200),
            )
            assert time.monotonic() - t0 < RUN_DEADLINE_S, f"approve_sweep is still {asked} after {RUN_DEADLINE_S} s"
            time.sleep(3)
        # Airflow 3.3.2 fails a task answered before its scheduler has read the executor's event of the
        # workload that parked it (the stale "success" finds the resumed task queued); a person answers
        # later than that: the test waits for the event first
        parked = f"Received executor event with state success for task instance TaskInstanceKey(dag_id='{DAG_ID}', task_id='approve_sweep', run_id='{run_id}'"
        while parked not in stack.compose("logs", "--no-color", "airflow-scheduler", timeout=60, check=False).stdout:
            assert time.monotonic() - t0 < RUN_DEADLINE_S, "the scheduler never read the parked workload's event"
            time.sleep(2)
        gc_page_url = page.url
        page.goto(f"{base}/dags/{DAG_ID}/runs/{urllib.parse.quote(run_id)}/tasks/approve_sweep/required_actions")
        expect(page.get_by_text(f"Sweep {len(deleted)} objects").first).to_be_visible()
        expect(page.get_by_text("the blast-radius guard would refuse it").first).to_be_visible()
        page.screenshot(path=str(APPROVAL_SCREENSHOT), full_page=True)
        page.get_by_test_id("hitl-option-Approve").click()
        while (state := api.call("GET", path)["state"]) not in ("success", "failed"):
            assert time.monotonic() - t0 < RUN_DEADLINE_S, f"the GC run is still {state} after {RUN_DEADLINE_S} s"
            time.sleep(3)
        tis = {t["task_id"]: t["state"] for t in api.call("GET", path + "/taskInstances")["task_instances"]}
        print(f"the GC DAG run in the stack: {state} in {time.monotonic() - t0:.0f} s; tasks {tis}")
        assert state == "success", (tis, _failed_task_logs(api, path, tis), stack.logs("airflow-scheduler", tail=200))
        assert set(tis.values()) == {"success"}, tis
        assert set(tis) == {*STEPS, "approve_sweep"}, tis  # every task of the provider's table ran, and the approval

        # what is left in the bucket, object by object
        _, _, s3 = clients(stack)
        bucket, prefix = env["MINIO_BUCKET"], "sample-repo/"
        keys = {
            o["Key"][len(prefix) :]
            for pg in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            for o in pg.get("Contents", [])
        }
        assert kept <= keys, f"live objects deleted: {sorted(kept - keys)}"
        assert not deleted & keys, f"garbage left: {sorted(deleted & keys)}"
        summaries = [k for k in keys if k.startswith("_lakefs/retention/gc/unified/") and k.endswith("/summary.json")]
        [summary_key] = summaries
        report = json.loads(s3.get_object(Bucket=bucket, Key=prefix + summary_key)["Body"].read())
        assert report["deleted"] == len(deleted), report
        assert report["approval"]["decision"] == "approved", report
        assert report["approval"]["by"], report  # the UI's user (the stack's simple auth manager: everyone admin)

        # the run on the page, as a person sees it
        page.goto(gc_page_url)
        row = page.locator(f'tr[data-run="{run_id}"]')
        expect(row.locator('td[data-col="deleted"]')).to_contain_text(f"{len(deleted):,}")
        expect(row.locator('td[data-col="listed"]')).to_contain_text(f"{report['listed_objects']:,}")
        # the DAG run's wall time beside the steps' work, labelled; the provider's version
        wall = float(row.locator('td[data-col="wall_seconds"]').inner_text())
        work = float(row.locator('td[data-col="work_seconds"]').inner_text())
        assert 0 < work < wall, (work, wall)
        expect(page.get_by_test_id("gc-version")).to_contain_text("lakefs-gc 0.1.0")
        page.set_viewport_size({"width": 1400, "height": 1400})
        page.wait_for_timeout(800)
        page.screenshot(path=str(SCREENSHOT), full_page=True)
    print("screenshots:", TRIGGER_SCREENSHOT, APPROVAL_SCREENSHOT, SCREENSHOT)

    # lakefs-gc doctor (issue 54) passes on the stack's set-up, run where the DAG's tasks run, with the
    # connections and repositories file they use (the run above already passed its checks in prepare_run)
    doctor = stack.compose("exec", "-T", "airflow-scheduler", "lakefs-gc", "doctor", "sample-repo", check=False)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "PASS  lakeFS" in doctor.stdout, doctor.stdout
    assert "FAIL" not in doctor.stdout, doctor.stdout


# PostgreSQL paused in list_slices, then the scheduler (with the delete task and its Spark driver)
# killed in the middle of the sweep: the task's retry resumes it (lakefs_sandbox.chaos.faults.plan);
# the first run's fault a pause so that the whole stays within 5 minutes (a Spark step's retry after
# a lakeFS kill, seed 6081, took it to 5.2; the bench's long run kills every service)
CHAOS_SEED = 37453
CHAOS_RUNS = 2
CHAOS_MIN_AGE_S = 45  # above every fault's down time (at most 25 s): a link held up by a fault is younger


def test_a_short_seeded_chaos_run_loses_nothing_and_leaves_no_garbage(stack):
    """Issue 56's short run: the seed's faults strike GC runs while two writers use lakeFS; lakeFS's
    view against the bucket after every run and after the quiet run (lakefs_sandbox.chaos.checker)."""
    t0 = time.monotonic()
    result = chaos(stack, CHAOS_RUNS, CHAOS_SEED, min_age_s=CHAOS_MIN_AGE_S)
    print(markdown(result))
    print(f"the short chaos run: {time.monotonic() - t0:.0f} s")
    assert problems(result) == [], json.dumps(result, indent=1, default=str)[-6000:]
    assert len(result["runs"]) == CHAOS_RUNS
    assert all(r["check"]["live"] > 0 for r in result["runs"])
    assert result["quiet"]["deleted"] > 0, "the writers made garbage and the quiet run collected it"
    assert sum(result["writers"]["ok"].values()) > 0
