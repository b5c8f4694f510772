"""compute_candidates decides on the driver when what it decides is small (an incremental run's few
listed, staged and carried addresses) and on executors otherwise: both engines, given the same
inputs, write the same mark and say the same counts (lakefs_gc.steps.compute_candidates)."""

from __future__ import annotations

import dataclasses
import logging
import time

import lakefs_sdk
import pytest

from lakefs_gc import placement
from lakefs_gc.contract import STEP_INPUTS, StepInputs
from lakefs_gc.report import formats, layout
from lakefs_gc.report.marks import parquet_parts
from lakefs_gc.steps import run_in_task
from tests.conftest import ns_storage
from tests.steps.test_incremental import Repo

pytestmark = pytest.mark.spark

# what differs by where the decision ran: its times, and the storage requests each place makes (issue 54)
TIMES = {"seconds", "staged_check_seconds", "requests"}
FEW = placement.DEFAULT.driver_max_addresses
ENGINE_LOG = "lakefs_gc.engine.spark"  # where a Spark job's engine says where it decides


def _mark(st, mark_id: str) -> dict[str, set[str]]:
    return {
        d: {a for k in parquet_parts(st, d) for a in formats.read_address_table(st, k).column(0).to_pylist()}
        for d in (layout.candidates_dir(mark_id), layout.deleted_dir(mark_id), layout.state_uncommitted_dir(mark_id))
    }


def test_the_driver_and_the_executors_write_the_same_mark(
    spark, lakefs_emulator_factory, tmp_path, monkeypatch, caplog
):
    repo = Repo(lakefs_emulator_factory("--slice-interval", "1"), tmp_path, "cands-engines")
    for i in range(3):
        repo.upload(f"kept{i}.bin", f"kept {i}".encode())
    repo.commit()
    repo.upload("held.bin", b"held")
    repo.c.objects_api.delete_object(repo.name, "main", "held.bin")  # a candidate run 1 holds back
    repo.upload("staged.bin", b"staged")  # staged in run 1, reset before run 2: carried, then a candidate
    time.sleep(1.2)
    repo.upload("newest-slice.bin")  # run 1's newest slice (run 2 lists it again); the others are older
    _, r1 = repo.run(spark, flow="clean", confirm_after_seconds=3600)
    assert r1["compute_candidates"].held_back == 1

    time.sleep(1.2)
    repo.c.branches_api.reset_branch(repo.name, "main", lakefs_sdk.ResetCreation(type="object", path="staged.bin"))
    repo.upload("new-tmp.bin", b"tmp")
    repo.c.objects_api.delete_object(repo.name, "main", "new-tmp.bin")
    repo.upload("kept0.bin", b"kept 0")  # the committed identity again: only the staged check keeps it
    repo.upload("live.bin", b"live")  # staged now
    time.sleep(1.1)  # run 1 started more than confirm_after_seconds ago: it confirms its candidates
    with repo.client() as client:
        ctx = repo.start(client, flow="incremental", confirm_after_seconds=1)
        results = repo.steps(spark, client, ctx, ["mark_uncommitted", "list_committed", "list_slices"], {})
    st = ns_storage(repo.ns)
    mark_id = results["mark_uncommitted"].run_id

    def decide(few: int):
        monkeypatch.setattr(placement, "DEFAULT", dataclasses.replace(placement.DEFAULT, driver_max_addresses=few))
        with repo.client() as client:
            r = repo.steps(spark, client, ctx, ["compute_candidates"], dict(results))["compute_candidates"]
        return {k: v for k, v in dataclasses.asdict(r).items() if k not in TIMES}, _mark(st, mark_id)

    driver_max = FEW
    with caplog.at_level(logging.INFO, logger=ENGINE_LOG):
        caplog.clear()  # what run 1 logged (another test may have left the logger at INFO)
        on_executors = decide(0)
        assert "deciding on executors" in caplog.text
        assert "deciding on the driver" not in caplog.text
        caplog.clear()
        here = decide(driver_max)
        assert "deciding on the driver" in caplog.text
        assert "deciding on executors" not in caplog.text
        caplog.clear()
    assert here == on_executors

    def in_the_task(max_keys: int):  # the Airflow task's own process, no SparkSession at all
        r = run_in_task(
            "compute_candidates",
            StepInputs(ctx, {k: results.get(k) for k in STEP_INPUTS["compute_candidates"]}),
            repo.env,
            max_keys,
        )
        return (
            None
            if r is None
            else ({k: v for k, v in dataclasses.asdict(r).items() if k not in TIMES}, _mark(st, mark_id))
        )

    assert in_the_task(FEW) == on_executors
    before = _mark(st, mark_id)
    assert in_the_task(2) is None
    assert _mark(st, mark_id) == before  # more listed objects: spark-submit's, untouched
    with monkeypatch.context() as m:  # every part too large to scan in the task
        m.setattr(placement, "DEFAULT", dataclasses.replace(placement.DEFAULT, driver_scan_bytes=0))
        assert in_the_task(FEW) is None
        assert _mark(st, mark_id) == before
    # the listing written by list_slices in its task (no Spark), the decision handed over to executors
    here_listed = run_in_task("list_slices", StepInputs(ctx, {}), repo.env, FEW)
    assert dataclasses.replace(here_listed, seconds=0) == dataclasses.replace(results["list_slices"], seconds=0)
    assert decide(0) == on_executors
    # more candidates than the staged check takes from a DataFrame on the driver: decided on the driver all the same
    monkeypatch.setattr(placement, "DEFAULT", dataclasses.replace(placement.DEFAULT, driver_check_max=2))
    with caplog.at_level(logging.INFO, logger=ENGINE_LOG):
        caplog.clear()
        assert decide(driver_max) == on_executors
    assert "deciding on the driver" in caplog.text
    assert "deciding on executors" not in caplog.text
    counts, written = here
    assert counts["carried_checked"] == 2
    assert counts["carried_candidates"] == 2  # held.bin, staged.bin
    assert counts["candidates"] == 3
    assert counts["to_delete"] == 1
    assert counts["held_back"] == 2
    assert counts["staged_suspicious"] == 1
    assert counts["staged_kept"] == 1
    assert len(written[layout.deleted_dir(mark_id)]) == 1
