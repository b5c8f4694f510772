"""The delete job for real (spark-submit): under injected S3 faults, and killed part-way then re-run.

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

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakefs_gc.runmeta import ENV_S3_ACCESS_KEY, ENV_S3_SECRET_KEY
from lakefs_gc.storage import LocalStorage, S3Options, open_storage
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


def _meta(ns: str, work, **kw) -> dict:
    return {"repository": "repo", "storage_namespace": ns, "work_dir": str(work), "run_id": MARK,
            "mode": "mark_and_sweep", "parallelism": 2, "airflow_run_id": "manual__sweep1", **kw}


def test_delete_job_under_s3_faults_counts_retries_and_writes_dead_letters(moto_server, tmp_path):
    bucket = moto_server.create_bucket("sweep-faults")
    direct = open_storage(f"s3://{bucket}/repo", moto_server.s3_options())
    candidates = [f"data/s{i % 7}/c{i:05d}" for i in range(3000)]
    live = [f"data/s{i % 7}/live{i:04d}" for i in range(200)] + ["_lakefs/dummy"]
    for k in candidates + live:
        direct.put(k, b"x")
    _mark(direct, candidates, parts=4)
    denied = candidates[10:13]
    proxy = FaultyS3Proxy(moto_server.endpoint_url, p_slowdown=0.15, p_error=0.1, p_key_error=0.05,
                          deny=frozenset(f"repo/{k}" for k in denied)).start()
    try:
        meta = _meta(f"s3://{bucket}/repo", tmp_path / "work", s3_endpoint_url=proxy.url, s3_region="us-east-1",
                     delete_batch_size=250, delete_concurrency=2, listed_objects=len(candidates) + len(live),
                     max_delete_share=1.0)
        env = {ENV_S3_ACCESS_KEY: moto_server.access_key, ENV_S3_SECRET_KEY: moto_server.secret_key}
        rc, res, out = submit("delete", meta, tmp_path / "r", env)
    finally:
        proxy.stop()
    assert rc != 0, out[-3000:]
    assert "3 keys could not be deleted after retries" in out and "dead_letters" in out
    assert res["deleted"] == len(candidates) - 3 and res["delete_failed"] == 3
    assert res["delete_retried"] > 0 and res["delete_requests"] > 12
    assert proxy.stats["slowdown"] + proxy.stats["error500"] > 0 and proxy.stats["key_errors"] > 0
    left = {o.key for o in direct.list("data/", recursive=True)}
    assert left == set(live[:-1]) | set(denied)
    assert set(proxy.deleted_keys) <= {f"repo/{k}" for k in candidates}
    dl = [o.key for o in direct.list(f"{REPORT}sweeps/", recursive=True) if "/dead_letters/" in o.key]
    rows = [r for k in dl for r in pq.read_table(io.BytesIO(direct.get(k))).to_pylist()]
    assert sorted(r["key"] for r in rows) == sorted(denied)
    assert {r["error_code"] for r in rows} == {"AccessDenied"} and all(r["attempts"] >= 1 for r in rows)


def test_delete_job_killed_part_way_resumes_and_counts_add_up(tmp_path):
    root = tmp_path / "ns" / "repo"
    st = LocalStorage(root)
    candidates = [f"data/s{i % 10}/c{i:05d}" for i in range(4000)]
    live = [f"data/s{i % 10}/live{i:04d}" for i in range(300)]
    for k in candidates + live:
        st.put(k, b"x")
    _mark(st, candidates, parts=8)
    # slow enough to be killed part-way: 250 deletes/s in total
    meta = _meta("local://ns/repo", tmp_path / "work", local_blockstore_root=str(tmp_path), delete_rate=250,
                 delete_batch_size=50, delete_concurrency=2,
                 listed_objects=len(candidates) + len(live), max_delete_share=1.0)
    cmd, env, result_path = prepare("delete", meta, tmp_path / "r1")
    log = open(tmp_path / "killed.log", "wb")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            left = sum(1 for k in candidates if (root / k).exists())
            if left <= len(candidates) - 600 or proc.poll() is not None:
                break
            time.sleep(0.2)
        assert proc.poll() is None, "the job finished before it could be killed:\n" + \
            (tmp_path / "killed.log").read_text(errors="replace")[-3000:]
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

    meta["delete_rate"] = 0  # the re-run (an Airflow retry of the same run: same sweep id)
    rc, res, out = submit("delete", meta, tmp_path / "r2")
    assert rc == 0, out[-3000:]
    assert not any((root / k).exists() for k in candidates)
    assert all((root / k).exists() for k in live)
    assert res["deleted"] == len(candidates) and res["delete_keys"] == len(candidates) and res["delete_failed"] == 0
    assert res["delete_parts"] == 8
    # the first attempt's work shows: finished parts counted from their markers, or keys found missing
    assert res["delete_resumed_parts"] > 0 or res["delete_missing"] > 0
