"""lakeFS 1.84's own multipart uploads (its S3 gateway), as the sweep finds them on an ``s3://``
namespace (moto): under the namespace's prefix, at a lakeFS address (``data/<partition>/<xid>``).

moto answers every upload's ``Initiated`` with one date of 2010, so the address's xid is what keeps
an upload lakeFS is still completing young; aborted, it can no longer be completed."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import lakefs_sdk
import pytest

from lakefs_gc.lakefs.xid import is_xid
from lakefs_gc.storage import make_s3_client, open_storage
from lakefs_gc.storage.settings import S3Options
from lakefs_gc.sweeping.deleter import DeletePolicy
from lakefs_gc.sweeping.uploads import sweep_uploads


def _gateway(server):
    """A boto3 client of lakeFS's S3 gateway (bucket = repository, key = <branch>/<path>)."""
    return make_s3_client(
        S3Options(
            endpoint_url=server.url,
            access_key_id=server.access_key,
            secret_access_key=server.secret_key,
            region="us-east-1",
            path_style=True,
        )
    )


def test_an_upload_lakefs_is_completing_is_young_an_old_one_is_aborted(real_lakefs, moto_server):
    server = real_lakefs("s3")
    bucket = moto_server.create_bucket(f"uploads-{uuid.uuid4().hex[:8]}")
    repo = f"uploads-{uuid.uuid4().hex[:8]}"
    ns = server.namespace(repo, bucket)
    server.client().repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=ns, default_branch="main")
    )
    gw = _gateway(server)
    first = gw.create_multipart_upload(Bucket=repo, Key="main/big.bin")["UploadId"]
    part = gw.upload_part(Bucket=repo, Key="main/big.bin", UploadId=first, PartNumber=1, Body=b"a" * 4096)
    held = moto_server.client().list_multipart_uploads(Bucket=bucket)["Uploads"]
    assert len(held) == 1
    key = held[0]["Key"]
    assert key.startswith(f"{repo}/data/")
    assert is_xid(key.rpartition("/")[2])  # lakeFS's address: its xid is the upload's start
    st = open_storage(ns, moto_server.s3_options())

    young = sweep_uploads(st, datetime.now(UTC), 1.0, DeletePolicy())
    assert (young.young, young.old, young.aborted) == (1, 0, 0)
    gw.complete_multipart_upload(
        Bucket=repo,
        Key="main/big.bin",
        UploadId=first,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]},
    )
    assert gw.get_object(Bucket=repo, Key="main/big.bin")["Body"].read() == b"a" * 4096

    second = gw.create_multipart_upload(Bucket=repo, Key="main/late.bin")["UploadId"]
    part = gw.upload_part(Bucket=repo, Key="main/late.bin", UploadId=second, PartNumber=1, Body=b"b" * 100)
    old = sweep_uploads(st, datetime.now(UTC) + timedelta(days=8), 7.0, DeletePolicy())  # a run 8 days on
    assert (old.old, old.old_bytes, old.aborted, old.aborted_bytes) == (1, 100, 1, 100)
    assert moto_server.client().list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    with pytest.raises(Exception, match="InternalError|NoSuchUpload|500"):
        gw.complete_multipart_upload(
            Bucket=repo,
            Key="main/late.bin",
            UploadId=second,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]},
        )
