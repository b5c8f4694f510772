"""Azure Blob and Google Cloud Storage namespaces parsed by lakeFS's rules (pkg/block/namespace.go,
pkg/block/azure/adapter.go at v1.84.0), their roots for full addresses, and the refusal to open or
collect them before their storage adapters exist. (s3:// and local://: tests/storage/test_storage.py.)"""

from __future__ import annotations

import pytest

from lakefs_gc.errors import SettingsError
from lakefs_gc.lakefs.graveler import FULL, RELATIVE, normalize_address
from lakefs_gc.steps.prepare_run import _location
from lakefs_gc.storage import parse_namespace
from lakefs_gc.storage.namespace import AZURE_DOMAINS


@pytest.mark.parametrize("domain", AZURE_DOMAINS)
def test_azure_namespaces_on_every_domain_lakefs_accepts(domain):
    ns = parse_namespace(f"https://myaccount.{domain}/mycontainer/repos/r1/")
    assert (ns.scheme, ns.host, ns.bucket, ns.prefix, str(ns)) == (
        "azure",
        f"myaccount.{domain}",
        "mycontainer",
        "repos/r1",
        f"https://myaccount.{domain}/mycontainer/repos/r1",
    )
    assert ns.roots() == (f"https://myaccount.{domain}/mycontainer/repos/r1/",)
    whole = parse_namespace(f"http://my_acct-2.{domain}/c")  # lakeFS's rule takes http too
    assert (whole.bucket, whole.prefix) == ("c", "")
    assert whole.roots() == (f"http://my_acct-2.{domain}/c/", f"https://my_acct-2.{domain}/c/")


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("https://myaccount.blob.core.windows.net", "needs a container"),
        ("https://myaccount.blob.core.windows.net/", "needs a container"),
        ("https://MyAccount.blob.core.windows.net/c", "lower-case account"),  # ^https?://[a-z0-9_-]+\.<domain>
        ("https://myaccount.example.com/c", "a domain lakeFS accepts"),
        ("https://blob.core.windows.net/c", "a domain lakeFS accepts"),
        ("https://myaccount.blob.core.windows.net:10000/c", "must read"),
    ],
)
def test_azure_namespaces_lakefs_would_refuse_are_refused(bad, why):
    with pytest.raises(ValueError, match=why):
        parse_namespace(bad)


def test_gcs_namespaces():
    ns = parse_namespace("gs://bucket/a/b/")
    assert (ns.scheme, ns.bucket, ns.prefix, str(ns), ns.roots()) == (
        "gs",
        "bucket",
        "a/b",
        "gs://bucket/a/b",
        ("gs://bucket/a/b/",),
    )
    assert parse_namespace("gs://bucket").prefix == ""
    with pytest.raises(ValueError, match="needs a bucket"):
        parse_namespace("gs:///a")


def test_full_addresses_inside_azure_and_gcs_namespaces_are_relative_outside_dropped():
    az = parse_namespace("https://acct.blob.core.windows.net/cont/repo").roots()
    assert normalize_address("https://acct.blob.core.windows.net/cont/repo/data/g1/c1", FULL, az) == "data/g1/c1"
    for outside in (
        "https://acct.blob.core.windows.net/cont/repo2/data/g1/c1",
        "https://other.blob.core.windows.net/cont/repo/data/g1/c1",
        "https://acct.blob.core.windows.net/cont2/repo/data/g1/c1",
    ):
        assert normalize_address(outside, FULL, az) is None, outside
    gs = parse_namespace("gs://bucket/repo").roots()
    assert normalize_address("gs://bucket/repo/data/g1/c1", FULL, gs) == "data/g1/c1"
    assert normalize_address("gs://bucket/repository/x", FULL, gs) is None
    assert normalize_address("data/g1/c1", RELATIVE, gs) == "data/g1/c1"


@pytest.mark.parametrize(
    ("ns", "needed"),
    [
        ("https://acct.blob.core.windows.net/cont/repo", "a 'wasb' connection"),
        ("gs://bucket/repo", "a 'google_cloud_platform' connection"),
        ("s3://bucket/repo", "an 'aws' connection"),
    ],
)
def test_a_cloud_namespace_without_its_connection_is_refused_before_anything_is_read(ns, needed):
    from lakefs_gc.storage import AzureOptions, GCSOptions, S3Options

    with pytest.raises(
        SettingsError, match=f"'repo1' has namespace .*connection 'conn1' is not defined: define it \\({needed}"
    ):
        _location(ns, "x", None, None, "repo1", "conn1", None)
    wrong = S3Options() if not ns.startswith("s3") else GCSOptions()
    with pytest.raises(SettingsError, match=f"connection 'conn1' is for another store .*must be {needed}"):
        _location(ns, "x", wrong, None, "repo1", "conn1", None)
    right = {
        "s": S3Options(endpoint_url="http://e"),
        "g": GCSOptions(endpoint_url="http://e"),
        "h": AzureOptions(account_url="http://e", account_name="acct"),
    }[ns[0]]
    assert _location(ns, "x", right, None, "repo1", "conn1", None).endpoint_url == "http://e"
