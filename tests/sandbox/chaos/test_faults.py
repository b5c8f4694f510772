"""The chaos bench's fault plan (a seed reproduces it; every service and phase comes round) and its
verdict on a result (lakefs_sandbox.chaos.table): what it flags, and the table docs/safety.md shows."""

from __future__ import annotations

from lakefs_sandbox.chaos.faults import PHASES, SERVICES, plan
from lakefs_sandbox.chaos.table import markdown, phase_struck, problems


def test_a_seed_reproduces_its_plan_and_every_service_and_phase_comes_round():
    assert plan(56, 30) == plan(56, 30)
    assert plan(56, 30) != plan(57, 30)
    faults = plan(56, 30)
    for start in range(0, 24, 8):  # each service once in every eight runs
        assert {f.service for f in faults[start : start + 8]} == set(SERVICES)
    assert {f.phase for f in faults[:9]} == set(PHASES)
    assert {f.way for f in faults} == {"kill", "pause"}
    assert all(3 <= f.down_s <= 25 and 0 <= f.delay_s <= 4 for f in faults)


def _run(index, service="lakefs", phase="delete", struck=("delete",), state="success", check=None, **kw):
    return {
        "index": index,
        "kind": "clean",
        "run_id": f"r{index}",
        "fault": {"service": service, "way": "kill", "phase": phase} if service else {},
        "struck_during": list(struck),
        "state": state,
        "tasks": {},
        "tries": {"delete": 2},
        "reason": kw.get("reason", "" if state == "success" else "delete: lakeFS refused"),
        "seconds": 60.0,
        "deleted": 3,
        "restore": kw.get("restore"),
        "check": check or {"live": 10, "lost": [], "outside": [], "garbage_left": []},
    }


def _result(runs, quiet=None):
    return {
        "seed": 5,
        "runs": runs,
        "quiet": quiet or _run(len(runs), service=None, struck=()),
        "writers": {"ok": {"upload": 3}, "failed": {"upload": 1}, "commits": 2},
        "seconds": 600.0,
    }


def test_the_verdict_flags_a_loss_an_outside_delete_a_stuck_run_garbage_and_a_bad_restore():
    good = _result([_run(0), _run(1, service="postgres", state="failed")])
    assert problems(good) == []
    bad = _result(
        [
            _run(
                0,
                check={
                    "live": 9,
                    "lost": ["data/a"],
                    "outside": ["data/b"],
                    "garbage_left": [],
                    "forgotten": ["data/f"],
                },
            ),
            _run(1, state="stuck"),
            _run(2, restore={"exit": 1, "keys": 2, "restored": 2, "unreadable": ["data/c"], "line": ""}),
            _run(3, state="failed", reason=""),
        ],
        quiet=_run(4, service=None, check={"live": 9, "lost": [], "outside": [], "garbage_left": ["data/g"]}),
    )
    found = "\n".join(problems(bad))
    for expected in (
        "live objects lost",
        "outside every mark",
        "ended stuck",
        "restore",
        "without a reason",
        "garbage objects left",
    ):
        assert expected in found, found


def test_the_table_counts_faults_by_service_and_the_phase_they_struck_in():
    runs = [
        _run(0, service="lakefs", phase="delete", struck=("delete",)),
        _run(1, service="minio", phase="list_committed", struck=("list_committed", "list_slices")),
        _run(2, service="minio", phase="delete", struck=()),  # the run had no delete: struck after it
        _run(3, service="postgres", phase="list_slices", struck=("(unknown: URLError)",)),
    ]
    assert [phase_struck(r) for r in runs] == ["delete", "list_committed", "between", "between"]
    table = markdown(_result(runs))
    assert "| minio | 1 |  | 1 | 2 |" in table, table
    assert "lost: **0**" in table
    assert "garbage left: **0**" in table
    assert "4 faults (4 kills, 0 pauses)" in table
