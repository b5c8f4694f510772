"""The lakeFS connection form as a person uses it: Airflow 3's UI in a real browser.

A real Airflow api-server (127.0.0.1, a free port, SQLite; ``[core] test_connection = Enabled``)
and Debian's headless Chromium driven by playwright by path, as in ``test_trigger_form.py``. The
person opens Admin > Connections > Add Connection and picks "lakeFS": the form shows our labels
and help texts (provider metadata, ``lakefs_gc_airflow.get_provider_info``); saved, the
connection's Test button in the list (Airflow 3 has it there) reaches the lakeFS emulator through
the hook's ``test_connection``; what is saved is the extra JSON the hook reads. The screenshot of the filled-in form goes to the test's temporary directory,
and also into ``$LAKEFS_GC_SCREENSHOTS_DIR`` when set (``docs/screenshots/lakefs-connection-form.png``
was made so).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from pathlib import Path

import pytest

from lakefs_sandbox.emulator.launcher import free_port, wait_http
from lakefs_gc_airflow.local_airflow import airflow_env
from tests.airflow.helpers import Airflow, gc_config, sign_in
from tests.airflow.test_trigger_form import CHROMIUM, ROLE, UI, UI_TIMEOUT_MS, USER, _browser

pytestmark = [pytest.mark.e2e]

SCREENSHOT_NAME = "lakefs-connection-form.png"
EXTRAS_SCREENSHOT_NAME = "lakefs-connection-form-extras.png"
TESTED_SCREENSHOT_NAME = "lakefs-connection-tested.png"
STANDARD_LABELS = ["lakeFS endpoint", "Access key ID", "Secret access key"]
EXTRA_LABELS = ["Local blockstore root", "Max retries", "Backoff base (seconds)", "Backoff max (seconds)"]
HELP = ["lakeFS keeps local://repo1 at <root>/repo1", "Retries of one lakeFS call after a 5xx, 429 or connection error",
        "doubling each retry", "The longest wait between two retries"]
CONN_ID = "lakefs_from_form"


@pytest.fixture
def airflow_ui_with_test_button(tmp_path):
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: run `make setup` as root (it installs Debian's chromium)"
    home = tmp_path / "airflow-home"
    home.mkdir()
    port, password = free_port(), secrets.token_urlsafe(12)
    (home / "passwords.json").write_text(json.dumps({USER: password}))
    cfg = gc_config(tmp_path / "gc.yaml", "form-repo", "schedule: null\nmin_age_seconds: 86400")
    env = airflow_env(home, port, f"sqlite:///{home}/airflow.db", cfg, **{
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:{ROLE}",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
        "AIRFLOW__CORE__TEST_CONNECTION": "Enabled",
    })
    af = Airflow(home, env, None)
    try:
        af.cli("db", "migrate", timeout=120)
        af.start("api-server", "api-server")
        wait_http(f"http://127.0.0.1:{port}/api/v2/monitor/health", af.procs["api-server"], home / "api-server.log",
                  timeout=90)
        yield UI(af, port, password)
    finally:
        af.stop()


def _diagnose(page, tmp_path: Path, name: str) -> str:
    shot = tmp_path / f"{name}.png"
    page.screenshot(path=str(shot), full_page=True)
    (tmp_path / f"{name}.txt").write_text(page.content())
    return f"see {shot} and {tmp_path / name}.txt"


def test_the_lakefs_connection_form_shows_our_labels_and_tests_against_lakefs(airflow_ui_with_test_button,
                                                                            lakefs_emulator, tmp_path):
    from playwright.sync_api import sync_playwright

    ui, emu = airflow_ui_with_test_button, lakefs_emulator
    shots = [tmp_path / n for n in (SCREENSHOT_NAME, EXTRAS_SCREENSHOT_NAME, TESTED_SCREENSHOT_NAME)]
    with sync_playwright() as p:
        browser = _browser(p, tmp_path / "chromium-profile")
        try:
            page = browser.new_page()
            page.set_default_timeout(UI_TIMEOUT_MS)
            page.goto(f"{ui.base}/connections")
            sign_in(page, USER, ui.password)
            page.wait_for_url("**/connections**")
            try:
                page.get_by_role("button", name="Add Connection").click()
                dialog = page.get_by_role("dialog")
                dialog.locator("input[role=combobox]").first.focus()  # the type picker (react-select)
                page.keyboard.type("lakeFS")
                page.keyboard.press("Enter")
                dialog.get_by_text("lakeFS endpoint", exact=True).wait_for()
            except Exception as e:
                raise AssertionError(f"the lakeFS form did not open as expected ({e}); {_diagnose(page, tmp_path, 'open')}")

            def field(label, name: str):
                by_label = dialog.get_by_label(label)
                return by_label.first if by_label.count() else dialog.locator(f"input[name={name}]").first

            # "Standard Fields" is open first (one section of the form is open at a time)
            text = dialog.inner_text()
            missing = [s for s in STANDARD_LABELS if s not in text]
            assert not missing, f"not on the form: {missing}; {_diagnose(page, tmp_path, 'labels')}"
            for generic in ("Host", "Login", "Schema"):  # relabelled or hidden
                assert not dialog.get_by_text(generic, exact=True).count(), \
                    f"generic field {generic!r} shown; {_diagnose(page, tmp_path, 'generic')}"
            field(re.compile("^Connection ID"), "connection_id").fill(CONN_ID)
            field("lakeFS endpoint", "host").fill(emu.url)
            field("Port", "port").fill(emu.url.rsplit(":", 1)[1])  # the list's Test needs it (Airflow 3.3)
            field("Access key ID", "login").fill(emu.access_key)
            field("Secret access key", "password").fill(emu.secret_key)
            page.screenshot(path=str(shots[0]))

            # "Extra Fields": our fields with their help texts
            dialog.get_by_role("button", name="Extra Fields", exact=True).click()
            dialog.get_by_text(EXTRA_LABELS[0], exact=True).wait_for()
            text = dialog.inner_text()
            missing = [s for s in EXTRA_LABELS + HELP if s not in text]
            assert not missing, f"not on the form: {missing}; {_diagnose(page, tmp_path, 'extras')}"
            field("Max retries", "element_max_retries").fill("3")
            field("Local blockstore root", "element_local_blockstore_root").fill(str(emu.root))
            page.screenshot(path=str(shots[1]))

            with page.expect_response(lambda r: r.url.endswith("/api/v2/connections")
                                      and r.request.method == "POST") as saved:
                dialog.get_by_role("button", name="Save").click()
            assert saved.value.status in (200, 201), saved.value.text()

            # Airflow 3 puts Test on the connection's row in the list: the hook calls the emulator
            try:
                with page.expect_response(lambda r: r.url.endswith("/api/v2/connections/test")) as answer:
                    page.get_by_role("button", name="Test Connection").first.click()
            except Exception as e:
                raise AssertionError(f"no Test button on the list ({e}); {_diagnose(page, tmp_path, 'list')}")
            result = answer.value.json()
            assert answer.value.status == 200 and result["status"] is True, (result, answer.value.request.post_data)
            assert re.search(r"lakeFS \S+ at http://127\.0\.0\.1:\d+/api/v1 accepted the keys \(blockstore: local\)$",
                             result["message"]), result
            try:
                page.get_by_text("accepted the keys").first.wait_for()
            except Exception as e:
                raise AssertionError(f"the person sees no test result ({e}); {_diagnose(page, tmp_path, 'test')}")
            page.screenshot(path=str(shots[2]))
        finally:
            browser.close()

    if os.environ.get("LAKEFS_GC_SCREENSHOTS_DIR"):
        folder = Path(os.environ["LAKEFS_GC_SCREENSHOTS_DIR"])
        folder.mkdir(parents=True, exist_ok=True)
        for shot in shots:
            shutil.copy(shot, folder / shot.name)

    # what the form saved is what the hook reads: the extras by their own names
    conn = ui.api(f"/api/v2/connections/{CONN_ID}")
    assert (conn["conn_type"], conn["host"], conn["login"], conn["port"]) == \
        ("lakefs", emu.url, emu.access_key, int(emu.url.rsplit(":", 1)[1]))
    extra = json.loads(conn["extra"])
    assert extra.get("max_retries") in (3, "3") and extra.get("local_blockstore_root") == str(emu.root), extra
    print("screenshots:", *shots)
