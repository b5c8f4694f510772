"""Orphaned namespaces in the discovery refresh's record (``lakefs_gc.listing.orphans``, through
``lakefs_gc.config.discovered.refresh``): which namespaces a refresh calls orphaned from its
listings, and never from a failed one; their sizes by a bounded listing. Without lakeFS: the
listings are given; ``tests/cli/test_reclaim_namespace.py`` runs the same against lakeFS itself."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import yaml

from lakefs_gc.config import load_config
from lakefs_gc.config.discovered import read_discovered, record_orphans, refresh
from lakefs_gc.listing.orphans import MEASURE_LIMIT, Listed, measure, measure_orphans
from lakefs_gc.storage.local import LocalStorage

T0 = datetime(2026, 11, 1, tzinfo=UTC)
A, B = "http://lakefs-a:8000/api/v1", "http://lakefs-b:8000/api/v1"


@pytest.fixture
def discovery(tmp_path):
    p = tmp_path / "gc.yaml"
    p.write_text(
        yaml.safe_dump(
            {"discover": {"sources": [{"include": ["*"]}, {"include": ["*"], "lakefs_conn_id": "lakefs_b"}]}}
        )
    )
    return load_config(p).discovery


def listings(**per_conn):
    """``lakefs_default=({repo: ns}, endpoint)`` -> the refresh's list_repositories."""
    return lambda conn: Listed(*per_conn[conn])


def orphans(discovery):
    return [(o.namespace, o.lakefs_conn_id, o.repository) for o in read_discovered(discovery.state_file).orphans]


def test_a_deleted_repository_leaves_its_namespace_orphaned_from_the_refresh_that_found_it_gone(discovery):
    both = ({"a": "s3://bkt/a", "b": "s3://bkt/b/"}, A)
    refresh(discovery, listings(lakefs_default=both, lakefs_b=({}, B)), now=T0)
    found = read_discovered(discovery.state_file)
    assert found.namespaces["lakefs_default"]["b"].namespace == "s3://bkt/b"  # as compared: no trailing slash
    assert found.connections["lakefs_default"]["endpoint"] == A
    assert found.orphans == []
    refresh(discovery, listings(lakefs_default=both, lakefs_b=({}, B)), now=T0 + timedelta(hours=1))
    _, changes = refresh(
        discovery, listings(lakefs_default=({"a": "s3://bkt/a"}, A), lakefs_b=({}, B)), now=T0 + timedelta(hours=2)
    )
    (o,) = read_discovered(discovery.state_file).orphans
    assert (o.namespace, o.lakefs_conn_id, o.repository) == ("s3://bkt/b", "lakefs_default", "b")
    assert (o.first_seen, o.last_seen, o.orphaned_at) == (
        T0.isoformat(),
        (T0 + timedelta(hours=1)).isoformat(),
        (T0 + timedelta(hours=2)).isoformat(),
    )
    assert any("repository b is gone: its namespace s3://bkt/b is orphaned" in c for c in changes), changes
    # a later refresh keeps it, and the time it was first found orphaned
    refresh(discovery, listings(lakefs_default=({"a": "s3://bkt/a"}, A), lakefs_b=({}, B)), now=T0 + timedelta(days=3))
    (again,) = read_discovered(discovery.state_file).orphans
    assert again.orphaned_at == o.orphaned_at


def test_a_failed_listing_marks_nothing_orphaned(discovery):
    refresh(discovery, listings(lakefs_default=({"a": "s3://bkt/a"}, A), lakefs_b=({"x": "s3://bkt/x"}, B)), now=T0)
    before = discovery.state_file.read_text()

    def b_down(conn):
        if conn == "lakefs_b":  # listed after lakefs_default, which lists nothing now
            raise OSError("connection refused")
        return Listed({}, A)

    for _ in range(2):
        with pytest.raises(OSError, match="connection refused"):
            refresh(discovery, b_down, now=T0 + timedelta(days=40))
    assert discovery.state_file.read_text() == before
    assert read_discovered(discovery.state_file).orphans == []


def test_a_namespace_in_use_by_any_listed_repository_is_not_orphaned(discovery):
    refresh(
        discovery,
        listings(lakefs_default=({"a": "s3://bkt/a", "b": "s3://bkt/b"}, A), lakefs_b=({"c": "s3://bkt/b/c"}, B)),
        now=T0,
    )
    # b is deleted, but another lakeFS's c is under its namespace: held, not orphaned
    _, changes = refresh(
        discovery,
        listings(lakefs_default=({"a": "s3://bkt/a"}, A), lakefs_b=({"c": "s3://bkt/b/c"}, B)),
        now=T0 + timedelta(hours=1),
    )
    assert orphans(discovery) == [("s3://bkt/b", "lakefs_default", "b")]
    (held,) = read_discovered(discovery.state_file).orphans
    assert not held.orphaned
    assert held.held_by == "repository c (lakefs_b) on s3://bkt/b/c"
    assert any("is left by b, but it is in use: by repository c (lakefs_b)" in c for c in changes), changes
    # once nothing is on, above or under it, it is orphaned, from that refresh
    t2 = T0 + timedelta(hours=2)
    _, changes = refresh(discovery, listings(lakefs_default=({"a": "s3://bkt/a"}, A), lakefs_b=({}, B)), now=t2)
    by = {o.namespace: o for o in read_discovered(discovery.state_file).orphans}
    assert set(by) == {"s3://bkt/b", "s3://bkt/b/c"}
    assert by["s3://bkt/b"].orphaned
    assert by["s3://bkt/b"].orphaned_at == t2.isoformat()
    assert any("repository b is gone: its namespace s3://bkt/b is orphaned" in c for c in changes), changes
    # a repository above it (the bucket's root) holds both again; one on it takes it over
    _, changes = refresh(
        discovery,
        listings(lakefs_default=({"a": "s3://bkt/a", "root": "s3://bkt/"}, A), lakefs_b=({"c2": "s3://bkt/b/c"}, B)),
        now=T0 + timedelta(hours=3),
    )
    by = {o.namespace: o for o in read_discovered(discovery.state_file).orphans}
    assert list(by) == ["s3://bkt/b"]  # s3://bkt/b/c is c2's now
    assert by["s3://bkt/b"].held_by == "repository c2 (lakefs_b) on s3://bkt/b/c"
    assert any("s3://bkt/b (of repository b, lakefs_default) is in use again" in c for c in changes), changes


def test_a_repository_recreated_on_another_namespace_orphans_the_old_one(discovery):
    refresh(discovery, listings(lakefs_default=({"a": "s3://bkt/a1"}, A), lakefs_b=({}, B)), now=T0)
    refresh(discovery, listings(lakefs_default=({"a": "s3://bkt/a2"}, A), lakefs_b=({}, B)), now=T0 + timedelta(1))
    assert orphans(discovery) == [("s3://bkt/a1", "lakefs_default", "a")]
    assert (
        read_discovered(discovery.state_file).namespaces["lakefs_default"]["a"].first_seen
        == (T0 + timedelta(1)).isoformat()
    )


def test_a_connection_pointed_at_another_lakefs_orphans_nothing(discovery):
    refresh(discovery, listings(lakefs_default=({"a": "s3://bkt/a"}, A), lakefs_b=({}, B)), now=T0)
    other = "http://elsewhere:8000/api/v1"
    _, changes = refresh(
        discovery, listings(lakefs_default=({"z": "s3://bkt/z"}, other), lakefs_b=({}, B)), now=T0 + timedelta(1)
    )
    assert orphans(discovery) == []
    assert f"lakefs_default: now {other} (was {A})" in changes[-1]


def test_repository_ids_without_namespaces_keep_the_record_as_it_was(discovery):
    refresh(discovery, listings(lakefs_default=({"a": "s3://bkt/a"}, A), lakefs_b=({}, B)), now=T0)
    refresh(discovery, lambda conn: [], now=T0 + timedelta(1))  # a listing of ids only says nothing of namespaces
    found = read_discovered(discovery.state_file)
    assert found.orphans == []
    assert found.namespaces["lakefs_default"]["a"].namespace == "s3://bkt/a"


def test_an_orphan_is_measured_by_a_bounded_listing(discovery, tmp_path):
    root = tmp_path / "block"
    for i in range(5):
        (root / "ns" / "gone" / "data").mkdir(parents=True, exist_ok=True)
        (root / "ns" / "gone" / "data" / f"o{i}").write_bytes(b"x" * (i + 1))
    (root / "ns" / "empty").mkdir(parents=True)
    refresh(
        discovery,
        listings(
            lakefs_default=({"g": "local://ns/gone", "e": "local://ns/empty", "u": "s3://x/u"}, A), lakefs_b=({}, B)
        ),
        now=T0,
    )
    refresh(discovery, listings(lakefs_default=({}, A), lakefs_b=({}, B)), now=T0 + timedelta(1))

    def open_ns(o):
        if o.namespace.startswith("s3://"):
            raise OSError("the store did not answer")
        return LocalStorage(root / o.namespace.removeprefix("local://"))

    found = read_discovered(discovery.state_file).orphans
    measured = measure_orphans(found, open_ns, T0 + timedelta(1))
    kept = {o.namespace: o for o in record_orphans(discovery, measured)}
    assert set(kept) == {"local://ns/gone", "s3://x/u"}  # the empty one is no longer reported
    gone = kept["local://ns/gone"]
    assert (gone.objects, gone.bytes, gone.complete) == (5, 15, True)
    assert gone.size_text() == "5 objects, 15 bytes"
    assert "OSError: the store did not answer" in kept["s3://x/u"].size_text()
    assert measure(LocalStorage(root / "ns" / "gone"), limit=3) == (3, 6, False)
    assert "at least" in gone.__class__(**{**gone.to_doc(), "complete": False}).size_text()
    assert f"{MEASURE_LIMIT:,} objects" in gone.__class__(**{**gone.to_doc(), "complete": False}).size_text()
    # measured a day ago at most: not listed again; its failed measure is tried again at once
    again = measure_orphans(list(kept.values()), open_ns, T0 + timedelta(days=1, hours=1))
    assert {o.namespace: o.measured_at for o in again}["local://ns/gone"] == gone.measured_at


def test_a_listing_of_repositories_is_every_page_or_an_error():
    from types import SimpleNamespace

    from lakefs_gc.errors import LakeFSGCError
    from lakefs_gc.lakefs.reads import LakeFSReads

    def repo(i):
        return SimpleNamespace(id=f"r{i}", storage_namespace=f"s3://bkt/r{i}/")

    def pages(*given):
        it = iter(given)

        class Reads(LakeFSReads):
            def call(self, what, fn, *args, **kwargs):
                return fn(*args, **kwargs)

        reads = Reads()
        reads.repositories = SimpleNamespace(list_repositories=lambda after, amount: next(it))
        return reads

    def page(ids, more, next_offset=""):
        return SimpleNamespace(
            results=[repo(i) for i in ids], pagination=SimpleNamespace(has_more=more, next_offset=next_offset)
        )

    whole = pages(page([1, 2], True, "r2"), page([3], False))
    assert whole.repository_namespaces() == {"r1": "s3://bkt/r1/", "r2": "s3://bkt/r2/", "r3": "s3://bkt/r3/"}
    cut = pages(page([1, 2], True, ""))  # more, but nowhere to go on from: never taken as the whole
    with pytest.raises(LakeFSGCError, match="the listing is incomplete"):
        cut.repository_namespaces()
