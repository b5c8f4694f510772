"""The delete step behind a SlowDown storm (tests/support/faulty_s3.py: half of the DeleteObjects
answered 503 SlowDown for a while, then none): no dead letters from throttling, every garbage key
gone, the live keys kept, and the one rate the delete tasks share halved and back at the ceiling.
In the task's own process (threads), and on Spark (executors leasing from the driver's server).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import pytest

from lakefs_gc.placement import DEFAULT
from lakefs_gc.steps import run_in_task, run_on_spark
from lakefs_gc.storage import open_storage
from lakefs_gc.storage.settings import ENV_ACCESS_KEY, ENV_SECRET_KEY
from tests.steps.test_delete import _inputs, _mark
from tests.support.faulty_s3 import FaultyS3Proxy

if TYPE_CHECKING:
    from lakefs_gc.contract import DeleteResult


def _world(moto_server, bucket: str, n: int):
    bucket = moto_server.create_bucket(bucket)
    direct = open_storage(f"s3://{bucket}/repo", moto_server.s3_options())
    candidates = [f"data/s{i % 7}/c{i:05d}" for i in range(n)]
    live = [f"data/s{i % 7}/live{i:04d}" for i in range(100)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda k: direct.put(k, b"x"), candidates + live))
    return bucket, direct, candidates, live


def _sweep(moto_server, tmp_path, bucket, candidates, live, proxy, run, **settings) -> DeleteResult:
    inputs = _inputs(
        f"s3://{bucket}/repo",
        tmp_path / "work",
        len(candidates) + len(live),
        s3_endpoint=proxy.url,
        delete_max_attempts=1,  # a throttle uses up no attempt
        **settings,
    )
    env = {ENV_ACCESS_KEY: moto_server.access_key, ENV_SECRET_KEY: moto_server.secret_key}
    try:
        res = run(inputs, env)
    finally:
        proxy.stop()
    assert res is not None
    return res


def test_a_sweep_on_threads_rides_out_a_slowdown_storm_on_one_shared_rate(moto_server, tmp_path):
    bucket, direct, candidates, live = _world(moto_server, "storm-threads", 1600)
    _mark(direct, candidates, parts=8)
    proxy = FaultyS3Proxy(moto_server.endpoint_url, storm_share=0.5, storm_seconds=1.5).start()
    res = _sweep(
        moto_server,
        tmp_path,
        bucket,
        candidates,
        live,
        proxy,
        lambda inputs, env: run_in_task("delete", inputs, env, DEFAULT.in_task_max_keys),
        delete_rate=200,
        delete_batch_size=20,
        delete_concurrency=4,
    )
    c = res.counts
    assert proxy.stats["storm_slowdown"] > 0
    assert c.failed == 0
    assert res.dead_letters is None
    assert c.deleted == len(candidates)
    assert {o.key for o in direct.list("data/", recursive=True)} == set(live)
    assert c.throttled == proxy.stats["storm_slowdown"]
    # four tasks throttled by one storm of 1.5 s: at most one halving a second, shared by all
    assert 1 <= res.rate_cuts <= 3
    assert res.rate_cuts < c.throttled
    assert res.rate_lowest is not None
    assert res.rate_lowest <= 100
    assert res.rate_final == 200  # back at the ceiling once the storm passed


@pytest.mark.spark
def test_a_sweep_on_spark_executors_shares_the_rate_the_driver_serves(spark, moto_server, tmp_path):
    bucket, direct, candidates, live = _world(moto_server, "storm-spark", 600)
    _mark(direct, candidates, parts=4)
    proxy = FaultyS3Proxy(moto_server.endpoint_url, storm_share=0.5, storm_seconds=1.0).start()
    res = _sweep(
        moto_server,
        tmp_path,
        bucket,
        candidates,
        live,
        proxy,
        lambda inputs, env: run_on_spark("delete", spark, inputs, env),
        delete_rate=300,
        delete_batch_size=20,
        delete_concurrency=2,
    )
    c = res.counts
    assert proxy.stats["storm_slowdown"] > 0
    assert c.failed == 0
    assert c.deleted == len(candidates)
    assert {o.key for o in direct.list("data/", recursive=True)} == set(live)
    assert c.throttled == proxy.stats["storm_slowdown"]
    # the driver's rate heard the executors' throttles: they leased from its server, not a fallback
    assert res.rate_cuts >= 1
    assert res.rate_lowest is not None
    assert res.rate_lowest <= 150
