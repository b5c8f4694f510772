"""Azure Blob Inventory manifests: Microsoft's documented example parses as it is; what a rule run's
manifest rules out by itself; a rule's runs found newest first."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from lakefs_gc.inventory import CSV, PARQUET, InventoryRefused
from lakefs_gc.inventory.azure import account_of, candidates, parse
from lakefs_gc.storage import LocalStorage
from tests.inventory import documented
from tests.inventory.builders import azure_inventory

KEY = "2021/05/26/13-25-36/Rule_1/Rule_1-manifest.json"


def _parse(text: str):
    return parse(text.encode(), KEY, f"https://exampleaccount.blob.core.windows.net/inv/{KEY}")


def _edited(**changes) -> str:
    obj = json.loads(documented.AZURE_MANIFEST)
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = obj
        for p in parents:
            node = node[p]
        node[last] = value
    return json.dumps(obj)


def test_documented_example_parses():
    m = _parse(documented.AZURE_MANIFEST)
    assert (m.provider, m.source_bucket, m.version, m.format, m.status, m.complete) == (
        "azure",
        "exampleaccount",
        "1.0",
        CSV,
        "Succeeded",
        True,
    )
    assert m.snapshot_time == datetime(2021, 5, 26, 13, 25, 36, tzinfo=UTC)  # inventoryStartTime: the scan's start
    assert m.source_prefixes == ("example-container-100003",)
    assert m.excluded_prefixes == ()
    assert dict(m.fields) == {"key": "Name", "size": "Content-Length", "last_modified": "Last-Modified"}
    assert m.missing_fields == ()
    assert m.object_count == 110000
    assert m.checksum_key == "2021/05/26/13-25-36/Rule_1/Rule_1-manifest.checksum"
    [f] = m.files
    assert (f.key, f.size, f.md5) == ("2021/05/26/13-25-36/Rule_1/Rule_1.csv", 12710092, None)
    assert m.unusable == ()


def test_parquet_rule_without_prefix_match_covers_the_account():
    m = _parse(_edited(ruleDefinition__format="parquet", ruleDefinition__filters={"blobTypes": ["blockBlob"]}))
    assert (m.format, m.source_prefixes) == (PARQUET, ("",))


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"status": "Pending"}, "its run's status is 'Pending', not 'Succeeded': the run is still going"),
        ({"status": "Failed"}, "its run's status is 'Failed', not 'Succeeded': the run did not finish"),
        ({"ruleDefinition__objectType": "container"}, "rule 'Rule_1' lists containers, not blobs"),
        (
            {"ruleDefinition__filters__includeBlobVersions": True},
            "includeBlobVersions true: its rows include blob versions",
        ),
        ({"ruleDefinition__filters__includeSnapshots": True}, "includeSnapshots true: its rows include snapshots"),
        ({"ruleDefinition__filters__includeDeleted": True}, "includeDeleted true: its rows include deleted blobs"),
        ({"version": "2.0"}, "its version is '2.0', not '1.0'"),
    ],
)
def test_what_the_manifest_rules_out_by_itself(changes, reason):
    m = _parse(_edited(**changes))
    assert reason in m.unusable[0]
    assert m.complete == (m.status == "Succeeded")


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"ruleDefinition__format": "orc"}, "format 'orc' is not one Azure Blob Inventory writes"),
        ({"inventoryStartTime": "26/05/2021"}, "inventoryStartTime '26/05/2021' is not an RFC 3339 time"),
        ({"inventoryStartTime": "2021-05-26T13:25:36"}, "has no time zone"),
        ({"files": [{"blob": "x.csv"}]}, "'size' is missing"),
        ({"ruleDefinition__schemaFields": ["Name", 3]}, "schemaFields holds something other than strings"),
    ],
)
def test_corrupt_manifests_refused(changes, reason):
    with pytest.raises(InventoryRefused, match=reason):
        _parse(_edited(**changes))


def test_account_of_endpoints():
    assert account_of("https://exampleaccount.blob.core.windows.net") == "exampleaccount"
    assert account_of("http://127.0.0.1:10000/devstoreaccount1") == "devstoreaccount1"  # Azurite, path-style
    assert account_of("http://localhost:10000/devstoreaccount1/") == "devstoreaccount1"


def test_candidates_newest_first_of_this_rule_only(tmp_path):
    store = LocalStorage(tmp_path)
    for when in (datetime(2024, 3, 2, 1, tzinfo=UTC), datetime(2024, 2, 28, 1, tzinfo=UTC)):
        azure_inventory(store, when)
    azure_inventory(store, datetime(2024, 3, 3, 1, tzinfo=UTC), rule="other-rule")  # a newer run of another rule
    store.put("lost+found/x", b"")
    assert list(candidates(store, "", "lakefs-gc")) == [
        "2024/03/02/01-00-00/lakefs-gc/lakefs-gc-manifest.json",
        "2024/02/28/01-00-00/lakefs-gc/lakefs-gc-manifest.json",
    ]
    with pytest.raises(ValueError, match="rule's name"):
        list(candidates(store, "", ""))
