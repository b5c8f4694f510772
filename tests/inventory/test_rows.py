"""An inventory's rows read into Arrow: S3's gzip CSV with URL-encoded keys, ORC and Parquet, Azure's and GCS's CSV
(with a header row or without) and Parquet; only the keys under a prefix, only current objects of an
all-versions inventory, sizes and times typed, every row read counted."""

from __future__ import annotations

import dataclasses
import gzip
import io
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.orc as pa_orc
import pyarrow.parquet as pq
import pytest

from lakefs_gc.inventory import InventoryRefused, InventorySource
from lakefs_gc.inventory.rows import iter_rows, read_rows, readable, rows_schema
from lakefs_gc.storage import LocalStorage
from tests.inventory.builders import azure_inventory, gcs_inventory, s3_inventory, s3_orc

TAKEN = datetime(2024, 3, 4, 1, tzinfo=UTC)
PREFIX = "inventories/lakefs-data/gc-daily"


def _ms(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def _inventory(tmp_path, files, **kw):
    store = LocalStorage(tmp_path)
    key = s3_inventory(store, TAKEN, files=files, **kw)
    return store, InventorySource("s3", store, PREFIX).load(key)


def test_csv_gzip_url_encoded_keys_under_a_prefix(tmp_path):
    csv = (
        '"lakefs-data","repo1/data/a%20b","3","2024-01-01T00:00:00.000Z","e1","STANDARD"\n'
        '"lakefs-data","repo1/data/c+d","10","2024-01-02T03:04:05.678Z","e2","STANDARD"\n'
        '"lakefs-data","repo1/data/e%2Bf%C3%A9","0","2024-01-03T00:00:00.000Z","e3","STANDARD"\n'
        '"lakefs-data","repo1/_lakefs/x","5","2024-01-04T00:00:00.000Z","e4","STANDARD"\n'
        '"lakefs-data","repo10/data/y","6","2024-01-05T00:00:00.000Z","e5","STANDARD"\n'
        '"lakefs-data","repo1%2Fdata%2Fz","7","2024-01-06T00:00:00.000Z","e6","STANDARD"\n'
    )
    store, manifest = _inventory(tmp_path, (gzip.compress(csv.encode()),))
    table = read_rows(manifest, store, manifest.files[0], "repo1/data/")
    assert table.schema == rows_schema()
    assert table.to_pylist() == [
        {"key": "repo1/data/a b", "size": 3, "last_modified": _ms("2024-01-01T00:00:00+00:00")},
        {"key": "repo1/data/c d", "size": 10, "last_modified": _ms("2024-01-02T03:04:05.678+00:00")},
        {"key": "repo1/data/e+fé", "size": 0, "last_modified": _ms("2024-01-03T00:00:00+00:00")},
        {"key": "repo1/data/z", "size": 7, "last_modified": _ms("2024-01-06T00:00:00+00:00")},
    ]
    assert read_rows(manifest, store, manifest.files[0]).num_rows == 6  # no prefix: every row


def test_csv_of_all_versions_keeps_the_latest_not_deleted(tmp_path):
    schema = "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, LastModifiedDate, ETag"
    csv = (
        "lakefs-data,repo1/data/a,v2,true,false,4,2024-01-02T00:00:00.000Z,e\n"
        "lakefs-data,repo1/data/a,v1,false,false,3,2024-01-01T00:00:00.000Z,e\n"
        "lakefs-data,repo1/data/b,v9,true,true,,2024-01-03T00:00:00.000Z,\n"
        "lakefs-data,repo1/data/b,v8,false,false,5,2024-01-01T00:00:00.000Z,e\n"
    )
    store, manifest = _inventory(tmp_path, (gzip.compress(csv.encode()),), schema=schema)
    assert manifest.all_versions
    assert read_rows(manifest, store, manifest.files[0], "repo1/").to_pylist() == [
        {"key": "repo1/data/a", "size": 4, "last_modified": _ms("2024-01-02T00:00:00+00:00")}
    ]


def test_parquet_rows(tmp_path):
    table = pa.table(
        {
            "bucket": ["lakefs-data"] * 3,
            "key": ["repo1/data/a%20b", "repo1/data/c", "other/d"],  # Parquet keys are not URL-encoded
            "size": pa.array([1, 2, 3], pa.int64()),
            "last_modified_date": pa.array([1_704_067_200_000, 1_704_153_600_000, 0], pa.timestamp("ms", tz="UTC")),
            "e_tag": ["x", "y", "z"],
        }
    )
    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=2)
    schema = (
        "message s3.inventory { required binary bucket (UTF8); required binary key (UTF8); optional int64 size; "
        "optional int64 last_modified_date (TIMESTAMP_MILLIS); optional binary e_tag (UTF8); }"
    )
    store, manifest = _inventory(tmp_path, (buf.getvalue(),), schema=schema, file_format="Parquet")
    batches = list(iter_rows(manifest, store, manifest.files[0], "repo1/data/"))
    assert [b.num_rows for b in batches] == [2]  # the row group with only other/d yields nothing
    assert pa.Table.from_batches(batches).to_pylist() == [
        {"key": "repo1/data/a%20b", "size": 1, "last_modified": _ms("2024-01-01T00:00:00+00:00")},
        {"key": "repo1/data/c", "size": 2, "last_modified": _ms("2024-01-02T00:00:00+00:00")},
    ]


def test_azure_csv_with_its_header_and_parquet(tmp_path):
    """Azure names each blob <container>/<blob> and writes a header row (its columns in its order);
    times with seven fraction digits or in RFC 1123; no checksum (its Content-MD5 is not S3's ETag)."""
    csv = (
        "Name,Last-Modified,Content-Length,Content-MD5\n"
        '"lakefs/repo1/data/a b","2021-03-01T19:28:40.3150567Z","3","1B2M2Y8AsgTpgAmY7PhCfg=="\n'
        '"lakefs/repo1/_lakefs/x","2021-03-01T19:28:40Z","5",\n'
        '"lakefs/repo1/data/c+d","Mon, 03 May 2021 02:47:10 GMT","7",\n'
    )
    store = LocalStorage(tmp_path)
    manifest = InventorySource("azure", store, "", "lakefs-gc").load(
        azure_inventory(store, TAKEN, files=(csv.encode(),))
    )
    table = read_rows(manifest, store, manifest.files[0], "lakefs/repo1/data/", checksum=True)
    assert table.schema == rows_schema(checksum=True)
    assert table.to_pylist() == [
        {
            "key": "lakefs/repo1/data/a b",
            "size": 3,
            "last_modified": _ms("2021-03-01T19:28:40.315+00:00"),
            "checksum": None,
        },
        {
            "key": "lakefs/repo1/data/c+d",
            "size": 7,
            "last_modified": _ms("2021-05-03T02:47:10+00:00"),
            "checksum": None,
        },
    ]
    parquet = io.BytesIO()
    pq.write_table(
        pa.table(
            {
                "Name": ["lakefs/repo1/data/e", "lakefs/other/f"],
                "Content-Length": pa.array([4, 5], pa.int64()),
                "Last-Modified": pa.array([1_704_067_200_000_000, 0], pa.timestamp("us")),
            }
        ),
        parquet,
    )
    key = azure_inventory(
        store,
        TAKEN.replace(hour=2),
        files=(parquet.getvalue(),),
        edit=lambda m: m["ruleDefinition"].update(format="Parquet"),
    )
    manifest = InventorySource("azure", store, "", "lakefs-gc").load(key)
    assert read_rows(manifest, store, manifest.files[0], "lakefs/repo1/").to_pylist() == [
        {"key": "lakefs/repo1/data/e", "size": 4, "last_modified": _ms("2024-01-01T00:00:00+00:00")}
    ]


@pytest.mark.parametrize("header", [True, False])
def test_gcs_csv_with_or_without_a_header(tmp_path, header):
    """GCS writes a header row with header_required, none without: the columns are the manifest's metadata_fields then."""
    fields = "project,bucket,name,location,size,timeCreated,updated,storageClass,etag,md5Hash"
    row = "p,lakefs-data,repo1/data/a,EU,12,2024-01-01T00:00:00Z,2024-01-02T03:04:05.678Z,STANDARD,CJ+v,1B2M2Y8AsgTpgAmY7PhCfg==\n"
    other = "p,lakefs-data,repo2/data/b,EU,1,2024-01-01T00:00:00Z,2024-01-01T00:00:00Z,STANDARD,x,y\n"
    data = ((fields + "\n") if header else "") + row + other
    store = LocalStorage(tmp_path)
    manifest = InventorySource("gs", store, "inventory").load(gcs_inventory(store, TAKEN, files=(data.encode(),)))
    counter = _Count()
    rows = [
        r for b in iter_rows(manifest, store, manifest.files[0], "repo1/data/", read=counter) for r in b.to_pylist()
    ]
    assert rows == [{"key": "repo1/data/a", "size": 12, "last_modified": _ms("2024-01-02T03:04:05.678+00:00")}]
    assert counter.n == 2  # every row read is counted, kept or not


def test_s3_checksum_is_the_etag_as_a_listing_gives_it(tmp_path):
    csv = '"lakefs-data","repo1/data/a","3","2024-01-01T00:00:00.000Z",""abc"","STANDARD"\n'
    store, manifest = _inventory(tmp_path, (gzip.compress(csv.encode()),))
    assert read_rows(manifest, store, manifest.files[0], checksum=True).column("checksum").to_pylist() == ["abc"]


ORC_ROWS = {  # an all-versions S3 inventory: a.txt's latest version, b.txt deleted, an older c.txt
    "bucket": ["lakefs-data"] * 6,
    "key": ["repo1/data/a b+c", "repo1/data/a b+c", "repo1/data/b", "repo1/data/b", "repo1/data/c", "other/d"],
    "version_id": ["v2", "v1", "v9", "v8", "v5", "v7"],
    "is_latest": [True, False, True, False, True, True],
    "is_delete_marker": [False, False, True, False, False, False],
    "size": [4, 3, None, 5, 0, 6],
    "last_modified_date": [1_704_153_600.123, 1_704_067_200.0, 1_704_240_000.0, 1_704_067_200.0, 1_700_000_000.0, 0.0],
    "e_tag": ['"e2"', "e1", None, "e8", "e5", "e7"],
}
ORC_SCHEMA = (
    "struct<bucket:string,key:string,version_id:string,is_latest:boolean,is_delete_marker:boolean,size:bigint,"
    "last_modified_date:timestamp,e_tag:string>"
)
PARQUET_SCHEMA = (
    "message s3.inventory { required binary bucket (UTF8); required binary key (UTF8); optional binary version_id "
    "(UTF8); optional boolean is_latest; optional boolean is_delete_marker; optional int64 size; optional int64 "
    "last_modified_date (TIMESTAMP_MILLIS); optional binary e_tag (UTF8); }"
)


def test_s3_orc_reads_the_rows_the_same_parquet_does(tmp_path):
    """S3's ORC (the documented snake_case names, an ORC timestamp without a zone) reads, a stripe a batch,
    as the same rows in Parquet do: current versions only, under the prefix, the ETag as a listing gives it."""
    orc_file = s3_orc(ORC_ROWS, stripe_size=1, batch_size=1)
    assert pa_orc.ORCFile(io.BytesIO(orc_file)).nstripes == 6
    store, orc = _inventory(tmp_path / "orc", (orc_file,), schema=ORC_SCHEMA, file_format="ORC")
    assert orc.all_versions
    assert readable(orc) is None
    counter = _Count()
    batches = list(iter_rows(orc, store, orc.files[0], "repo1/", checksum=True, read=counter, check_md5=True))
    assert [b.num_rows for b in batches] == [1, 1]  # a batch per stripe that keeps a row
    assert counter.n == 6
    rows = pa.Table.from_batches(batches).to_pylist()
    assert rows == [
        {"key": "repo1/data/a b+c", "size": 4, "last_modified": _ms("2024-01-02T00:00:00.123+00:00"), "checksum": "e2"},
        {"key": "repo1/data/c", "size": 0, "last_modified": _ms("2023-11-14T22:13:20+00:00"), "checksum": "e5"},
    ]
    times = {k: [int(v * 1000) for v in vs] if k == "last_modified_date" else vs for k, vs in ORC_ROWS.items()}
    table = pa.table(
        {k: pa.array(v, pa.timestamp("ms", tz="UTC")) if k == "last_modified_date" else v for k, v in times.items()}
    )
    buf = io.BytesIO()
    pq.write_table(table, buf)
    store, parquet = _inventory(tmp_path / "parquet", (buf.getvalue(),), schema=PARQUET_SCHEMA, file_format="Parquet")
    assert read_rows(parquet, store, parquet.files[0], "repo1/", checksum=True).to_pylist() == rows


def test_an_orc_file_without_its_schema_columns_refuses(tmp_path):
    """The manifest's fileSchema names last_modified_date; the data file has last_modified instead."""
    columns = {"bucket": ["lakefs-data"], "key": ["repo1/data/a"], "size": [3], "last_modified": ["2024-01-01"]}
    schema = "struct<bucket:string,key:string,size:bigint,last_modified_date:timestamp>"
    store, manifest = _inventory(tmp_path, (s3_orc(columns),), schema=schema, file_format="ORC")
    with pytest.raises(
        InventoryRefused,
        match=r"\.orc has no column last_modified_date \(its columns: bucket, key, size, "
        r"last_modified\), though the manifest's fileSchema names it",
    ):
        read_rows(manifest, store, manifest.files[0])


def test_a_parquet_file_without_its_schema_columns_refuses(tmp_path):
    """As ORC: a Parquet data file that lacks a column its manifest's fileSchema names refuses the run (not an Arrow error)."""
    buf = io.BytesIO()
    pq.write_table(pa.table({"bucket": ["lakefs-data"], "key": ["repo1/data/a"], "size": [3]}), buf)
    store, manifest = _inventory(tmp_path, (buf.getvalue(),), schema=PARQUET_SCHEMA, file_format="Parquet")
    with pytest.raises(
        InventoryRefused,
        match=r"\.parquet has no columns last_modified_date, e_tag, is_latest, is_delete_marker \(its columns: "
        r"bucket, key, size\), though the manifest's fileSchema names them",
    ):
        read_rows(manifest, store, manifest.files[0])


def test_orc_is_read_from_s3_only(tmp_path):
    """Azure Blob Inventory and GCS write no ORC (their manifests refuse it): a manifest that said so is not read."""
    _, manifest = _inventory(tmp_path, (s3_orc(ORC_ROWS),), schema=ORC_SCHEMA, file_format="ORC")
    azure = dataclasses.replace(manifest, provider="azure")
    assert readable(azure) == f"{manifest.id}: its ORC data files are not read yet (only CSV, Parquet and S3's ORC are)"
    with pytest.raises(ValueError, match=r"its ORC data files are not read yet"):
        read_rows(azure, LocalStorage(tmp_path), manifest.files[0])


class _Count:
    n = 0

    def add(self, n: int) -> None:
        self.n += n
