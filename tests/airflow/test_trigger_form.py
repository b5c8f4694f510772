"""The trigger form as a person uses it: Airflow 3's UI in a real browser.

A real Airflow api-server (127.0.0.1, a free port; SQLite metadata DB in its own AIRFLOW_HOME; the
simple auth manager with a known user) serves the GC DAG; Debian's headless Chromium
(``/usr/bin/chromium``, installed by ``scripts/setup.sh``), driven by playwright by path (its own
browser download is never used), signs in and triggers it. No scheduler: the API creates a run
queued, which is all this checks.

1. The form as it opens, untouched: Trigger creates a run whose conf is the DAG's defaults (the
   empty, optional ``mark_id`` does not block it).
2. 5 typed into "Blast-radius guard: max share": the field keeps 5 when it loses focus (the form
   does not clamp it to 1, which would be no guard at all), Trigger is refused by Airflow with a
   message naming the Param that the person sees, and no run with a weaker guard exists.

A run that is created with 5 anyway (a hand-made conf, an old serialized DAG) fails in
``prepare_run``: ``tests/airflow/test_operators.py``; every numeric Param: ``test_params.py``.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from lakefs_gc_airflow.local_airflow import airflow_env
from lakefs_sandbox.emulator.launcher import free_port, wait_http
from tests.airflow.helpers import Airflow, airflow_api, gc_config, sign_in

pytestmark = [pytest.mark.e2e]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
REPO_NAME = "form-repo"
DAG_ID = f"lakefs_gc__{REPO_NAME}"
USER, ROLE = "gc-operator", "admin"
UI_TIMEOUT_MS = 20_000


class UI:
    """The api-server we started: its address, and its REST API as the signed-in user."""

    def __init__(self, airflow: Airflow, port: int, password: str):
        self.airflow, self.base, self.password = airflow, f"http://127.0.0.1:{port}", password

    def api(self, path: str):
        return airflow_api(self.base, path, USER, self.password)

    def runs(self) -> list[dict]:
        return self.api(f"/api/v2/dags/{DAG_ID}/dagRuns")["dag_runs"]


@pytest.fixture
def airflow_ui(tmp_path):
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: run `make setup` as root (it installs Debian's chromium)"
    home = tmp_path / "airflow-home"
    home.mkdir()
    port, password = free_port(), secrets.token_urlsafe(12)
    (home / "passwords.json").write_text(json.dumps({USER: password}))
    cfg = gc_config(tmp_path / "gc.yaml", REPO_NAME, "schedule: null\nmin_age_seconds: 86400")
    env = airflow_env(home, port, f"sqlite:///{home}/airflow.db", cfg, **{
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:{ROLE}",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
    })
    af = Airflow(home, env)  # no metadata-DB queries here: the REST API is asked
    try:
        af.cli("db", "migrate", timeout=120)
        af.start("api-server")
        af.cli("dags", "reserialize", timeout=120)  # the DAG into the DB, while the api-server starts
        wait_http(f"http://127.0.0.1:{port}/api/v2/monitor/health", af.procs["api-server"], home / "api-server.log",
                  timeout=90)
        ui = UI(af, port, password)
        errors = ui.api("/api/v2/importErrors")["import_errors"]
        assert not errors, f"the DAG file did not import: {errors}"
        yield ui
    finally:
        af.stop()


def _browser(playwright, profile: Path):
    """Debian's Chromium by path, a fresh profile, nothing that would call beyond 127.0.0.1."""
    return playwright.chromium.launch_persistent_context(
        str(profile), executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True,
        viewport={"width": 1400, "height": 1000})


def _open_trigger_form(page, ui: UI):
    page.goto(f"{ui.base}/dags/{DAG_ID}", timeout=UI_TIMEOUT_MS)
    page.get_by_role("button", name="Trigger").first.click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_text("Blast-radius guard: max share").wait_for(timeout=UI_TIMEOUT_MS)
    return dialog


def test_the_default_form_submits_and_an_out_of_range_share_is_refused_not_clamped(airflow_ui, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    ui = airflow_ui
    defaults = {k: v["value"] for k, v in ui.api(f"/api/v2/dags/{DAG_ID}/details")["params"].items()}
    shots = []
    with sync_playwright() as p:
        browser = _browser(p, tmp_path / "chromium-profile")
        try:
            page = browser.new_page()
            page.set_default_timeout(UI_TIMEOUT_MS)
            page.goto(f"{ui.base}/dags/{DAG_ID}")
            sign_in(page, USER, ui.password)
            page.wait_for_url(f"**/dags/{DAG_ID}**")

            # 1. the form as it opens: nothing changed, Trigger
            dialog = _open_trigger_form(page, ui)
            button = dialog.get_by_role("button", name="Trigger")
            try:
                expect(button).to_be_enabled(timeout=5_000)
            except AssertionError:
                page.screenshot(path=str(tmp_path / "1-default-form-disabled.png"), full_page=True)
                raise AssertionError(f"the default form cannot be submitted: {tmp_path}/1-default-form-disabled.png")
            with page.expect_response(lambda r: r.url.endswith(f"/dags/{DAG_ID}/dagRuns")
                                      and r.request.method == "POST") as answer:
                button.click()
            assert answer.value.status == 200, answer.value.text()
            page.get_by_text("Dag run has been successfully triggered").first.wait_for()
            shots.append(tmp_path / "1-default-form-triggered.png")
            page.screenshot(path=str(shots[-1]))
            runs = ui.runs()
            assert len(runs) == 1 and runs[0]["state"] == "queued", runs
            assert runs[0]["conf"] == defaults, "the run was not created with the default Params"
            assert (defaults["mark_id"], defaults["max_delete_share"]) == (None, 0.5)

            # 2. 5 typed into the share: kept as typed, refused with a message, no run created
            dialog = _open_trigger_form(page, ui)
            share = dialog.locator("input[name=element_max_delete_share]")
            share.fill("5")
            share.press("Tab")  # the field loses focus: Airflow's form clamps here when a Param has a maximum
            assert share.input_value() == "5", f"the form changed 5 into {share.input_value()!r}"
            with page.expect_response(lambda r: r.url.endswith(f"/dags/{DAG_ID}/dagRuns")
                                      and r.request.method == "POST") as answer:
                dialog.get_by_role("button", name="Trigger").click()
            sent = json.loads(answer.value.request.post_data)["conf"]["max_delete_share"]
            assert (answer.value.status, sent) == (400, 5), answer.value.text()
            message = dialog.get_by_text("Invalid input for param max_delete_share: 5 is greater than the maximum of 1")
            message.wait_for()
            message.scroll_into_view_if_needed()
            shots.append(tmp_path / "2-share-5-refused.png")
            page.screenshot(path=str(shots[-1]))
            assert message.is_visible(), f"the person sees no message: {shots[-1]}"
        finally:
            browser.close()

    runs = ui.runs()
    assert len(runs) == 1, f"a run was created from the refused form: {runs}"
    assert all(r["conf"].get("max_delete_share") == 0.5 for r in runs), runs
    print("screenshots:", *shots)
