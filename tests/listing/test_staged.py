"""The staged check on the candidates (lakefs_gc.listing.staged): which candidates are suspicious,
which paths are asked, and the commits made since list_committed, without lakeFS; the driver's
answer without Spark, the executors' held to it (the end-to-end cases: tests/listing/test_uncommitted.py,
the random histories, tests/real_lakefs/)."""

from __future__ import annotations

import hashlib

import pytest

from lakefs_gc.errors import LakeFSGCError
from lakefs_gc.listing import committed, matching

MD5_A, MD5_B = hashlib.md5(b"a").hexdigest(), hashlib.md5(b"b").hexdigest()


def identities(rows):  # the committed entries a run read, without Spark: rows only
    return matching.Identities(None, None, (), 1, rows=tuple(rows))


class Store:
    """A store: S3 and local (the listed checksum is not vouched for: content_md5 asked), or Azure
    and GCS (``listed_md5``: Content-MD5 and md5Hash as listed)."""

    def __init__(self, md5s, listed_md5=False):
        self.md5s, self.asked, self.listed_md5 = md5s, [], listed_md5

    def content_md5(self, key):
        self.asked.append(key)
        return self.md5s.get(key)


class Ref:
    def __init__(self, store, namespace="s3://bucket/repo"):
        self.store, self.namespace = store, namespace
        store.hashes_locally = namespace.startswith("local://")  # the local store reads the files to hash them

    def open(self):
        return self.store


IDENTITIES = [
    (1, MD5_A, "p/a"),
    (1, MD5_B, "p/b"),
    (7, "0x8DC0FFEE", "p/azure-etag"),
    (9, MD5_A, "p/nine"),
    (5, None, "p/none"),
]


def test_the_listed_md5_decides_where_the_store_vouches_for_it():
    rows = [
        ("data/x/same", 1, MD5_A),
        ("data/x/other", 1, hashlib.md5(b"c").hexdigest()),
        ("data/x/no-md5", 9, None),
        ("data/x/odd-etag", 7, MD5_B),
        ("data/x/alone", 3, MD5_A),
    ]
    store = Store({}, listed_md5=True)
    sus, paths = matching.suspicious_here(Ref(store), rows, identities(IDENTITIES))
    # same size and MD5; no MD5 of its own: any entry of its size; an entry whose checksum is not an
    # MD5 (a client's, an Azure ETag): by size alone
    assert sus == {"data/x/same", "data/x/no-md5", "data/x/odd-etag"}
    assert paths == {"p/a", "p/nine", "p/azure-etag"}
    assert store.asked == []  # Azure's Content-MD5 and GCS's md5Hash are the content's MD5 as listed


def test_s3_asks_the_store_whether_the_etag_is_the_md5():
    rows = [
        ("data/x/plain", 1, MD5_A),
        ("data/x/kms", 1, hashlib.md5(b"opaque").hexdigest()),
        ("data/x/multipart", 9, "abc-3"),
        ("data/x/link-etag", 1, "abc-2"),
    ]
    store = Store({"data/x/plain": MD5_A})  # KMS and multipart: no MD5 the store vouches for
    ids = IDENTITIES + [(1, "abc-2", "p/linked")]  # a link-flow entry recorded with the store's ETag
    sus, paths = matching.suspicious_here(Ref(store), rows, identities(ids))
    assert sus == {"data/x/plain", "data/x/kms", "data/x/multipart", "data/x/link-etag"}
    assert {"p/a", "p/nine", "p/linked", "p/b"} <= paths
    assert sorted(store.asked) == sorted(r[0] for r in rows)


def test_the_store_is_asked_only_about_candidates_at_the_size_of_an_entry():
    """A candidate at a size no committed entry has cannot be one: neither S3's HEAD nor a local
    file's read is spent on it (the executors' path joins on size first, the same)."""
    rows = [("data/x/plain", 1, MD5_A), ("data/x/size-3", 3, MD5_A), ("data/x/size-4", 4, None)]
    store = Store({"data/x/plain": MD5_A, "data/x/size-3": MD5_A})
    sus, paths = matching.suspicious_here(Ref(store), rows, identities(IDENTITIES))
    assert (sus, paths) == ({"data/x/plain"}, {"p/a"})
    assert store.asked == ["data/x/plain"]


def test_local_reads_the_file_and_a_different_content_is_not_suspicious():
    rows = [("data/x/copy", 1, None), ("data/x/new", 1, None)]
    store = Store({"data/x/copy": MD5_B, "data/x/new": hashlib.md5(b"n").hexdigest()})
    sus, paths = matching.suspicious_here(Ref(store), rows, identities(IDENTITIES))
    assert (sus, paths) == ({"data/x/copy"}, {"p/b"})


def test_many_candidates_sharing_one_identity_ask_each_of_its_paths_once():
    """Empty files (size 0, one MD5) are the common case of many candidates sharing one identity that
    many committed paths hold: every such candidate is suspicious, and the paths are that identity's
    (each group's paths are gathered once, not copied per candidate)."""
    empty = hashlib.md5(b"").hexdigest()
    ids = [(0, empty, f"out/{i}/_SUCCESS") for i in range(50)] + [(0, "0x8DC0", "azure/_SUCCESS")] + IDENTITIES
    rows = [(f"data/x/{i}", 0, empty) for i in range(200)] + [("data/x/unvouched", 1, None)]
    store = Store({f"data/x/{i}": empty for i in range(200)})
    sus, paths = matching.suspicious_here(Ref(store), rows, identities(ids))
    assert sus == {r[0] for r in rows}
    # the empty files' paths and the entry of size 0 without an MD5; the unvouched one of size 1: by size
    assert paths == {f"out/{i}/_SUCCESS" for i in range(50)} | {"azure/_SUCCESS", "p/a", "p/b"}


def test_nothing_is_suspicious_without_an_entry_of_its_size():
    store = Store({"data/x/y": MD5_A})
    assert matching.suspicious_here(Ref(store), [("data/x/y", 2, None)], identities(IDENTITIES)) == (set(), set())


class Commits:
    """A client's commit graph: id -> (parents, metarange)."""

    def __init__(self, graph):
        self.graph, self.asked = graph, []

    def commit(self, repo, c):
        self.asked.append(c)
        return self.graph[c]


def test_commits_since_walks_every_parent_until_read_ones():
    graph = {"c3": (("c2", "m1"), ""), "c2": (("c1",), ""), "m1": (("c1",), ""), "c1": (("c0",), "")}  # no ranges
    client = Commits(graph)
    since = committed.commits_since(client, "r", None, (), {"c1", "d1"}, set(), [("main", "c3"), ("dev", "d1")])
    assert since.commits == 3
    assert sorted(client.asked) == ["c2", "c3", "m1"]


def test_commits_since_fails_closed_past_its_bound(monkeypatch):
    monkeypatch.setattr(committed, "MAX_COMMITS_SINCE", 5)
    graph = {f"c{i}": ((f"c{i - 1}",), f"m{i}") for i in range(1, 20)}
    with pytest.raises(LakeFSGCError, match="more than 5 commits .* Nothing was deleted"):
        committed.commits_since(Commits(graph), "r", None, (), set(), set(), [("main", "c19")])


CASES = [  # (candidate rows, the store's MD5s, listed_md5, identities): the four cases above
    (
        [
            ("data/x/same", 1, MD5_A),
            ("data/x/other", 1, hashlib.md5(b"c").hexdigest()),
            ("data/x/no-md5", 9, None),
            ("data/x/odd-etag", 7, MD5_B),
            ("data/x/alone", 3, MD5_A),
        ],
        {},
        True,
        IDENTITIES,
    ),
    (
        [
            ("data/x/plain", 1, MD5_A),
            ("data/x/kms", 1, hashlib.md5(b"opaque").hexdigest()),
            ("data/x/multipart", 9, "abc-3"),
            ("data/x/link-etag", 1, "abc-2"),
        ],
        {"data/x/plain": MD5_A},
        False,
        IDENTITIES + [(1, "abc-2", "p/linked")],
    ),
    (
        [("data/x/copy", 1, None), ("data/x/new", 1, None)],
        {"data/x/copy": MD5_B, "data/x/new": hashlib.md5(b"n").hexdigest()},
        False,
        IDENTITIES,
    ),
    ([("data/x/y", 2, None)], {"data/x/y": MD5_A}, False, IDENTITIES),
]


@pytest.mark.parametrize("namespace", ["s3://bucket/repo", "local://repo"])
@pytest.mark.parametrize(("rows", "md5s", "listed_md5", "ids"), CASES)
def test_the_executors_find_what_the_driver_finds(spark, rows, md5s, listed_md5, ids, namespace):
    """``suspicious`` (DataFrames, one join of the identities) and ``suspicious_here`` (the driver)
    agree on every case: the same suspicious candidates, the same paths to ask."""
    from lakefs_gc.report import formats

    ref = Ref(Store(md5s, listed_md5=listed_md5), namespace)  # local: the store asked in the task's thread
    want = matching.suspicious_here(ref, rows, identities(ids))
    cands = spark.createDataFrame(rows, "address string, size long, checksum string")
    sus, paths, sized = matching.suspicious(spark, ref, cands, spark.createDataFrame(ids, formats.IDENTITY_SCHEMA), 2)
    try:
        assert ({r[0] for r in sus.collect()}, {r[0] for r in paths.collect()}) == want
        assert sus.columns == ["address", "size", "checksum", "vouched"]
        assert sus.is_cached
        assert sized.is_cached
    finally:
        sus.unpersist()
        sized.unpersist()
