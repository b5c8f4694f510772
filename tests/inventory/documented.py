"""The providers' documented example manifests, as test fixtures parsed as they are.

Same structure, field names and kinds of values as the examples in each provider's documentation;
names and values that need not be copied are our own.

- S3 Inventory: the three examples (CSV, ORC, Parquet) of the Amazon S3 User Guide, "Locating your
  inventory list" (docs.aws.amazon.com/AmazonS3/latest/userguide/storage-inventory-location.html).
  As there, the CSV one's schema is that of an all-versions inventory, and the ORC and Parquet ones'
  MD5checksum values are not hex (they end in "example").
- Azure Blob Inventory: the sample ``manifest.json`` of "Azure Storage blob inventory", "Inventory
  output" (learn.microsoft.com/azure/storage/blobs/blob-inventory).
- GCS inventory reports: Google's example manifest could not be fetched where this was written;
  :data:`GCS_MANIFEST` is built from the manifest's field names in Google's documentation
  ("Storage Insights inventory reports": ``report_config``, ``records_processed``,
  ``snapshot_time``, ``shard_count``, ``report_shards_file_names``) and the ``ReportConfig``
  resource of the Storage Insights API for ``report_config``. To be checked against a real report.
"""

from __future__ import annotations

S3_CSV_MANIFEST = """{
    "sourceBucket": "example-source-bucket",
    "destinationBucket": "arn:aws:s3:::example-inventory-destination-bucket",
    "version": "2016-11-30",
    "creationTimestamp" : "1514944800000",
    "fileFormat": "CSV",
    "fileSchema": "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, LastModifiedDate, ETag, StorageClass, IsMultipartUploaded, ReplicationStatus, EncryptionStatus, ObjectLockRetainUntilDate, ObjectLockMode, ObjectLockLegalHoldStatus, IntelligentTieringAccessTier, BucketKeyStatus, ChecksumAlgorithm",
    "files": [
        {
            "key": "Inventory/example-source-bucket/2016-11-06T21-32Z/files/2f6c1e4a-93b1-4f0e-8d2a-5b7c9e1d3f40.csv.gz",
            "size": 2147483647,
            "MD5checksum": "a0f3c5e7b9d1f3a5c7e9b1d3f5a7c9e1"
        }
    ]
}"""

S3_ORC_MANIFEST = """{
    "sourceBucket": "example-source-bucket",
    "destinationBucket": "arn:aws:s3:::example-destination-bucket",
    "version": "2016-11-30",
    "creationTimestamp" : "1514944800000",
    "fileFormat": "ORC",
    "fileSchema": "struct<bucket:string,key:string,version_id:string,is_latest:boolean,is_delete_marker:boolean,size:bigint,last_modified_date:timestamp,e_tag:string,storage_class:string,is_multipart_uploaded:boolean,replication_status:string,encryption_status:string,object_lock_retain_until_date:timestamp,object_lock_mode:string,object_lock_legal_hold_status:string,intelligent_tiering_access_tier:string,bucket_key_status:string,checksum_algorithm:string>",
    "files": [
        {
            "key": "inventory/example-source-bucket/data/6b1f0c2d-7a3e-4e55-9c1d-2e8f4a6b8c01.orc",
            "size": 56291,
            "MD5checksum": "7c21e5a90d3b4f6e8a1c2d3e4fexample"
        }
    ]
}"""

S3_PARQUET_MANIFEST = """{
    "sourceBucket": "example-source-bucket",
    "destinationBucket": "arn:aws:s3:::example-destination-bucket",
    "version": "2016-11-30",
    "creationTimestamp" : "1514944800000",
    "fileFormat": "Parquet",
    "fileSchema": "message s3.inventory { required binary bucket (UTF8); required binary key (UTF8); optional binary version_id (UTF8); optional boolean is_latest; optional boolean is_delete_marker; optional int64 size; optional int64 last_modified_date (TIMESTAMP_MILLIS); optional binary e_tag (UTF8); optional binary storage_class (UTF8); optional boolean is_multipart_uploaded; optional binary replication_status (UTF8); optional binary encryption_status (UTF8); optional int64 object_lock_retain_until_date (TIMESTAMP_MILLIS); optional binary object_lock_mode (UTF8); optional binary object_lock_legal_hold_status (UTF8); optional binary intelligent_tiering_access_tier (UTF8); optional binary bucket_key_status (UTF8); optional binary checksum_algorithm (UTF8); }",
    "files": [
        {
           "key": "inventory/example-source-bucket/data/0e4d2c6a-51f7-4b3a-8e9d-7c6b5a4f3e21.parquet",
            "size": 56291,
            "MD5checksum": "3d9a7b5c1e2f4a6b8c0d1e2f3aexample"
        }
    ]
}"""

AZURE_MANIFEST = """{
"destinationContainer" : "inventory-destination-container",
"endpoint" : "https://exampleaccount.blob.core.windows.net",
"files" : [
  {
    "blob" : "2021/05/26/13-25-36/Rule_1/Rule_1.csv",
    "size" : 12710092
  }
],
"inventoryCompletionTime" : "2021-05-26T13:35:56Z",
"inventoryStartTime" : "2021-05-26T13:25:36Z",
"ruleDefinition" : {
  "filters" : {
    "blobTypes" : [ "blockBlob" ],
    "includeBlobVersions" : false,
    "includeSnapshots" : false,
    "prefixMatch" : [ "example-container-100003" ]
  },
  "format" : "csv",
  "objectType" : "blob",
  "schedule" : "daily",
  "schemaFields" : [
    "Name",
    "Creation-Time",
    "BlobType",
    "Content-Length",
    "LastAccessTime",
    "Last-Modified",
    "Metadata",
    "AccessTier"
  ]
},
"ruleName" : "Rule_1",
"status" : "Succeeded",
"summary" : {
  "objectCount" : 110000,
  "totalObjectSize" : 23789775
},
"version" : "1.0"
}"""

GCS_MANIFEST = """{
  "report_config": {
    "name": "projects/123456789012/locations/us-central1/reportConfigs/4c3e2a10-8f6b-4d2e-9a71-0b5c6d7e8f90",
    "display_name": "lakeFS namespace inventory",
    "frequency_options": {
      "frequency": "DAILY",
      "start_date": {"day": 15, "month": 8, "year": 2023},
      "end_date": {"day": 15, "month": 8, "year": 2033}
    },
    "csv_options": {"record_separator": "\\n", "delimiter": ",", "header_required": true},
    "object_metadata_report_options": {
      "metadata_fields": ["project", "bucket", "name", "location", "size", "timeCreated", "updated", "storageClass", "etag", "md5Hash"],
      "storage_filters": {"bucket": "example-source-bucket"},
      "storage_destination_options": {"bucket": "example-destination-bucket", "destination_path": "inventory"}
    }
  },
  "records_processed": 1500,
  "snapshot_time": "2023-08-20T09:00:00Z",
  "shard_count": 2,
  "report_shards_file_names": [
    "4c3e2a10-8f6b-4d2e-9a71-0b5c6d7e8f90_2023-08-20T09:00_0.csv",
    "4c3e2a10-8f6b-4d2e-9a71-0b5c6d7e8f90_2023-08-20T09:00_1.csv"
  ]
}"""
