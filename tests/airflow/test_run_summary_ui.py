"""A GC run as a person sees it in Airflow 3's UI, in a real browser.

A real Airflow (api-server on 127.0.0.1, SQLite metadata DB in its own AIRFLOW_HOME, the simple auth
manager with a known user) and ``airflow dags test`` run the GC DAG once, for real (Spark jobs,
the lakeFS emulator, an ``s3://`` namespace on the moto server), on a repository seeded with
garbage. Then Debian's headless Chromium (playwright, by path) signs in and opens the run's
``save_report`` task:

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
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from lakefs_sandbox.emulator.launcher import free_port, wait_http
from lakefs_sandbox.seed import DELETED, seed
from tests.airflow.conftest import conn_env
from lakefs_gc_airflow.local_airflow import airflow_env
from tests.airflow.helpers import REPO, Airflow, airflow_api, gc_config, sign_in
from tests.airflow.test_trigger_form import CHROMIUM, UI_TIMEOUT_MS, _browser

pytestmark = [pytest.mark.spark, pytest.mark.e2e]

REPO_NAME = "summary-repo"
DAG_ID = f"lakefs_gc__{REPO_NAME}"
USER, ROLE = "gc-viewer", "admin"
DAY, GRACE, MIN_AGE = 86400, 5, 25
SCREENSHOT = REPO / "docs" / "screenshots" / "run-summary.png"          # tab Rendered Templates
LINKS_SCREENSHOT = REPO / "docs" / "screenshots" / "run-report-links.png"  # tab Details: the extra links


def _clock(emu):
    offsets = {"old": -10 * DAY, "recent": -3600, "fresh": 0}
    return lambda phase: emu.set_clock(offset=offsets[phase])


@pytest.fixture
def gc_run(tmp_path, lakefs_emulator_factory, moto_server):
    """Airflow's api-server, and one finished GC run of a seeded repository on s3:// (moto)."""
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: run `make setup` as root (it installs Debian's chromium)"
    emu = lakefs_emulator_factory("--grace-period", str(GRACE), s3=moto_server)
    bucket = moto_server.create_bucket("ui-summary")
    ns = emu.namespace(REPO_NAME, bucket=bucket)
    manifest = seed(emu.client(), REPO_NAME, ns, phase=_clock(emu), local_root=emu.local_root)
    emu.set_clock(offset=0)
    seeded_at = time.time()

    home = tmp_path / "airflow-home"
    home.mkdir()
    port, password = free_port(), secrets.token_urlsafe(12)
    (home / "passwords.json").write_text(json.dumps({USER: password}))
    cfg = gc_config(tmp_path / "gc.yaml", REPO_NAME, f"""
        schedule: null
        min_age_seconds: {MIN_AGE}
        work_dir: {tmp_path / 'work'}
        tasks: {{retries: 0}}
        spark:
          parallelism: 2
          conf: {{spark.ui.enabled: "false", spark.driver.extraJavaOptions: "-XX:TieredStopAtLevel=1"}}
    """)
    env = airflow_env(home, port, f"sqlite:///{home}/airflow.db", cfg, **{
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:{ROLE}",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
        "SPARK_LOCAL_IP": "127.0.0.1",
    })
    conns = {"lakefs_default": dict(conn_type="lakefs", host=emu.url, login=emu.access_key, password=emu.secret_key),
             "aws_default": dict(conn_type="aws", login=moto_server.access_key, password=moto_server.secret_key,
                                 extra={"endpoint_url": moto_server.endpoint_url, "region_name": moto_server.region}),
             "spark_default": dict(conn_type="spark", host="local[2]")}
    env.update(conn_env(k, **v) for k, v in conns.items())
    af = Airflow(home, env, None)
    try:
        af.cli("db", "migrate", timeout=120)
        af.start("api-server", "api-server")
        time.sleep(max(0.0, seeded_at + MIN_AGE + 3 - time.time()))  # the seeded garbage is older than the cutoff
        out = af.cli("dags", "test", DAG_ID, "-c", json.dumps({"mode": "mark_and_sweep"}), timeout=600)
        wait_http(f"http://127.0.0.1:{port}/api/v2/monitor/health", af.procs["api-server"], home / "api-server.log",
                  timeout=90)
        secret_values = [emu.access_key, emu.secret_key, moto_server.access_key, moto_server.secret_key]
        yield {"base": f"http://127.0.0.1:{port}", "password": password, "manifest": manifest, "output": out,
               "home": home, "secrets": secret_values, "bucket": bucket, "moto": moto_server}
    finally:
        af.stop()




def test_a_runs_page_shows_its_summary_and_links_to_the_report(gc_run, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    base, password = gc_run["base"], gc_run["password"]
    [run] = airflow_api(base, f"/api/v2/dags/{DAG_ID}/dagRuns", USER, password)["dag_runs"]
    assert run["state"] == "success", (run, gc_run["output"][-3000:])
    run_id = run["dag_run_id"]
    q = urllib.parse.quote(run_id, safe="")
    xcom = airflow_api(base, f"/api/v2/dags/{DAG_ID}/dagRuns/{q}/taskInstances/save_report/xcomEntries/return_value", USER, password)
    result = xcom["value"] if isinstance(xcom["value"], dict) else json.loads(xcom["value"])
    summary = result["summary"]
    n = len(gc_run["manifest"].expected(DELETED))
    assert f"\ndeleted: {n}\n" in summary and "\nalready gone: 0\n" in summary and "\ndead letters: 0\n" in summary
    assert f"\nmarked: {n}  (" in summary and "\nflow: mark_and_sweep\n" in summary and "\ncutoff: " in summary
    assert summary.endswith(f"report: {result['summary_uri']}")
    links = airflow_api(base, f"/api/v2/dags/{DAG_ID}/dagRuns/{q}/taskInstances/save_report/links", USER, password)["extra_links"]
    assert links["lakeFS repository"].endswith(f"/repositories/{REPO_NAME}")
    report_link = links["GC report (summary.json)"]
    assert report_link.startswith("http://127.0.0.1:") and report_link.endswith("/summary.json")
    # the link opens the report where the browser may read it: a private bucket refuses (403), a bucket
    # whose policy lets anyone read the GC's summary.json files (counts and paths, no data) serves it
    with pytest.raises(urllib.error.HTTPError, match="403"):
        urllib.request.urlopen(report_link, timeout=10)
    bucket = gc_run["bucket"]
    gc_run["moto"].client().put_bucket_policy(Bucket=bucket, Policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
            "Resource": f"arn:aws:s3:::{bucket}/{REPO_NAME}/_lakefs/retention/gc/unified/*/summary.json"}]}))
    with urllib.request.urlopen(report_link, timeout=10) as r:  # the link opens the report itself
        report = json.load(r)
    assert report["run_id"] == result["summary_uri"].split("/")[-2] and report["deleted"] == n
    assert report["num_deleted_objects"] == n and report["already_gone"] == 0

    with sync_playwright() as p:
        browser = _browser(p, tmp_path / "chromium-profile")
        try:
            page = browser.new_page()
            page.set_default_timeout(UI_TIMEOUT_MS)
            task_page = f"{base}/dags/{DAG_ID}/runs/{q}/tasks/save_report"
            page.goto(task_page)
            sign_in(page, USER, password)
            page.wait_for_url(f"**/dags/{DAG_ID}/**")
            page.goto(task_page + "/rendered_templates")
            shown = page.get_by_text(f"deleted: {n}", exact=False).first
            shown.wait_for()
            for line in (f"marked: {n}", "dead letters: 0", "flow: mark_and_sweep", f"report: {result['summary_uri']}"):
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
    assert not any(s in shown_text for s in gc_run["secrets"]), "a key or secret on the page, in a link or the summary"
    print("screenshots:", SCREENSHOT, LINKS_SCREENSHOT)
