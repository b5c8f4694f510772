"""Step ``attribute_space`` (issue 43): where the bytes go, inside every clean GC run.

A real run on random histories (the emulator): the ``space.json`` it writes beside its summary
equals, to the byte, the oracle computed from lakeFS's public API only
(tests/support/history.py, ``space_oracle``) with the run's own listing, cutoff and ``deleted/``
list; on every engine (the task's own process, a Spark driver, Spark's executors). The summary
carries the same totals; an incremental run and a run with the Param off say why there is none."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from lakefs_gc.contract import RunSettings
from lakefs_gc.lakefs.client import LakeFSClient
from lakefs_gc.report import formats, layout
from lakefs_gc.report.marks import parquet_parts
from lakefs_gc.spark.addresses import read_parts_here
from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY, storage_ref
from lakefs_gc.steps.prepare_run import prepare_run
from lakefs_gc.timestamps import parse_iso
from lakefs_sandbox.inprocess import run_steps
from tests.listing.test_holders import _build
from tests.support import history

_runs = itertools.count()


def _run(emu, name, work, spark=None, **settings):
    """A GC run of ``name`` (clean unless told), its Spark steps on ``spark`` (None: in this process)."""
    base = {
        "min_age_seconds": 0,
        "unsafe_min_age_override": True,
        "confirm_after_seconds": 0,
        "max_delete_share": 1.0,
        "flow": "clean",
    }
    secrets = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
    with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key) as gc_client:
        ctx = prepare_run(
            gc_client,
            name,
            RunSettings(**{**base, **settings}),
            now=datetime.now(UTC) + timedelta(seconds=1),
            airflow_run_id=f"space-{next(_runs)}",
            work_dir=str(work),
            local_root=emu.local_root,
            parallelism=2,
        )
        return ctx, run_steps(spark, ctx, gc_client, secrets)


def _listed(storage) -> dict[str, tuple[int, int]]:
    return {o.key: (o.size, int(o.last_modified * 1000)) for o in storage.list("data/")}


def check_run(emu, tmp_path, seeds, spark=None, **settings):
    """Build ``seeds``, run the GC once: its ``space.json`` equals the oracle; return the run's results."""
    client, name, roots, storage, histories = _build(emu, seeds)
    listed = _listed(storage)
    ctx, results = _run(emu, name, tmp_path, spark, **settings)
    space = results["attribute_space"]
    assert space.skipped is None, space.skipped
    mark = results["mark_uncommitted"].run_id
    sref = storage_ref(ctx, {})
    deleted = read_parts_here(sref, [], parquet_parts(storage, layout.deleted_dir(mark)))
    cutoff_ms = int(parse_iso(ctx.cutoff_time).timestamp() * 1000)
    want = history.space_oracle(
        client, name, histories, roots, parse_iso(ctx.start_time).timestamp(), listed, deleted, cutoff_ms
    )
    doc = formats.read_space(storage, space.space_key)
    got = dict(doc["attribution"])
    got.pop("sharing")
    assert got == want
    assert (space.objects, space.bytes) == (len(listed), sum(s for s, _ in listed.values()))
    assert doc["rules"]["default_days"] == 1
    # what the run deleted is what the attribution calls deleted this run, to the byte
    assert want["classes"]["deleted"]["objects"] == results["delete"].counts.deleted
    summary = formats_summary(storage, mark)
    assert summary["space_bytes"] == space.bytes
    assert summary["space_head_bytes"] == want["classes"]["head"]["bytes"]
    assert summary["space_file"] == space.space_key
    return results, doc


def formats_summary(storage, mark_id):
    import json

    return json.loads(storage.get(layout.summary_key(mark_id)))


def test_a_runs_attribution_equals_the_api_oracle_in_its_tasks_process(lakefs_emulator, tmp_path):
    results, doc = check_run(lakefs_emulator, tmp_path, list(range(0, 6)))
    a = doc["attribution"]
    assert all(a["classes"][c]["objects"] for c in ("head", "retention", "deleted")), a["classes"]
    assert [s["branch"] for s in doc["stale"]] == []  # every HEAD is minutes old; the threshold is 30 days
    assert doc["stale_branch_days"] == 30


@pytest.mark.spark
@pytest.mark.parametrize("executors", [False, True], ids=["driver", "executors"])
def test_a_runs_attribution_equals_the_api_oracle_on_spark(lakefs_emulator, tmp_path, spark, executors):
    from lakefs_gc.placement import PROPERTIES

    FEW_CONF = PROPERTIES["driver_max_addresses"]
    old = spark.conf.get(FEW_CONF, None)
    spark.conf.set(FEW_CONF, "0" if executors else "100000")
    try:
        check_run(lakefs_emulator, tmp_path, list(range(110 + 6 * executors, 116 + 6 * executors)), spark)
    finally:
        spark.conf.unset(FEW_CONF) if old is None else spark.conf.set(FEW_CONF, old)


def test_a_stale_branch_is_listed_with_what_it_alone_holds(lakefs_emulator, tmp_path):
    """Threshold 0 days: every branch whose HEAD is older than now is stale, most bytes alone first."""
    results, doc = check_run(lakefs_emulator, tmp_path, [120, 121], stale_branch_days=0)
    stale = doc["stale"]
    assert stale
    assert results["attribute_space"].stale_branches == len(stale)
    by_bytes = [s["alone"]["bytes"] for s in stale]
    assert by_bytes == sorted(by_bytes, reverse=True)
    alone = {b: sum(v["bytes"] for v in held["alone"].values()) for b, held in doc["attribution"]["branches"].items()}
    assert all(s["alone"]["bytes"] == alone.get(s["branch"], 0) for s in stale)


def test_switched_off_or_incremental_there_is_none_and_the_summary_says_why(lakefs_emulator, tmp_path):
    emu = lakefs_emulator
    _, name, _, storage, _ = _build(emu, [130])
    _, off = _run(emu, name, tmp_path / "a", attribute_space=False)
    assert off["attribute_space"].skipped.startswith("switched off")
    assert "space_bytes" not in formats_summary(storage, off["mark_uncommitted"].run_id)
    _, inc = _run(emu, name, tmp_path / "b", flow="incremental")
    assert inc["attribute_space"].skipped.startswith("an incremental run")
    summary = formats_summary(storage, inc["mark_uncommitted"].run_id)
    assert summary["space_skipped"].startswith("an incremental run")
