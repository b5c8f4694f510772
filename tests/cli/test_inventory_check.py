"""``lakefs-gc inventory check REPO`` (issue 53's set-up help) against the lakeFS emulator and each
store's stand-in: the repository's entry in a repositories file, its namespace from lakeFS.

S3 (moto): a usable inventory exits 0 with its id and the newer one it passed over; a stale or
partial one exits 1 with its reason and the configuration that replaces it; with nothing configured
the printed ``PutBucketInventoryConfiguration`` document is accepted by moto through boto3 (the
shape, by botocore's model and moto), and once reports arrive where it said, the check finds the
configuration itself and the printed ``listing:`` block is accepted by the config loader and makes
the check pass from the file. Azure (Azurite) and GCS (fake-gcs-server) do not emulate the
inventory configuration APIs: their printout is checked for the documented names (Azure's against
the azure-mgmt-storage models), and a report written in their layout where the printout says is
found usable."""

from __future__ import annotations

import itertools
import json
import os
import shlex
import shutil
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import lakefs_sdk
import pytest
import yaml

from lakefs_gc.cli import main as cli
from lakefs_gc.config import load_config
from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY
from lakefs_gc.storage import open_storage
from tests.conftest import start_emulator, stop_process
from tests.inventory.builders import azure_inventory, gcs_inventory, s3_inventory, s3_inventory_of

_n = itertools.count()
NOW = datetime.now(UTC)


@pytest.fixture(scope="module")
def s3_emu(moto_server, tmp_path_factory):
    emu = start_emulator(tmp_path_factory.mktemp("emu-s3"), s3=moto_server)
    yield emu
    stop_process(emu.proc)


class Repo:
    """A repository on an emulator, its repositories file, and ``lakefs-gc inventory check`` on it."""

    def __init__(self, emu, store, tmp_path, monkeypatch, bucket: str):
        self.emu, self.store, self.tmp = emu, store, tmp_path
        self.name = f"inv-check-{next(_n)}-{uuid.uuid4().hex[:6]}"
        self.bucket = bucket
        self.ns = emu.namespace(self.name, bucket=bucket)
        emu.client().repositories_api.create_repository(
            lakefs_sdk.RepositoryCreation(name=self.name, storage_namespace=self.ns, default_branch="main")
        )
        monkeypatch.setenv(ENV_LAKEFS_ACCESS_KEY, emu.access_key)
        monkeypatch.setenv(ENV_LAKEFS_SECRET_KEY, emu.secret_key)
        for k, v in store.options().to_env().items():
            monkeypatch.setenv(k, v)
        self.config = tmp_path / "gc.yaml"
        self.write_entry()

    def write_entry(self, listing: dict | None = None) -> None:
        entry = {"repository": self.name, "storage_conn_id": "lakefs_gc_test_none"}
        if listing is not None:
            entry["listing"] = listing
        self.config.write_text(yaml.safe_dump({"repositories": [entry]}))

    def check(self, capsys, *args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        rc = cli(
            ["inventory", "check", self.name, "--config", str(self.config), "--lakefs-endpoint", self.emu.url, *args]
        )
        out, err = capsys.readouterr()
        return rc, out, err


def _line(out: str, start: str) -> str:
    return next(ln for ln in out.splitlines() if ln.startswith(start))


def _block(out: str, first: str) -> str:
    """The lines from the one starting with ``first`` to the next blank line (or the end)."""
    lines = out.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.startswith(first))
    j = next((k for k in range(i, len(lines)) if not lines[k].strip()), len(lines))
    return "\n".join(lines[i:j]) + "\n"


def _aws_args(out: str) -> dict[str, str]:
    """The printed ``aws s3api put-bucket-inventory-configuration`` command's options, as the shell reads them."""
    start = out.index("aws s3api put-bucket-inventory-configuration")
    words = shlex.split(out[start : out.index("\n\n", start)])
    return {w[2:]: words[i + 1] for i, w in enumerate(words) if w.startswith("--")}


# --- S3 -------------------------------------------------------------------------------------------


@pytest.fixture
def s3_repo(s3_emu, moto_server, tmp_path, monkeypatch):
    repo = Repo(s3_emu, moto_server, tmp_path, monkeypatch, moto_server.create_bucket(f"src-{uuid.uuid4().hex[:8]}"))
    repo.dest_bucket = moto_server.create_bucket(f"inventories-{uuid.uuid4().hex[:8]}")
    repo.dest = open_storage(f"s3://{repo.dest_bucket}", moto_server.s3_options())
    repo.source = open_storage(f"s3://{repo.bucket}", moto_server.s3_options())
    repo.prefix = f"reports/{repo.bucket}/gc-daily"
    repo.location = f"s3://{repo.dest_bucket}/{repo.prefix}"
    return repo


def _configured(repo, source: str = "inventory", **inventory) -> None:
    repo.write_entry({"source": source, "inventory": {"location": repo.location, "source_prefix": "", **inventory}})


def test_a_usable_s3_inventory_exits_0_with_its_id_and_what_it_passed_over(s3_repo, capsys):
    taken = NOW - timedelta(hours=3)
    s3_inventory_of(s3_repo.source, s3_repo.bucket, s3_repo.dest, taken, s3_repo.prefix)
    newer = NOW - timedelta(hours=1)
    s3_inventory(s3_repo.dest, newer, source_bucket=s3_repo.bucket, prefix=s3_repo.prefix, checksum="0" * 32)
    _configured(s3_repo)
    rc, out, err = s3_repo.check(capsys)
    assert rc == 0, out + err
    manifest = f"{s3_repo.location}/{taken:%Y-%m-%dT%H-%MZ}/manifest.json"
    assert _line(out, f"{s3_repo.name}: usable:") == f"{s3_repo.name}: usable: S3 Inventory {manifest}"
    assert "  T_inv " in out
    assert ", 3 hours old (max_age_days 8); 1 data file, CSV, " in out
    skipped = _line(out, "  passed over a newer one: ")
    assert f"{newer:%Y-%m-%dT%H-%MZ}/manifest.json" in skipped
    assert "its checksum file says '000" in skipped
    assert f"runs of {s3_repo.name} list from it (listing.source: inventory)" in out
    assert "put-bucket-inventory-configuration" not in out
    assert not err


@pytest.mark.parametrize("bad", ["stale", "partial"])
def test_a_stale_or_partial_s3_inventory_exits_1_with_its_reason_and_what_to_create(s3_repo, capsys, bad):
    taken = NOW - timedelta(days=10 if bad == "stale" else 1)
    s3_inventory_of(s3_repo.source, s3_repo.bucket, s3_repo.dest, taken, s3_repo.prefix)
    if bad == "partial":
        s3_repo.dest.delete(f"{s3_repo.prefix}/data/{taken:%Y%m%d%H%M}-0.csv")
    _configured(s3_repo)
    rc, out, err = s3_repo.check(capsys)
    assert rc == 1, out + err
    reason = _line(out, f"{s3_repo.name}: no usable inventory: ")
    assert reason.startswith(f"{s3_repo.name}: no usable inventory: listing.inventory.location {s3_repo.location}: ")
    assert (
        "days old, more than max_age (8 days)" if bad == "stale" else "is missing: the inventory is partial"
    ) in reason
    # the configuration printed is the one delivering there: same destination bucket, prefix and id
    args = _aws_args(out)
    assert (args["bucket"], args["id"]) == (s3_repo.bucket, "gc-daily")
    doc = json.loads(args["inventory-configuration"])
    assert doc["Destination"]["S3BucketDestination"] == {
        "Bucket": f"arn:aws:s3:::{s3_repo.dest_bucket}",
        "Format": "CSV",
        "Prefix": "reports",
    }
    assert "Filter" not in doc  # its filter kept: source_prefix "", the whole bucket (maybe a fleet's)
    assert f"To (re)create the configuration delivering to {s3_repo.location}: " in out
    listing = yaml.safe_load(_block(out, "listing:"))["listing"]
    assert listing["inventory"] == {"location": s3_repo.location, "source_prefix": ""}


def test_a_bad_input_exits_2_with_one_line(s3_repo, capsys):
    rc, out, err = s3_repo.check(capsys, "--prefix", "elsewhere/")
    assert rc == 2
    assert err.count("\n") == 1
    assert f"--prefix 'elsewhere/' does not cover the namespace's '{s3_repo.name}/data/'" in err
    s3_repo.config.write_text(yaml.safe_dump({"repositories": [{"repository": s3_repo.name, "mode": "sweep"}]}))
    rc, out, err = s3_repo.check(capsys)
    assert rc == 2
    assert f"the entry of {s3_repo.name} is bad: " in err
    assert "field 'mode'" in err
    s3_repo.write_entry()
    capsys.readouterr()
    rc = cli(
        ["inventory", "check", "no-such-repo", "--config", str(s3_repo.config), "--lakefs-endpoint", s3_repo.emu.url]
    )
    out, err = capsys.readouterr()
    assert rc == 2
    assert "lakeFS repository 'no-such-repo' not found" in err
    assert not out


def test_with_nothing_configured_the_printed_s3_configuration_is_accepted_and_then_found(s3_repo, moto_server, capsys):
    rc, out, err = s3_repo.check(capsys, "--destination", f"s3://{s3_repo.dest_bucket}/reports")
    assert rc == 1, out + err
    assert _line(out, f"{s3_repo.name}: no usable inventory: ") == (
        f"{s3_repo.name}: no usable inventory: no inventory is configured (its entry has no "
        f"listing.inventory.location, and no --location); bucket {s3_repo.bucket} has no S3 inventory configuration"
    )
    args = _aws_args(out)
    doc = json.loads(args["inventory-configuration"])
    assert doc == {
        "Destination": {
            "S3BucketDestination": {
                "Bucket": f"arn:aws:s3:::{s3_repo.dest_bucket}",
                "Format": "CSV",
                "Prefix": "reports",
            }
        },
        "IsEnabled": True,
        "Id": f"lakefs-gc-{s3_repo.name}",
        "IncludedObjectVersions": "Current",
        "OptionalFields": ["Size", "LastModifiedDate", "ETag"],
        "Schedule": {"Frequency": "Daily"},
        "Filter": {"Prefix": f"{s3_repo.name}/data/"},
    }
    client = moto_server.client()  # boto3 checks it against botocore's model, moto stores it
    client.put_bucket_inventory_configuration(Bucket=args["bucket"], Id=args["id"], InventoryConfiguration=doc)
    stored = client.get_bucket_inventory_configuration(Bucket=s3_repo.bucket, Id=args["id"])["InventoryConfiguration"]
    assert stored["Filter"] == doc["Filter"]
    assert stored["Destination"] == doc["Destination"]
    assert f"Reports arrive under s3://{s3_repo.dest_bucket}/reports/{s3_repo.bucket}/{args['id']}/" in out

    # the configuration exists, no report yet: the check finds it in the bucket and says so
    rc, out, _ = s3_repo.check(capsys)
    assert rc == 1
    assert f"configuration {args['id']!r} of bucket {s3_repo.bucket} (CSV): no S3 Inventory under" in out
    # a report arrives where the printout said: found through the bucket's configuration
    location = f"s3://{s3_repo.dest_bucket}/reports/{s3_repo.bucket}/{args['id']}"
    taken = NOW - timedelta(hours=2)
    s3_inventory_of(s3_repo.source, s3_repo.bucket, s3_repo.dest, taken, location.split("/", 3)[3])
    rc, out, err = s3_repo.check(capsys)
    assert rc == 0, out + err
    assert _line(out, f"{s3_repo.name}: usable:").endswith(f"{location}/{taken:%Y-%m-%dT%H-%MZ}/manifest.json")
    block = _block(out, "listing:")
    assert yaml.safe_load(block)["listing"] == {
        "source": "inventory",
        "inventory": {"location": location, "source_prefix": f"{s3_repo.name}/data/"},
    }
    # the block as printed, in the entry: the config loader takes it, and the check passes from the file
    s3_repo.config.write_text(
        f"repositories:\n  - repository: {s3_repo.name}\n    storage_conn_id: lakefs_gc_test_none\n"
        + "".join(f"    {ln}\n" for ln in block.splitlines())
    )
    (entry,) = load_config(s3_repo.config).repositories
    assert (entry.listing.source, entry.listing.inventory.location) == ("inventory", location)
    rc, out, _ = s3_repo.check(capsys)
    assert rc == 0
    assert f"found at listing.inventory.location {location}" in out
    assert f"runs of {s3_repo.name} list from it" in out


def test_the_connections_of_the_entry_in_the_given_config_are_used(s3_repo, moto_server, tmp_path):
    """The installed console script, no LAKEFS_GC_* settings: lakeFS and the store through the Airflow
    connections that the entry of the ``--config`` file names (not the default file's, not the defaults)."""
    taken = NOW - timedelta(hours=1)
    s3_inventory_of(s3_repo.source, s3_repo.bucket, s3_repo.dest, taken, s3_repo.prefix)
    listing = {"source": "inventory", "inventory": {"location": s3_repo.location, "source_prefix": ""}}
    entry = {
        "repository": s3_repo.name,
        "lakefs_conn_id": "lakefs_inv",
        "storage_conn_id": "aws_inv",
        "listing": listing,
    }
    s3_repo.config.write_text(yaml.safe_dump({"repositories": [entry]}))
    emu = s3_repo.emu
    env = {
        "AIRFLOW_HOME": str(tmp_path / "af"),
        "AIRFLOW_CONN_LAKEFS_INV": json.dumps(
            {"conn_type": "lakefs_gc", "host": emu.url, "login": emu.access_key, "password": emu.secret_key}
        ),
        "AIRFLOW_CONN_AWS_INV": json.dumps(
            {
                "conn_type": "aws",
                "login": moto_server.access_key,
                "password": moto_server.secret_key,
                "extra": {"endpoint_url": moto_server.endpoint_url, "region_name": "us-east-1"},
            }
        ),
    }
    foreign = ("LAKEFS_", "S3_", "AIRFLOW_CONN_", "AIRFLOW__", "AIRFLOW_HOME", "_AIRFLOW")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(foreign)}
    exe = shutil.which("lakefs-gc", path=str(Path(sys.executable).parent))
    assert exe, "console script lakefs-gc is not installed in the venv (run scripts/setup.sh)"
    res = subprocess.run(
        [exe, "inventory", "check", s3_repo.name, "--config", str(s3_repo.config), "-v"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**clean, **env},
        check=False,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"usable: S3 Inventory {s3_repo.location}/{taken:%Y-%m-%dT%H-%MZ}/manifest.json" in res.stdout
    assert "Airflow connection 'lakefs_inv' (AIRFLOW_CONN_LAKEFS_INV)" in res.stderr
    assert "storage from Airflow connection 'aws_inv' (AIRFLOW_CONN_AWS_INV)" in res.stderr
    assert emu.secret_key not in res.stdout + res.stderr
    assert moto_server.secret_key not in res.stdout + res.stderr


# --- Azure and GCS --------------------------------------------------------------------------------


def _rest_names(model) -> set[str]:
    return {field._rest_name for field in type(model)._attr_to_rest_field.values()}


def _known_to(model, doc: dict) -> None:
    """Every key of ``doc`` is a field of Microsoft's model, level by level."""
    assert set(doc) <= _rest_names(model), (type(model).__name__, set(doc) - _rest_names(model))
    for attr, field in type(model)._attr_to_rest_field.items():
        value = getattr(model, attr, None)
        if field._rest_name in doc and isinstance(doc[field._rest_name], dict):
            _known_to(value, doc[field._rest_name])
        elif field._rest_name in doc and isinstance(doc[field._rest_name], list):
            for sub, raw in zip(value, doc[field._rest_name]):
                if isinstance(raw, dict):
                    _known_to(sub, raw)


def test_azure_prints_the_inventory_policy_and_a_report_there_is_usable(azurite, tmp_path, monkeypatch, capsys):
    from azure.mgmt.storage import models as m

    emu = start_emulator(tmp_path / "emu", cloud=azurite)
    try:
        repo = Repo(emu, azurite, tmp_path, monkeypatch, "lakefs")
        dest = azurite.create(f"inventories-{next(_n)}")
        dest_url = azurite.namespace(dest, "")
        rc, out, err = repo.check(capsys, "--destination", dest_url)
        assert rc == 1, out + err
        policy = json.loads(_block(out, "{"))
        model = m.BlobInventoryPolicySchema(policy)
        _known_to(model, policy)
        (rule,) = policy["rules"]
        definition = rule["definition"]
        assert (rule["destination"], definition["objectType"]) == (dest, "Blob")
        assert definition["format"] in {f.value for f in m.Format}
        assert definition["schedule"] == "Daily"
        assert definition["filters"] == {
            "blobTypes": ["blockBlob"],
            "prefixMatch": [f"lakefs/{repo.name}/data/"],  # <container>/<path>, as Azure names blobs
            "includeSnapshots": False,
            "includeBlobVersions": False,
            "includeDeleted": False,
        }
        assert definition["schemaFields"] == ["Name", "Content-Length", "Last-Modified", "Content-MD5"]
        assert "az storage account blob-inventory-policy create --account-name devstoreaccount1 " in out
        block = _block(out, "listing:")
        assert yaml.safe_load(block)["listing"]["inventory"] == {"location": dest_url, "name": rule["name"]}
        # a run of that rule, in Azure's layout where the printout said: usable
        storage = open_storage(dest_url, azurite.options())
        azure_inventory(
            storage,
            NOW - timedelta(hours=2),
            rule=rule["name"],
            endpoint=azurite.account_url,
            prefix_match=tuple(definition["filters"]["prefixMatch"]),
        )
        rc, out, err = repo.check(capsys, "--location", dest_url, "--name", rule["name"])
        assert rc == 0, out + err
        assert _line(out, f"{repo.name}: usable: Azure Blob Inventory {dest_url}/")
        assert ", 1 objects (the manifest's count)" not in out  # counts are said with their noun
    finally:
        stop_process(emu.proc)


def test_gcs_prints_the_report_configuration_and_a_report_there_is_usable(fake_gcs, tmp_path, monkeypatch, capsys):
    emu = start_emulator(tmp_path / "emu", cloud=fake_gcs)
    try:
        repo = Repo(emu, fake_gcs, tmp_path, monkeypatch, "lakefs")
        dest = fake_gcs.create(f"inventories-{next(_n)}")
        rc, out, err = repo.check(capsys, "--destination", f"gs://{dest}/reports", "--format", "parquet")
        assert rc == 1, out + err
        command = _line(out, "gcloud storage insights inventory-reports create ")
        flags = dict(w[2:].partition("=")[::2] for w in shlex.split(command) if w.startswith("--"))
        assert shlex.split(command)[5] == "gs://lakefs"
        assert flags["destination"] == f"gs://{dest}/reports/"
        assert flags["schedule-repeats"] == "daily"
        assert {"project", "bucket", "name", "size", "updated", "md5Hash"} == set(flags["metadata-fields"].split(","))
        assert "parquet" in flags
        assert "csv-header" not in flags
        config = json.loads(_block(out, "{"))
        assert set(config) == {"displayName", "frequencyOptions", "parquetOptions", "objectMetadataReportOptions"}
        assert set(config["frequencyOptions"]) == {"frequency", "startDate", "endDate"}
        assert config["frequencyOptions"]["frequency"] == "DAILY"
        assert config["objectMetadataReportOptions"]["storageFilters"] == {"bucket": "lakefs"}
        assert config["objectMetadataReportOptions"]["storageDestinationOptions"] == {
            "bucket": dest,
            "destinationPath": "reports",
        }
        listing = yaml.safe_load(_block(out, "listing:"))["listing"]
        assert listing["inventory"] == {"location": f"gs://{dest}/reports"}
        # a report of the whole bucket where the printout said: usable, with the manifest's row count
        storage = open_storage(f"gs://{dest}", fake_gcs.options())
        gcs_inventory(storage, NOW - timedelta(hours=2), source_bucket="lakefs", destination_path="reports")
        rc, out, err = repo.check(capsys, "--location", f"gs://{dest}/reports")
        assert rc == 0, out + err
        assert _line(out, f"{repo.name}: usable: GCS inventory report gs://{dest}/reports/")
        assert ", 1 object (the manifest's count)" in out
    finally:
        stop_process(emu.proc)
