"""Each provider's inventory, written in its layout on its stand-in (S3 on moto server, Azure Blob on
Azurite, GCS on fake-gcs-server): the newest complete one is found and verified through the store's
own adapter, a newer partial one is passed over, and a data file cut short is refused."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from lakefs_gc.inventory import InventoryRefused, InventorySource, newest_complete
from lakefs_gc.storage import open_storage
from tests.inventory.builders import azure_inventory, gcs_inventory, s3_inventory

NOW = datetime.now(UTC).replace(microsecond=0)
_n = itertools.count()


def _check(source: InventorySource, namespace: str, older: str, newer: str, **kw) -> None:
    """``older`` is chosen over the partial ``newer``; then, cut short, ``older`` is refused too."""
    storage = source.storage
    storage.delete(source.load(newer).files[0].key)  # the newer one loses a data file: partial
    chosen = newest_complete(source, namespace, NOW, **kw)
    assert chosen.inventory.manifest.manifest_key == older
    assert [uri for uri, _ in chosen.skipped] == [storage.full_uri(newer)]
    assert "is missing: the inventory is partial" in chosen.skipped[0][1]
    data = chosen.inventory.manifest.files[0]
    storage.put(data.key, storage.get(data.key)[:-1])
    with pytest.raises(
        InventoryRefused,
        match=r"2 inventories refused, newest first\).*, the manifest says [0-9]+ bytes: the file was changed or cut short",
    ):
        newest_complete(source, namespace, NOW, **kw)


def test_s3_inventory_on_moto(moto_server):
    dest = moto_server.create_bucket(f"inventories-{next(_n)}")
    storage = open_storage(f"s3://{dest}", moto_server.s3_options())
    files = (b"lakefs-data,repo1/data/a,3,2024-01-01T00:00:00.000Z,abc,STANDARD\n", b"x\n")
    older = s3_inventory(storage, NOW - timedelta(days=1), files=files)
    newer = s3_inventory(storage, NOW - timedelta(hours=1), files=files)
    source = InventorySource("s3", storage, "inventories/lakefs-data/gc-daily")
    chosen = newest_complete(source, "s3://lakefs-data/repo1", NOW, source_prefix="")
    assert chosen.inventory.unchecked_md5 == ()  # moto's ETags are the files' MD5: each was compared
    assert chosen.inventory.manifest.manifest_key == newer
    _check(source, "s3://lakefs-data/repo1", older, newer, source_prefix="")


def test_azure_inventory_on_azurite(azurite):
    container = azurite.create(f"inventories-{next(_n)}")
    storage = open_storage(azurite.namespace(container, ""), azurite.options())
    endpoint = azurite.account_url  # http://127.0.0.1:<port>/devstoreaccount1: the account is the path's
    older = azure_inventory(storage, NOW - timedelta(days=1), endpoint=endpoint, files=(b"a\n", b"b\n"))
    newer = azure_inventory(storage, NOW - timedelta(hours=1), endpoint=endpoint, files=(b"a\n", b"b\n"))
    namespace = azurite.namespace("lakefs", "repo1")  # https://devstoreaccount1.azurite.test/lakefs/repo1
    source = InventorySource("azure", storage, "", "lakefs-gc")
    assert newest_complete(source, namespace, NOW).inventory.manifest.manifest_key == newer
    _check(source, namespace, older, newer)


def test_gcs_inventory_on_fake_gcs_server(fake_gcs):
    bucket = fake_gcs.create(f"inventories-{next(_n)}")
    storage = open_storage(fake_gcs.namespace(bucket, ""), fake_gcs.options())
    older = gcs_inventory(storage, NOW - timedelta(days=1), files=(b"a\n", b"b\n"))
    newer = gcs_inventory(storage, NOW - timedelta(hours=1), files=(b"a\n", b"b\n"))
    source = InventorySource("gs", storage, "inventory")
    assert newest_complete(source, "gs://lakefs-data/repo1", NOW).inventory.manifest.manifest_key == newer
    storage.delete(source.load(newer).files[0].key)
    chosen = newest_complete(source, "gs://lakefs-data/repo1", NOW)
    assert chosen.inventory.manifest.manifest_key == older
    assert "_0.csv is missing: the inventory is partial" in chosen.skipped[0][1]
