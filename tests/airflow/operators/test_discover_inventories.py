"""The discovery refresh (``DiscoverRepositoriesOperator``) records, per inventory location its entries read,
the newest inventory there and for which repositories it verifies: the entries' ``listing`` (a source's
defaults, an override), each namespace from lakeFS, the destination reached with the entry's storage
connection (an S3 Inventory on moto). lakeFS is a stand-in answering the repositories and their namespaces."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from tests.airflow.conftest import conn_env
from tests.airflow.helpers import context
from tests.inventory.builders import s3_inventory

REPOS = ("fleet-a", "fleet-b", "fleet-c", "fleet-gone")


class _Client:
    def __init__(self, bucket: str):
        self.bucket = bucket

    endpoint = "http://lakefs.test/api/v1"

    def repository_namespaces(self) -> dict[str, str]:
        return {r: f"s3://{self.bucket}/{r}" for r in REPOS}

    def get_repository(self, repo: str):
        if repo == "fleet-gone":
            raise LookupError(f"repository {repo} not found")
        return SimpleNamespace(storage_namespace=f"s3://{self.bucket}/{repo}")

    def close(self) -> None:
        pass


@pytest.fixture
def fleet(tmp_path, moto_server, monkeypatch):
    from lakefs_gc_airflow import hooks, housekeeping

    source = moto_server.create_bucket("fleet-data")
    dest = moto_server.create_bucket("fleet-reports")
    for key, value in (
        conn_env("lakefs_default", conn_type="lakefs_gc", host="http://127.0.0.1:1", login="k", password="s"),
        conn_env(
            "aws_default",
            conn_type="aws",
            login=moto_server.access_key,
            password=moto_server.secret_key,
            extra={"endpoint_url": moto_server.endpoint_url, "region_name": moto_server.region},
        ),
    ):
        monkeypatch.setenv(key, value)

    class Hook:
        def __init__(self, lakefs_conn_id: str):
            self.conn_id = lakefs_conn_id

        def get_conn(self):
            return _Client(source)

        def local_blockstore_root(self):
            return None

    monkeypatch.setattr(housekeeping, "LakeFSHook", Hook)
    monkeypatch.setattr(hooks, "LakeFSHook", Hook)
    location = f"s3://{dest}/inventories/{source}/gc-daily"
    cfg = tmp_path / "gc.yaml"
    cfg.write_text(
        f"""
defaults: {{storage_conn_id: aws_default}}
repositories: []
discover:
  sources:
    - include: ["fleet-*"]
      defaults:
        listing: {{source: inventory, inventory: {{location: {location}, source_prefix: ""}}}}
      overrides: {{fleet-c: {{listing: {{source: list}}}}}}
"""
    )
    return SimpleNamespace(cfg=cfg, source=source, dest=dest, location=location, moto=moto_server)


def test_the_refresh_records_the_newest_inventory_and_whom_it_verifies_for(fleet):
    from lakefs_gc.config.discovered import read_discovered
    from lakefs_gc.storage import open_storage
    from lakefs_gc_airflow.housekeeping import DiscoverRepositoriesOperator

    dest = open_storage(f"s3://{fleet.dest}", fleet.moto.s3_options())
    taken = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    files = (f'"{fleet.source}","fleet-a/data/x","3","2024-01-01T00:00:00.000Z","e","STANDARD"\n'.encode(),)
    manifest = s3_inventory(
        dest, taken, source_bucket=fleet.source, prefix=f"inventories/{fleet.source}/gc-daily", files=files
    )
    op = DiscoverRepositoriesOperator(task_id="discover", config_path=str(fleet.cfg))
    out = op.execute(context({}))
    assert out["matched"] == ["fleet-a", "fleet-b", "fleet-c", "fleet-gone"]
    assert out["inventories"] == {fleet.location: None}  # not verified for every reader: fleet-gone
    [rec] = read_discovered(fleet.cfg.with_name("gc.discovered.json")).inventories
    uri = dest.full_uri(manifest)
    assert (rec.location, rec.storage_conn_id, rec.inventory_id, rec.verified) == (
        fleet.location,
        "aws_default",
        uri,
        False,
    )
    assert sorted(rec.repositories) == ["fleet-a", "fleet-b", "fleet-gone"]  # fleet-c lists by LIST
    assert rec.repositories["fleet-a"].inventory_id == rec.repositories["fleet-b"].inventory_id == uri
    assert rec.repositories["fleet-gone"].reason == (
        "its namespace was not found: LookupError: repository fleet-gone not found"
    )
    assert rec.reason == "fleet-gone: its namespace was not found: LookupError: repository fleet-gone not found"
    doc = json.loads(fleet.cfg.with_name("gc.discovered.json").read_text())
    assert doc["inventories"][0]["repositories"]["fleet-a"]["inventory_time"] == rec.inventory_time
