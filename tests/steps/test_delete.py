"""The delete step under injected S3 faults (in-process, the shared SparkSession), and the delete
job for real (spark-submit) killed part-way then re-run.

The mark (``deleted/part-*.parquet`` + ``summary.json``) is written by hand in lakeFS's layout; the
tests assert on what is left in storage and on the job's counts.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import time
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakefs_gc.contract import DeleteResult, SlicesResult, StepInputs, UncommittedResult
from lakefs_gc.placement import DEFAULT
from lakefs_gc.spark import shell
from lakefs_gc.steps import run_in_task, run_on_spark
from lakefs_gc.storage import LocalStorage, open_storage
from lakefs_gc.storage.settings import ENV_ACCESS_KEY, ENV_SECRET_KEY
from tests.support.contract import make_context
from tests.support.faulty_s3 import FaultyS3Proxy
from tests.support.spark import prepare, submit

pytestmark = pytest.mark.spark
MARK = "ft0000000000000000mk"
REPORT = f"_lakefs/retention/gc/unified/{MARK}/"


def _mark(st, candidates: list[str], parts: int) -> None:
    for p in range(parts):
        buf = io.BytesIO()
        pq.write_table(pa.table({"address": pa.array(candidates[p::parts], pa.string())}), buf)
        st.put(f"{REPORT}deleted/part-{p:05d}.parquet", buf.getvalue())
    st.put(REPORT + "summary.json", json.dumps({"run_id": MARK, "success": False}).encode())


def _inputs(ns: str, work, listed: int, local_root=None, s3_endpoint=None, **settings) -> StepInputs:
    ctx = make_context(
        ns,
        work_dir=str(work),
        local_root=local_root,
        s3_endpoint=s3_endpoint,
        s3_region="us-east-1",
        airflow_run_id="manual__sweep1",
        max_delete_share=1.0,
        **settings,
    )
    return StepInputs(
        ctx,
        {
            "mark_uncommitted": UncommittedResult(run_id=MARK, locations=(), pages=1),
            "list_slices": SlicesResult(
                listed_dir="", first_slice="", slices_listed=0, slices_skipped=0, listed_objects=listed, listed_bytes=0
            ),
            "compute_candidates": None,
        },
    )


def test_delete_step_under_s3_faults_counts_retries_and_writes_dead_letters(spark, moto_server, tmp_path):
    bucket = moto_server.create_bucket("sweep-faults")
    direct = open_storage(f"s3://{bucket}/repo", moto_server.s3_options())
    candidates = [f"data/s{i % 7}/c{i:05d}" for i in range(3000)]
    live = [f"data/s{i % 7}/live{i:04d}" for i in range(200)] + ["_lakefs/dummy"]
    for k in candidates + live:
        direct.put(k, b"x")
    _mark(direct, candidates, parts=4)
    denied = candidates[10:13]
    proxy = FaultyS3Proxy(
        moto_server.endpoint_url,
        p_slowdown=0.15,
        p_error=0.1,
        p_key_error=0.05,
        deny=frozenset(f"repo/{k}" for k in denied),
    ).start()
    try:
        # a key fails one attempt with p ~ 0.29 here (a request's 503/500, or its own error): with the
        # default 8 attempts one of the 3,000 keys exhausted them in about one run in seven; with 20, never
        inputs = _inputs(
            f"s3://{bucket}/repo",
            tmp_path / "work",
            len(candidates) + len(live),
            s3_endpoint=proxy.url,
            delete_batch_size=250,
            delete_concurrency=2,
            delete_max_attempts=20,
        )
        env = {ENV_ACCESS_KEY: moto_server.access_key, ENV_SECRET_KEY: moto_server.secret_key}
        res: DeleteResult = run_on_spark("delete", spark, inputs, env)
    finally:
        proxy.stop()
    with pytest.raises(shell.StepFailed, match="3 keys could not be deleted after retries.*dead_letters"):
        shell.check("delete", res)
    c = res.counts
    assert c.deleted == len(candidates) - 3
    assert c.failed == 3
    assert c.retried > 0
    assert c.requests > 12
    assert proxy.stats["slowdown"] + proxy.stats["error500"] > 0
    assert proxy.stats["key_errors"] > 0
    left = {o.key for o in direct.list("data/", recursive=True)}
    assert left == set(live[:-1]) | set(denied)
    assert set(proxy.deleted_keys) <= {f"repo/{k}" for k in candidates}
    dl = [o.key for o in direct.list(f"{REPORT}sweeps/", recursive=True) if "/dead_letters/" in o.key]
    rows = [r for k in dl for r in pq.read_table(io.BytesIO(direct.get(k))).to_pylist()]
    assert sorted(r["key"] for r in rows) == sorted(denied)
    assert {r["error_code"] for r in rows} == {"AccessDenied"}
    assert all(r["attempts"] >= 1 for r in rows)


def _sweep_records(st) -> dict[str, bytes]:
    """What the sweep recorded: each part's done marker (its counts) and dead letters."""
    return {o.key: st.get(o.key) for o in st.list(f"{REPORT}sweeps/", recursive=True)}


def test_the_sweep_in_process_deletes_and_reports_what_the_spark_sweep_does(spark, tmp_path):
    """The delete step in its task's own process (run_in_task, no spark-submit) against it on
    Spark, on two copies of one namespace and mark: the same keys left, the same result, the
    same records of the sweep."""
    candidates = [f"data/s{i % 5}/c{i:04d}" for i in range(300)]
    live = [f"data/s{i % 5}/live{i:03d}" for i in range(40)] + ["_lakefs/dummy", "data/s0/young"]
    out = {}
    for engine in ("spark", "in process"):
        root = tmp_path / engine.replace(" ", "_")
        st = LocalStorage(root / "repo")
        for k in candidates + live:
            st.put(k, b"x")
        _mark(st, candidates + ["data/s1/gone-already"], parts=4)
        inputs = _inputs(
            "local://repo", root / "work", len(candidates) + len(live), local_root=str(root), delete_batch_size=64
        )
        res = (
            run_on_spark("delete", spark, inputs, {})
            if engine == "spark"
            else run_in_task("delete", inputs, {}, DEFAULT.in_task_max_keys)
        )
        assert res is not None
        left = {o.key for o in st.list("", recursive=True) if not o.key.startswith(REPORT)}
        out[engine] = (replace(res, sweep_dir="", seconds=0.0, concurrency=0), left, _sweep_records(st))
    assert out["spark"] == out["in process"]
    res, left, records = out["in process"]
    assert left == set(live)
    assert res.counts.deleted == len(candidates)
    assert res.counts.already_gone == 1
    assert len(records) == 4  # a done marker per part


def test_the_sweep_in_process_keeps_the_guard_and_leaves_a_large_mark_to_spark(tmp_path):
    from lakefs_gc.errors import SweepRefused

    st = LocalStorage(tmp_path / "repo")
    candidates = [f"data/s0/c{i:03d}" for i in range(30)]
    for k in candidates:
        st.put(k, b"x")
    _mark(st, candidates, parts=2)
    # more keys than max_keys: nothing deleted, the caller submits the Spark job instead
    assert (
        run_in_task("delete", _inputs("local://repo", tmp_path / "w1", 100, local_root=str(tmp_path)), {}, 29) is None
    )
    assert all(st.exists(k) for k in candidates)
    # the blast-radius guard refuses as on Spark, before any delete
    inputs = _inputs("local://repo", tmp_path / "w2", 40, local_root=str(tmp_path))
    inputs = StepInputs(
        replace(inputs.context, settings=replace(inputs.context.settings, max_delete_share=0.5)), inputs.results
    )
    with pytest.raises(SweepRefused, match="30 objects to delete are 75.0% of 40 listed objects"):
        run_in_task("delete", inputs, {}, DEFAULT.in_task_max_keys)
    assert all(st.exists(k) for k in candidates)


def test_delete_job_killed_part_way_resumes_and_counts_add_up(tmp_path):
    root = tmp_path / "ns" / "repo"
    st = LocalStorage(root)
    candidates = [f"data/s{i % 10}/c{i:05d}" for i in range(4000)]
    live = [f"data/s{i % 10}/live{i:04d}" for i in range(300)]
    for k in candidates + live:
        st.put(k, b"x")
    _mark(st, candidates, parts=8)
    # slow enough to be killed part-way: 250 deletes/s in total
    inputs = _inputs(
        "local://ns/repo",
        tmp_path / "work",
        len(candidates) + len(live),
        local_root=str(tmp_path),
        delete_rate=250,
        delete_batch_size=50,
        delete_concurrency=2,
    )
    cmd, env, result_path = prepare("delete", inputs, tmp_path / "r1")
    log = open(tmp_path / "killed.log", "wb")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            left = sum(1 for k in candidates if (root / k).exists())
            if left <= len(candidates) - 600 or proc.poll() is not None:
                break
            time.sleep(0.2)
        assert proc.poll() is None, (
            "the job finished before it could be killed:\n"
            + (tmp_path / "killed.log").read_text(errors="replace")[-3000:]
        )
        os.killpg(proc.pid, signal.SIGKILL)  # spark-submit, its JVM and the Python workers
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
    time.sleep(1)
    after_kill = {k for k in candidates if (root / k).exists()}
    assert 0 < len(after_kill) < len(candidates)
    assert not result_path.exists()

    # the re-run (an Airflow retry of the same run: same sweep id), without the rate limit
    rerun = StepInputs(
        replace(inputs.context, settings=replace(inputs.context.settings, delete_rate=0)), inputs.results
    )
    rc, res, out = submit("delete", rerun, tmp_path / "r2")
    assert rc == 0, out[-3000:]
    assert not any((root / k).exists() for k in candidates)
    assert all((root / k).exists() for k in live)
    c = res.counts
    assert c.deleted + c.already_gone == len(candidates)
    assert c.keys == len(candidates)
    assert c.failed == 0
    assert c.parts == 8
    # the first attempt's work shows: finished parts counted from their markers, or keys already gone
    assert c.resumed_parts > 0 or c.already_gone > 0
