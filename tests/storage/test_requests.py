"""The storage requests counted at the ``Storage`` boundary (``lakefs_gc.storage.requests``): each
adapter method's count against what a counting proxy saw reach moto, a listing's pages, calls
inside calls counted once, and the counts carried into a sink (a Spark job's accumulator)."""

from __future__ import annotations

import pickle
import threading
from collections import Counter
from dataclasses import replace

import pytest

from lakefs_gc.contract import RequestCount
from lakefs_gc.spark.runtime import StorageRef
from lakefs_gc.storage import LocalStorage, S3Storage, open_storage, requests
from tests.support.counting_proxy import CountingS3Proxy


def _by_kind(counts) -> Counter[str]:
    out: Counter[str] = Counter()
    for c in counts:
        out[c.kind] += c.count
    return out


def test_local_methods_counted_by_kind_and_calls_inside_calls_once(tmp_path):
    st = LocalStorage(tmp_path)
    with requests.counting() as sent:
        st.put("a/b", b"x")
        st.put("a/c", b"y")
        assert st.get("a/b") == b"x"
        assert st.exists("a/b")
        assert st.stat("nope") is None
        for o in st.list("a/"):  # a stat between two items of a listing is its own request
            st.stat(o.key)
        assert sum(b.num_rows for b in st.list_batches("a/")) == 2
        st.delete_batch(["a/b"])
    assert sent.counts() == (
        RequestCount("local", "LIST", 2),
        RequestCount("local", "HEAD", 4),
        RequestCount("local", "GET", 1),
        RequestCount("local", "PUT", 2),
        RequestCount("local", "DELETE", 1),
    )


def test_a_listing_counts_a_page_per_thousand_entries_read(tmp_path):
    st = LocalStorage(tmp_path)
    for i in range(2001):
        (tmp_path / f"k{i:05d}").write_bytes(b"")
    with requests.counting() as sent:
        assert len(list(st.list(""))) == 2001
    assert _by_kind(sent.counts())["LIST"] == 3
    with requests.counting() as sent:  # stopped early: only the pages read
        it = st.list("")
        next(it)
        it.close()
    assert _by_kind(sent.counts())["LIST"] == 1
    with requests.counting() as sent:  # never iterated: nothing sent
        st.list("")
    assert sent.counts() == ()


def test_a_sink_takes_the_counts_and_the_process_counter_none(tmp_path):
    """What a StorageRef opens counts into its sink (a Spark job's accumulator; here a counter),
    its reads as INVENTORY when it reads an inventory; the process's counter sees none of it."""
    sink = requests.Requests()
    ref = StorageRef(f"local://{tmp_path.name}", None, str(tmp_path.parent), requests=sink)
    with requests.counting() as here:
        st = ref.open()
        st.put("x", b"1")
        st.get("x")
        inv = replace(ref, inventory=True).open()
        inv.get("x")
        inv.stat("x")
        inv.put("y", b"2")
    assert here.counts() == ()
    assert sink.counts() == (
        RequestCount("local", "GET", 1),
        RequestCount("local", "PUT", 2),
        RequestCount("local", "INVENTORY", 2),
    )
    back = pickle.loads(pickle.dumps(sink))  # as it travels to executors and back
    param = requests.RequestsParam()
    assert param.addInPlace(param.zero(back), back).counts() == sink.counts()


def test_threads_add_up(tmp_path):
    st = LocalStorage(tmp_path)
    st.put("k", b"v")

    def heads():
        for _ in range(200):
            st.stat("k")

    with requests.counting() as sent:
        threads = [threading.Thread(target=heads) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert _by_kind(sent.counts()) == {"HEAD": 800}


@pytest.fixture
def proxied(moto_server):
    bucket = moto_server.create_bucket("requests-counted")
    proxy = CountingS3Proxy(moto_server.endpoint_url).start()
    try:
        options = replace(moto_server.s3_options(), endpoint_url=proxy.url)
        yield S3Storage(bucket, "ns", options), moto_server.client(), bucket, proxy
    finally:
        proxy.stop()


def test_s3_each_method_counts_what_reached_moto(proxied):
    """Each S3 adapter method's count equals the requests the proxy forwarded to moto, kind by kind;
    1,001 objects list in two pages (boto3's paginator and obstore's native listing alike)."""
    st, client, bucket, proxy = proxied
    for i in range(1001):  # straight to moto: neither counted nor seen by the proxy
        client.put_object(Bucket=bucket, Key=f"ns/data/s/{i:05d}", Body=b"x")
    client.put_object(Bucket=bucket, Key="ns/data/t/one", Body=b"y")
    calls = {
        "put": lambda: st.put("w/1", b"hello"),
        "get": lambda: st.get("w/1"),
        "open_input": lambda: st.open_input("w/1").read(),
        "exists": lambda: st.exists("w/1"),
        "stat": lambda: st.stat("w/missing"),
        "content_md5": lambda: st.content_md5("w/1"),
        "list": lambda: list(st.list("data/s/")),
        "list_prefixes": lambda: list(st.list_prefixes("data/")),
        "list_batches": lambda: list(st.list_batches("data/s/")),
        "delete": lambda: st.delete("w/1"),
        "delete_batch": lambda: st.delete_batch([f"data/s/{i:05d}" for i in range(10)]),
    }
    expected = {"list": {"LIST": 2}, "list_batches": {"LIST": 2}}
    for name, call in calls.items():
        proxy.take()
        with requests.counting() as sent:
            call()
        served = proxy.take()
        mine = _by_kind(sent.counts())
        assert mine == served, (name, mine, served)
        assert mine == expected.get(name, {requests.METHOD_KINDS[name]: 1}), (name, mine)
        assert {c.store for c in sent.counts()} == {"s3"}


@pytest.mark.parametrize("kind", ["azure", "gs"])
def test_azure_and_gcs_methods_count_what_reached_the_store(kind, request):
    """The same on Azurite and fake-gcs-server, behind a proxy counting by each store's API: an Azure
    Blob Batch is one request, GCS deletes a key a request; a GCS object's metadata read is a HEAD."""
    from tests.support.counting_proxy import CountingProxy, azure_kind, gcs_kind

    server = request.getfixturevalue("azurite" if kind == "azure" else "fake_gcs")
    name = server.create(f"requests-{kind}")
    seed = open_storage(server.namespace(name, "ns"), server.options())
    for i in range(12):
        seed.put(f"data/s/{i:05d}", b"x")
    seed.put("data/t/one", b"y")
    proxy = CountingProxy(server.endpoint_url, azure_kind if kind == "azure" else gcs_kind).start()
    try:
        if kind == "azure":
            options = replace(server.options(), account_url=f"{proxy.url}/{server.account_url.rsplit('/', 1)[1]}")
        else:
            options = replace(server.options(), endpoint_url=proxy.url)
        st = open_storage(server.namespace(name, "ns"), options)
        # GCS: google-cloud-storage 3.17 reads each bucket's metadata once per client, from a thread of
        # its own (for its trace spans' attributes, OpenTelemetry or not): not the storage's request,
        # and it lands in whichever call is under way when it is sent; counted apart, at most once
        background: Counter[str] = Counter()

        def served() -> Counter[str]:
            seen = proxy.take()
            if kind == "gs":
                background["SETTINGS"] += seen.pop("SETTINGS", 0)
            return seen

        proxy.take()
        with requests.counting() as sent:
            st.put("w/0", b"")
        assert _by_kind(sent.counts()) == {"PUT": 1}
        assert served() == {"PUT": 1}, proxy.log
        calls = {
            "put": lambda: st.put("w/1", b"hello"),
            "get": lambda: st.get("w/1"),
            "open_input": lambda: st.open_input("w/1").read(),
            "exists": lambda: st.exists("w/1"),
            "stat": lambda: st.stat("w/missing"),
            "list": lambda: list(st.list("data/s/")),
            "list_prefixes": lambda: list(st.list_prefixes("data/")),
            "list_batches": lambda: list(st.list_batches("data/s/")),
            "delete": lambda: st.delete("w/1"),
            "delete_batch": lambda: st.delete_batch([f"data/s/{i:05d}" for i in range(3)]),
        }
        for method, call in calls.items():
            proxy.take()
            with requests.counting() as sent:
                call()
            mine, theirs = _by_kind(sent.counts()), served()
            assert mine == theirs, (method, mine, theirs, proxy.log[-5:])
            assert {c.store for c in sent.counts()} == {kind}
        assert mine == {"DELETE": 1 if kind == "azure" else 3}
        assert background["SETTINGS"] <= 1, proxy.log
    finally:
        proxy.stop()
