"""lakefs_gc.storage on a local directory and on a real moto S3 server process."""

from __future__ import annotations

import time
import uuid

import pytest

from lakefs_gc.storage import LocalStorage, ObjectNotFound, S3Storage, open_storage, parse_namespace


def test_parse_namespace():
    root = "/var/lakefs/block"
    assert parse_namespace("local://x/", root) == parse_namespace("local://x", root)
    ns = parse_namespace("local://x/", root)
    assert (ns.scheme, ns.prefix, str(ns)) == ("local", "/var/lakefs/block/x", "local://x")
    ns = parse_namespace("s3://bucket/a/b/")
    assert (ns.scheme, ns.bucket, ns.prefix, str(ns)) == ("s3", "bucket", "a/b", "s3://bucket/a/b")
    assert parse_namespace("s3://bucket").prefix == ""
    for bad in ("gs://", "s3:///nobucket", "/just/a/path", "ftp://b/x"):
        with pytest.raises(ValueError):  # noqa: PT011 - each bad namespace has its own message; refused is the point
            parse_namespace(bad, root)


def test_local_namespaces_resolve_under_the_blockstore_root_as_lakefs_does():
    """pkg/block/local/adapter.go: local://<ns> is filepath.Join(blockstore.local.path, <ns>),
    cleaned, and must stay under it; an absolute-looking namespace is still under the root."""
    root = "/var/lakefs/block"
    assert parse_namespace("local://repo1", root).prefix == "/var/lakefs/block/repo1"
    assert parse_namespace("local:///abs/repo1", root).prefix == "/var/lakefs/block/abs/repo1"
    assert parse_namespace("local://a/./b/", root + "/").prefix == "/var/lakefs/block/a/b"
    ns = parse_namespace("local://repo1", root)
    assert ns.roots() == ("local://repo1/", "local:///var/lakefs/block/repo1/")
    for escaping in ("local://../etc", "local://repo/../../x", "local://.."):
        with pytest.raises(ValueError, match="outside the blockstore root"):
            parse_namespace(escaping, root)
    with pytest.raises(ValueError, match="local_blockstore_root"):  # never guessed
        parse_namespace("local://repo1")
    with pytest.raises(ValueError, match="needs a path"):
        parse_namespace("local://", root)


@pytest.fixture(params=["local", "s3"])
def storage(request, tmp_path):
    if request.param == "local":
        return open_storage("local://ns", local_root=tmp_path)
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


def test_delete_batch(storage):
    """The deleter's one call: up to 1,000 keys; a missing key is not a failure on S3 (quiet
    DeleteObjects) and is ``NoSuchKey`` on local (which the deleter counts as deleted)."""
    keys = [f"data/s/{i:05d}" for i in range(11)]
    for k in keys:
        storage.put(k, b"1")
    storage.put("data/keep", b"1")
    failed = storage.delete_batch(keys + ["data/never/existed"])
    assert [f for f in failed if f[1] != "NoSuchKey"] == []
    assert [o.key for o in storage.list("data/")] == ["data/keep"]
    with pytest.raises(ValueError):  # noqa: PT011 - two refusals (too many keys on s3, a bad key on local), two messages
        storage.delete_batch(["data/x"] * 1001) if storage.uri.startswith("s3://") else storage.delete_batch(["../x"])


def test_list_start_after_splits_a_flat_listing_into_key_ranges(storage):
    """list_slices lists legacy root objects by key range (start_after, up to): the ranges together
    are the whole listing, each key once."""
    keys = ["0aa", "1bb", "5cc", "9dd", "a00", "fff", "zz", "~x", "\u00e9t\u00e9"]
    for k in keys:
        storage.put(k, b"1")
    storage.put("data/s/x", b"1")
    assert [o.key for o in storage.list("", recursive=False, start_after="5cc")] == sorted(k for k in keys if k > "5cc")
    from lakefs_gc.listing.slices import listing_tasks

    seen = []
    for prefix, recursive, after, up_to in listing_tasks([]):
        if prefix:
            continue
        for o in storage.list(prefix, recursive=recursive, start_after=after):
            if up_to is not None and o.key > up_to:
                break
            seen.append(o.key)
    assert sorted(seen) == sorted(keys)


def test_invalid_keys_are_rejected(tmp_path):
    st = open_storage("local://ns", local_root=tmp_path)
    for bad in ("../escape", "/abs", "a/../../b"):
        with pytest.raises(ValueError, match="invalid relative key"):
            st.put(bad, b"x")
