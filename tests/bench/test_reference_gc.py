"""lakeFS's own Spark GC as the judge: one differential scenario (the sample repository of
``lakefs_sandbox.seed``) marked by lakeFS's GC and by ours on the same repository (the emulator on a moto
S3 namespace), and the two ``deleted/`` sets compared (bench/reference.py runs them all).

lakeFS's GC is not part of this project and the Maven Central mirror reachable here does not serve
``io.lakefs:lakefs-spark-client``: the test runs when ``LAKEFS_GC_REFERENCE_JAR`` (and
``LAKEFS_GC_REFERENCE_JARS``) name a build of it, and is skipped with that reason otherwise.
"""

from __future__ import annotations

import pytest

from bench import reference

pytestmark = pytest.mark.spark


def _jars_or_skip():
    try:
        reference.reference_jars()
    except reference.ReferenceUnavailable as e:
        pytest.skip(str(e))


def test_sample_repository_marked_alike_by_lakefs_gc_and_ours(
    moto_server, lakefs_emulator_factory, tmp_path, monkeypatch
):
    _jars_or_skip()
    monkeypatch.setenv("AWS_REQUEST_CHECKSUM_CALCULATION", "when_required")
    monkeypatch.setenv("AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required")
    emu = lakefs_emulator_factory("--grace-period", str(reference.MIN_AGE), s3=moto_server)
    bucket = moto_server.create_bucket("reference-diff")
    s3 = reference.S3Place(moto_server.endpoint_url, moto_server.access_key, moto_server.secret_key)
    h = reference.Harness(emu.url, emu.access_key, emu.secret_key, s3, bucket, "repos", tmp_path, emu.client())
    try:
        outcome = h.run("sample", reference.scenario_sample, 0)
    finally:
        if reference._SPARK is not None:
            reference._SPARK.stop()
            reference._SPARK = None
    reference.report(outcome)
    assert outcome.reference, "lakeFS's GC marked nothing: the scenario lost its garbage"
    assert outcome.ours == outcome.reference, (outcome.only_ours, outcome.only_reference)


def test_two_runs_in_a_row_the_incremental_marks_within_lakefs_gc(
    moto_server, lakefs_emulator_factory, tmp_path, monkeypatch
):
    """Issue 18: a clean run of ours that sweeps, churn (the staged objects of the first mark
    committed, dated back), then lakeFS's GC and our incremental run at the same moment: ours marks
    nothing lakeFS's GC keeps, nothing live, nothing our clean run would keep."""
    _jars_or_skip()
    monkeypatch.setenv("AWS_REQUEST_CHECKSUM_CALCULATION", "when_required")
    monkeypatch.setenv("AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required")
    emu = lakefs_emulator_factory("--grace-period", str(reference.MIN_AGE), s3=moto_server)
    bucket = moto_server.create_bucket("reference-two-runs")
    s3 = reference.S3Place(moto_server.endpoint_url, moto_server.access_key, moto_server.secret_key)
    h = reference.Harness(emu.url, emu.access_key, emu.secret_key, s3, bucket, "repos", tmp_path, emu.client())
    try:
        outcome = h.run_two("two_runs", reference.scenario_lakefs_shape, 0)
    finally:
        if reference._SPARK is not None:
            reference._SPARK.stop()
            reference._SPARK = None
    reference.report(outcome)
    assert outcome.reference, "lakeFS's GC marked nothing after the churn"
    assert not outcome.only_ours, outcome.only_ours
    assert outcome.ours <= outcome.clean
    assert not outcome.ours & outcome.live
