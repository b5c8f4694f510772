"""A finished GC run as a person sees it in Airflow 3's UI, in a real browser (called by the
``s3://`` end-to-end test, ``tests/airflow/test_e2e_cluster.py``, on the run it has just made: one GC run
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
import secrets
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from lakefs_gc_airflow.local_airflow import airflow_env
from lakefs_sandbox.emulator.launcher import free_port, wait_http
from tests.airflow.conftest import conn_env
from tests.airflow.helpers import REPO, Airflow, airflow_api, sign_in
from tests.airflow.test_forms import CHROMIUM, UI_TIMEOUT_MS, _browser

USER, ROLE = "gc-viewer", "admin"
SCREENSHOT = REPO / "docs" / "screenshots" / "run-summary.png"          # tab Rendered Templates
LINKS_SCREENSHOT = REPO / "docs" / "screenshots" / "run-report-links.png"  # tab Details: the extra links


@contextmanager
def api_server(home: Path, db_url: str, config: Path, conns: dict[str, dict]):
    """Airflow's api-server on 127.0.0.1 over the metadata DB ``db_url``, with the connections the
    extra links read; yields its base URL and the password of ``USER``. Stopped by PID."""
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: run `make setup` as root (it installs Debian's chromium)"
    home.mkdir(parents=True)
    port, password = free_port(), secrets.token_urlsafe(12)
    (home / "passwords.json").write_text(json.dumps({USER: password}))
    env = airflow_env(home, port, db_url, config, **{
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:{ROLE}",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
    })
    env.update(conn_env(k, **v) for k, v in conns.items())
    af = Airflow(home, env, None)
    try:
        af.start("api-server", "api-server")
        wait_http(f"http://127.0.0.1:{port}/api/v2/monitor/health", af.procs["api-server"], home / "api-server.log",
                  timeout=90)
        yield f"http://127.0.0.1:{port}", password
    finally:
        af.stop()


def check_run_page(base: str, password: str, dag_id: str, repository: str, deleted: int, moto, namespace: str,
                   secret_values: list[str], profile: Path) -> None:
    """The DAG's one run, as the REST API and a browser show it: its summary, its links, its report."""
    from playwright.sync_api import expect, sync_playwright

    [run] = airflow_api(base, f"/api/v2/dags/{dag_id}/dagRuns", USER, password)["dag_runs"]
    assert run["state"] == "success", run
    q = urllib.parse.quote(run["dag_run_id"], safe="")
    task = f"/api/v2/dags/{dag_id}/dagRuns/{q}/taskInstances/save_report"
    xcom = airflow_api(base, f"{task}/xcomEntries/return_value", USER, password)
    result = xcom["value"] if isinstance(xcom["value"], dict) else json.loads(xcom["value"])
    summary, n = result["summary"], deleted
    assert f"\ndeleted: {n}\n" in summary and "\nalready gone: 0\n" in summary and "\ndead letters: 0\n" in summary
    assert f"\nmarked: {n}  (" in summary and "\nmode: mark_and_sweep\n" in summary and "\ncutoff: " in summary
    assert summary.endswith(f"report: {result['summary_uri']}")
    links = airflow_api(base, f"{task}/links", USER, password)["extra_links"]
    assert links["lakeFS repository"].endswith(f"/repositories/{repository}")
    report_link = links["GC report (summary.json)"]
    assert report_link.startswith("http://127.0.0.1:") and report_link.endswith("/summary.json")
    # the link opens the report where the browser may read it: a private bucket refuses (403), a bucket
    # whose policy lets anyone read the GC's summary.json files (counts and paths, no data) serves it
    with pytest.raises(urllib.error.HTTPError, match="403"):
        urllib.request.urlopen(report_link, timeout=10)
    bucket, _, prefix = namespace.removeprefix("s3://").partition("/")
    moto.client().put_bucket_policy(Bucket=bucket, Policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
            "Resource": f"arn:aws:s3:::{bucket}/{prefix}/_lakefs/retention/gc/unified/*/summary.json"}]}))
    with urllib.request.urlopen(report_link, timeout=10) as r:  # the link opens the report itself
        report = json.load(r)
    assert report["run_id"] == result["summary_uri"].split("/")[-2] and report["deleted"] == n
    assert report["num_deleted_objects"] == n and report["already_gone"] == 0

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
                "href", links["lakeFS repository"])
            link.scroll_into_view_if_needed()
            page.screenshot(path=str(LINKS_SCREENSHOT), full_page=True)
            html += page.content()
            report_page = browser.new_page()  # what the link opens: the report, as a download of the JSON
            with report_page.expect_download() as download:
                try:
                    report_page.goto(link.get_attribute("href"))
                except Exception as e:  # Chromium: "Download is starting" ends the navigation
                    assert "Download is starting" in str(e), e
            assert json.loads(Path(download.value.path()).read_text())["run_id"] == report["run_id"]
        finally:
            browser.close()
    shown_text = json.dumps([summary, links, html])
    assert not any(s in shown_text for s in secret_values), "a key or secret on the page, in a link or the summary"
    print("screenshots:", SCREENSHOT, LINKS_SCREENSHOT)
