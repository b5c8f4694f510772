"""``python -m bench delete --slowdown`` at a toy size: both deleters swept every key through the
storm, one line each with their figures."""

from __future__ import annotations

import re

from bench import delete_bench


def test_the_slowdown_bench_prints_both_deleters_through_the_storm(capsys):
    argv = ["--slowdown", "--keys", "600", "--rate", "400", "--tasks", "2", "--batch", "50", "--storm-seconds", "1"]
    status = delete_bench.main(argv)
    out = capsys.readouterr().out
    assert "The sweep through a SlowDown storm: 600 keys, delete_rate 400 keys/s, 2 tasks" in out
    line = r"^  (?P<name>shared|alone) +[\d,]+ +[\d,-]+ +[\d,]+ +[\d.]+ +[\d,]+ +(?P<dead>[\d,]+) +\S+$"
    rows = {m["name"]: m["dead"] for m in re.finditer(line, out, re.M)}
    assert set(rows) == {"shared", "alone"}, out
    assert rows["shared"] == "0", out  # no dead letters from throttling
    assert status == 0  # every key not a dead letter is gone from storage
