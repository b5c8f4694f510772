"""The emulator's active-commits algorithm (reference 4.7) on hand-made commit graphs with known answers."""

from __future__ import annotations

import pytest

from lakefs_sandbox.emulator.active_commits import (
    DAY,
    CommitNode,
    Rules,
    active_commits,
    ancestry_leaves,
    starting_points,
)

NOW = 1_700_000_000.0


def graph(*specs: tuple[str, tuple[str, ...], float]) -> dict[str, CommitNode]:
    """(id, parents, age in days) -> commits map."""
    return {cid: CommitNode(cid, parents, NOW - age * DAY, meta_range_id=f"mr-{cid}") for cid, parents, age in specs}


def active(commits, branches, default_days, **branch_days) -> set[str]:
    return set(active_commits(commits, branches, Rules(default_days, branch_days), NOW))


LINEAR = graph(("c0", (), 30), ("c1", ("c0",), 20), ("c2", ("c1",), 10), ("c3", ("c2",), 2))


def test_linear_history_keeps_window_plus_first_commit_before_it():
    assert active(LINEAR, {"main": "c3"}, 7) == {"c3", "c2"}
    assert active(LINEAR, {"main": "c3"}, 15) == {"c3", "c2", "c1"}
    assert active(LINEAR, {"main": "c3"}, 100) == {"c3", "c2", "c1", "c0"}


def test_head_is_active_even_when_older_than_the_window():
    assert active(graph(("c0", (), 30), ("c1", ("c0",), 20)), {"main": "c1"}, 7) == {"c1"}
    # with c2, c3 left dangling above main's HEAD, they are walked as a leaf: c3 (2 days) keeps c2
    assert active(LINEAR, {"main": "c1"}, 7) == {"c1", "c3", "c2"}


def test_result_maps_commits_to_their_metarange():
    assert active_commits(LINEAR, {"main": "c3"}, Rules(7), NOW) == {"c3": "mr-c3", "c2": "mr-c2"}


def test_branch_rule_overrides_default_and_longest_retention_wins_on_shared_history():
    commits = dict(LINEAR, d1=CommitNode("d1", ("c1",), NOW - 12 * DAY))
    # dev keeps 15 days: d1 (12d) is inside, so its parent c1 is the first commit before dev's window
    assert active(commits, {"main": "c3", "dev": "d1"}, 7, dev=15) == {"c3", "c2", "d1", "c1"}
    # without the rule dev only keeps its HEAD (d1 is older than 7 days)
    assert active(commits, {"main": "c3", "dev": "d1"}, 7) == {"c3", "c2", "d1"}
    # two branches on one HEAD: the 30-day branch keeps the whole history whichever comes first
    assert active(LINEAR, {"main": "c3", "long": "c3"}, 7, long=30) == {"c3", "c2", "c1", "c0"}
    assert active(LINEAR, {"a-long": "c3", "main": "c3"}, 7, **{"a-long": 30}) == {"c3", "c2", "c1", "c0"}


# m0 <- m1 <------------- m2 (merge: parents [m1, x2]; main parent m1)
#          \- x1 <- x2 -/            (feature branch deleted: x2 is a dangling ancestry leaf)
MERGE = graph(("m0", (), 40), ("m1", ("m0",), 30), ("x1", ("m1",), 25), ("x2", ("x1",), 20), ("m2", ("m1", "x2"), 3))


def test_merge_follows_first_parent_only():
    assert ancestry_leaves(MERGE) == {"m2", "x2"}
    # 7 days: the merged-in feature commits are not on main's main ancestry and f2 is too old as a leaf
    assert active(MERGE, {"main": "m2"}, 7) == {"m2", "m1"}


def test_dangling_leaf_inside_default_window_is_walked_like_a_branch():
    # 21 days: leaf x2 (20d) is active, and x1 as the first commit before the window;
    # the walk stops at m1, already processed by main with the same threshold
    assert active(MERGE, {"main": "m2"}, 21) == {"m2", "m1", "x2", "x1"}


def test_merge_with_live_feature_branch_uses_its_rule():
    assert active(MERGE, {"main": "m2", "feature": "x2"}, 7, feature=30) == {"m2", "m1", "x2", "x1"}


def test_walk_order_quirk_of_lakefs_is_kept():
    """lakeFS walks starting points in commit-id order and stops at any commit already processed with a
    threshold not after its own, even when that walk did not make the commit active. So with equal
    retention, the first walker through a shared ancestor decides for everyone. Known answers from
    the Go code (pkg/graveler/retention/active_commits.go)."""
    # the dangling leaf "a2" sorts before main's HEAD "m2": its walk marks m1 processed (not active,
    # since a2 is older than 7 days) and main's walk then stops before keeping m1
    merge = graph(
        ("m0", (), 40), ("m1", ("m0",), 30), ("a1", ("m1",), 25), ("a2", ("a1",), 20), ("m2", ("m1", "a2"), 3)
    )
    assert active(merge, {"main": "m2"}, 7) == {"m2"}


def test_version_zero_commits_use_the_last_parent_as_main_parent():
    old = CommitNode("x", ("a", "b"), NOW, version=0)
    assert old.main_parent == "b"
    assert CommitNode("y", ("a", "b"), NOW).main_parent == "a"


def test_recent_dangling_commit_keeps_itself_and_its_parent():
    # leaf "a" (2 days, on c0) is walked before main ("c3"): it keeps a and c0
    commits = dict(LINEAR, a=CommitNode("a", ("c0",), NOW - 2 * DAY))
    assert active(commits, {"main": "c3"}, 7) == {"c3", "c2", "a", "c0"}
    assert starting_points(commits, {"main": "c3"}) == [("a", ""), ("c3", "main")]
    # leaf "d" sorts after "c3": main's walk already processed c0 with the same threshold (quirk)
    commits = dict(LINEAR, d=CommitNode("d", ("c0",), NOW - 2 * DAY))
    assert active(commits, {"main": "c3"}, 7) == {"c3", "c2", "d"}


def test_back_dated_commit_is_judged_per_edge():
    # c2 was committed with a date 20 days back on top of c1 (1 day old): c2 is older than the
    # window, so c1 is not kept for it; c1 itself is inside the window, so its parent c0 is kept
    commits = graph(("c0", (), 40), ("c1", ("c0",), 1), ("c2", ("c1",), 20))
    assert active(commits, {"main": "c2"}, 7) == {"c2", "c0"}


def test_head_that_is_also_a_leaf_is_a_branch_starting_point_only():
    pts = starting_points(LINEAR, {"main": "c3", "other": "c3"})
    assert pts == [("c3", "main"), ("c3", "other")]


def test_missing_parent_is_an_error():
    with pytest.raises(KeyError):
        active_commits(graph(("c1", ("gone",), 1)), {"main": "c1"}, Rules(7), NOW)
