"""``python -m bench reference``'s own side on lakeFS itself, in every ``make test``: it broke
unseen once (a call to ``prepare_run`` with an argument that no longer existed, in code that ran
only with lakeFS's GC jar given). Here the harness builds its scenarios through lakefs-sdk on lakeFS
1.84 (S3 blockstore on moto) and our GC marks them (``mark_only``; and, for two runs in a row, a
clean sweeping run, churn, then an incremental mark beside a clean one). lakeFS's GC marks them too
when its jar is given (``LAKEFS_GC_REFERENCE_JAR*``; optional: without it the reference side is
skipped, saying why, and ours is judged alone against what lakeFS's API shows live)."""

from __future__ import annotations

import pytest

from bench import reference

pytestmark = pytest.mark.spark


@pytest.fixture
def harness(real_lakefs, moto_server, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_REQUEST_CHECKSUM_CALCULATION", "when_required")
    monkeypatch.setenv("AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required")
    server = real_lakefs("s3")
    bucket = moto_server.create_bucket("bench-reference")
    s3 = reference.S3Place(moto_server.endpoint_url, moto_server.access_key, moto_server.secret_key)
    yield reference.Harness(
        server.url, server.access_key, server.secret_key, s3, bucket, "repos", tmp_path, server.client()
    )
    reference._SPARK = None  # the tests' shared SparkSession: never stopped here


@pytest.mark.parametrize("scenario", ["sample", "lineage", "two_runs"])
def test_the_reference_harness_runs_our_side_on_lakefs_itself(scenario, harness, spark):
    reference._SPARK = spark
    if scenario == "sample":
        outcome = harness.run("sample", reference.scenario_sample, 0)
    elif scenario == "lineage":
        outcome = harness.run("lineage", reference.scenario_lineage, 0, s3=harness.s3.options())
    else:
        outcome = harness.run_two("two_runs", reference.scenario_lakefs_shape, 0)
    reference.report(outcome)
    assert outcome.ours, "our GC marked nothing: the scenario lost its garbage"
    assert not outcome.ours & outcome.live, f"ours would delete live objects: {sorted(outcome.ours & outcome.live)}"
    assert outcome.ok(), (outcome.only_ours, outcome.only_reference)
    if outcome.reference is not None and scenario == "sample":
        assert outcome.ours == outcome.reference
    if outcome.clean is not None:
        assert outcome.ours <= outcome.clean
