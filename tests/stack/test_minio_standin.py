"""docker/standins/minio.py, the object store's stand-in: moto keeps no copy of the versions it lists.

moto tracks every S3 model instance it makes (for its reset API), the deep copies ListObjectVersions
makes of every version of the bucket on each page included: a chaos run's restores (a version
listing per key) grew the stand-in to 20 GB and stalled the machine. Runs moto in process, no Docker.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import boto3
import pytest

STANDIN = Path(__file__).resolve().parents[2] / "docker" / "standins" / "minio.py"


@pytest.fixture
def standin():
    spec = importlib.util.spec_from_file_location("minio_standin", STANDIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_listing_versions_leaves_no_tracked_copies(standin):
    from moto import mock_aws
    from moto.core.base_backend import model_data

    s3_models = model_data["s3"].values()
    saved = {m: m.instances_tracked for m in s3_models}
    try:
        standin.untrack_s3_models()
        with mock_aws():
            s3 = boto3.client("s3", region_name="us-east-1")
            s3.create_bucket(Bucket="standin")
            s3.put_bucket_versioning(Bucket="standin", VersioningConfiguration={"Status": "Enabled"})
            for i in range(30):
                s3.put_object(Bucket="standin", Key=f"r/data/{i}", Body=b"v1")
                s3.put_object(Bucket="standin", Key=f"r/data/{i}", Body=b"v2")
            s3.delete_object(Bucket="standin", Key="r/data/0")
            for _ in range(3):
                page = s3.list_object_versions(Bucket="standin", Prefix="r/")
            assert (len(page["Versions"]), len(page["DeleteMarkers"])) == (60, 1)
            assert s3.get_object(Bucket="standin", Key="r/data/1")["Body"].read() == b"v2"  # the objects are intact
            assert all(len(m.instances_tracked) == 0 for m in s3_models)
    finally:
        for m, tracked in saved.items():
            m.instances_tracked = tracked
