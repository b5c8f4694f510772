"""bench.spark_events: where a Spark application's time went, from its event log (the shapes Spark 4.2
writes: rolling ``eventlog_v2_<app>/events_<n>_<app>`` parts, SQL jobs named by their SQL execution)."""

from __future__ import annotations

import json

import pytest

from bench import spark_events


def _rdd(rid: int, callsite: str, scope: str) -> dict:
    return {"RDD ID": rid, "Callsite": callsite, "Scope": json.dumps({"id": str(rid), "name": scope})}


def _stage(sid: int, start: float, end: float, rdds: list[dict]) -> dict:
    return {
        "Event": "SparkListenerStageCompleted",
        "Stage Info": {
            "Stage ID": sid,
            "Submission Time": int(start * 1000),
            "Completion Time": int(end * 1000),
            "Number of Tasks": 2,
            "RDD Info": rdds,
        },
    }


def _log(tmp_path, events: list[dict], parts: int = 2):
    """The events as Spark 4's rolling log, split into ``parts`` files."""
    d = tmp_path / "eventlog_v2_local-1"
    d.mkdir()
    (d / "appstatus_local-1").write_text("")
    size = -(-len(events) // parts)
    for n in range(parts):
        (d / f"events_{n + 1}_local-1").write_text(
            "".join(json.dumps(e) + "\n" for e in events[n * size : (n + 1) * size])
        )
    return tmp_path


EVENTS = [
    {"Event": "SparkListenerApplicationStart", "Timestamp": 100_000},
    {
        "Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart",
        "executionId": 0,
        "rootExecutionId": 0,
        "description": "parquet at GarbageCollection.scala:291",
        "time": 109_000,
    },
    {
        "Event": "SparkListenerJobStart",
        "Job ID": 0,
        "Submission Time": 110_000,
        "Stage IDs": [0, 1, 2],
        "Properties": {"spark.sql.execution.root.id": "0", "spark.sql.execution.id": "0"},
    },
    # the listing and the ranges overlap in time; two listing stages overlap each other
    _stage(
        0,
        110,
        130,
        [
            _rdd(1, "parquet at GarbageCollection.scala:291", "Exchange"),
            _rdd(2, "parquet at GarbageCollection.scala:291", "WholeStageCodegen (2)"),
        ],
    ),
    _stage(1, 120, 135, [_rdd(3, "parquet at GarbageCollection.scala:291", "Exchange")]),
    _stage(2, 112, 125, [_rdd(4, "mapPartitions at LakeFSContext.scala:140", "mapPartitions")]),
    {"Event": "SparkListenerJobEnd", "Job ID": 0, "Completion Time": 140_000},
    # the write's commit: the driver works for the SQL execution after its job
    {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd", "executionId": 0, "time": 146_000},
    {
        "Event": "SparkListenerJobStart",
        "Job ID": 1,
        "Submission Time": 150_000,
        "Stage IDs": [3],
        "Properties": {"callSite.short": "count at GarbageCollection.scala:301"},
    },
    _stage(3, 150, 152, [_rdd(5, "count at GarbageCollection.scala:301", "Exchange")]),
    {"Event": "SparkListenerStageCompleted", "Stage Info": {"Stage ID": 4, "RDD Info": []}},  # skipped stage
    {"Event": "SparkListenerJobEnd", "Job ID": 1, "Completion Time": 152_000},
    {"Event": "SparkListenerApplicationEnd", "Timestamp": 160_000},
]


def test_phases_by_action_and_stages_inside_them(tmp_path):
    app = spark_events.read(_log(tmp_path, EVENTS))
    assert [s.stage_id for s in app.stages] == [0, 1, 2, 3]
    assert app.stages[0].job_site == "parquet at GarbageCollection.scala:291"  # named by its SQL execution
    assert app.stages[3].job_site == "count at GarbageCollection.scala:301"
    assert app.stages[2].rdd_files == ["LakeFSContext.scala"]
    assert app.stages[0].scopes == ["Exchange", "WholeStageCodegen (2)"]
    assert [(a.site, a.start, a.end) for a in app.actions] == [
        ("parquet at GarbageCollection.scala:291", 109, 146),
        ("count at GarbageCollection.scala:301", 150, 152),
    ]

    got = spark_events.phases(app, lambda site: site.split(" ")[0], launched=90.0, exited=165.0)
    assert got == pytest.approx(
        {
            "start-up (JVM, SparkContext)": 10.0,
            "parquet": 37.0,
            "count": 2.0,
            "driver, outside Spark actions": 60 - 37 - 2,
            "shut-down": 5.0,
        }
    )

    def name(stage):
        if "LakeFSContext.scala" in stage.rdd_files:
            return "ranges"
        return "listing" if stage.scopes[:1] == ["Exchange"] and stage.job_site.startswith("parquet") else None

    # stages of one name that overlap count once; stages of no name are not counted
    assert spark_events.stage_phases(app, name) == pytest.approx({"listing": 25.0, "ranges": 13.0})


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
