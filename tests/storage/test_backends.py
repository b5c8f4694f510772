"""Every storage adapter keeps the same contract, on a real server of its kind: local files, S3 on
moto server, Azure Blob on Azurite, GCS on fake-gcs-server (all on 127.0.0.1).

Listing order and ``start_after``, delimiter listings, reads of missing objects, and the deleter's
only call, ``delete_batch``: a per-key outcome for every key, missing keys reported as such, and
nothing outside the namespace touched (checked by listing the store after; S3 alone reports a missing key as deleted)."""

from __future__ import annotations

import itertools

import pytest

from lakefs_gc.storage import ObjectNotFound, StorageError, open_storage
from lakefs_gc.sweeping.deleter import MISSING_CODES, DeletePolicy, Deleter

BACKENDS = ["local", "s3", "azure", "gcs"]
_n = itertools.count()


@pytest.fixture(params=BACKENDS)
def backend(request, tmp_path):
    """(storage of a fresh namespace, storage of a sibling namespace sharing its bucket/container)."""
    kind = request.param
    name = f"ns{next(_n)}"
    if kind == "local":
        return (
            open_storage(f"local://{name}/repo", None, tmp_path),
            open_storage(f"local://{name}/repo-sibling", None, tmp_path),
        )
    if kind == "s3":
        moto = request.getfixturevalue("moto_server")
        moto.create_bucket(name)
        return (
            open_storage(f"s3://{name}/repo", moto.s3_options()),
            open_storage(f"s3://{name}/repo-sibling", moto.s3_options()),
        )
    server = request.getfixturevalue("azurite" if kind == "azure" else "fake_gcs")
    server.create(name)
    return (
        open_storage(server.namespace(name, "repo"), server.options()),
        open_storage(server.namespace(name, "repo-sibling"), server.options()),
    )


def test_put_get_stat_and_missing(backend):
    st, _ = backend
    st.put("_lakefs/dummy", b"")
    st.put("data/s1/a", b"hello")
    assert st.get("data/s1/a") == b"hello"
    with st.open_input("data/s1/a") as f:
        assert f.read() == b"hello"
    info = st.stat("data/s1/a")
    assert info is not None
    assert info.size == 5
    assert info.last_modified > 1.7e9
    assert st.exists("_lakefs/dummy")
    assert not st.exists("data/s1/zz")
    assert st.stat("data/s1/zz") is None
    with pytest.raises(ObjectNotFound):
        st.get("data/s1/zz")
    with pytest.raises(ObjectNotFound):
        st.open_input("data/s1/zz")
    with pytest.raises(ValueError, match="invalid relative key"):
        st.put("../escape", b"x")


def test_listing_order_prefixes_and_start_after(backend):
    st, sibling = backend
    keys = ["data/s1/b", "data/s1/a", "data/s2/c", "data/loose", "top", "_lakefs/x"]
    for k in keys:
        st.put(k, b"x")
    sibling.put("data/s1/a", b"not ours")
    assert [o.key for o in st.list()] == sorted(keys)
    assert [o.key for o in st.list("data/s1/")] == ["data/s1/a", "data/s1/b"]
    assert [o.key for o in st.list("data/", recursive=False)] == ["data/loose"]
    assert [o.key for o in st.list("", recursive=False)] == ["top"]
    assert [o.key for o in st.list("data/", start_after="data/s1/a")] == ["data/s1/b", "data/s2/c"]
    assert list(st.list_prefixes("data/")) == ["data/s1/", "data/s2/"]
    assert list(st.list_prefixes("")) == ["_lakefs/", "data/"]


def test_delete_batch_reports_every_missing_key_and_touches_nothing_else(backend):
    st, sibling = backend
    odd = ["data/s/a name+with%25 odd?chars&é", "data/s/ünï €", "data/s/back\\slash"]  # quoted in batch URLs
    keys = [f"data/s/{i:03d}" for i in range(st.max_delete_batch // 4 + 3)] + odd
    for k in keys:
        st.put(k, b"x")
    st.put("data/s/live", b"x")
    sibling.put("data/s/000", b"not ours")
    missing = ["data/s/gone1", "data/s/gone2"]
    failed = st.delete_batch([*keys, *missing])
    # S3's DeleteObjects answers success for a key that was not there; the others tell it apart
    assert sorted(k for k, _, _ in failed) == ([] if st.uri.startswith("s3://") else missing)
    assert all(code in MISSING_CODES for _, code, _ in failed), failed
    assert [o.key for o in st.list()] == ["data/s/live"]
    assert [o.key for o in sibling.list()] == ["data/s/000"]


def test_deleter_splits_into_the_stores_batches(backend):
    st, _ = backend
    keys = [f"data/s/{i:04d}" for i in range(st.max_delete_batch + 5)]
    for k in keys:
        st.put(k, b"x")
    stats = Deleter(st, DeletePolicy(rate=0)).delete([*keys, "data/s/missing"])
    assert stats.deleted + stats.already_gone == len(keys) + 1
    assert not stats.dead
    assert stats.requests == 2  # max_delete_batch + 6 keys: two calls
    assert not list(st.list("data/"))


def test_azure_refuses_a_connection_to_another_account(azurite):
    from lakefs_gc.storage import AzureOptions

    other = AzureOptions(account_url=azurite.account_url, account_name="otheraccount", account_key="a2V5")
    with pytest.raises(StorageError, match="storage account 'devstoreaccount1'.*reaches account 'otheraccount'"):
        open_storage(azurite.namespace("c", "repo"), other)


def test_settings_of_the_wrong_kind_are_refused(moto_server, fake_gcs):
    with pytest.raises(ValueError, match="gs namespace.*S3Options.*GCSOptions"):
        open_storage("gs://bucket/repo", moto_server.s3_options())


def test_azure_reports_the_accounts_soft_delete_and_the_summary_says_so(azurite):
    """Blob soft delete keeps deleted blobs (billed) for its retention days: the report says so."""
    from azure.storage.blob import RetentionPolicy

    from lakefs_gc.report.run_summary import RunSummary
    from lakefs_gc.report.summary import summary_rows
    from lakefs_gc.storage.azure import make_service_client

    st = open_storage(azurite.namespace(azurite.create("softdelete"), "repo"), azurite.options())
    assert st.soft_delete_days() == 0
    service = make_service_client(azurite.options())
    service.set_service_properties(delete_retention_policy=RetentionPolicy(enabled=True, days=7))
    try:
        assert st.soft_delete_days() == 7
    finally:
        service.set_service_properties(delete_retention_policy=RetentionPolicy(enabled=False))
    rows = dict(summary_rows(RunSummary.from_doc({"reclaimed_bytes": 2048, "soft_delete_days": 7})))
    assert (
        rows["reclaimed"]
        == "2.0 KiB  (the storage account's soft delete keeps deleted blobs 7 days: not freed until then)"
    )


@pytest.mark.parametrize("kind", ["azure", "gcs"])
def test_an_unreachable_cloud_endpoint_fails_with_one_line_naming_it(kind, monkeypatch):
    import socket

    from lakefs_gc.errors import Unreachable
    from lakefs_gc.storage import AzureOptions, GCSOptions, azure, gcs

    monkeypatch.setattr(gcs, "READ_RETRY_SECONDS", 1)  # the libraries' retries, kept short here
    monkeypatch.setattr(azure, "CLIENT_RETRIES", 0)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    if kind == "azure":
        st = open_storage(
            "https://devstoreaccount1.azurite.test/cont/repo",
            AzureOptions(account_url=f"{url}/devstoreaccount1", account_name="devstoreaccount1", account_key="a2V5"),
        )
    else:
        st = open_storage("gs://bucket/repo", GCSOptions(endpoint_url=url, anonymous=True))
    for call in (lambda: list(st.list("data/")), lambda: st.get("_lakefs/dummy"), lambda: st.exists("x")):
        with pytest.raises(Unreachable) as err:
            call()
        message = str(err.value)
        assert f"{url}" in message
        assert "unreachable" in message
        assert "storage_conn_id" in message
        assert "\n" not in message
        assert err.value.__cause__ is None
