"""The deleter and the sweep parts, without Spark: rate limit, retries, dead letters, resumable parts.

Fault tests go through a real HTTP proxy in front of moto server (tests/support/faulty_s3.py) that
answers SlowDown/500 to some DeleteObjects requests and fails some keys inside 200 answers.
"""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakefs_gc.report.layout import sweep_dir
from lakefs_gc.storage import LocalStorage, S3Options, open_storage
from lakefs_gc.sweeping.deleter import DeletePolicy, Deleter, TokenBucket
from lakefs_gc.sweeping.parts import add_counts, sweep_part
from tests.support.faulty_s3 import FaultyS3Proxy

FAST = dict(backoff_base=0.005, backoff_max=0.05)


class FakeClock:
    def __init__(self):
        self.t = 0.0
        self.slept = 0.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s
        self.slept += s


def test_token_bucket_holds_the_rate():
    clock = FakeClock()
    tb = TokenBucket(100, clock=clock, sleep=clock.sleep)
    for _ in range(50):
        tb.acquire(20)  # 1,000 tokens at 100/s: at least 10 s
    assert 9.9 <= clock.t <= 10.1
    unlimited = TokenBucket(0, clock=clock, sleep=clock.sleep)
    unlimited.acquire(10**9)
    assert clock.t <= 10.1


def test_policy_rejects_batches_over_1000():
    with pytest.raises(ValueError, match="1..1000"):
        DeletePolicy(batch_size=1001)


def test_local_deleter_counts_missing_as_already_gone_and_dead_letters_the_rest(tmp_path):
    st = LocalStorage(tmp_path)
    keys = [f"data/s/{i:04d}" for i in range(30)]
    for k in keys[:25]:
        st.put(k, b"x")
    (tmp_path / "data" / "s" / "adir").mkdir()  # unlink of a directory fails: a permanent error
    stats = Deleter(st, DeletePolicy(batch_size=7, **FAST)).delete([*keys, "data/s/adir"])
    assert stats.deleted == 25
    assert stats.already_gone == 5  # all 30 gone; 5 were not there
    assert [(d.key, d.error_code) for d in stats.dead] == [("data/s/adir", "EISDIR")]
    assert stats.requests == 5  # 31 keys in batches of 7
    assert [o.key for o in st.list("", recursive=True)] == []


def test_dry_run_deletes_nothing(tmp_path):
    st = LocalStorage(tmp_path)
    st.put("data/s/x", b"x")
    stats = Deleter(st, DeletePolicy(dry_run=True)).delete(["data/s/x"])
    assert stats.deleted == 1
    assert st.exists("data/s/x")


@pytest.fixture
def faulty(moto_server):
    proxies = []

    def make(**kw):
        p = FaultyS3Proxy(moto_server.endpoint_url, **kw).start()
        proxies.append(p)
        return p

    yield make
    for p in proxies:
        p.stop()


def _s3_world(moto_server, bucket, n_candidates=2500, n_live=300):
    moto_server.create_bucket(bucket)
    client = moto_server.client()
    cands = [f"data/slice{i % 5}/obj{i:05d}" for i in range(n_candidates)]
    live = [f"data/slice{i % 5}/live{i:05d}" for i in range(n_live)] + ["_lakefs/dummy"]
    for k in cands + live:
        client.put_object(Bucket=bucket, Key=f"repo/{k}", Body=b"x")
    client.put_object(Bucket=bucket, Key="repo-sibling/data/slice0/obj00000", Body=b"not ours")
    return cands, live


def _keys(moto_server, bucket, prefix="repo/"):
    out = set()
    for page in moto_server.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        out.update(o["Key"][len(prefix) :] for o in page.get("Contents", ()))
    return out


def test_s3_deleter_under_faults_retries_counts_and_touches_only_candidates(moto_server, faulty):
    cands, live = _s3_world(moto_server, "faults1")
    deny = {f"repo/{k}" for k in cands[100:105]}
    proxy = faulty(p_slowdown=0.2, p_error=0.1, p_key_error=0.05, deny=frozenset(deny))
    st = open_storage(
        "s3://faults1/repo", S3Options(endpoint_url=proxy.url, access_key_id="testing", secret_access_key="testing")
    )
    stats = Deleter(st, DeletePolicy(batch_size=500, max_attempts=12, **FAST)).delete(cands)
    assert proxy.stats["slowdown"] > 0
    assert proxy.stats["error500"] > 0
    assert proxy.stats["key_errors"] > 0
    assert stats.deleted == len(cands) - 5
    assert sorted(d.key for d in stats.dead) == sorted(cands[100:105])
    assert {d.error_code for d in stats.dead} == {"AccessDenied"}
    assert all(d.attempts == 1 for d in stats.dead)
    assert stats.retried >= proxy.stats["key_errors"]
    left = _keys(moto_server, "faults1")
    assert left == set(live) | set(cands[100:105])
    assert set(proxy.deleted_keys) <= {f"repo/{k}" for k in cands}  # nothing else was ever sent
    assert "data/slice0/obj00000" in _keys(moto_server, "faults1", "repo-sibling/")


def test_s3_deleter_gives_up_after_max_attempts_and_dead_letters_with_the_code(moto_server, faulty):
    """A 500 uses up the attempts; a SlowDown (the deleter before the shared rate) did too."""
    cands, _ = _s3_world(moto_server, "faults2", n_candidates=50, n_live=5)
    for kw, code in ((dict(p_error=1.0), "InternalError"), (dict(p_slowdown=1.0), "SlowDown")):
        proxy = faulty(**kw)
        st = open_storage(
            "s3://faults2/repo", S3Options(endpoint_url=proxy.url, access_key_id="testing", secret_access_key="testing")
        )
        stats = Deleter(st, DeletePolicy(max_attempts=3, adaptive=code != "SlowDown", **FAST)).delete(cands)
        assert stats.deleted == 0
        assert len(stats.dead) == 50
        assert {(d.error_code, d.attempts) for d in stats.dead} == {(code, 3)}
        assert proxy.stats["requests"] == 3
    assert set(cands) <= _keys(moto_server, "faults2")


def test_s3_keys_throttled_for_longer_than_the_patience_are_dead_letters_saying_so(moto_server, faulty):
    cands, _ = _s3_world(moto_server, "faults3", n_candidates=50, n_live=5)
    proxy = faulty(p_slowdown=1.0)
    st = open_storage(
        "s3://faults3/repo", S3Options(endpoint_url=proxy.url, access_key_id="testing", secret_access_key="testing")
    )
    stats = Deleter(st, DeletePolicy(max_attempts=3, throttle_patience=1.0, **FAST)).delete(cands)
    assert stats.deleted == 0
    assert sorted(d.key for d in stats.dead) == sorted(cands)
    assert {d.error_code for d in stats.dead} == {"SlowDown"}
    assert all("(the sweep's throttle patience)" in d.message for d in stats.dead)
    assert proxy.stats["requests"] > 3  # throttles did not use up the 3 attempts
    assert stats.throttled == proxy.stats["requests"]
    assert set(cands) <= _keys(moto_server, "faults3")


def _write_part(st, key, addresses):
    buf = io.BytesIO()
    pq.write_table(pa.table({"address": pa.array(addresses, pa.string())}), buf)
    st.put(key, buf.getvalue())


def test_sweep_parts_resume_from_done_markers_and_write_dead_letters(tmp_path):
    st = LocalStorage(tmp_path)
    mark = "_lakefs/retention/gc/unified/mark1/"
    parts = []
    for p in range(3):
        keys = [f"data/s{p}/{i:03d}" for i in range(40)]
        for k in keys:
            st.put(k, b"x")
        parts.append(f"{mark}deleted/part-{p:05d}.parquet")
        _write_part(st, parts[-1], keys)
    (tmp_path / "data" / "s2" / "zdir").mkdir()
    _write_part(st, parts[2], [*[f"data/s2/{i:03d}" for i in range(40)], "data/s2/zdir"])
    sdir = sweep_dir("mark1", "manual__2024-01-01T00:00:00+00:00")
    assert sdir == f"{mark}sweeps/manual__2024-01-01T00_00_00_00_00/"
    policy = DeletePolicy(batch_size=16, **FAST)
    first = sweep_part(st, parts[0], sdir, policy)
    assert first.deleted == 40
    assert first.resumed_parts == 0
    # "crash" half-way through part 1: some keys already gone, no marker
    for i in range(20):
        st.delete(f"data/s1/{i:03d}")
    results = [sweep_part(st, p, sdir, policy) for p in parts]
    total = add_counts(results)
    assert total.resumed_parts == 1
    assert total.parts == 3
    assert total.keys == 121
    assert total.deleted + total.already_gone == 120
    assert total.failed == 1
    assert results[1].already_gone == 20
    assert results[1].deleted == 20
    dead = pq.read_table(io.BytesIO(st.get(f"{sdir}dead_letters/part-00002.parquet"))).to_pylist()
    assert dead == [{"key": "data/s2/zdir", "error_code": "EISDIR", "message": dead[0]["message"], "attempts": 1}]
    marker = json.loads(st.get(f"{sdir}done/part-00001.json"))
    assert (marker["deleted"], marker["already_gone"]) == (20, 20)
    assert not [o.key for o in st.list("data/", recursive=True)]


def test_sweep_part_refuses_a_list_with_protected_addresses(tmp_path):
    from lakefs_gc.errors import LakeFSGCError

    st = LocalStorage(tmp_path)
    st.put("data/s/a", b"x")
    st.put("_lakefs/x", b"x")
    _write_part(st, "m/deleted/part-00000.parquet", ["data/s/a", "_lakefs/x"])
    with pytest.raises(LakeFSGCError, match="never delete"):
        sweep_part(st, "m/deleted/part-00000.parquet", "m/sweeps/x/", DeletePolicy())
    assert st.exists("data/s/a")
    assert st.exists("_lakefs/x")


# --- the same faults on Azure Blob (Azurite) and GCS (fake-gcs-server) -----------------------------


def _cloud_world(server, container, n_candidates, n_live):
    """Candidates and live blobs under ``repo/``, one object in a sibling namespace."""
    from concurrent.futures import ThreadPoolExecutor

    server.create(container)
    st = open_storage(server.namespace(container, "repo"), server.options())
    sibling = open_storage(server.namespace(container, "repo-sibling"), server.options())
    cands = [f"data/slice{i % 5}/obj{i:05d}" for i in range(n_candidates)]
    live = [f"data/slice{i % 5}/live{i:05d}" for i in range(n_live)] + ["_lakefs/dummy"]
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda k: st.put(k, b"x"), cands + live))
    sibling.put("data/slice0/obj00000", b"not ours")
    return st, sibling, cands, live


def _through(proxy, server, container):
    """The namespace's storage reached through ``proxy`` instead of the server itself."""
    from dataclasses import replace

    opts = server.options()
    if server.kind == "azure":
        opts = replace(opts, account_url=opts.account_url.replace(server.endpoint_url, proxy.url))
    else:
        opts = replace(opts, endpoint_url=proxy.url)
    return open_storage(server.namespace(container, "repo"), opts)


def test_azure_deleter_under_faults_retries_counts_and_leaves_leased_blobs(azurite):
    """Busy and failed batches, busy sub-responses (retried: the blob was in fact deleted, so the
    retry finds it gone) and leased blobs (Azurite answers 412 LeaseIdMissing: permanent)."""
    from tests.support.faulty_http import FaultyAzureProxy

    st, sibling, cands, live = _cloud_world(azurite, "azfaults1", 700, 40)
    leased = cands[100:105]
    for k in leased:
        st.client.get_blob_client(f"repo/{k}").acquire_lease(lease_duration=-1)
    proxy = FaultyAzureProxy(azurite.endpoint_url, p_busy=0.2, p_error=0.1, p_key_error=0.05).start()
    try:
        stats = Deleter(
            _through(proxy, azurite, "azfaults1"), DeletePolicy(batch_size=50, max_attempts=12, **FAST)
        ).delete(cands)
    finally:
        proxy.stop()
    assert proxy.stats["busy"] > 0
    assert proxy.stats["error500"] > 0
    assert proxy.stats["key_errors"] > 0
    assert stats.deleted + stats.already_gone == len(cands) - 5
    assert stats.already_gone == proxy.stats["key_errors"]
    assert sorted(d.key for d in stats.dead) == sorted(leased)
    assert {d.error_code for d in stats.dead} == {"LeaseIdMissing"}  # not retried once answered (412)
    assert {o.key for o in st.list()} == set(live) | set(leased)
    assert [o.key for o in sibling.list()] == ["data/slice0/obj00000"]
    assert {p.split("/repo/", 1)[1] for p in proxy.deleted_keys} <= set(cands)  # nothing else was ever sent


def test_gcs_deleter_under_faults_retries_counts_and_dead_letters_denied_objects(fake_gcs):
    from tests.support.faulty_http import FaultyGCSProxy

    st, sibling, cands, live = _cloud_world(fake_gcs, "gcsfaults1", 400, 40)
    denied = cands[100:105]
    proxy = FaultyGCSProxy(
        fake_gcs.endpoint_url, p_busy=0.2, p_error=0.1, deny=frozenset(f"repo/{k}" for k in denied)
    ).start()
    try:
        stats = Deleter(_through(proxy, fake_gcs, "gcsfaults1"), DeletePolicy(max_attempts=12, **FAST)).delete(cands)
    finally:
        proxy.stop()
    assert proxy.stats["busy"] > 0
    assert proxy.stats["error503"] > 0
    assert stats.deleted == len(cands) - 5
    assert stats.already_gone == 0
    assert stats.retried >= proxy.stats["busy"] + proxy.stats["error503"]
    assert sorted(d.key for d in stats.dead) == sorted(denied)
    assert {(d.error_code, d.attempts) for d in stats.dead} == {("403", 1)}
    assert {o.key for o in st.list()} == set(live) | set(denied)
    assert [o.key for o in sibling.list()] == ["data/slice0/obj00000"]
    assert {k.split("repo/", 1)[1] for k in proxy.deleted_keys} <= set(cands)


@pytest.mark.parametrize("kind", ["azure", "gcs"])
def test_cloud_deleter_dead_letters_throttled_keys_with_the_code(kind, request):
    """Always busy: after max_attempts (the deleter before the shared rate), or after the throttle patience."""
    from tests.support.faulty_http import FaultyAzureProxy, FaultyGCSProxy

    server = request.getfixturevalue("azurite" if kind == "azure" else "fake_gcs")
    st, _, cands, _ = _cloud_world(server, f"{kind}faults2", 50, 5)
    code = "ServerBusy" if kind == "azure" else "429"
    for adaptive in (False, True):
        proxy = (FaultyAzureProxy if kind == "azure" else FaultyGCSProxy)(server.endpoint_url, p_busy=1.0).start()
        policy = DeletePolicy(max_attempts=3, adaptive=adaptive, throttle_patience=0.5, **FAST)
        try:
            stats = Deleter(_through(proxy, server, f"{kind}faults2"), policy).delete(cands)
        finally:
            proxy.stop()
        assert stats.deleted == 0
        assert sorted(d.key for d in stats.dead) == sorted(cands)
        assert {d.error_code for d in stats.dead} == {code}
        if adaptive:
            assert all("(the sweep's throttle patience)" in d.message for d in stats.dead)
            assert proxy.stats["requests"] >= (4 if kind == "azure" else 50)
        else:
            assert {d.attempts for d in stats.dead} == {3}
            assert proxy.stats["requests"] == (3 if kind == "azure" else 150)  # one batch, or 50 single calls, 3 times
    assert set(cands) <= {o.key for o in st.list()}


@pytest.mark.parametrize("kind", ["azure", "gcs"])
def test_cloud_sweep_resumes_from_done_markers_after_a_kill(kind, request):
    """A sweep killed half-way through a part: the re-run skips the parts marked done and counts the
    keys the killed run had deleted as already gone; markers and parts live in the namespace."""
    server = request.getfixturevalue("azurite" if kind == "azure" else "fake_gcs")
    st, _, _, live = _cloud_world(server, f"{kind}resume", 0, 3)
    mark = "_lakefs/retention/gc/unified/mark1/"
    parts = []
    for p in range(3):
        keys = [f"data/s{p}/{i:03d}" for i in range(30)]
        for k in keys:
            st.put(k, b"x")
        parts.append(f"{mark}deleted/part-{p:05d}.parquet")
        _write_part(st, parts[-1], keys)
    sdir = sweep_dir("mark1", "manual__2024-01-01T00:00:00+00:00")
    policy = DeletePolicy(**FAST)
    assert sweep_part(st, parts[0], sdir, policy).deleted == 30
    for i in range(12):  # the killed run got this far into part 1
        st.delete(f"data/s1/{i:03d}")
    results = [sweep_part(st, p, sdir, policy) for p in parts]
    total = add_counts(results)
    assert total.resumed_parts == 1
    assert total.keys == 90
    assert total.failed == 0
    assert (results[1].deleted, results[1].already_gone) == (18, 12)
    assert json.loads(st.get(f"{sdir}done/part-00002.json"))["deleted"] == 30
    assert {o.key for o in st.list("data/")} == {k for k in live if k.startswith("data/")}
