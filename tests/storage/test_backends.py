"""Every storage adapter keeps the same contract, on a real server of its kind: local files, S3 on
moto server, Azure Blob on Azurite, GCS on fake-gcs-server (all on 127.0.0.1).

Listing order and ``start_after``, delimiter listings, reads of missing objects, and the deleter's
only call, ``delete_batch``: a per-key outcome for every key, missing keys reported as such, and
nothing outside the namespace touched (checked by listing the store after; S3 alone reports a missing key as deleted)."""

from __future__ import annotations

import itertools

import pytest

from lakefs_gc.storage import ObjectNotFound, StorageError, open_storage
from lakefs_gc.sweeping.deleter import MISSING_CODES, Deleter, DeletePolicy

BACKENDS = ["local", "s3", "azure", "gcs"]
_n = itertools.count()


@pytest.fixture(params=BACKENDS)
def backend(request, tmp_path):
    """(storage of a fresh namespace, storage of a sibling namespace sharing its bucket/container)."""
    kind = request.param
    name = f"ns{next(_n)}"
    if kind == "local":
        return (open_storage(f"local://{name}/repo", None, tmp_path),
                open_storage(f"local://{name}/repo-sibling", None, tmp_path))
    if kind == "s3":
        moto = request.getfixturevalue("moto_server")
        moto.create_bucket(name)
        return (open_storage(f"s3://{name}/repo", moto.s3_options()),
                open_storage(f"s3://{name}/repo-sibling", moto.s3_options()))
    server = request.getfixturevalue("azurite" if kind == "azure" else "fake_gcs")
    server.create(name)
    return (open_storage(server.namespace(name, "repo"), server.options()),
            open_storage(server.namespace(name, "repo-sibling"), server.options()))


def test_put_get_stat_and_missing(backend):
    st, _ = backend
    st.put("_lakefs/dummy", b"")
    st.put("data/s1/a", b"hello")
    assert st.get("data/s1/a") == b"hello"
    with st.open_input("data/s1/a") as f:
        assert f.read() == b"hello"
    info = st.stat("data/s1/a")
    assert info is not None and info.size == 5 and info.last_modified > 1.7e9
    assert st.exists("_lakefs/dummy") and not st.exists("data/s1/zz") and st.stat("data/s1/zz") is None
    with pytest.raises(ObjectNotFound):
        st.get("data/s1/zz")
    with pytest.raises(ObjectNotFound):
        st.open_input("data/s1/zz")
    with pytest.raises(ValueError):
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
    keys = [f"data/s/{i:03d}" for i in range(st.max_delete_batch // 4 + 3)]
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
    assert stats.deleted + stats.already_gone == len(keys) + 1 and not stats.dead
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
