"""A run's storage requests and their cost (issue 54), on moto behind a counting proxy: every step's
counts, carried back from the Airflow task's own process or from Spark's executors, equal the
requests the proxy forwarded to moto, kind by kind; the summary prices them and the bytes freed."""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from lakefs_gc import placement
from lakefs_gc.contract import GB, RunSettings
from lakefs_gc.contract.cost import S3_STANDARD
from lakefs_gc.lakefs.client import LakeFSClient
from lakefs_gc.report import layout
from lakefs_gc.report.figures import run_figures
from lakefs_gc.report.render import summary_text
from lakefs_gc.report.run_summary import RunSummary
from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY
from lakefs_gc.steps.prepare_run import prepare_run
from lakefs_gc.storage.settings import ENV_ACCESS_KEY, ENV_SECRET_KEY
from lakefs_sandbox.inprocess import run_steps
from tests.conftest import ns_rel, ns_storage
from tests.support.counting_proxy import CountingS3Proxy

pytestmark = pytest.mark.spark
DAY = 86400


@pytest.mark.parametrize("where", ["task", "executors"])
def test_a_runs_request_counts_are_what_moto_served(
    where, moto_server, lakefs_emulator_factory, tmp_path, monkeypatch, request
):
    """``task``: every Spark step in the Airflow task's own process (no Spark); ``executors``: on a
    SparkSession with every decision, range read and match placed on its executors."""
    import lakefs_sdk

    spark = request.getfixturevalue("spark") if where == "executors" else None
    if where == "executors":
        none = placement.Placement(
            driver_max_addresses=0, driver_check_max=0, driver_read_max_entries=0, driver_scan_bytes=0
        )
        monkeypatch.setattr(placement, "DEFAULT", none)
    emu = lakefs_emulator_factory("--grace-period", "1", s3=moto_server)
    bucket = moto_server.create_bucket(f"cost-{where}")
    ns, repo, c = emu.namespace("cost", bucket=bucket), "cost", emu.client()
    emu.set_clock(offset=-30 * DAY)
    c.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=ns, default_branch="main")
    )
    old = {f"t/{i}.csv": f"{i},old\n".encode() * 40 for i in range(5)}
    garbage = [
        ns_rel(ns, c.objects_api.upload_object(repo, "main", p, content=d).physical_address) for p, d in old.items()
    ]
    c.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message="old"))
    emu.set_clock(offset=-10 * DAY)
    for p, d in old.items():
        c.objects_api.upload_object(repo, "main", p, content=d.replace(b"old", b"new"))
    c.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message="new"))
    emu.set_clock(offset=0)
    c.repositories_api.set_gc_rules(repo, lakefs_sdk.GarbageCollectionRules(default_retention_days=1, branches=[]))
    time.sleep(2.5)  # older than the minimum age below

    proxy = CountingS3Proxy(moto_server.endpoint_url).start()
    try:
        client = LakeFSClient(emu.api_url, emu.access_key, emu.secret_key)
        settings = RunSettings(
            min_age_seconds=2, unsafe_min_age_override=True, confirm_after_seconds=0, max_delete_share=1.0
        )
        ctx = prepare_run(
            client,
            repo,
            settings,
            now=datetime.now(UTC),
            airflow_run_id=f"manual__cost_{where}",
            work_dir=str(tmp_path / "work"),
            local_root=emu.local_root,
            parallelism=2,
            storage_options=replace(moto_server.s3_options(), endpoint_url=proxy.url),
        )
        env = {
            ENV_LAKEFS_ACCESS_KEY: emu.access_key,
            ENV_LAKEFS_SECRET_KEY: emu.secret_key,
            ENV_ACCESS_KEY: moto_server.access_key,
            ENV_SECRET_KEY: moto_server.secret_key,
        }
        steps: list[str] = []
        served_by_step: dict[str, Counter[str]] = {}

        def between(step: str) -> None:  # what the proxy forwarded since the step before began
            taken = proxy.take()  # before mark_uncommitted: prepare_run's, not a step's
            if steps:
                served_by_step[steps[-1]] = taken
            steps.append(step)

        results = run_steps(spark, ctx, client, env, between=between)
    finally:
        proxy.stop()
    assert results["delete"].counts.deleted == len(garbage)

    counted: Counter[str] = Counter()
    served: Counter[str] = Counter()
    settings_reads = 0
    for step, step_served in served_by_step.items():  # every step before save_report
        mine: Counter[str] = Counter()
        for rc in results[step].requests:
            assert rc.store == "s3", rc
            mine[rc.kind] += rc.count
        settings_reads += step_served.pop("SETTINGS", 0)
        assert mine == step_served, (step, mine, step_served, proxy.log)
        counted.update(mine)
        served.update(step_served)
    assert settings_reads <= 3  # the sweep's reads of the bucket's versioning and lifecycle: not counted
    assert counted["LIST"]
    assert counted["GET"]
    assert counted["PUT"]
    assert counted["DELETE"]
    if where == "executors":  # the listing ran on executors: their counts came back with the result
        assert dict(Counter({rc.kind: rc.count for rc in results["list_slices"].requests}))["LIST"] >= 1

    storage = ns_storage(ns, moto_server)
    summary = RunSummary.from_doc(json.loads(storage.get(layout.summary_key(results["mark_uncommitted"].run_id))))
    assert {(r.kind, r.count) for r in summary.requests} == set(counted.items())
    price = {"LIST": S3_STANDARD.list, "HEAD": S3_STANDARD.head, "GET": S3_STANDARD.get, "PUT": S3_STANDARD.put}
    cost = sum(n * price.get(kind, 0.0) / 1000 for kind, n in served.items())  # DELETE: free
    assert summary.request_cost_usd == pytest.approx(cost)
    freed = sum(len(d) for d in old.values())  # an unversioned bucket: every byte deleted is freed now
    assert summary.saving_bytes == freed == summary.reclaimed_bytes
    assert summary.monthly_saving_usd == pytest.approx(freed / GB * 0.023)
    assert summary.prices_as_of == "2026-11-29"
    figures = run_figures(summary)
    assert figures["requests.list"] == counted["LIST"]
    assert figures["requests.delete"] == counted["DELETE"]
    assert figures["request_cost_usd"] == pytest.approx(cost)
    line = next(x for x in summary_text(summary).splitlines() if x.startswith("cost: "))
    assert f"{sum(counted.values()):,} storage requests (LIST {counted['LIST']:,}" in line
    assert f"{summary.request_cost_usd:.2g} at list prices of 2026-11-29" in line
    assert "freed now save less than $0.000001 a month" in line  # a kilobyte's month on S3
