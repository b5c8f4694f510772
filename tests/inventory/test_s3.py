"""S3 Inventory manifests: AWS's documented examples parse as they are; schemas of the three formats;
the runs of a configuration found newest first."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lakefs_gc.inventory import CSV, ORC, PARQUET, InventoryRefused
from lakefs_gc.inventory.s3 import candidates, parse, schema_columns
from lakefs_gc.storage import LocalStorage
from tests.inventory import documented
from tests.inventory.builders import s3_inventory

T_DOC = datetime(2018, 1, 3, 2, 0, tzinfo=UTC)  # creationTimestamp 1514944800000 of AWS's examples
KEY = "inventory/example-source-bucket/daily/2018-01-03T02-00Z/manifest.json"


@pytest.mark.parametrize(
    ("text", "fmt", "key_col", "size_col", "modified_col", "etag_col"),
    [
        (documented.S3_CSV_MANIFEST, CSV, "Key", "Size", "LastModifiedDate", "ETag"),
        (documented.S3_ORC_MANIFEST, ORC, "key", "size", "last_modified_date", "e_tag"),
        (documented.S3_PARQUET_MANIFEST, PARQUET, "key", "size", "last_modified_date", "e_tag"),
    ],
)
def test_documented_examples_parse(text, fmt, key_col, size_col, modified_col, etag_col):
    m = parse(text.encode(), KEY, f"s3://dest/{KEY}")
    assert (m.provider, m.id, m.source_bucket, m.version, m.format) == (
        "s3",
        f"s3://dest/{KEY}",
        "example-source-bucket",
        "2016-11-30",
        fmt,
    )
    assert m.snapshot_time == T_DOC
    assert len(m.columns) == 18
    assert m.columns[1] == key_col
    assert dict(m.fields) == {"key": key_col, "size": size_col, "last_modified": modified_col, "checksum": etag_col}
    assert m.missing_fields == ()
    assert m.all_versions  # the documented schemas are those of an all-versions inventory
    assert m.unusable == ()
    assert m.checksum_key == "inventory/example-source-bucket/daily/2018-01-03T02-00Z/manifest.checksum"
    assert m.source_prefixes is None  # the manifest does not say: the configuration does
    assert (m.complete, m.status) == (True, "complete")
    [f] = m.files
    assert f.size in (2147483647, 56291)
    assert f.key.startswith(("Inventory/example-source-bucket/", "inventory/example-source-bucket/data/"))


def test_documented_md5_values_kept_as_given():
    """The ORC example's MD5checksum is not hex: kept as it is (it will match no file), not dropped."""
    [f] = parse(documented.S3_ORC_MANIFEST.encode(), KEY, KEY).files
    assert f.md5 == "7c21e5a90d3b4f6e8a1c2d3e4fexample"
    [f] = parse(documented.S3_CSV_MANIFEST.encode(), KEY, KEY).files
    assert f.md5 == "a0f3c5e7b9d1f3a5c7e9b1d3f5a7c9e1"


def test_schema_columns_of_each_format():
    assert schema_columns(CSV, " Bucket,Key , Size", "x") == ("Bucket", "Key", "Size")
    assert schema_columns(ORC, "struct<key:string,m:map<string,string>,size:bigint>", "x") == ("key", "m", "size")
    assert schema_columns(
        PARQUET, "message s3.inventory { required binary key (UTF8); optional int64 size; }", "x"
    ) == (
        "key",
        "size",
    )
    with pytest.raises(InventoryRefused, match="does not read struct"):
        schema_columns(ORC, "key:string", "x")
    with pytest.raises(InventoryRefused, match="does not read message"):
        schema_columns(PARQUET, "key, size", "x")


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda t: t.replace('"fileFormat": "CSV"', '"fileFormat": "JSON"'), "fileFormat 'JSON' is not one"),
        (
            lambda t: t.replace('"creationTimestamp" : "1514944800000"', '"creationTimestamp" : "yesterday"'),
            "not milliseconds",
        ),
        (lambda t: t.replace('"sourceBucket": "example-source-bucket",', ""), "'sourceBucket' is missing"),
        (lambda t: t.replace('"size": 2147483647', '"size": "big"'), "'size' is a str, not a int"),
        (lambda t: t[: len(t) // 2], "not valid JSON"),
        (lambda t: "[1, 2]", "not a JSON object"),
    ],
)
def test_corrupt_manifests_refused_naming_the_field(change, reason):
    with pytest.raises(InventoryRefused, match=reason) as err:
        parse(change(documented.S3_CSV_MANIFEST).encode(), KEY, "s3://dest/" + KEY)
    assert str(err.value).startswith(f"inventory s3://dest/{KEY}: ")
    assert "\n" not in str(err.value)


def test_unknown_version_and_versions_without_is_latest_recorded_as_unusable():
    m = parse(documented.S3_CSV_MANIFEST.replace("2016-11-30", "2031-01-01").encode(), KEY, KEY)
    assert m.unusable == ("its version is '2031-01-01', not '2016-11-30', the one AWS documents and this GC reads",)
    text = documented.S3_CSV_MANIFEST.replace("IsLatest, IsDeleteMarker, ", "")
    [reason] = parse(text.encode(), KEY, KEY).unusable
    assert "lacks IsLatest or IsDeleteMarker" in reason


def test_current_versions_schema_is_not_all_versions(tmp_path):
    store = LocalStorage(tmp_path)
    key = s3_inventory(store, datetime(2024, 3, 1, tzinfo=UTC))
    m = parse(store.get(key), key, store.full_uri(key))
    assert not m.all_versions
    assert [f.key for f in m.files] == ["inventories/lakefs-data/gc-daily/data/202403010000-0.csv"]


def test_candidates_newest_first_and_only_run_folders(tmp_path):
    store = LocalStorage(tmp_path)
    for day in (3, 1, 2):
        s3_inventory(store, datetime(2024, 3, day, 4, 5, tzinfo=UTC))
    store.put("inventories/lakefs-data/gc-daily/hive/dt=2024-03-03-04-05/symlink.txt", b"")
    store.put("inventories/lakefs-data/gc-daily/2024-03-04T00-00Z-not-a-run/manifest.json", b"")
    assert list(candidates(store, "inventories/lakefs-data/gc-daily/")) == [
        f"inventories/lakefs-data/gc-daily/2024-03-0{d}T04-05Z/manifest.json" for d in (3, 2, 1)
    ]
    assert list(candidates(store, "inventories/other")) == []
