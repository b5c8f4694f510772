"""What a delete does to the bill, from a store's settings (``lakefs_gc.storage.billing``): which
lifecycle rules count as freeing the namespace's ``data/`` keys, and on what date.

Pure functions over the settings as the client libraries return them; the stores themselves are
in ``tests/sweeping/test_bill.py``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lakefs_gc.contract import FREED_LATER, FREED_NOW, STILL_BILLED, FreedOn, Freeing
from lakefs_gc.storage.billing import azure_freeing, gcs_freeing, s3_expiry, s3_freeing, s3_rule_days

DATA = "repo/data/"
NOW = datetime(2026, 11, 29, 9, 30, tzinfo=UTC)


def _rule(days=30, status="Enabled", **kw):
    return {"ID": kw.pop("ID", "r"), "Status": status, "NoncurrentVersionExpiration": {"NoncurrentDays": days}, **kw}


def test_s3_rounds_to_the_next_midnight_utc_as_aws_documents():
    # AWS's example: an object made 2014-01-15 10:30 UTC under a 3-day rule goes on 2014-01-19 00:00 UTC
    assert s3_expiry(datetime(2014, 1, 15, 10, 30, tzinfo=UTC), 3) == datetime(2014, 1, 19, tzinfo=UTC)
    assert s3_expiry(datetime(2026, 12, 31, 23, 59, tzinfo=UTC), 1) == datetime(2027, 1, 2, tzinfo=UTC)


@pytest.mark.parametrize(
    ("rule", "days", "why"),
    [
        (_rule(Filter={"Prefix": "repo/"}), 30, "rule r"),
        (_rule(Filter={"Prefix": ""}), 30, "rule r"),
        (_rule(Filter={}), 30, "rule r"),
        (_rule(Prefix="repo/data/"), 30, "rule r"),  # the legacy form: Prefix beside the rule's fields
        (_rule(Filter={"And": {"Prefix": "repo/"}}), 30, "rule r"),
        (_rule(Filter={"Prefix": "repo/data/s0/"}), None, "does not cover"),  # narrower: only some keys
        (_rule(Filter={"Prefix": "other/"}), None, "does not cover"),
        (_rule(status="Disabled", Filter={}), None, "disabled"),
        (_rule(Filter={"Tag": {"Key": "k", "Value": "v"}}), None, "tag"),
        (_rule(Filter={"And": {"Prefix": "repo/", "Tags": [{"Key": "k", "Value": "v"}]}}), None, "tag"),
        (_rule(Filter={"ObjectSizeGreaterThan": 1024}), None, "size"),
        (_rule(Filter={"And": {"Prefix": "repo/", "ObjectSizeLessThan": 10}}), None, "size"),
        (
            {
                "ID": "r",
                "Status": "Enabled",
                "Filter": {},
                "NoncurrentVersionExpiration": {"NoncurrentDays": 5, "NewerNoncurrentVersions": 2},
            },
            None,
            "newest",
        ),
        ({"ID": "r", "Status": "Enabled", "Filter": {}, "Expiration": {"Days": 1}}, None, ""),  # current versions only
    ],
)
def test_an_s3_rule_counts_only_when_it_provably_covers_every_data_key(rule, days, why):
    got, reason = s3_rule_days(rule, DATA)
    assert got == days
    assert why in reason


def test_s3_without_versioning_frees_now_and_with_versioning_waits_for_the_fewest_covering_days():
    assert s3_freeing(None, [], DATA, NOW).when == FREED_NOW
    rules = [
        _rule(60, ID="slow", Filter={}),
        _rule(7, ID="fast", Filter={"Prefix": "repo/"}),
        _rule(1, ID="tagged", Filter={"Tag": {"Key": "k", "Value": "v"}}),
        _rule(1, ID="off", status="Disabled", Filter={}),
    ]
    f = s3_freeing("Enabled", rules, DATA, NOW)
    assert (f.when, f.on, f.how) == (FREED_LATER, "2026-12-07T00:00:00.000000Z", "s3 versioning")
    assert "rule fast" in f.detail
    assert "delete marker" in f.detail
    assert "rule tagged: it has a tag condition" in f.detail
    assert "rule off is disabled" in f.detail
    never = s3_freeing("Enabled", rules[2:], DATA, NOW)
    assert (never.when, never.on) == (STILL_BILLED, None)
    assert "until someone acts" in never.detail
    assert s3_freeing("Suspended", [], DATA, NOW).when == STILL_BILLED  # versions made while enabled stay


def test_gcs_versioning_lifecycle_and_soft_delete():
    assert gcs_freeing(False, 0, [], DATA, NOW).when == FREED_NOW
    soft = gcs_freeing(False, 7 * 86400, [], DATA, NOW)
    assert (soft.when, soft.on, soft.how) == (FREED_LATER, "2026-12-06T09:30:00.000000Z", "gcs soft delete")
    rules = [
        {"action": {"type": "Delete"}, "condition": {"daysSinceNoncurrentTime": 10, "matchesPrefix": ["repo/"]}},
        {"action": {"type": "Delete"}, "condition": {"isLive": False, "age": 3, "matchesSuffix": [".parquet"]}},
        {"action": {"type": "Delete"}, "condition": {"numNewerVersions": 1}},
        {"action": {"type": "Delete"}, "condition": {"age": 1, "isLive": True}},
        {"action": {"type": "SetStorageClass", "storageClass": "NEARLINE"}, "condition": {"age": 1}},
    ]
    f = gcs_freeing(True, 86400, rules, DATA, NOW)  # the rule's 10 days, then a day soft-deleted
    assert (f.when, f.on, f.how) == (FREED_LATER, "2026-12-10T09:30:00.000000Z", "gcs versioning")
    assert "matchesSuffix cannot be proven" in f.detail
    assert "numNewerVersions" in f.detail
    assert gcs_freeing(True, 0, rules[1:], DATA, NOW).when == STILL_BILLED
    narrow = [{"action": {"type": "Delete"}, "condition": {"age": 1, "matchesPrefix": ["repo/data/s0/"]}}]
    assert gcs_freeing(True, 0, narrow, DATA, NOW).when == STILL_BILLED
    both = [{"action": {"type": "Delete"}, "condition": {"isLive": False, "age": 2, "daysSinceNoncurrentTime": 5}}]
    assert gcs_freeing(True, 0, both, DATA, NOW).on == "2026-12-04T09:30:00.000000Z"  # the later bound


def test_azure_soft_delete_versioning_and_what_could_not_be_read():
    assert azure_freeing(0, False, NOW).when == FREED_NOW
    f = azure_freeing(14, False, NOW)
    assert (f.when, f.on, f.how) == (FREED_LATER, "2026-12-13T09:30:00.000000Z", "azure soft delete")
    v = azure_freeing(14, True, NOW)
    assert (v.when, v.how) == (STILL_BILLED, "azure versioning")
    assert "lifecycle management" in v.detail
    assert azure_freeing(None, False, NOW).when == STILL_BILLED  # unknown: never counted as freed
    assert azure_freeing(0, None, NOW).when == STILL_BILLED


def test_a_freeing_splits_the_bytes_one_way():
    assert Freeing(FREED_NOW).split(100) == (100, (), 0)
    assert Freeing(FREED_LATER, "2026-12-01T00:00:00.000000Z").split(100) == (
        0,
        (FreedOn("2026-12-01T00:00:00.000000Z", 100),),
        0,
    )
    assert Freeing(FREED_LATER, "2026-12-01T00:00:00.000000Z").split(0) == (0, (), 0)
    assert Freeing(STILL_BILLED).split(100) == (0, (), 100)


def test_the_report_says_it_beside_reclaimed_and_first_when_deletes_free_nothing():
    from lakefs_gc.report.figures import run_figures
    from lakefs_gc.report.render import summary_text
    from lakefs_gc.report.run_summary import RunSummary

    base = {"run_id": "m", "mode": "mark_and_sweep", "success": True, "deleted": 2, "reclaimed_bytes": 3072}
    never = {"when": "never", "on": None, "how": "s3 versioning", "detail": "no rule"}
    doc = {**base, "freeing": never, "freed_now_bytes": 0, "freed_later": [], "still_billed_bytes": 3072}
    lines = summary_text(RunSummary.from_doc(doc)).splitlines()
    assert lines[3] == "bill: deletes on this store free nothing until someone acts (no rule)"
    assert "reclaimed: 3.0 KiB" in lines
    assert "freed: freed now 0 B, freed later 0 B, still billed 3.0 KiB  (s3 versioning: no rule)" in lines
    later = {"when": "later", "on": "2026-12-08T00:00:00.000000Z", "how": "gcs soft delete", "detail": "7 days"}
    doc = {
        **base,
        "freeing": later,
        "freed_now_bytes": 1024,
        "freed_later": [{"on": later["on"], "bytes": 2048}],
        "still_billed_bytes": 0,
    }
    summary = RunSummary.from_doc(doc)
    assert summary.to_doc() == doc
    text = summary_text(summary)
    assert "bill:" not in text
    assert "freed: freed now 1.0 KiB, freed later 2.0 KiB on 2026-12-08T00:00:00Z, still billed 0 B" in text
    assert run_figures(summary)["bytes_freed_later"] == 2048
    old = RunSummary.from_doc(base)  # a report written before: no freed row, no bill figures
    assert "freed" not in summary_text(old)
    assert "bytes_freed_now" not in run_figures(old)


def test_the_delete_result_carries_the_bill_over_the_wire():
    """A Spark job's result file (JSON) reads back with the figures and their dates."""
    import json

    from lakefs_gc.contract import DeleteResult, read_result, to_wire

    f = Freeing(FREED_LATER, "2026-12-08T00:00:00.000000Z", "s3 versioning", "rule ns")
    r = DeleteResult(freeing=f, freed_now_bytes=0, freed_later=f.split(5)[1], still_billed_bytes=0)
    assert read_result("delete", json.loads(json.dumps(to_wire(r)))) == r


def test_a_store_whose_settings_cannot_be_read_says_so_first_and_counts_as_billed():
    from lakefs_gc.report.render import summary_text
    from lakefs_gc.report.run_summary import RunSummary

    unknown = {"when": "never", "on": None, "how": "unknown", "detail": "cannot read the bucket's versioning (403)"}
    doc = {
        "run_id": "m",
        "reclaimed_bytes": 10,
        "freeing": unknown,
        "freed_now_bytes": 0,
        "freed_later": [],
        "still_billed_bytes": 10,
    }
    line = summary_text(RunSummary.from_doc(doc)).splitlines()[3]
    assert line == "bill: what deletes free on this store is not known (cannot read the bucket's versioning (403))"
