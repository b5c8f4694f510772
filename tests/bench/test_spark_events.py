"""bench.spark_events: where a Spark application's time went, from its event log (the shapes Spark 4.2
writes: rolling ``eventlog_v2_<app>/events_<n>_<app>`` parts, SQL jobs named by their SQL execution)."""

from __future__ import annotations

import json

import pytest

from bench import spark_events


def _rdd(rid: int, callsite: str, scope: str) -> dict:
    return {"RDD ID": rid, "Callsite": callsite, "Scope": json.dumps({"id": str(rid), "name": scope})}


def _stage(sid: int, start: float, end: float, rdds: list[dict]) -> dict:
    return {"Event": "SparkListenerStageCompleted", "Stage Info": {
        "Stage ID": sid, "Submission Time": int(start * 1000), "Completion Time": int(end * 1000),
        "Number of Tasks": 2, "RDD Info": rdds}}


def _log(tmp_path, events: list[dict], parts: int = 2):
    """The events as Spark 4's rolling log, split into ``parts`` files."""
    d = tmp_path / "eventlog_v2_local-1"
    d.mkdir()
    (d / "appstatus_local-1").write_text("")
    size = -(-len(events) // parts)
    for n in range(parts):
        (d / f"events_{n + 1}_local-1").write_text(
            "".join(json.dumps(e) + "\n" for e in events[n * size:(n + 1) * size]))
    return tmp_path


EVENTS = [
    {"Event": "SparkListenerApplicationStart", "Timestamp": 100_000},
    {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart", "executionId": 0,
     "description": "parquet at GarbageCollection.scala:283"},
    {"Event": "SparkListenerJobStart", "Job ID": 0, "Submission Time": 110_000, "Stage IDs": [0, 1, 2],
     "Properties": {"spark.sql.execution.root.id": "0", "spark.sql.execution.id": "0"}},
    # the listing and the ranges overlap in time; two listing stages overlap each other
    _stage(0, 110, 130, [_rdd(1, "parquet at GarbageCollection.scala:283", "LocalTableScan"),
                         _rdd(2, "parquet at GarbageCollection.scala:283", "Generate")]),
    _stage(1, 120, 135, [_rdd(3, "parquet at GarbageCollection.scala:283", "Generate")]),
    _stage(2, 112, 125, [_rdd(4, "mapPartitions at LakeFSContext.scala:140", "mapPartitions")]),
    {"Event": "SparkListenerJobEnd", "Job ID": 0, "Completion Time": 140_000},
    {"Event": "SparkListenerJobStart", "Job ID": 1, "Submission Time": 150_000, "Stage IDs": [3],
     "Properties": {"callSite.short": "count at GarbageCollection.scala:300"}},
    _stage(3, 150, 152, [_rdd(5, "count at GarbageCollection.scala:300", "Exchange")]),
    {"Event": "SparkListenerStageCompleted", "Stage Info": {"Stage ID": 4, "RDD Info": []}},  # skipped stage
    {"Event": "SparkListenerJobEnd", "Job ID": 1, "Completion Time": 152_000},
    {"Event": "SparkListenerApplicationEnd", "Timestamp": 160_000},
]


def test_phases_count_overlapping_stages_of_a_phase_once(tmp_path):
    app = spark_events.read(_log(tmp_path, EVENTS))
    assert [s.stage_id for s in app.stages] == [0, 1, 2, 3]
    assert app.stages[0].job_site == "parquet at GarbageCollection.scala:283"  # named by its SQL execution
    assert app.stages[3].job_site == "count at GarbageCollection.scala:300"
    assert app.stages[2].rdd_files == ["LakeFSContext.scala"] and app.stages[0].scopes == ["LocalTableScan",
                                                                                          "Generate"]

    def name(stage):
        if "LakeFSContext.scala" in stage.rdd_files:
            return "ranges"
        return "listing" if "Generate" in stage.scopes else "other"
    got = spark_events.phases(app, name, launched=90.0, exited=165.0)
    assert got == pytest.approx({"start-up (JVM, SparkContext)": 10.0, "listing": 25.0, "ranges": 13.0,
                                 "other": 2.0, "driver, outside jobs": 60 - 30 - 2, "shut-down": 5.0})


def test_a_plain_log_file_and_bad_directories(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "local-1").write_text("".join(json.dumps(e) + "\n" for e in EVENTS))
    assert len(spark_events.read(plain).stages) == 4
    (plain / "local-2").write_text("")
    with pytest.raises(ValueError, match="holds 2 finished event logs"):
        spark_events.read(plain)
    empty = tmp_path / "empty"
    (empty / "eventlog_v2_x").mkdir(parents=True)
    with pytest.raises(ValueError, match="no events_"):
        spark_events.read(empty)


def test_covered_unions_intervals():
    assert spark_events.covered([(0, 10), (5, 12), (20, 21), (1, 2)]) == 13
    assert spark_events.covered([]) == 0
