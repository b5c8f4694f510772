"""lakefs_gc.storage on a local directory and on a real moto S3 server process."""

from __future__ import annotations

import time
import uuid

import pytest

from lakefs_gc.storage import LocalStorage, ObjectNotFound, S3Storage, open_storage, parse_namespace


def test_parse_namespace():
    assert parse_namespace("local:///tmp/x/") == parse_namespace("local:///tmp/x")
    ns = parse_namespace("local:///tmp/x/")
    assert (ns.scheme, ns.prefix, str(ns)) == ("local", "/tmp/x", "local:///tmp/x")
    ns = parse_namespace("s3://bucket/a/b/")
    assert (ns.scheme, ns.bucket, ns.prefix, str(ns)) == ("s3", "bucket", "a/b", "s3://bucket/a/b")
    assert parse_namespace("s3://bucket").prefix == ""
    for bad in ("gs://b/x", "local://relative/path", "s3:///nobucket", "/just/a/path"):
        with pytest.raises(ValueError):
            parse_namespace(bad)


@pytest.fixture(params=["local", "s3"])
def storage(request, tmp_path):
    if request.param == "local":
        return open_storage(f"local://{tmp_path}/ns")
    moto = request.getfixturevalue("moto_server")
    bucket = moto.create_bucket("st-" + uuid.uuid4().hex[:12])
    return open_storage(f"s3://{bucket}/repo/ns", moto.s3_options())


def test_put_get_exists_open_delete(storage):
    assert isinstance(storage, (LocalStorage, S3Storage))
    assert not storage.exists("data/a/b")
    storage.put("data/a/b", b"hello")
    assert storage.exists("data/a/b")
    assert storage.get("data/a/b") == b"hello"
    with storage.open_input("data/a/b") as f:
        f.seek(1)
        assert f.read() == b"ello"
        f.seek(-2, 2)
        assert f.read() == b"lo"
    storage.put("data/a/b", b"again")  # overwrite
    assert storage.get("data/a/b") == b"again"
    storage.delete("data/a/b")
    assert not storage.exists("data/a/b")
    storage.delete("data/a/b")  # deleting a missing object is fine
    with pytest.raises(ObjectNotFound):
        storage.get("data/a/b")
    with pytest.raises(ObjectNotFound):
        storage.open_input("nothing/here")
    assert storage.full_uri("x/y") == storage.uri + "/x/y"


def test_list_recursive_and_delimited(storage):
    before = time.time() - 5
    keys = ["dummy", "root-file", "data/s1/o1", "data/s1/o2", "data/s2/o3", "data/s2/deep/o4", "_lakefs/abc"]
    for i, k in enumerate(keys):
        storage.put(k, b"x" * (i + 1))
    every = list(storage.list())
    assert [o.key for o in every] == sorted(keys)
    assert {o.key: o.size for o in every} == {k: i + 1 for i, k in enumerate(keys)}
    assert all(before < o.last_modified < time.time() + 5 for o in every)
    assert [o.key for o in storage.list("data/")] == ["data/s1/o1", "data/s1/o2", "data/s2/deep/o4", "data/s2/o3"]
    assert [o.key for o in storage.list("data/s2/", recursive=False)] == ["data/s2/o3"]
    assert [o.key for o in storage.list("", recursive=False)] == ["dummy", "root-file"]
    assert [o.key for o in storage.list("data/s1/o", recursive=True)] == ["data/s1/o1", "data/s1/o2"]
    assert list(storage.list_prefixes("data/")) == ["data/s1/", "data/s2/"]
    assert list(storage.list_prefixes("")) == ["_lakefs/", "data/"]
    assert list(storage.list("missing/")) == []
    assert list(storage.list_prefixes("missing/")) == []


def test_delete_many(storage, monkeypatch):
    import lakefs_gc.storage as mod

    monkeypatch.setattr(mod, "S3_MAX_DELETE", 4)  # several DeleteObjects calls without 1000s of objects
    keys = [f"data/s/{i:05d}" for i in range(11)]
    for k in keys:
        storage.put(k, b"1")
    storage.put("data/keep", b"1")
    failed = storage.delete_many(keys + ["data/never/existed"])
    assert failed == []
    assert [o.key for o in storage.list("data/")] == ["data/keep"]


def test_invalid_keys_are_rejected(tmp_path):
    st = open_storage(f"local://{tmp_path}")
    for bad in ("../escape", "/abs", "a/../../b"):
        with pytest.raises(ValueError):
            st.put(bad, b"x")
