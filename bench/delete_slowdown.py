"""The sweep through a SlowDown storm: the shared adaptive rate beside the deleter before it.

    .venv/bin/python -m bench delete --slowdown [--keys N] [--rate R] [--tasks T] [--storm-seconds S]
        [--storm-share P] [--storm-capacity C]

moto server on 127.0.0.1 behind the fault proxy (tests/support/faulty_s3.py): from the first
DeleteObjects on, a share ``P`` of them is answered ``503 SlowDown`` for ``S`` seconds, then none.
With ``--storm-capacity C`` the storm also throttles (as S3 does: by load) each DeleteObjects that
would take the keys deleted in the last second past ``C``. The real delete step sweeps a mark of
``N`` keys on the in-process engine (``T`` delete tasks as threads, ``delete_rate`` ``R``), twice in
the same run on the same storm: ``shared`` (today: one AIMD rate shared by the tasks, throttled keys
back in the queue) and ``alone`` (the deleter before it: the rate split evenly across the tasks,
each backing off alone, throttles counted against ``delete_max_attempts``). Printed: keys/s during
the storm and after it, the whole sweep's, its throttled requests and dead letters.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MARK = "slowdown0000000000mk"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench delete --slowdown", description=__doc__.split("\n\n")[0])
    p.add_argument("--keys", type=int, default=12_000, help="keys in the mark (default 12,000)")
    p.add_argument("--rate", type=float, default=1000, help="the run's delete_rate, keys/s (default 1,000)")
    p.add_argument("--tasks", type=int, default=4, help="delete tasks at once (default 4)")
    p.add_argument("--batch", type=int, default=100, help="keys per DeleteObjects (default 100)")
    p.add_argument("--storm-seconds", type=float, default=6.0, help="how long the storm blows (default 6)")
    p.add_argument("--storm-share", type=float, default=0.5, help="share of DeleteObjects throttled (default 0.5)")
    p.add_argument(
        "--storm-capacity",
        type=float,
        default=None,
        help="keys/s: the storm also throttles what would pass this in a second, as S3 does (default: none)",
    )
    a = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from bench.delete_bench import start_moto
    from lakefs_gc.storage import S3Options, make_s3_client
    from lakefs_sandbox.emulator.launcher import stop_group

    work = Path(tempfile.mkdtemp(prefix="lakefs-gc-slowdown-bench-"))
    moto, port = start_moto(work)
    rows = []
    try:
        url = f"http://127.0.0.1:{port}"
        make_s3_client(S3Options(endpoint_url=url, access_key_id="bench", secret_access_key="bench")).create_bucket(
            Bucket="bench"
        )
        for deleter in ("shared", "alone"):
            rows.append((deleter, _sweep(url, work, deleter, a)))
    finally:
        stop_group(moto)
        shutil.rmtree(work, ignore_errors=True)
    _print(rows, a)
    return 0 if all(r["left"] == r["dead"] for _, r in rows) else 1


def _sweep(url: str, work: Path, deleter: str, a: argparse.Namespace) -> dict[str, Any]:
    """Sweep a fresh mark of ``a.keys`` keys under ``deleter`` behind a new storm; return its figures."""
    import lakefs_gc.steps.delete as delete_step
    from lakefs_gc.placement import DEFAULT
    from lakefs_gc.steps import run_in_task
    from lakefs_gc.storage import S3Options, open_storage
    from lakefs_gc.storage.settings import ENV_ACCESS_KEY, ENV_SECRET_KEY
    from tests.support.faulty_s3 import FaultyS3Proxy

    ns = f"s3://bench/{deleter}"
    direct = open_storage(ns, S3Options(endpoint_url=url, access_key_id="bench", secret_access_key="bench"))
    keys = [f"data/s{i % 50:02d}/k{i:07d}" for i in range(a.keys)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda k: direct.put(k, b"x"), keys))
    _mark(direct, keys, parts=a.tasks * 2)
    proxy = FaultyS3Proxy(
        url, storm_share=a.storm_share, storm_seconds=a.storm_seconds, storm_capacity=a.storm_capacity
    ).start()
    policy = delete_step.delete_policy
    if deleter == "alone":  # the deleter before the shared rate: its own share, throttles count as attempts
        delete_step.delete_policy = lambda inputs, tasks, adaptive=False: policy(inputs, tasks, False)
    try:
        t0 = time.monotonic()
        res = run_in_task(
            "delete",
            _inputs(ns, work / deleter, proxy.url, a),
            {ENV_ACCESS_KEY: "bench", ENV_SECRET_KEY: "bench"},
            max(a.keys, DEFAULT.in_task_max_keys),
        )
        t1 = time.monotonic()
    finally:
        delete_step.delete_policy = policy
        proxy.stop()
    start = proxy.storm_started or t0
    end_storm = start + a.storm_seconds
    during = sum(n for t, n in proxy.deleted_at if t < end_storm)
    after = sum(n for t, n in proxy.deleted_at if t >= end_storm)
    left = sum(1 for o in direct.list("data/", recursive=True))
    return {
        "during": during / a.storm_seconds,
        "after": after / max(1e-9, t1 - end_storm) if t1 > end_storm else None,
        "whole": (a.keys - left) / (t1 - t0),
        "seconds": t1 - t0,
        "dead": res.counts.failed,
        "left": left,
        "throttled": proxy.stats["storm_slowdown"],
        "lowest": res.rate_lowest if deleter == "shared" else None,
    }


def _mark(st: Any, keys: list[str], parts: int) -> None:
    """A mark in lakeFS's layout: ``deleted/part-*.parquet`` (column ``address``) and ``summary.json``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lakefs_gc.report import layout

    for p in range(parts):
        buf = io.BytesIO()
        pq.write_table(pa.table({"address": pa.array(keys[p::parts], pa.string())}), buf)
        st.put(f"{layout.deleted_dir(MARK)}part-{p:05d}.parquet", buf.getvalue())
    st.put(layout.summary_key(MARK), json.dumps({"run_id": MARK, "success": False}).encode())


def _inputs(ns: str, work: Path, endpoint: str, a: argparse.Namespace) -> Any:
    from lakefs_gc.contract import SlicesResult, StepInputs, UncommittedResult
    from tests.support.contract import make_context

    ctx = make_context(
        ns,
        work_dir=str(work),
        s3_endpoint=endpoint,
        s3_region="us-east-1",
        airflow_run_id="manual__slowdown",
        max_delete_share=1.0,
        delete_rate=a.rate,
        delete_concurrency=a.tasks,
        delete_batch_size=a.batch,
    )
    listed = SlicesResult(
        listed_dir="", first_slice="", slices_listed=0, slices_skipped=0, listed_objects=a.keys, listed_bytes=0
    )
    return StepInputs(
        ctx,
        {
            "mark_uncommitted": UncommittedResult(run_id=MARK, locations=(), pages=1),
            "list_slices": listed,
            "compute_candidates": None,
        },
    )


def _print(rows: list[tuple[str, dict[str, Any]]], a: argparse.Namespace) -> None:
    print(
        f"\nThe sweep through a SlowDown storm: {a.keys:,} keys, delete_rate {a.rate:,.0f} keys/s, {a.tasks} tasks "
        f"(threads), batches of {a.batch}; {a.storm_share:.0%} of DeleteObjects throttled"
        + (f", and any past {a.storm_capacity:,.0f} keys/s," if a.storm_capacity is not None else "")
        + f" for the first {a.storm_seconds:g} s"
    )
    print(
        f"  {'deleter':8} {'during':>10} {'after':>10} {'whole':>10} {'seconds':>8} {'throttled':>9} {'dead':>6} "
        f"{'lowest rate':>11}"
    )
    for name, r in rows:
        after = "-" if r["after"] is None else f"{r['after']:,.0f}"
        lowest = "-" if r["lowest"] is None else f"{r['lowest']:,.0f}"
        print(
            f"  {name:8} {r['during']:10,.0f} {after:>10} {r['whole']:10,.0f} {r['seconds']:8.1f} "
            f"{r['throttled']:9,} {r['dead']:6,} {lowest:>11}"
        )
    print("  (keys/s: during the storm, after it, the whole sweep; dead: dead letters; alone: the deleter before)")
