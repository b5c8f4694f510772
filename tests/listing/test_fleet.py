"""One inventory for a fleet (``lakefs_gc.listing.fleet``): per location the entries read, the newest inventory
that verifies and for which repositories, each data file checked once however many namespaces read it; the
refresh's record of it (``lakefs_gc.config.discovered``) read back, kept across a refresh, and never costing
the fleet its DAGs when it does not read."""

from __future__ import annotations

import collections
import json
from datetime import UTC, datetime, timedelta

import pytest

from lakefs_gc.config import load_config
from lakefs_gc.config.discovered import (
    InventoryReader,
    InventoryRecord,
    read_discovered,
    record_inventories,
    refresh,
)
from lakefs_gc.inventory import InventorySource
from lakefs_gc.listing import fleet
from lakefs_gc.listing.fleet import FleetReader, check_fleet
from lakefs_gc.spark.runtime import StorageRef
from lakefs_gc.storage import open_storage
from lakefs_gc.timestamps import iso
from tests.inventory.builders import s3_inventory

NOW = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)
PREFIX = "inventories/lakefs-data/gc-daily"
LOCATION = f"s3://dest/{PREFIX}"
FILES = (b"lakefs-data,repo1/data/a,3,2024-01-01T00:00:00.000Z,abc,STANDARD\n", b"x\n")


class Counting:
    """A storage that counts the reads of each key (stat, content_md5, get)."""

    def __init__(self, storage):
        self._storage = storage
        self.reads = collections.Counter()

    def __getattr__(self, name):
        return getattr(self._storage, name)

    def stat(self, key):
        self.reads["stat", key] += 1
        return self._storage.stat(key)

    def content_md5(self, key):
        self.reads["md5", key] += 1
        return self._storage.content_md5(key)

    def get(self, key):
        self.reads["get", key] += 1
        return self._storage.get(key)


def _reader(repo: str, namespace: str | None, location: str = LOCATION) -> FleetReader:
    return FleetReader(
        repository=repo,
        location=location,
        name="",
        storage_conn_id="aws_default",
        max_age=timedelta(days=8),
        source_prefix="",
        namespace=StorageRef(namespace, None) if namespace else None,
        problem=None if namespace else "lakeFS answered 404: repository not found",
    )


@pytest.fixture
def destination(tmp_path, monkeypatch):
    """The destination bucket (a local folder, counting its reads), as the fleet check opens each location."""
    store = Counting(open_storage("local://inventories", None, tmp_path))
    opened = []

    def source_at(location, name, namespace):
        opened.append((location, name, namespace.namespace))
        return InventorySource("s3", store, PREFIX, name), None

    monkeypatch.setattr(fleet, "source_at", source_at)
    return store, opened


def test_the_newest_inventory_is_recorded_per_location_with_whom_it_verifies_for(destination):
    store, opened = destination
    older = s3_inventory(store, NOW - timedelta(days=1), files=FILES)
    newer = s3_inventory(store, NOW - timedelta(hours=1), files=FILES)
    store.delete(json.loads(store.get(newer))["files"][0]["key"])  # the newer one: partial
    store.reads.clear()
    readers = [
        _reader("repo2", "s3://lakefs-data/repo2"),
        _reader("repo1", "s3://lakefs-data/repo1"),
        _reader("repo3", "s3://other-bucket/repo3"),  # shares the location, not the bucket
        _reader("repo4", None),  # its namespace was not found
    ]
    [rec] = check_fleet(readers, NOW)
    older_id, older_time = store.full_uri(older), iso(NOW - timedelta(days=1))
    assert (rec.location, rec.storage_conn_id, rec.checked_at) == (LOCATION, "aws_default", iso(NOW))
    assert (rec.inventory_id, rec.inventory_time, rec.verified) == (older_id, older_time, False)
    assert rec.repositories["repo1"] == rec.repositories["repo2"] == InventoryReader(older_id, older_time)
    assert (
        "it lists bucket 'lakefs-data', not the namespace's bucket 'other-bucket'" in rec.repositories["repo3"].reason
    )
    assert rec.repositories["repo4"].reason == "its namespace was not found: lakeFS answered 404: repository not found"
    assert rec.reason.startswith("repo3: no usable S3 Inventory for s3://other-bucket/repo3 under ")
    assert rec.reason.endswith(" (and 1 more)")
    assert rec.line().startswith(f"inventory {LOCATION}: newest {older_id} (T_inv {older_time}); not for all its 4 ")
    # the destination was opened once, and each file read once for the three namespaces checked
    assert opened == [(LOCATION, "", "s3://lakefs-data/repo1")]
    assert store.reads, "nothing was read"
    assert max(store.reads.values()) == 1, store.reads


def test_a_location_every_reader_verifies_is_verified_and_one_with_none_usable_says_why(destination):
    store, _ = destination
    manifest = s3_inventory(store, NOW - timedelta(hours=2), files=FILES)
    [rec] = check_fleet([_reader("repo1", "s3://lakefs-data/repo1"), _reader("repo2", "s3://lakefs-data/repo2")], NOW)
    assert (rec.inventory_id, rec.verified, rec.reason) == (store.full_uri(manifest), True, None)
    assert rec.line() == (
        f"inventory {LOCATION}: newest {store.full_uri(manifest)} (T_inv {iso(NOW - timedelta(hours=2))}), "
        "verified for its 2 repositories"
    )
    [stale] = check_fleet([_reader("repo1", "s3://lakefs-data/repo1")], NOW + timedelta(days=9))
    assert (stale.inventory_id, stale.verified) == (None, False)
    assert "more than max_age (8 days)" in stale.reason
    assert stale.line().startswith(f"inventory {LOCATION}: none usable for its 1 repository: repo1: no usable")


def test_the_store_failing_is_recorded_as_such_for_its_location_only(destination, monkeypatch):
    store, _ = destination
    s3_inventory(store, NOW - timedelta(hours=2), files=FILES)

    def down(prefix=""):
        raise OSError("connection refused")

    monkeypatch.setattr(store, "list_prefixes", down)
    [rec] = check_fleet([_reader("repo1", "s3://lakefs-data/repo1")], NOW)
    assert rec.repositories["repo1"].reason == "cannot be checked: OSError: connection refused"
    assert not rec.verified


FILE = """
repositories: []
discover:
  sources:
    - include: ["fleet-*"]
"""


def test_the_refresh_keeps_the_record_a_page_reads_and_a_bad_one_costs_no_dag(tmp_path):
    cfg_file = tmp_path / "gc.yaml"
    cfg_file.write_text(FILE)
    discovery = load_config(cfg_file).discovery
    refresh(discovery, lambda conn: ["fleet-a"])
    rec = InventoryRecord(
        location=LOCATION,
        name="",
        storage_conn_id="aws_default",
        checked_at=iso(NOW),
        inventory_id="s3://dest/x/manifest.json",
        inventory_time=iso(NOW),
        verified=True,
        reason=None,
        repositories={"fleet-a": InventoryReader("s3://dest/x/manifest.json", iso(NOW))},
    )
    record_inventories(discovery, [rec])
    refresh(discovery, lambda conn: ["fleet-a"])  # the next refresh keeps it until it records its own
    found = read_discovered(discovery.state_file)
    assert found.inventories == [rec]
    assert found.inventory_of("fleet-a") == rec
    assert found.inventory_of("fleet-b") is None
    doc = json.loads(discovery.state_file.read_text())
    doc["inventories"][0]["verified"] = "yes"
    discovery.state_file.write_text(json.dumps(doc))
    assert read_discovered(discovery.state_file).inventories == []
    assert [r.repository for r in load_config(cfg_file).repositories] == ["fleet-a"]


def test_two_namespaces_of_one_bucket_read_one_s3_inventory_on_moto(moto_server):
    """Without stand-ins: the location opened through the namespace's connection, on moto."""
    dest = moto_server.create_bucket("fleet-inventories")
    storage = open_storage(f"s3://{dest}", moto_server.s3_options())
    now = datetime.now(UTC).replace(microsecond=0)
    manifest = s3_inventory(storage, now - timedelta(hours=1), files=FILES)
    readers = [
        FleetReader(
            repository=repo,
            location=f"s3://{dest}/{PREFIX}/",
            name="",
            storage_conn_id="aws_default",
            max_age=timedelta(days=8),
            source_prefix="",
            namespace=StorageRef(f"s3://lakefs-data/{repo}", moto_server.s3_options()),
        )
        for repo in ("repo1", "repo2")
    ]
    [rec] = check_fleet(readers, now)
    assert (rec.location, rec.inventory_id, rec.verified) == (f"s3://{dest}/{PREFIX}", storage.full_uri(manifest), True)
    assert sorted(rec.repositories) == ["repo1", "repo2"]
