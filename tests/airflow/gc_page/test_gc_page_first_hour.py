"""The GC page as a new user meets it, in a real browser (issue 52): a repository with no run yet, the
Run GC form warning of a minimum age below lakeFS's grace period, the notice of the run it queues,
and that run refused by ``prepare_run`` with its one-line reason on the page.

The lakeFS emulator (grace period 86,400 s) holds one repository with GC rules; the GC DAG of it is
in this session's metadata database (SQLite), unpaused; an api-server of its own serves the page on
that database (``run_page.api_server``), and Debian's headless Chromium (playwright, by path) signs
in. Once the form has queued its run, a scheduler (LocalExecutor) starts and runs it: its
``prepare_run`` refuses, and the page shows why. Screenshots: ``docs/screenshots/gc-page-empty.png``,
``gc-page-form-warning.png``, ``gc-page-run-notice.png``, ``gc-page-refusal.png``.
"""

from __future__ import annotations

import time
import urllib.parse

import pytest

from tests.airflow.conftest import conn_env
from tests.airflow.helpers import REPO, airflow_api, gc_config, gc_page

pytestmark = pytest.mark.e2e

REPOSITORY = "first-hour"
DAG_ID = f"lakefs_gc__{REPOSITORY}"
GRACE = 86400  # the emulator's, as lakeFS's default
RUN_DEADLINE_S = 300  # a scheduler's start and one task on a loaded machine
SHOTS = REPO / "docs" / "screenshots"
EMPTY_SHOT = SHOTS / "gc-page-empty.png"
WARNING_SHOT = SHOTS / "gc-page-form-warning.png"
NOTICE_SHOT = SHOTS / "gc-page-run-notice.png"
REFUSAL_SHOT = SHOTS / "gc-page-refusal.png"
WARNING = (
    f"min_age_seconds 60 is below lakeFS's grace period of {GRACE:,} s: prepare_run will refuse the run. "
    f"Raise min_age_seconds to at least {GRACE}, or set unsafe_min_age_override."
)
REFUSED = (
    f"min_age_seconds=60 is below lakeFS's grace period of {GRACE}s: objects uploaded but not yet linked could be "
    f"deleted. Use min_age_seconds >= {GRACE}, or set the Param unsafe_min_age_override=true (tests and emergencies "
    "only; it is written into the report). Nothing was deleted"
)


def _dag_in_the_database() -> None:
    """The GC DAGs into the metadata database, as the dag-processor puts them there; this one unpaused."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import BundleDagBag, sync_bag_to_db
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session
    from sqlalchemy import update

    manager = DagBundlesManager()
    with create_session() as s:
        manager.sync_bundles_to_db(session=s)
    for bundle in manager.get_all_dag_bundles():
        if not bundle.is_initialized:
            bundle.initialize()
        bag = BundleDagBag(dag_folder=bundle.path, bundle_path=bundle.path, bundle_name=bundle.name)
        assert DAG_ID in bag.dags, bag.import_errors
        sync_bag_to_db(bag, bundle.name, bundle.version)
    with create_session() as s:
        s.execute(update(DagModel).where(DagModel.dag_id == DAG_ID).values(is_paused=False))


def test_an_empty_repository_a_warned_form_the_run_s_notice_and_its_refusal_on_the_gc_page(
    lakefs_emulator, airflow_db, monkeypatch, tmp_path
):
    import lakefs_sdk
    from airflow.configuration import conf
    from playwright.sync_api import expect

    from tests.airflow.gc_page.run_page import USER, airflow_serving

    emu = lakefs_emulator
    client = emu.client()
    client.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(
            name=REPOSITORY, storage_namespace=emu.namespace(REPOSITORY), default_branch="main"
        )
    )
    client.repositories_api.set_gc_rules(
        REPOSITORY, lakefs_sdk.GarbageCollectionRules(default_retention_days=7, branches=[])
    )
    lakefs_conn = {
        "conn_type": "lakefs_gc",
        "host": emu.url,
        "login": emu.access_key,
        "password": emu.secret_key,
        "extra": {"local_blockstore_root": emu.local_root},
    }
    cfg = gc_config(tmp_path / "gc.yaml", REPOSITORY, f"schedule: null\nmin_age_seconds: {GRACE}")
    monkeypatch.setenv("LAKEFS_GC_CONFIG", str(cfg))
    monkeypatch.setenv(*conn_env("lakefs_default", **lakefs_conn))
    _dag_in_the_database()
    SHOTS.mkdir(parents=True, exist_ok=True)

    with airflow_serving(
        tmp_path / "ui-home", conf.get("database", "sql_alchemy_conn"), cfg, {"lakefs_default": lakefs_conn}
    ) as (af, base, password):
        answer = airflow_api(base, f"/lakefs-gc/api/dags/{DAG_ID}/runs", USER, password)
        assert (answer["runs"], answer["grace_period_seconds"], answer["grace_period_source"]) == ([], GRACE, "lakeFS")

        with gc_page(base, tmp_path / "chromium", (USER, password)) as page:
            # 1. no run yet: one sentence where the table would be, no chart
            page.set_viewport_size({"width": 1400, "height": 900})
            expect(page.get_by_test_id("gc-runs")).to_have_text(
                "No GC run yet: trigger one with the Run GC form above."
            )
            expect(page.get_by_test_id("gc-repository")).to_contain_text(f"Repository {REPOSITORY} on ")
            expect(page.get_by_test_id("gc-repository")).to_contain_text("no GC run yet.")
            expect(page.get_by_test_id("gc-charts")).to_have_count(0)
            expect(page.get_by_test_id("gc-latest")).to_have_count(0)
            page.wait_for_timeout(500)
            page.screenshot(path=str(EMPTY_SHOT), full_page=True)

            # 2. the form: a minimum age of 60 s without the override is warned, naming both values and the fix
            page.set_viewport_size({"width": 1400, "height": 1500})  # the whole form (the UI scrolls inside)
            page.get_by_test_id("gc-trigger-open").click()
            field = page.get_by_test_id("gc-param-min_age_seconds")
            expect(field.locator("input")).to_have_value(str(GRACE))
            expect(page.get_by_test_id("gc-param-warning-min_age_seconds")).to_have_count(0)
            field.locator("input").fill("60")
            expect(page.get_by_test_id("gc-param-warning-min_age_seconds")).to_have_text(WARNING)
            expect(field).to_have_attribute("data-warning", "true")
            expect(page.get_by_test_id("gc-trigger-run")).to_be_enabled()  # a warning: the server's refusal is the rule
            field.scroll_into_view_if_needed()
            page.get_by_test_id("gc-trigger").screenshot(path=str(WARNING_SHOT))

            # 3. Run: a notice naming the run, with a link to it in Airflow
            with page.expect_response(
                lambda r: r.url.endswith(f"/api/v2/dags/{DAG_ID}/dagRuns") and r.request.method == "POST"
            ) as posted:
                page.get_by_test_id("gc-trigger-run").click()
            assert posted.value.status == 200, posted.value.text()
            run_id = posted.value.json()["dag_run_id"]
            q = urllib.parse.quote(run_id, safe="")
            expect(page.get_by_test_id("gc-trigger-message")).to_have_text(f"Run {run_id} queued")
            link = page.get_by_test_id("gc-trigger-run-link")
            expect(link).to_have_attribute("href", f"/dags/{DAG_ID}/runs/{q}")
            expect(page.locator(f'tr[data-run="{run_id}"]')).to_contain_text("queued: no report yet")  # reloaded
            expect(page.get_by_test_id("gc-trigger-notice")).to_be_visible()  # still there after the reload
            page.get_by_test_id("gc-trigger-open").click()  # the form hidden: the notice stays
            page.get_by_test_id("gc-trigger").screenshot(path=str(NOTICE_SHOT))
            link.click()  # the link opens the run in Airflow's own pages
            page.wait_for_url(f"**/dags/{DAG_ID}/runs/{q}**")

        queued = airflow_api(base, f"/api/v2/dags/{DAG_ID}/dagRuns/{q}", USER, password)
        assert (queued["state"], queued["conf"]["min_age_seconds"], queued["conf"]["unsafe_min_age_override"]) == (
            "queued",
            60,
            False,
        ), queued

        # 4. a scheduler runs it: prepare_run refuses it
        af.start("scheduler")
        deadline = time.monotonic() + RUN_DEADLINE_S
        while (state := airflow_api(base, f"/api/v2/dags/{DAG_ID}/dagRuns/{q}", USER, password)["state"]) != "failed":
            assert state in ("queued", "running"), (state, af.tail("scheduler"))
            assert time.monotonic() < deadline, (
                f"the run is still {state} after {RUN_DEADLINE_S} s: {af.tail('scheduler')}"
            )
            time.sleep(2)
        tis = airflow_api(base, f"/api/v2/dags/{DAG_ID}/dagRuns/{q}/taskInstances", USER, password)["task_instances"]
        assert {t["task_id"]: t["state"] for t in tis}["prepare_run"] == "failed", tis

        answer = airflow_api(base, f"/lakefs-gc/api/dags/{DAG_ID}/runs", USER, password)
        [run] = answer["runs"]
        assert run["dag_run"]["reason"] == {"task_id": "prepare_run", "refused": True, "reason": REFUSED}
        with gc_page(base, tmp_path / "chromium", (USER, password)) as page:
            page.set_viewport_size({"width": 1400, "height": 1000})
            row = page.locator(f'tr[data-run="{run_id}"]')
            expect(row.locator('td[data-col="outcome"]')).to_contain_text("refused by prepare_run")
            expect(row.get_by_test_id("gc-run-reason")).to_have_text(REFUSED)
            expect(row.get_by_role("link", name="prepare_run log")).to_have_attribute(
                "href", f"/dags/{DAG_ID}/runs/{q}/tasks/prepare_run"
            )
            newest = page.get_by_test_id("gc-latest").get_by_test_id("gc-newest")
            expect(newest).to_contain_text(f"The newest run, {run_id}, was refused by prepare_run: {REFUSED}")
            page.wait_for_timeout(500)
            page.screenshot(path=str(REFUSAL_SHOT), full_page=True)
    print("screenshots:", EMPTY_SHOT, WARNING_SHOT, NOTICE_SHOT, REFUSAL_SHOT)
