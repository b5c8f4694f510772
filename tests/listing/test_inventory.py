"""``lakefs_gc.listing.inventory``: an inventory's rows turned into the listing's (address, size,
last_modified_ms, checksum), keeping what the listing would list of a slice the inventory covers;
the settings and the location that name the inventory. (Whole runs: tests/steps/test_list_from_inventory.py.)"""

from __future__ import annotations

import gzip
import math
from datetime import UTC, datetime, timedelta

import pytest

from lakefs_gc.contract import RunSettings
from lakefs_gc.errors import SettingsError
from lakefs_gc.inventory import InventoryRefused, InventorySource
from lakefs_gc.lakefs import xid
from lakefs_gc.listing.inventory import TOP_UP_MARGIN, InventoryRead, source_of, topped_up
from lakefs_gc.spark.runtime import StorageRef
from lakefs_gc.storage import open_storage
from tests.inventory.builders import s3_inventory

T_INV = datetime(2026, 3, 4, 1, 0, tzinfo=UTC)
CUTOFF = T_INV + timedelta(hours=5, milliseconds=500.7)
PREFIX = "inventories/lakefs-data/gc-daily"


def slice_at(t: datetime, tail: int = 1) -> str:
    """A descending slice id made at ``t`` (lakeFS's newDescendingID)."""
    seconds = (xid.UNIX_YEAR_4000 - int(t.timestamp())) % 2**32
    return xid.encode(seconds.to_bytes(4, "big") + tail.to_bytes(8, "big"))


def ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


def _row(key: str, size: int, modified: datetime, etag: str = "e") -> str:
    return f'"lakefs-data","{key}","{size}","{modified.isoformat(timespec="milliseconds")[:-6]}Z","{etag}","STANDARD"\n'


@pytest.fixture
def read(tmp_path):
    """An S3 Inventory under a local folder, and what the listing makes of it for namespace s3://lakefs-data/repo1."""

    def make(rows: list[str], unchecked: bool = False) -> tuple[InventoryRead, object]:
        store = open_storage("local://inventories", None, tmp_path)
        key = s3_inventory(store, T_INV, files=(gzip.compress("".join(rows).encode()),))
        manifest = InventorySource("s3", store, PREFIX).load(key)
        return InventoryRead(
            destination=StorageRef("local://inventories", None, str(tmp_path)),
            manifest=manifest,
            data_prefix="repo1/data/",
            cutoff_s=CUTOFF.timestamp(),
            top_up_after_s=(T_INV - TOP_UP_MARGIN).timestamp(),
            unchecked_md5=(manifest.files[0].key,) if unchecked else (),
        ), store

    return make


def test_rows_become_the_listing_of_the_slices_the_inventory_covers(read):
    old, young, too_young = slice_at(T_INV - timedelta(days=3)), slice_at(T_INV), slice_at(CUTOFF + timedelta(hours=1))
    before = T_INV - timedelta(days=1)
    just = datetime.fromtimestamp(math.floor(CUTOFF.timestamp() * 1000) / 1000, UTC)  # the cutoff, in whole ms
    inv, _ = read(
        [
            _row(f"repo1/data/{old}/a", 3, before, '"etag-a"'),
            _row(f"repo1/data/{old}/b%2Cc", 4, just - timedelta(milliseconds=1)),  # URL-encoded: data/<old>/b,c
            _row(f"repo1/data/{old}/late", 5, just),  # at the cutoff: not older than it
            _row(f"repo1/data/{young}/d", 6, before),  # a slice created after T_inv (less the margin): the top-up's
            _row(f"repo1/data/{too_young}/e", 7, before),  # created after the cutoff: skipped, as the listing does
            _row("repo1/data/loose", 8, before),  # loose under data/: the inventory's
            _row("repo1/data/legacy-slice/f", 9, before),  # not an xid: the inventory's
            _row("repo1/_lakefs/g", 10, before),  # not under data/
            _row("repo10/data/h", 11, before),  # another namespace sharing the prefix's start
            _row("repo1/root-object", 12, before),  # the root: LIST's
        ]
    )
    assert topped_up(young, inv.top_up_after_s)
    assert not topped_up(old, inv.top_up_after_s)
    assert not topped_up("legacy-slice", inv.top_up_after_s)
    rows = [r for b in inv.batches([f.key for f in inv.files]) for r in b.to_pylist()]
    assert rows == [
        {"address": f"data/{old}/a", "size": 3, "last_modified_ms": ms(before), "checksum": "etag-a"},
        {"address": f"data/{old}/b,c", "size": 4, "last_modified_ms": ms(just) - 1, "checksum": "e"},
        {"address": "data/loose", "size": 8, "last_modified_ms": ms(before), "checksum": "e"},
        {"address": "data/legacy-slice/f", "size": 9, "last_modified_ms": ms(before), "checksum": "e"},
    ]


class _Count:
    def __init__(self):
        self.n = 0

    def add(self, n):
        self.n += n


def test_the_rows_not_older_than_the_cutoff_are_counted_as_deferred_in_the_slices_it_lists(read, tmp_path):
    """Deferred: rows of the slices the inventory lists (and loose ones) left out as not older than the cutoff;
    never those of a slice it leaves to LIST or skips, nor those outside data/. The engine of the task
    returns the count beside the rows read."""
    from lakefs_gc.engine.local import LocalEngine
    from lakefs_gc.placement import Placement

    old, young, too_young = slice_at(T_INV - timedelta(days=3)), slice_at(T_INV), slice_at(CUTOFF + timedelta(hours=1))
    before, after = T_INV - timedelta(days=1), CUTOFF + timedelta(minutes=1)
    just = datetime.fromtimestamp(math.floor(CUTOFF.timestamp() * 1000) / 1000, UTC)
    inv, _ = read(
        [
            _row(f"repo1/data/{old}/a", 3, before),  # listed
            _row(f"repo1/data/{old}/at-cutoff", 4, just),  # deferred: at the cutoff is not older than it
            _row(f"repo1/data/{old}/new", 5, after),  # deferred
            _row("repo1/data/loose-new", 6, after),  # deferred: loose under data/ is the inventory's
            _row(f"repo1/data/{young}/d", 7, after),  # the top-up's slice: LIST lists it, not deferred here
            _row(f"repo1/data/{too_young}/e", 8, after),  # a slice created after the cutoff: skipped
            _row("repo1/_lakefs/f", 9, after),  # not under data/
        ]
    )
    read_rows, deferred = _Count(), _Count()
    rows = [r["address"] for b in inv.batches([f.key for f in inv.files], read_rows, deferred) for r in b.to_pylist()]
    assert rows == [f"data/{old}/a"]
    assert (read_rows.n, deferred.n) == (7, 3)  # rows read: every row of the data file
    engine = LocalEngine(inv.destination, 1, Placement(), Placement().in_task_max_keys)
    out = tmp_path / "listed"
    assert engine.read_inventory_into(str(out), inv, [], CUTOFF.timestamp()) == (1, 3, 7, 3)


def test_a_data_file_its_store_does_not_vouch_for_is_hashed_and_refused_when_changed(read):
    slice_id = slice_at(T_INV - timedelta(days=3))
    inv, store = read([_row(f"repo1/data/{slice_id}/a", 3, T_INV - timedelta(days=1))], unchecked=True)
    counted = []

    class Count:
        def add(self, n):
            counted.append(n)

    assert [b.num_rows for b in inv.batches([f.key for f in inv.files], Count())] == [1]
    assert sum(counted) == 1
    data = inv.files[0].key
    store.put(data, gzip.compress(_row(f"repo1/data/{slice_id}/b", 3, T_INV).encode()))
    with pytest.raises(InventoryRefused, match=r"its data file .* has MD5 [0-9a-f]{32}, the manifest says"):
        list(inv.batches([data]))


def _settings(location: str, **kw) -> RunSettings:
    return RunSettings(listing_source="inventory", inventory_location=location, **kw)


@pytest.mark.parametrize(
    ("location", "error", "message"),
    [
        ("local://inventories", SettingsError, r"is local://: no store writes inventories there"),
        ("ftp://inventories/x", SettingsError, r"is not where an inventory is delivered: unsupported storage"),
        ("gs://inventories/x", InventoryRefused, r"it is on gs, the namespace s3://lakefs-data/repo1 on s3"),
    ],
)
def test_a_location_that_cannot_hold_the_namespaces_inventory(location, error, message):
    with pytest.raises(error, match=message):
        source_of(_settings(location), StorageRef("s3://lakefs-data/repo1", None))


def test_the_location_is_opened_with_the_namespaces_connection():
    source, dest = source_of(
        _settings("s3://inventories/reports/lakefs-data/gc-daily/", inventory_name=" "),
        StorageRef("s3://lakefs-data/repo1", None),
    )
    assert (source.provider, source.prefix, source.name, dest.namespace) == (
        "s3",
        "reports/lakefs-data/gc-daily",
        "",
        "s3://inventories",
    )


def test_the_settings_refuse_an_inventory_without_its_location_or_an_unknown_source():
    with pytest.raises(SettingsError, match=r"Param 'inventory_location' is empty, but listing_source is inventory"):
        _settings(" ")
    with pytest.raises(SettingsError, match=r"Param 'listing_source' must be one of list, inventory, got 'both'"):
        RunSettings(listing_source="both")
    with pytest.raises(SettingsError, match=r"Param 'inventory_fallback' must be one of none, list, got 'yes'"):
        RunSettings(inventory_fallback="yes")
    with pytest.raises(SettingsError, match=r"Param 'inventory_max_age_days' must be between 0.0 and 3650.0"):
        RunSettings(inventory_max_age_days=-1)
    assert RunSettings().listing_source == "list"  # nothing changes for a run that does not ask
