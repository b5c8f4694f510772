"""``python -m bench reference``'s harness beyond the scenarios ``tests/real_lakefs/test_bench_reference.py``
runs: its big scenario (half the objects uploaded through lakeFS by worker processes, half written
straight into the namespace, a tenth of that with a committed object's bytes) on the emulator over
moto, and our GC marks exactly the garbage, each step timed and the S3 server's CPU read meanwhile
(lakeFS's GC marks it too when its jar is given, ``LAKEFS_GC_REFERENCE_JAR*``). The bench's own S3
server, SeaweedFS, is built on the bench's first use (about 10 minutes, ``scripts/seaweedfs.sh``),
too long for ``make test``: the bench is where it runs."""

from __future__ import annotations

import pytest

from bench import reference

pytestmark = pytest.mark.spark


def test_the_big_scenario_marks_exactly_its_garbage(moto_server, lakefs_emulator_factory, tmp_path, spark, monkeypatch):
    monkeypatch.setenv("AWS_REQUEST_CHECKSUM_CALCULATION", "when_required")
    monkeypatch.setenv("AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required")
    emu = lakefs_emulator_factory("--grace-period", str(reference.MIN_AGE), s3=moto_server)
    bucket = moto_server.create_bucket("bench-big")
    s3 = reference.S3Place(moto_server.endpoint_url, moto_server.access_key, moto_server.secret_key)
    h = reference.Harness(
        emu.url,
        emu.access_key,
        emu.secret_key,
        s3,
        bucket,
        "repos",
        tmp_path,
        emu.client(),
        {"moto": moto_server.proc.pid},
    )
    reference._SPARK = spark
    try:
        outcome = h.run("big", reference.scenario_big, 0, objects=400, s3=s3.options(), processes=2, suspicious=0.1)
    finally:
        reference._SPARK = None  # the tests' shared SparkSession: never stopped here
    reference.report(outcome)
    assert outcome.objects == 400
    assert len(outcome.live) == 200
    assert outcome.ours == {f"data/garbage{i % 50:02d}/obj{i:07d}" for i in range(200)} == outcome.garbage
    assert outcome.ok(), (outcome.only_ours, outcome.only_reference)
    assert list(outcome.ours_phases) == [
        "prepare_run",
        "mark_uncommitted",
        "list_committed",
        "list_slices",
        "compute_candidates",
    ]
    assert sum(outcome.ours_phases.values()) == pytest.approx(outcome.ours_seconds)
    assert set(outcome.servers_cpu["ours"]) == {"moto"}
    assert outcome.servers_cpu["ours"]["moto"] > 0


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
    assert "listed" in reference.reference_stage(
        stage(["CompletableFuture.java"], ["Exchange", "WholeStageCodegen (2)"])
    )
    assert "final" in reference.reference_stage(stage([], ["Exchange", "InMemoryTableScan", "WriteFiles"]))
    assert reference.reference_stage(stage([], ["AQEShuffleRead", "WholeStageCodegen (3)"])) is None
    assert reference.reference_stage(stage([], ["Exchange"], site="text at GarbageCollection.scala:292")) is None


def test_a_failed_scenario_is_reported_failed_and_the_rest_still_run(capsys):
    """One scenario's failure (here lakeFS's GC exiting non-zero) is that scenario's verdict:
    FAILED with its error; the scenarios after it run, and the command's status is non-zero."""
    ran = []

    class Fake:
        def run(self, name, build, seed, **kw):
            ran.append(name)
            if name == "lineage":
                raise RuntimeError("lakeFS's GC failed (exit 1) on ref-lineage-abc123; log /tmp/x.log:\nmore")
            return reference.Outcome(name, f"ref-{name}", 3, {"data/a"}, {"data/a"}, 1.0, 0.5)

        def run_two(self, name, build, seed, **kw):
            return self.run(name, build, seed, **kw)

    runs = [("sample", None, 0, {}), ("lineage", None, 0, {}), ("two_runs-shape", None, 0, {"two": True})]
    outcomes, failed = reference.run_scenarios(Fake(), runs)
    assert ran == ["sample", "lineage", "two_runs-shape"]
    assert failed == ["lineage"]
    assert [o.scenario for o in outcomes] == ["sample", "two_runs-shape"]
    out = capsys.readouterr().out
    assert "lineage          [FAILED] RuntimeError: lakeFS's GC failed (exit 1) on ref-lineage-abc123" in out
    assert runs[2][3] == {"two": True}, "the scenario list is left as given"


def test_a_restart_keeps_lakefs_url_keys_and_state(tmp_path):
    """The bench restarts lakeFS after its cherry-picks: the same URL, keys and repositories."""
    from lakefs_sandbox import real_lakefs

    server = real_lakefs.start(tmp_path / "lakefs")
    try:
        client = server.client()
        import lakefs_sdk

        client.repositories_api.create_repository(
            lakefs_sdk.RepositoryCreation(name="kept", storage_namespace=server.namespace("kept"))
        )
        url, old = server.url, server.proc
        server = real_lakefs.restart(server)
        assert server.url == url
        assert old.poll() is not None
        assert server.proc.poll() is None
        assert [r.id for r in client.repositories_api.list_repositories().results] == ["kept"]
    finally:
        server.stop()
