"""An inventory lists a namespace only when everything checks: each bad case refuses with its reason on
one line; the newest complete inventory is chosen, saying why each newer one was passed over.

Inventories are written in each provider's layout into a local folder standing for the destination
bucket (tests/inventory/builders.py); tests/inventory/test_emulators.py does the same on the
providers' emulators."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lakefs_gc.errors import Refusal
from lakefs_gc.inventory import InventoryRefused, InventorySource, newest_complete, verify
from lakefs_gc.storage import LocalStorage, StorageError
from tests.inventory.builders import azure_inventory, gcs_inventory, s3_inventory

NOW = datetime(2024, 3, 5, 12, tzinfo=UTC)
TAKEN = datetime(2024, 3, 4, 1, tzinfo=UTC)
S3_NS = "s3://lakefs-data/repo1"
AZ_NS = "https://lakefsdata.blob.core.windows.net/lakefs/repo1"
GS_NS = "gs://lakefs-data/repo1"


@pytest.fixture
def store(tmp_path):
    return LocalStorage(tmp_path)


def load(store, provider, key):
    return InventorySource(provider, store).load(key)


def refusal(store, provider, key, namespace, **kw) -> str:
    with pytest.raises(InventoryRefused) as err:
        verify(load(store, provider, key), store, namespace, kw.pop("now", NOW), **kw)
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(f"inventory {store.full_uri(key)}: ")
    return text


def test_the_refusal_is_a_refusal_not_a_retry():
    assert issubclass(InventoryRefused, Refusal)


def test_a_good_inventory_of_each_provider_verifies(store):
    key = s3_inventory(store, TAKEN)
    v = verify(load(store, "s3", key), store, S3_NS, NOW, source_prefix="")
    assert (v.data_prefix, v.unchecked_md5, v.manifest.snapshot_time) == ("repo1/data/", (), TAKEN)
    key = azure_inventory(store, TAKEN)
    assert verify(load(store, "azure", key), store, AZ_NS, NOW).data_prefix == "lakefs/repo1/data/"
    key = gcs_inventory(store, TAKEN)
    assert verify(load(store, "gs", key), store, GS_NS, NOW).data_prefix == "repo1/data/"


def test_s3_checksum_mismatch(store):
    key = s3_inventory(store, TAKEN, checksum="0123456789abcdef0123456789abcdef")
    assert "its checksum file says '0123456789abcdef0123456789abcdef' but the manifest's MD5 is" in refusal(
        store, "s3", key, S3_NS, source_prefix=""
    )


def test_s3_manifest_changed_after_its_checksum(store):
    key = s3_inventory(store, TAKEN)
    store.put(key, store.get(key).replace(b"lakefs-data", b"lakefs-dat\\u0061"))  # same JSON, other bytes
    assert "the manifest was changed or half-written" in refusal(store, "s3", key, S3_NS, source_prefix="")


def test_checksum_file_missing(store):
    key = s3_inventory(store, TAKEN)
    store.delete(key.replace("manifest.json", "manifest.checksum"))
    assert "manifest.checksum is missing: the inventory is incomplete" in refusal(
        store, "s3", key, S3_NS, source_prefix=""
    )
    key = azure_inventory(store, TAKEN)
    store.delete(key.replace("-manifest.json", "-manifest.checksum"))
    assert "lakefs-gc-manifest.checksum is missing" in refusal(store, "azure", key, AZ_NS)


def test_data_file_missing(store):
    key = s3_inventory(store, TAKEN, files=(b"a", b"b"))
    data = load(store, "s3", key).files[1].key
    store.delete(data)
    assert f"its data file {store.full_uri(data)} is missing: the inventory is partial" in refusal(
        store, "s3", key, S3_NS, source_prefix=""
    )


def test_data_file_of_another_size(store):
    key = s3_inventory(store, TAKEN, files=(b"abc",))
    data = load(store, "s3", key).files[0].key
    store.put(data, b"ab")
    assert "is 2 bytes, the manifest says 3 bytes" in refusal(store, "s3", key, S3_NS, source_prefix="")
    key = azure_inventory(store, TAKEN, files=(b"xyz",))
    store.put(load(store, "azure", key).files[0].key, b"xyzw")
    assert "is 4 bytes, the manifest says 3 bytes" in refusal(store, "azure", key, AZ_NS)


def test_data_file_of_another_md5(store):
    key = s3_inventory(store, TAKEN, files=(b"abc",))
    store.put(load(store, "s3", key).files[0].key, b"abd")  # same size, other bytes
    text = refusal(store, "s3", key, S3_NS, source_prefix="")
    assert "the manifest says 900150983cd24fb0d6963f7d28e17f72: the file was changed" in text  # MD5 of b"abc"


def test_field_missing_from_the_schema(store):
    key = s3_inventory(store, TAKEN, schema="Bucket, Key, Size, ETag")
    text = refusal(store, "s3", key, S3_NS, source_prefix="")
    assert "its schema lacks LastModifiedDate, which the GC needs (it has Bucket, Key, Size, ETag): add" in text
    assert "the OptionalFields of the S3 inventory configuration" in text
    key = azure_inventory(store, TAKEN, edit=lambda m: m["ruleDefinition"].update(schemaFields=["Name"]))
    assert "lacks Content-Length, Last-Modified" in refusal(store, "azure", key, AZ_NS)
    edit = lambda m: m["report_config"]["object_metadata_report_options"].update(metadata_fields=["name", "updated"])
    key = gcs_inventory(store, TAKEN, edit=edit)
    assert "lacks size, which the GC needs" in refusal(store, "gs", key, GS_NS)


def test_checksum_field_is_optional(store):
    key = s3_inventory(store, TAKEN, schema="Bucket, Key, Size, LastModifiedDate")
    assert verify(load(store, "s3", key), store, S3_NS, NOW, source_prefix="").manifest.fields.get("checksum") is None


def test_another_source_bucket_or_account(store):
    key = s3_inventory(store, TAKEN, source_bucket="elsewhere")
    assert "it lists bucket 'elsewhere', not the namespace's bucket 'lakefs-data'" in refusal(
        store, "s3", key, S3_NS, source_prefix=""
    )
    key = azure_inventory(store, TAKEN, endpoint="https://otheraccount.blob.core.windows.net")
    assert "it lists storage account 'otheraccount', not the namespace's 'lakefsdata'" in refusal(
        store, "azure", key, AZ_NS
    )
    key = gcs_inventory(store, TAKEN, source_bucket="elsewhere")
    assert "it lists bucket 'elsewhere'" in refusal(store, "gs", key, GS_NS)


def test_a_source_prefix_that_does_not_cover_the_data_prefix(store):
    key = s3_inventory(store, TAKEN)
    assert "it covers prefix 'repo1/data/s1/' only, not the namespace's 'repo1/data/'" in refusal(
        store, "s3", key, S3_NS, source_prefix="repo1/data/s1/"
    )
    verify(load(store, "s3", key), store, S3_NS, NOW, source_prefix="repo")  # a prefix of it covers it
    key = azure_inventory(store, TAKEN, prefix_match=("lakefs/repo2", "other/repo1"))
    assert "it covers prefixes 'lakefs/repo2', 'other/repo1' only, not the namespace's 'lakefs/repo1/data/'" in refusal(
        store, "azure", key, AZ_NS
    )
    key = azure_inventory(
        store,
        TAKEN,
        prefix_match=("lakefs",),
        edit=lambda m: m["ruleDefinition"]["filters"].update(excludePrefix=["lakefs/repo1/data/tmp"]),
    )
    assert "it excludes 'lakefs/repo1/data/tmp', which overlaps the namespace's 'lakefs/repo1/data/'" in refusal(
        store, "azure", key, AZ_NS
    )


def test_s3_prefix_unknown_refused(store):
    """An S3 manifest does not name its configuration's prefix filter: without it, no guess."""
    key = s3_inventory(store, TAKEN)
    assert "does not say which prefix its inventory configuration filters on" in refusal(store, "s3", key, S3_NS)


def test_older_than_max_age(store):
    key = s3_inventory(store, NOW - timedelta(days=8, hours=1))
    text = refusal(store, "s3", key, S3_NS, source_prefix="")
    assert "its T_inv 2024-02-26T11:00:00.000000Z is 8.0 days old, more than max_age (8 days)" in text
    verify(load(store, "s3", key), store, S3_NS, NOW, source_prefix="", max_age=timedelta(days=9))
    assert "more than max_age (1.5 days)" in refusal(
        store, "s3", key, S3_NS, source_prefix="", max_age=timedelta(days=1.5)
    )


def test_taken_after_now(store):
    key = s3_inventory(store, NOW + timedelta(minutes=1))
    assert "is after now (2024-03-05T12:00:00.000000Z): check the clocks" in refusal(
        store, "s3", key, S3_NS, source_prefix=""
    )


@pytest.mark.parametrize(
    ("status", "reason"),
    [("Pending", "the run is still going; wait for it to finish"), ("Failed", "the run did not finish")],
)
def test_azure_run_not_succeeded(store, status, reason):
    key = azure_inventory(store, TAKEN, status=status)
    assert f"its run's status is '{status}', not 'Succeeded': {reason}" in refusal(store, "azure", key, AZ_NS)


def test_gcs_shards_missing(store):
    key = gcs_inventory(store, TAKEN, files=(b"a", b"b"), edit=lambda m: m.update(shard_count=3))
    assert "it names 2 shards but says it has 3 shards: the report is partial" in refusal(store, "gs", key, GS_NS)
    key = gcs_inventory(store, TAKEN - timedelta(hours=1), files=(b"a", b"b"))
    store.delete(load(store, "gs", key).files[1].key)
    assert "_1.csv is missing: the inventory is partial" in refusal(store, "gs", key, GS_NS)


def test_an_inventory_of_another_store_or_a_local_namespace(store):
    key = s3_inventory(store, TAKEN)
    assert "gs://lakefs-data/repo1 is not a namespace of the store this S3 Inventory lists" in refusal(
        store, "s3", key, GS_NS, source_prefix=""
    )
    with pytest.raises(InventoryRefused, match="a local:// namespace: no provider writes inventories"):
        verify(load(store, "s3", key), store, "local:///tmp/x", NOW)


def test_newest_complete_skips_a_partial_newer_one(store):
    older = s3_inventory(store, TAKEN - timedelta(days=1))
    newer = s3_inventory(store, TAKEN, files=(b"a", b"b"))
    store.delete(load(store, "s3", newer).files[0].key)
    chosen = newest_complete(
        InventorySource("s3", store, "inventories/lakefs-data/gc-daily"), S3_NS, NOW, source_prefix=""
    )
    assert chosen.inventory.manifest.id == store.full_uri(older)
    [(skipped, reason)] = chosen.skipped
    assert skipped == store.full_uri(newer)
    assert "-0.csv is missing: the inventory is partial" in reason
    summary = chosen.summary()
    assert summary.startswith(f"S3 Inventory {store.full_uri(older)} (T_inv 2024-03-03T01:00:00.000000Z, 1 data file)")
    assert "; passed over 1 newer inventory: inventory " in summary


def test_newest_complete_skips_a_pending_azure_run_and_a_corrupt_gcs_manifest(store):
    azure_inventory(store, TAKEN - timedelta(days=1))
    azure_inventory(store, TAKEN, status="Pending")
    chosen = newest_complete(InventorySource("azure", store, "", "lakefs-gc"), AZ_NS, NOW)
    assert chosen.inventory.manifest.snapshot_time == TAKEN - timedelta(days=1)
    assert "'Pending'" in chosen.skipped[0][1]
    good = gcs_inventory(store, TAKEN - timedelta(days=2))
    bad = gcs_inventory(store, TAKEN)
    store.put(bad, store.get(bad)[:40])
    chosen = newest_complete(InventorySource("gs", store, "inventory"), GS_NS, NOW)
    assert chosen.inventory.manifest.manifest_key == good
    assert "the manifest is not valid JSON" in chosen.skipped[0][1]


def test_newest_complete_stops_at_the_first_stale_one(store):
    s3_inventory(store, NOW - timedelta(days=9))
    s3_inventory(store, NOW - timedelta(days=10))
    newest = s3_inventory(store, TAKEN, source_bucket="elsewhere")
    with pytest.raises(InventoryRefused) as err:
        newest_complete(InventorySource("s3", store, "inventories/lakefs-data/gc-daily"), S3_NS, NOW, source_prefix="")
    text = str(err.value)
    assert text.startswith(
        f"no usable S3 Inventory for {S3_NS} under {store.full_uri('inventories/lakefs-data/gc-daily')} "
        "(2 inventories refused, newest first): "
    )
    assert f"inventory {store.full_uri(newest)}: it lists bucket 'elsewhere'" in text
    assert "9.0 days old" in text
    assert "10.0 days old" not in text  # not read: older than a stale one
    assert "\n" not in text


def test_no_inventory_at_all(store):
    with pytest.raises(
        InventoryRefused,
        match=r"no Azure Blob Inventory under local://.*: check the inventory's destination \(bucket, prefix, rule name\)",
    ):
        newest_complete(InventorySource("azure", store, "", "lakefs-gc"), AZ_NS, NOW)


class FailingReads(LocalStorage):
    def get(self, key: str) -> bytes:
        raise StorageError(f"503 reading {key}")


def test_a_storage_error_is_not_a_refusal(tmp_path):
    """An unreadable store fails the task (retried); it must not read as a bad inventory."""
    s3_inventory(LocalStorage(tmp_path), TAKEN)
    with pytest.raises(StorageError, match="503"):
        newest_complete(
            InventorySource("s3", FailingReads(tmp_path), "inventories/lakefs-data/gc-daily"),
            S3_NS,
            NOW,
            source_prefix="",
        )
