"""The GC decision (``lakefs_gc.gc.decision``) stated once, run on both engines' relations: Spark
DataFrames and Python rows give the same candidates, key by key, on the same adversarial inputs;
and the step decides only through it."""

from __future__ import annotations

import inspect

import pytest

from lakefs_gc.gc import decision
from lakefs_gc.gc.decision import DataFrames, Rows, carried_candidates, compute_candidates

pytestmark = [pytest.mark.spark]

CUTOFF_MS = 1_000_000
LISTED = [
    ("data/s1/old", 10, 5, "c1"),  # candidate
    ("data/s1/young", 11, CUTOFF_MS, "c2"),  # at the cutoff: kept
    ("data/s1/committed", 12, 5, "c3"),
    ("data/s1/staged", 13, 5, "c4"),
    ("legacy-root-object", 14, 5, "c5"),  # a legacy object at the namespace root: a candidate
    ("_lakefs/retention/x", 15, 5, "c6"),  # protected
    ("dummy", 16, 5, "c7"),  # lakeFS's marker: protected
    ("data/s1/../escape", 17, 5, "c8"),  # a dot segment: never
    ("data/s2/no-time", 18, None, "c9"),  # no modification time: kept
    ("data/s2/\u2028line", 19, 5, None),  # an odd but deletable key
]
COMMITTED = ["data/s1/committed", "data/elsewhere"]
STAGED = ["data/s1/staged"]
CARRIED = ["data/s1/old", "data/s3/carried", "data/s3/committed-now", "_lakefs/x", "data/s3/staged-now"]


def test_both_relations_decide_the_same_candidates(spark):
    rows = Rows()
    here = compute_candidates(rows, LISTED, set(COMMITTED), set(STAGED), CUTOFF_MS)
    assert sorted(r[0] for r in here) == ["data/s1/old", "data/s2/\u2028line", "legacy-root-object"]

    frames = DataFrames()
    listed = spark.createDataFrame(LISTED, "address string, size long, last_modified_ms long, checksum string")
    committed = spark.createDataFrame([(a,) for a in COMMITTED], "address string")
    staged = spark.createDataFrame([(a,) for a in STAGED], "address string")
    there = compute_candidates(frames, listed, committed, staged, CUTOFF_MS).collect()
    assert sorted(tuple(r) for r in there) == sorted(here)

    more_committed, more_staged = {*COMMITTED, "data/s3/committed-now"}, {*STAGED, "data/s3/staged-now"}
    carried_here = carried_candidates(rows, CARRIED, LISTED, more_committed, more_staged)
    carried = spark.createDataFrame([(a,) for a in CARRIED], "address string")
    carried_there = carried_candidates(
        frames,
        carried,
        listed,
        spark.createDataFrame([(a,) for a in sorted(more_committed)], "address string"),
        spark.createDataFrame([(a,) for a in sorted(more_staged)], "address string"),
    ).collect()
    assert sorted(carried_here) == sorted(r[0] for r in carried_there) == ["data/s3/carried"]


def test_the_step_decides_only_through_the_decision():
    """The step states no rule of its own: it calls the decision's two functions, on either engine."""
    from lakefs_gc.steps import compute_candidates as step

    source = inspect.getsource(step)
    assert "compute_candidates(rel," in source
    assert "carried_candidates(rel," in source
    for rule in ("last_modified_ms", "left_anti", "is_deletable", "rlike"):
        assert rule not in source, f"the step restates the decision: {rule}"
    assert {"older_than", "minus", "addresses", "deletable"} <= {
        n for n, _ in inspect.getmembers(decision.Relations, inspect.isfunction)
    }
