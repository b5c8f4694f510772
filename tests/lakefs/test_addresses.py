"""The address rule of reference 4.3 step 4, table-driven."""

from __future__ import annotations

import pytest

from lakefs_gc.lakefs.graveler import BY_PREFIX_DEPRECATED, FULL, RELATIVE, normalize_address

NS = "s3://bucket/repo"
CASES = [
    # (address, type, namespace, expected)
    ("data/gqv3epl4fd2o8m3men70/ce8co454fd2o8m3menag", RELATIVE, NS, "data/gqv3epl4fd2o8m3men70/ce8co454fd2o8m3menag"),
    ("b0c968736d8f42a2b1c6284835f08226", RELATIVE, NS, "b0c968736d8f42a2b1c6284835f08226"),
    # FULL inside the namespace: made relative, with and without a trailing slash on the namespace
    ("s3://bucket/repo/data/a/b", FULL, NS, "data/a/b"),
    ("s3://bucket/repo/data/a/b", FULL, NS + "/", "data/a/b"),
    ("s3://bucket/repo/legacyobject", FULL, NS, "legacyobject"),
    # FULL outside: dropped, including a sibling that only shares a string prefix
    ("s3://bucket/repo2/data/a/b", FULL, NS, None),
    ("s3://bucket/repo2/data/a/b", FULL, NS + "/", None),
    ("s3://bucket/repository/x", FULL, NS, None),
    ("s3://other-bucket/repo/data/a/b", FULL, NS, None),
    ("s3://bucket/repo", FULL, NS, None),  # the namespace itself is not an object in it
    ("s3://bucket/datasets/imported.csv", FULL, NS, None),
    ("gs://bucket/repo/data/a/b", FULL, NS, None),
    # BY_PREFIX_DEPRECATED: no scheme -> relative; with a scheme -> the FULL rule
    ("b0c968736d8f42a2b1c6284835f08226", BY_PREFIX_DEPRECATED, NS, "b0c968736d8f42a2b1c6284835f08226"),
    ("data/a/b", BY_PREFIX_DEPRECATED, NS, "data/a/b"),
    ("s3://bucket/repo/data/a/b", BY_PREFIX_DEPRECATED, NS, "data/a/b"),
    ("s3://bucket/repo2/data/a/b", BY_PREFIX_DEPRECATED, NS, None),
    # local namespaces
    ("local:///var/lakefs/repo/data/a/b", FULL, "local:///var/lakefs/repo", "data/a/b"),
    ("local:///var/lakefs/repo2/data/a/b", FULL, "local:///var/lakefs/repo/", None),
    ("local://repo/data/a/b", FULL, "local://repo", "data/a/b"),
]


@pytest.mark.parametrize(("address", "address_type", "namespace", "expected"), CASES)
def test_normalize_address(address, address_type, namespace, expected):
    assert normalize_address(address, address_type, namespace) == expected


def test_unknown_address_type_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="unknown address_type 7"):
        normalize_address("data/a", 7, NS)


def test_local_addresses_match_the_namespace_as_written_and_as_resolved():
    """A real lakeFS on the local blockstore names the namespace local://repo1 but writes full
    addresses and locations resolved under blockstore.local.path (lakeFS 1.84, checked on a server)."""
    from lakefs_gc.listing.committed import relative_key
    from lakefs_gc.storage import parse_namespace

    roots = parse_namespace("local://repo1", "/var/lakefs/block").roots()
    assert normalize_address("local:///var/lakefs/block/repo1/data/a/b", FULL, roots) == "data/a/b"
    assert normalize_address("local://repo1/data/a/b", FULL, roots) == "data/a/b"
    assert normalize_address("local:///var/lakefs/block/repo10/data/a/b", FULL, roots) is None
    assert normalize_address("local:///elsewhere/repo1/data/a/b", FULL, roots) is None
    loc = "local:///var/lakefs/block/repo1/_lakefs/retention/gc/uncommitted/r1/uncommitted"
    assert relative_key(roots, loc) == "_lakefs/retention/gc/uncommitted/r1/uncommitted"


def test_conformance_target_from_the_environment():
    from lakefs_sandbox.target import TargetConfigError, target_from_env

    assert target_from_env({}) is None
    base = {
        "LAKEFS_GC_TARGET_ENDPOINT": "http://127.0.0.1:8000",
        "LAKEFS_GC_TARGET_ACCESS_KEY_ID": "AK",
        "LAKEFS_GC_TARGET_SECRET_ACCESS_KEY": "SK",
    }
    with pytest.raises(TargetConfigError, match="LAKEFS_GC_TARGET_NAMESPACE_ROOT"):
        target_from_env(base)
    with pytest.raises(TargetConfigError, match="LAKEFS_GC_TARGET_LOCAL_ROOT"):
        target_from_env({**base, "LAKEFS_GC_TARGET_NAMESPACE_ROOT": "local://gc"})
    t = target_from_env(
        {
            **base,
            "LAKEFS_GC_TARGET_NAMESPACE_ROOT": "s3://b/gc",
            "LAKEFS_GC_TARGET_S3_ENDPOINT": "http://127.0.0.1:9000",
        }
    )
    assert t.namespace("r1") == "s3://b/gc/r1"
    assert t.aws_conn()["extra"]["endpoint_url"] == "http://127.0.0.1:9000"
    assert "SK" not in repr(t)
