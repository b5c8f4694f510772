"""The forms a person uses in Airflow's UI, in a real browser: the GC DAG's trigger form and the
lakeFS connection form.

One real Airflow api-server for the module (127.0.0.1, a free port; SQLite metadata DB in its own
AIRFLOW_HOME; the simple auth manager with a known user; ``[core] test_connection = Enabled``)
serves the GC DAG; Debian's headless Chromium (``/usr/bin/chromium``, installed by
``scripts/setup.sh``), driven by playwright by path (its own browser download is never used), signs
in. No scheduler: the API creates a run queued, which is all the trigger form needs.

The trigger form:

1. The form as it opens, untouched: Trigger creates a run whose conf is the DAG's defaults (the
   empty, optional ``mark_id`` does not block it).
2. 5 typed into "Blast-radius guard: max share": the field keeps 5 when it loses focus (the form
   does not clamp it to 1, which would be no guard at all), Trigger is refused by Airflow with a
   message naming the Param that the person sees, and no run with a weaker guard exists.

A run that is created with 5 anyway (a hand-made conf, an old serialized DAG) fails in
``prepare_run``: ``tests/airflow/operators/test_operators.py``; every numeric Param: ``test_params.py``.

The connection form: the person opens Admin > Connections > Add Connection, types "lakeFS" and sees
two types, Treeverse's ("lakefs", ``airflow-provider-lakefs``, installed beside ours: its metadata names
no hook, so the UI shows the type) and ours ("lakeFS (garbage collection)", ``lakefs_gc``); picks
ours: the form shows our labels and help texts (provider metadata, ``lakefs_gc_airflow.get_provider_info``);
saved, the connection's Test button in the list (Airflow 3 has it there) reaches the lakeFS
emulator through the hook's ``test_connection``; what is saved is the extra JSON the hook reads. The
screenshots go to the test's temporary directory, and also into ``$LAKEFS_GC_SCREENSHOTS_DIR`` when
set (``docs/screenshots/lakefs-connection-form.png`` was made so).
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
from lakefs_sandbox.local_airflow import airflow_env
from tests.airflow.helpers import Airflow, airflow_api, gc_config, sign_in

pytestmark = [pytest.mark.e2e]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
REPO_NAME = "form-repo"
DAG_ID = f"lakefs_gc__{REPO_NAME}"
USER, ROLE = "gc-operator", "admin"
UI_TIMEOUT_MS = 60_000  # a deadline: on CI's loaded 2 cores a first page load took over 20 s


class UI:
    """The api-server we started: its address, and its REST API as the signed-in user."""

    def __init__(self, airflow: Airflow, port: int, password: str):
        self.airflow, self.base, self.password = airflow, f"http://127.0.0.1:{port}", password

    def api(self, path: str):
        return airflow_api(self.base, path, USER, self.password)

    def runs(self) -> list[dict]:
        return self.api(f"/api/v2/dags/{DAG_ID}/dagRuns")["dag_runs"]


OUR_TYPE_NAME = "lakeFS (garbage collection)"  # lakefs_gc; airflow-provider-lakefs's shows as "lakefs"
TYPES_SCREENSHOT_NAME = "lakefs-connection-types.png"
SCREENSHOT_NAME = "lakefs-connection-form.png"
EXTRAS_SCREENSHOT_NAME = "lakefs-connection-form-extras.png"
TESTED_SCREENSHOT_NAME = "lakefs-connection-tested.png"
STANDARD_LABELS = ["lakeFS endpoint", "Access key ID", "Secret access key"]
EXTRA_LABELS = ["Local blockstore root", "Max retries", "Backoff base (seconds)", "Backoff max (seconds)"]
HELP = [
    "lakeFS keeps local://repo1 at <root>/repo1",
    "Retries of one lakeFS call after a 5xx, 429 or connection error",
    "doubling each retry",
    "The longest wait between two retries",
]
CONN_ID = "lakefs_from_form"


@pytest.fixture(scope="module")
def airflow_ui(tmp_path_factory):
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: run `make setup` as root (it installs Debian's chromium)"
    tmp = tmp_path_factory.mktemp("airflow_ui")
    home = tmp / "airflow-home"
    home.mkdir()
    port, password = free_port(), secrets.token_urlsafe(12)
    (home / "passwords.json").write_text(json.dumps({USER: password}))
    cfg = gc_config(tmp / "gc.yaml", REPO_NAME, "schedule: null\nmin_age_seconds: 86400")
    env = airflow_env(
        home,
        port,
        f"sqlite:///{home}/airflow.db",
        cfg,
        **{
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:{ROLE}",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
            "AIRFLOW__CORE__TEST_CONNECTION": "Enabled",
        },
    )
    af = Airflow(home, env)  # no metadata-DB queries here: the REST API is asked
    try:
        af.cli("db", "migrate", timeout=120)
        af.start("api-server")
        af.cli("dags", "reserialize", timeout=120)  # the DAG into the DB, while the api-server starts
        wait_http(
            f"http://127.0.0.1:{port}/api/v2/monitor/health",
            af.procs["api-server"],
            home / "api-server.log",
            timeout=90,
        )
        ui = UI(af, port, password)
        errors = ui.api("/api/v2/importErrors")["import_errors"]
        assert not errors, f"the DAG file did not import: {errors}"
        yield ui
    finally:
        af.stop()


def _browser(playwright, profile: Path):
    """Debian's Chromium by path, a fresh profile, nothing that would call beyond 127.0.0.1."""
    return playwright.chromium.launch_persistent_context(
        str(profile),
        executable_path=CHROMIUM,
        args=CHROMIUM_ARGS,
        headless=True,
        viewport={"width": 1400, "height": 1000},
    )


def _signed_in(browser, ui: UI, path: str):
    """A new page of ``browser`` at ``path`` of the UI, signed in as the test's user."""
    page = browser.new_page()
    page.set_default_timeout(UI_TIMEOUT_MS)
    page.goto(f"{ui.base}{path}")
    sign_in(page, USER, ui.password)
    page.wait_for_url(f"**{path}**")
    return page


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
            page = _signed_in(browser, ui, f"/dags/{DAG_ID}")

            # 1. the form as it opens: nothing changed, Trigger
            dialog = _open_trigger_form(page, ui)
            button = dialog.get_by_role("button", name="Trigger")
            try:
                expect(button).to_be_enabled(timeout=UI_TIMEOUT_MS)
            except AssertionError:
                page.screenshot(path=str(tmp_path / "1-default-form-disabled.png"), full_page=True)
                raise AssertionError(f"the default form cannot be submitted: {tmp_path}/1-default-form-disabled.png")
            with page.expect_response(
                lambda r: r.url.endswith(f"/dags/{DAG_ID}/dagRuns") and r.request.method == "POST"
            ) as answer:
                button.click()
            assert answer.value.status == 200, answer.value.text()
            page.get_by_text("Dag run has been successfully triggered").first.wait_for()
            shots.append(tmp_path / "1-default-form-triggered.png")
            page.screenshot(path=str(shots[-1]))
            runs = ui.runs()
            assert len(runs) == 1, runs
            assert runs[0]["state"] == "queued", runs
            assert runs[0]["conf"] == defaults, "the run was not created with the default Params"
            assert (defaults["mark_id"], defaults["max_delete_share"]) == (None, 0.5)

            # 2. 5 typed into the share: kept as typed, refused with a message, no run created
            dialog = _open_trigger_form(page, ui)
            share = dialog.locator("input[name=element_max_delete_share]")
            share.fill("5")
            share.press("Tab")  # the field loses focus: Airflow's form clamps here when a Param has a maximum
            assert share.input_value() == "5", f"the form changed 5 into {share.input_value()!r}"
            with page.expect_response(
                lambda r: r.url.endswith(f"/dags/{DAG_ID}/dagRuns") and r.request.method == "POST"
            ) as answer:
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
    # whatever the dialog's "Unpause on trigger" did, the DAG has no schedule of its own to run on
    details = ui.api(f"/api/v2/dags/{DAG_ID}/details")
    assert details["timetable_summary"] in (None, "None", ""), details
    assert details["next_dagrun_logical_date"] is None, details
    if os.environ.get("LAKEFS_GC_SCREENSHOTS_DIR"):
        folder = Path(os.environ["LAKEFS_GC_SCREENSHOTS_DIR"])
        folder.mkdir(parents=True, exist_ok=True)
        for shot in shots:
            shutil.copy(shot, folder / f"trigger-{shot.name}")
    print("screenshots:", *shots)


# ---------------------------------------------------------------------------------------------
# the lakeFS connection form


def _diagnose(page, tmp_path: Path, name: str) -> str:
    shot = tmp_path / f"{name}.png"
    page.screenshot(path=str(shot), full_page=True)
    (tmp_path / f"{name}.txt").write_text(page.content())
    return f"see {shot} and {tmp_path / name}.txt"


def _type_into_type_picker(page, dialog, text: str) -> None:
    """Type ``text`` into the Add Connection dialog's type picker (react-select) until it offers our
    type. On a loaded machine the dialog can redraw once the connection types arrive (the api-server
    imports every provider's hooks for them), dropping what was typed before: typed again then,
    within the UI's deadline."""
    import time

    deadline = time.monotonic() + UI_TIMEOUT_MS / 1000
    while True:
        picker = dialog.locator("input[role=combobox]").first
        picker.fill("")
        picker.focus()
        page.keyboard.type(text)
        try:
            page.get_by_role("option", name=OUR_TYPE_NAME, exact=True).wait_for(timeout=5_000)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise


def test_the_lakefs_connection_form_shows_our_labels_and_tests_against_lakefs(airflow_ui, lakefs_emulator, tmp_path):
    from playwright.sync_api import sync_playwright

    ui, emu = airflow_ui, lakefs_emulator
    shots = [
        tmp_path / n for n in (TYPES_SCREENSHOT_NAME, SCREENSHOT_NAME, EXTRAS_SCREENSHOT_NAME, TESTED_SCREENSHOT_NAME)
    ]
    with sync_playwright() as p:
        browser = _browser(p, tmp_path / "chromium-profile")
        try:
            page = _signed_in(browser, ui, "/connections")
            try:
                page.get_by_role("button", name="Add Connection").click()
                dialog = page.get_by_role("dialog")
                _type_into_type_picker(page, dialog, "lakeFS")
                # both providers' types are offered: theirs (airflow-provider-lakefs) and ours
                page.get_by_role("option", name=OUR_TYPE_NAME, exact=True).wait_for()
                offered = sorted(o.inner_text() for o in page.get_by_role("option").all())
                # theirs is shown by its type, "lakefs": their provider's metadata names no hook
                assert offered == [OUR_TYPE_NAME, "lakefs"], offered
                page.screenshot(path=str(shots[0]))
                page.keyboard.type(" (garbage")
                page.keyboard.press("Enter")
                dialog.get_by_text("lakeFS endpoint", exact=True).wait_for()
            except Exception as e:
                raise AssertionError(
                    f"the lakeFS form did not open as expected ({e}); {_diagnose(page, tmp_path, 'open')}"
                )

            def field(label, name: str):
                by_label = dialog.get_by_label(label)
                return by_label.first if by_label.count() else dialog.locator(f"input[name={name}]").first

            # "Standard Fields" is open first (one section of the form is open at a time)
            text = dialog.inner_text()
            missing = [s for s in STANDARD_LABELS if s not in text]
            assert not missing, f"not on the form: {missing}; {_diagnose(page, tmp_path, 'labels')}"
            for generic in ("Host", "Login", "Schema"):  # relabelled or hidden
                assert not dialog.get_by_text(generic, exact=True).count(), (
                    f"generic field {generic!r} shown; {_diagnose(page, tmp_path, 'generic')}"
                )
            field(re.compile("^Connection ID"), "connection_id").fill(CONN_ID)
            field("lakeFS endpoint", "host").fill(emu.url)
            field("Port", "port").fill(emu.url.rsplit(":", 1)[1])  # the list's Test needs it (Airflow 3.3)
            field("Access key ID", "login").fill(emu.access_key)
            field("Secret access key", "password").fill(emu.secret_key)
            page.screenshot(path=str(shots[1]))

            # "Extra Fields": our fields with their help texts
            dialog.get_by_role("button", name="Extra Fields", exact=True).click()
            dialog.get_by_text(EXTRA_LABELS[0], exact=True).wait_for()
            text = dialog.inner_text()
            missing = [s for s in EXTRA_LABELS + HELP if s not in text]
            assert not missing, f"not on the form: {missing}; {_diagnose(page, tmp_path, 'extras')}"
            field("Max retries", "element_max_retries").fill("3")
            field("Local blockstore root", "element_local_blockstore_root").fill(str(emu.root))
            page.screenshot(path=str(shots[2]))

            with page.expect_response(
                lambda r: r.url.endswith("/api/v2/connections") and r.request.method == "POST"
            ) as saved:
                dialog.get_by_role("button", name="Save").click()
            assert saved.value.status in (200, 201), saved.value.text()

            # Airflow 3 puts Test on the connection's row in the list: the hook calls the emulator
            try:
                with page.expect_response(lambda r: r.url.endswith("/api/v2/connections/test")) as answer:
                    page.get_by_role("button", name="Test Connection").first.click()
            except Exception as e:
                raise AssertionError(f"no Test button on the list ({e}); {_diagnose(page, tmp_path, 'list')}")
            result = answer.value.json()
            assert answer.value.status == 200, (result, answer.value.request.post_data)
            assert result["status"] is True, (result, answer.value.request.post_data)
            assert re.search(
                r"lakeFS \S+ at http://127\.0\.0\.1:\d+/api/v1 accepted the keys \(blockstore: local\)$",
                result["message"],
            ), result
            try:
                page.get_by_text("accepted the keys").first.wait_for()
            except Exception as e:
                raise AssertionError(f"the person sees no test result ({e}); {_diagnose(page, tmp_path, 'test')}")
            page.screenshot(path=str(shots[3]))
        finally:
            browser.close()

    if os.environ.get("LAKEFS_GC_SCREENSHOTS_DIR"):
        folder = Path(os.environ["LAKEFS_GC_SCREENSHOTS_DIR"])
        folder.mkdir(parents=True, exist_ok=True)
        for shot in shots:
            shutil.copy(shot, folder / shot.name)

    # what the form saved is what the hook reads: the extras by their own names
    conn = ui.api(f"/api/v2/connections/{CONN_ID}")
    assert (conn["conn_type"], conn["host"], conn["login"], conn["port"]) == (
        "lakefs_gc",
        emu.url,
        emu.access_key,
        int(emu.url.rsplit(":", 1)[1]),
    )
    extra = json.loads(conn["extra"])
    assert extra.get("max_retries") in (3, "3"), extra
    assert extra.get("local_blockstore_root") == str(emu.root), extra
    print("screenshots:", *shots)
