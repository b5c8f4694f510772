"""A finished GC run as a person sees it in Airflow 3's UI, in a real browser (called by the
``s3://`` end-to-end test, ``tests/airflow/e2e/test_e2e_cluster.py``, on the run it has just made: one GC run
serves both).

An api-server of its own (127.0.0.1, its own AIRFLOW_HOME, the simple auth manager with a known
user) on the metadata database where ``dag.test()`` ran the DAG; then Debian's headless Chromium
(playwright, by path) signs in and opens the run's ``save_report`` task:

- the run's summary (listed, candidates, marked, held back, deleted, already gone, dead letters,
  reclaimed, flow, cutoff, the report's URI) is on the page: the rendered field ``run_summary``.
  Airflow 3's Task SDK gives a task no way to set its DAG-run note, so this is where it lives
  (and in the task's XCom and log);
- the two extra links are there, the REST API serves them, and the report link opens the run's
  ``summary.json`` at its path-style URL on the S3 endpoint once the bucket's policy lets a browser
  read the GC's ``summary.json`` files (a private bucket answers 403).

The pages are saved as ``docs/screenshots/run-summary.png`` (the summary, tab Rendered Templates)
and ``docs/screenshots/run-report-links.png`` (the links, tab Details). Nothing holds a key or secret.
"""

from __future__ import annotations

import json
import re
import secrets
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from lakefs_sandbox.emulator.launcher import free_port, wait_http
from lakefs_sandbox.local_airflow import airflow_env
from tests.airflow.conftest import conn_env
from tests.airflow.helpers import REPO, Airflow, airflow_api, gc_page, sign_in
from tests.airflow.ui.test_forms import CHROMIUM, UI_TIMEOUT_MS, _browser

USER, ROLE = "gc-viewer", "admin"
SCREENSHOT = REPO / "docs" / "screenshots" / "run-summary.png"  # tab Rendered Templates
GC_PAGE_SCREENSHOT = REPO / "docs" / "screenshots" / "gc-page.png"  # Browse > lakeFS GC
GC_SPACE_SCREENSHOT = REPO / "docs" / "screenshots" / "gc-page-space.png"  # where the bytes go, stale, what if
GC_TAB_SCREENSHOT = REPO / "docs" / "screenshots" / "gc-page-dag-tab.png"  # the GC DAG's "lakeFS GC (DAG)" tab
LINKS_SCREENSHOT = REPO / "docs" / "screenshots" / "run-report-links.png"  # tab Details: the extra links


@contextmanager
def api_server(home: Path, db_url: str, config: Path, conns: dict[str, dict]):
    """Airflow's api-server on 127.0.0.1 over the metadata DB ``db_url``, with the connections the
    extra links read; yields its base URL and the password of ``USER``. Stopped by PID."""
    with airflow_serving(home, db_url, config, conns) as (_, base, password):
        yield base, password


@contextmanager
def airflow_serving(home: Path, db_url: str, config: Path, conns: dict[str, dict]):
    """:func:`api_server`, yielding also its :class:`~tests.airflow.helpers.Airflow`, to start more of
    Airflow's components in the same environment (``af.start("scheduler")``); all stopped by PID."""
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: run `make setup` as root (it installs Debian's chromium)"
    home.mkdir(parents=True)
    port, password = free_port(), secrets.token_urlsafe(12)
    (home / "passwords.json").write_text(json.dumps({USER: password}))
    env = airflow_env(
        home,
        port,
        db_url,
        config,
        **{
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:{ROLE}",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
        },
    )
    env.update(conn_env(k, **v) for k, v in conns.items())
    af = Airflow(home, env, None)
    try:
        af.start("api-server", "api-server")
        wait_http(
            f"http://127.0.0.1:{port}/api/v2/monitor/health",
            af.procs["api-server"],
            home / "api-server.log",
            timeout=90,
        )
        yield af, f"http://127.0.0.1:{port}", password
    finally:
        af.stop()


def check_run_page(
    base: str,
    password: str,
    dag_id: str,
    repository: str,
    deleted: int,
    moto,
    namespace: str,
    secret_values: list[str],
    profile: Path,
    dag_run_id: str,
) -> None:
    """The DAG's run ``dag_run_id``, as the REST API and a browser show it: its summary, its links, its report."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=UI_TIMEOUT_MS)  # a loaded machine: the UI's answers take seconds

    [run] = [
        r
        for r in airflow_api(base, f"/api/v2/dags/{dag_id}/dagRuns", USER, password)["dag_runs"]
        if r["dag_run_id"] == dag_run_id
    ]
    assert run["state"] == "success", run
    q = urllib.parse.quote(run["dag_run_id"], safe="")
    task = f"/api/v2/dags/{dag_id}/dagRuns/{q}/taskInstances/save_report"
    xcom = airflow_api(base, f"{task}/xcomEntries/return_value", USER, password)
    result = xcom["value"] if isinstance(xcom["value"], dict) else json.loads(xcom["value"])
    summary, n = result["summary"], deleted
    assert f"\ndeleted: {n}\n" in summary
    assert "\nalready gone: 0\n" in summary
    assert "\ndead letters: 0\n" in summary
    assert f"\nmarked: {n}  (" in summary
    assert "\nmode: mark_and_sweep\n" in summary
    assert "\ncutoff: " in summary
    assert summary.endswith(f"report: {result['summary_uri']}")
    links = airflow_api(base, f"{task}/links", USER, password)["extra_links"]
    assert links["lakeFS repository"].endswith(f"/repositories/{repository}")
    assert links["GC page"] == f"/dags/{dag_id}/plugin/lakefs-gc-dag", links  # the repository's runs over time
    report_link = links["GC report (summary.json)"]
    assert report_link.startswith("http://127.0.0.1:")
    assert report_link.endswith("/summary.json")
    # the link opens the report where the browser may read it: a private bucket refuses (403), a bucket
    # whose policy lets anyone read the GC's summary.json files (counts and paths, no data) serves it
    with pytest.raises(urllib.error.HTTPError, match="403"):
        urllib.request.urlopen(report_link, timeout=60)
    bucket, _, prefix = namespace.removeprefix("s3://").partition("/")
    moto.client().put_bucket_policy(
        Bucket=bucket,
        Policy=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": "*",
                        "Action": "s3:GetObject",
                        "Resource": f"arn:aws:s3:::{bucket}/{prefix}/_lakefs/retention/gc/unified/*/summary.json",
                    }
                ],
            }
        ),
    )
    with urllib.request.urlopen(report_link, timeout=60) as r:  # the link opens the report itself
        report = json.load(r)
    assert report["run_id"] == result["summary_uri"].split("/")[-2]
    assert report["deleted"] == n
    assert report["num_deleted_objects"] == n
    assert report["already_gone"] == 0

    with sync_playwright() as p:
        browser = _browser(p, profile)
        try:
            page = browser.new_page()
            page.set_default_timeout(UI_TIMEOUT_MS)
            task_page = f"{base}/dags/{dag_id}/runs/{q}/tasks/save_report"
            page.goto(task_page)
            sign_in(page, USER, password)
            page.wait_for_url(f"**/dags/{dag_id}/**")
            page.goto(task_page + "/rendered_templates")
            shown = page.get_by_text(f"deleted: {n}", exact=False).first
            shown.wait_for()
            for line in (f"marked: {n}", "dead letters: 0", "mode: mark_and_sweep", f"report: {result['summary_uri']}"):
                expect(page.get_by_text(line, exact=False).first).to_be_visible()
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT), full_page=True)
            html = page.content()
            page.goto(task_page + "/details")  # Airflow 3 shows a task's extra links on its Details tab
            link = page.get_by_role("link", name="GC report (summary.json)")
            expect(link).to_have_attribute("href", report_link)
            expect(page.get_by_role("link", name="lakeFS repository")).to_have_attribute(
                "href", links["lakeFS repository"]
            )
            link.scroll_into_view_if_needed()
            page.screenshot(path=str(LINKS_SCREENSHOT), full_page=True)
            html += page.content()
            report_page = browser.new_page()  # what the link opens: the report, as a download of the JSON
            with report_page.expect_download() as download:
                try:
                    report_page.goto(link.get_attribute("href"))
                except Exception as e:  # Chromium: "Download is starting" ends the navigation
                    # goto may or may not raise (pytest.raises would demand it): only this error is expected
                    assert "Download is starting" in str(e), e  # noqa: PT017
            assert json.loads(Path(download.value.path()).read_text())["run_id"] == report["run_id"]
        finally:
            browser.close()
    shown_text = json.dumps([summary, links, html])
    assert not any(s in shown_text for s in secret_values), "a key or secret on the page, in a link or the summary"
    print("screenshots:", SCREENSHOT, LINKS_SCREENSHOT)


GC_COUNTS = (
    "listed_objects",
    "candidates",
    "to_delete",
    "deleted",
    "already_gone",
    "held_back",
    "delete_failed",
    "reclaimed_bytes",
)


def check_gc_page(
    base: str,
    password: str,
    dag_id: str,
    storage,
    held: dict,
    swept: dict,
    refused_run_id: str,
    secret_values: list[str],
    profile: Path,
) -> None:
    """The GC page (``lakefs_gc_airflow.gc_page``) after three real runs of the DAG: one that held back
    every candidate, one that deleted, one refused by ``prepare_run``. Its API refuses a request without
    Airflow's auth and answers each run with the counts of its report, read here from the namespace;
    in a real browser, the page (Browse > lakeFS GC) and the DAG's tab show them, the charts are drawn,
    the latest report is plain, wrapped text, and the refused run says why (the one line its task left)
    and links to its failed task's log."""
    from playwright.sync_api import expect  # gc_page sets its deadline: on a loaded machine answers take seconds

    from lakefs_gc.report import formats, layout
    from lakefs_gc.report.marks import parquet_parts

    api = f"/lakefs-gc/api/dags/{dag_id}/runs"
    gone = next(
        a
        for part in parquet_parts(storage, layout.deleted_dir(swept["run_id"]))  # one the sweep deleted
        for a in formats.read_addresses(storage, part)
    )
    explain_api = f"/lakefs-gc/api/dags/{dag_id}/explain?target={urllib.parse.quote(gone)}"
    whatif_api = f"/lakefs-gc/api/dags/{dag_id}/whatif?rule=0"
    for path in (api, "/lakefs-gc/api/repositories", explain_api, whatif_api):
        with pytest.raises(urllib.error.HTTPError) as refused_call:
            urllib.request.urlopen(base + path, timeout=60)
        assert refused_call.value.code in (401, 403), (path, refused_call.value.code)
    repos = airflow_api(base, "/lakefs-gc/api/repositories", USER, password)["repositories"]
    assert dag_id in [r["dag_id"] for r in repos], repos
    answer = airflow_api(base, api, USER, password)
    assert answer["error"] is None, answer["error"]
    from lakefs_gc.contract import TIMED_STEPS

    assert answer["steps"] == list(TIMED_STEPS)  # the chart's series: the provider's table, not the page's own list
    runs = answer["runs"]
    assert [r["airflow_run_id"] for r in runs[:3]] == [refused_run_id, swept["airflow_run_id"], held["airflow_run_id"]]
    refused, sw, hb = runs[:3]
    assert refused["report"] is None
    assert refused["dag_run"]["state"] == "failed"
    assert "prepare_run" in refused["dag_run"]["failed_tasks"], refused["dag_run"]
    refusal = refused["dag_run"]["reason"]  # the one line prepare_run left (its XCom), for the page
    assert (refusal["task_id"], refusal["refused"]) == ("prepare_run", True), refusal
    assert refusal["reason"].startswith("min_age_seconds=1 is below lakeFS's grace period of "), refusal
    assert refusal["reason"].endswith("Nothing was deleted"), refusal
    for got, want in ((sw, swept), (hb, held)):
        report = json.loads(storage.get(layout.summary_key(want["run_id"])))  # the report itself, in the namespace
        assert got["mark_id"] == report["run_id"]
        assert got["dag_run"]["state"] == "success"
        assert {k: got[k] for k in GC_COUNTS} == {k: report.get(k) for k in GC_COUNTS}
    assert hb["held_back"] == hb["candidates"] > 0
    assert hb["deleted"] == 0
    assert hb["held_back_until"]
    assert sw["deleted"] == sw["candidates"] > 0
    assert sw["reclaimed_bytes"] > 0
    # where the bytes go: the newest run that attributed them, its space.json as the namespace has it,
    # the same totals as its summary
    with_space = next(r for r in runs if r.get("space_file") and not r.get("sweep"))
    space = answer["space"]
    doc = formats.read_space(storage, with_space["space_file"])
    assert space["mark_id"] == with_space["mark_id"]
    assert space["attribution"] == doc["attribution"]
    space_summary = json.loads(storage.get(layout.summary_key(with_space["mark_id"])))
    assert space_summary["space_bytes"] == doc["attribution"]["total"]["bytes"] > 0
    assert space_summary["space_head_bytes"] == doc["attribution"]["classes"]["head"]["bytes"]
    priced = airflow_api(base, whatif_api, USER, password)  # lakefs-gc whatif, for this repository
    assert priced["change"] == "the default rule set to 0 days", priced
    assert priced["lines"][0].startswith("If the default rule set to 0 days, the next GC run would free "), priced
    why = airflow_api(base, explain_api, USER, password)  # lakefs-gc explain, for this repository
    assert why["address"] == gone, why
    assert why["verdict"] == "deleted", why
    assert any(f"mark {swept['run_id']}" in ln for ln in why["lines"]), why["lines"]

    def fmt(v) -> str:
        return f"{v:,}"

    with gc_page(base, profile, (USER, password)) as page:
        for run in (sw, hb):
            row = page.locator(f'tr[data-run="{run["airflow_run_id"]}"]')
            for col in ("listed", "candidates", "deleted", "held_back", "already_gone", "dead_letters"):
                key = {"listed": "listed_objects", "dead_letters": "delete_failed"}.get(col, col)
                expect(row.locator(f'td[data-col="{col}"]')).to_contain_text(fmt(run[key]))
        expect(page.locator(f'tr[data-run="{hb["airflow_run_id"]}"]')).to_contain_text("held back")
        refused_row = page.locator(f'tr[data-run="{refused_run_id}"]')
        expect(refused_row.locator('td[data-col="outcome"]')).to_contain_text("refused by prepare_run")
        expect(refused_row.get_by_test_id("gc-run-reason")).to_have_text(refusal["reason"])
        expect(refused_row.get_by_role("link", name="prepare_run log")).to_have_attribute(
            "href", re.compile(r"/dags/.+/runs/.+/tasks/prepare_run$")
        )
        newest = page.get_by_test_id("gc-newest")  # in the latest-report box, above the latest report
        expect(newest).to_contain_text(f"was refused by prepare_run: {refusal['reason']}")
        expect(newest).to_contain_text("prepare_run log")
        expect(newest).not_to_contain_text("delete log")  # failed tasks only, not those upstream_failed
        summary = page.get_by_test_id("gc-summary")  # the latest report: plain text, wrapped
        expect(summary).to_contain_text(f"deleted: {fmt(sw['deleted'])}")
        assert summary.evaluate("e => getComputedStyle(e).whiteSpace") == "pre-wrap"
        assert summary.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), "the summary is cut at the right"
        expect(page.get_by_test_id("gc-charts").locator("canvas")).to_have_count(3)
        page.get_by_test_id("gc-explain-target").fill(gone)  # an operator pastes an address
        page.get_by_test_id("gc-explain-go").click()
        expect(page.get_by_test_id("gc-explain-answer")).to_contain_text(f"{gone}: deleted")
        box = page.get_by_test_id("gc-space")  # where the bytes go: two charts, the stale branches, what if
        expect(box).to_have_attribute("data-mark", space["mark_id"])
        expect(box.locator("canvas")).to_have_count(2)
        total = doc["attribution"]["total"]
        expect(box).to_contain_text(f"{fmt(total['objects'])} objects")
        stale = doc["stale"]
        if stale:  # most bytes alone first, as space.json orders them
            rows = box.get_by_test_id("gc-stale").locator("tbody tr")
            expect(rows).to_have_count(len(stale))
            expect(rows.first).to_have_attribute("data-branch", stale[0]["branch"])
            expect(rows.first.locator('td[data-col="objects"]')).to_have_text(fmt(stale[0]["alone"]["objects"]))
        else:
            expect(box.get_by_test_id("gc-stale")).to_have_text("None.")
        box.get_by_test_id("gc-whatif-kind").select_option("delete")
        box.get_by_test_id("gc-whatif-branch").fill("no-such-branch")
        box.get_by_test_id("gc-whatif-go").click()
        expect(box.get_by_test_id("gc-whatif-error")).to_contain_text("no such branch")
        box.get_by_test_id("gc-whatif-kind").select_option("rule")
        box.get_by_test_id("gc-whatif-branch").fill("")
        box.get_by_test_id("gc-whatif-days").fill("0")
        box.get_by_test_id("gc-whatif-go").click()
        expect(box.get_by_test_id("gc-whatif-answer")).to_contain_text(priced["lines"][0])
        expect(box.get_by_test_id("gc-whatif-error")).to_have_count(0)
        page.set_viewport_size({"width": 1400, "height": 1600})  # the UI scrolls inside: room for the table
        page.wait_for_timeout(800)  # the charts drawn
        GC_PAGE_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(GC_PAGE_SCREENSHOT), full_page=True)
        box.scroll_into_view_if_needed()
        box.screenshot(path=str(GC_SPACE_SCREENSHOT))
        html = page.content()
        page.goto(f"{base}/dags/{dag_id}/plugin/lakefs-gc-dag")  # the tab on the DAG: that repository
        tab = page.locator(f'[data-testid="gc-repository"][data-dag="{dag_id}"]')
        tab.wait_for()
        expect(tab.locator(f'tr[data-run="{sw["airflow_run_id"]}"] td[data-col="deleted"]')).to_contain_text(
            fmt(sw["deleted"])
        )
        page.wait_for_timeout(500)
        page.screenshot(path=str(GC_TAB_SCREENSHOT), full_page=True)
        html += page.content()
    shown = json.dumps([answer, html])
    assert not any(s in shown for s in secret_values if s), "a key or secret on the GC page or in its API"
    print("screenshots:", GC_PAGE_SCREENSHOT, GC_SPACE_SCREENSHOT, GC_TAB_SCREENSHOT)
