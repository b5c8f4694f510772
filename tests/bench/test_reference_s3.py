"""``python -m bench reference``'s default S3 server, gofakes3 (lakefs_sandbox.cloud_servers): its big
scenario (half the objects uploaded through lakeFS by worker processes, half written straight into the
namespace, a tenth of that with a committed object's bytes) built on it, and our GC marks exactly the garbage, each step timed and the servers' CPU
read meanwhile. lakeFS's GC marks it too when its jar is given (``LAKEFS_GC_REFERENCE_JAR*``)."""

from __future__ import annotations

import pytest

from bench import reference
from lakefs_sandbox.cloud_servers import start_gofakes3

pytestmark = pytest.mark.spark


@pytest.fixture
def gofakes3(tmp_path):
    srv = start_gofakes3(tmp_path / "gofakes3")
    yield srv
    srv.stop()


def test_gofakes3_serves_our_storage(gofakes3):
    from lakefs_gc.storage import open_storage

    gofakes3.create("plain")
    gofakes3.made.clear()
    gofakes3.create("plain")  # a bucket there already is no error
    st = open_storage(gofakes3.namespace("plain", "ns"), gofakes3.options())
    for i in range(3):
        st.put(f"data/s/{i}", b"x")
    assert [o.key for o in st.list("data/", recursive=True)] == ["data/s/0", "data/s/1", "data/s/2"]
    st.delete_batch(["data/s/1"])
    assert [o.key for o in st.list("data/", recursive=True)] == ["data/s/0", "data/s/2"]


def test_the_big_scenario_on_gofakes3_marks_exactly_its_garbage(gofakes3, lakefs_emulator_factory, tmp_path, spark,
                                                               monkeypatch):
    monkeypatch.setenv("AWS_REQUEST_CHECKSUM_CALCULATION", "when_required")
    monkeypatch.setenv("AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required")
    emu = lakefs_emulator_factory("--grace-period", str(reference.MIN_AGE), s3=gofakes3)
    bucket = gofakes3.create("bench-big")
    s3 = reference.S3Place(gofakes3.endpoint_url, gofakes3.access_key, gofakes3.secret_key)
    h = reference.Harness(emu.url, emu.access_key, emu.secret_key, s3, bucket, "repos", tmp_path, emu.client(),
                          {"gofakes3": gofakes3.proc.pid})
    reference._SPARK = spark
    try:
        outcome = h.run("big", reference.scenario_big, 0, objects=400, s3=s3.options(), processes=2,
                         suspicious=0.1)
    finally:
        reference._SPARK = None  # the tests' shared SparkSession: never stopped here
    reference.report(outcome)
    assert outcome.objects == 400 and len(outcome.live) == 200
    assert outcome.ours == {f"data/garbage{i % 50:02d}/obj{i:07d}" for i in range(200)}
    assert outcome.ok(), (outcome.only_ours, outcome.only_reference)
    assert list(outcome.ours_phases) == ["prepare_run", "mark_uncommitted", "list_committed", "list_slices",
                                         "compute_candidates"]
    assert sum(outcome.ours_phases.values()) == pytest.approx(outcome.ours_seconds)
    assert set(outcome.servers_cpu["ours"]) == {"gofakes3"} and outcome.servers_cpu["ours"]["gofakes3"] > 0


def test_lakefs_gc_actions_and_stages_are_named_by_the_line_that_asked():
    """lakeFS's GC (clients/spark 0.22.0) timed per phase: its actions by their call site."""
    from bench.spark_events import Stage

    act = reference.reference_action
    assert act("isEmpty at GarbageCollection.scala:83") == act("first at GarbageCollection.scala:84")
    assert act("parquet at GarbageCollection.scala:291").startswith("mark: data/ listed")
    assert act("parquet at GarbageCollection.scala:172") == "lakeFS's uncommitted Parquet (its schema)"
    assert act("text at GarbageCollection.scala:292").startswith("deleted.text")
    assert act("collect at ActiveCommitsAddressLister.scala:49") == "the commits CSV lakeFS prepared"
    assert act("") == "other: "

    def stage(files, scopes, site="parquet at GarbageCollection.scala:291"):
        return Stage(1, site, files, scopes, 0.0, 1.0, 2)
    assert reference.reference_stage(stage(["LakeFSContext.scala"], ["mapPartitions"])).endswith("ranges read")
    assert "listed" in reference.reference_stage(stage(["CompletableFuture.java"], ["Exchange", "WholeStageCodegen (2)"]))
    assert "final" in reference.reference_stage(stage([], ["Exchange", "InMemoryTableScan", "WriteFiles"]))
    assert reference.reference_stage(stage([], ["AQEShuffleRead", "WholeStageCodegen (3)"])) is None
    assert reference.reference_stage(stage([], ["Exchange"], site="text at GarbageCollection.scala:292")) is None
