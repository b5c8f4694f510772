"""GCS inventory report manifests: the documented fields parse; a partial report is recorded as such;
shards found beside their manifest; a configuration's reports newest first."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from lakefs_gc.inventory import CSV, PARQUET, InventoryRefused
from lakefs_gc.inventory.gcs import candidates, parse
from lakefs_gc.storage import LocalStorage
from tests.inventory import documented
from tests.inventory.builders import gcs_inventory

CONFIG = "4c3e2a10-8f6b-4d2e-9a71-0b5c6d7e8f90"
KEY = f"inventory/{CONFIG}_2023-08-20T09:00_manifest.json"


def _parse(obj: dict):
    return parse(json.dumps(obj).encode(), KEY, f"gs://example-destination-bucket/{KEY}")


def test_documented_manifest_parses():
    m = parse(documented.GCS_MANIFEST.encode(), KEY, f"gs://example-destination-bucket/{KEY}")
    assert (m.provider, m.source_bucket, m.source_prefixes, m.format, m.checksum_key) == (
        "gs",
        "example-source-bucket",
        ("",),  # a report covers its whole source bucket
        CSV,
        None,  # no checksum file
    )
    assert m.snapshot_time == datetime(2023, 8, 20, 9, 0, tzinfo=UTC)
    assert dict(m.fields) == {"key": "name", "size": "size", "last_modified": "updated", "checksum": "md5Hash"}
    assert (m.object_count, m.complete, m.unusable) == (1500, True, ())
    assert [(f.key, f.size, f.md5) for f in m.files] == [
        (f"inventory/{CONFIG}_2023-08-20T09:00_{i}.csv", None, None) for i in (0, 1)
    ]


def test_camel_case_report_config_and_parquet():
    obj = json.loads(documented.GCS_MANIFEST)
    config = obj["report_config"]
    options = config.pop("object_metadata_report_options")
    config.pop("csv_options")
    config["parquetOptions"] = {}
    config["objectMetadataReportOptions"] = {
        "metadataFields": options["metadata_fields"],
        "storageFilters": {"bucket": "camel-bucket"},
    }
    m = _parse(obj)
    assert (m.format, m.source_bucket, m.fields["key"]) == (PARQUET, "camel-bucket", "name")


def test_shard_names_with_paths():
    obj = json.loads(documented.GCS_MANIFEST)
    obj["report_shards_file_names"] = ["gs://example-destination-bucket/deep/a_0.csv", "other/a_1.csv"]
    assert [f.key for f in _parse(obj).files] == ["deep/a_0.csv", "other/a_1.csv"]


def test_fewer_shards_named_than_counted_is_partial():
    obj = json.loads(documented.GCS_MANIFEST)
    obj["shard_count"] = 3
    m = _parse(obj)
    assert (m.complete, m.status) == (False, "partial")
    assert m.unusable == ("it names 2 shards but says it has 3 shards: the report is partial; wait for the next one",)


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda o: o.pop("snapshot_time"), "'snapshot_time' is missing"),
        (lambda o: o["report_config"]["object_metadata_report_options"].pop("metadata_fields"), "no metadata_fields"),
        (lambda o: o.update(report_shards_file_names=["", 3]), "other than file names"),
        (
            lambda o: o["report_config"].pop("csv_options") and o.update(report_shards_file_names=["a", "b"]),
            "CSV or Parquet",
        ),
    ],
)
def test_corrupt_manifests_refused(edit, reason):
    obj = json.loads(documented.GCS_MANIFEST)
    edit(obj)
    with pytest.raises(InventoryRefused, match=reason):
        _parse(obj)


def test_candidates_newest_first_of_one_configuration(tmp_path):
    store = LocalStorage(tmp_path)
    for day in (19, 21, 20):
        gcs_inventory(store, datetime(2023, 8, day, 9, tzinfo=UTC))
    gcs_inventory(store, datetime(2023, 8, 22, 9, tzinfo=UTC), config_id="another-config")
    assert list(candidates(store, "inventory", CONFIG)) == [
        f"inventory/{CONFIG}_2023-08-{d}T09:00_manifest.json" for d in (21, 20, 19)
    ]
    assert next(candidates(store, "inventory/", "")) == "inventory/another-config_2023-08-22T09:00_manifest.json"
