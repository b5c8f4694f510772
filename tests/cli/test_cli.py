"""`lakefs-gc sst dump` (the installed console script)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.golden import LAKEFS_SST, PEBBLE, require_golden

require_golden()
EXE = shutil.which("lakefs-gc", path=str(Path(sys.executable).parent))


def run(*args):
    assert EXE, "console script lakefs-gc is not installed in the venv (run scripts/setup.sh)"
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=60, check=False)


def lines(res):
    return [json.loads(x) for x in res.stdout.splitlines()]


def test_dump_range():
    res = run("sst", "dump", str(LAKEFS_SST / "range.sst"))
    assert res.returncode == 0, res.stderr
    recs = lines(res)
    assert recs[0] == {
        "key": "a/b/c/no",
        "address": "b0c968736d8f42a2b1c6284835f08226",
        "address_type": "RELATIVE",
        "size": 11,
        "etag": "664c688b4ea9c56730daacfc3d70aeed",
        "last_modified": "2021-08-05T11:39:44.471124555Z",
        "identity": recs[0]["identity"],
    }
    assert len(recs) == 2
    assert len(recs[0]["identity"]) == 64


def test_dump_metarange():
    res = run("sst", "dump", str(LAKEFS_SST / "metarange.sst"))
    assert lines(res) == [
        {
            "key": "a/b/c/yes",
            "range_id": "a83af763ba098c15369d9d6d723731eb9ce18b8dfac4f88c6f1287e772393d0e",
            "min_key": "a/b/c/no",
            "max_key": "a/b/c/yes",
            "count": 2,
            "estimated_size": 1190,
        }
    ]


def test_dump_plain_table_and_props():
    res = run("sst", "dump", str(PEBBLE / "h.sst"))
    recs = lines(res)
    assert len(recs) == 1710
    assert recs[0] == {"key": "a", "value": "97"}
    props = lines(run("sst", "dump", "--props", str(LAKEFS_SST / "range.sst")))[0]
    assert props["type"] == "ranges"
    assert props["count"] == "2"


@pytest.mark.parametrize(("name", "needle"), [("h.ldb", "LevelDB"), ("h.txt", "bad magic")])
def test_bad_input_is_one_line_on_stderr_and_nonzero(name, needle):
    res = run("sst", "dump", str(PEBBLE / name))
    assert res.returncode == 2
    assert res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1
    assert needle in res.stderr
    assert name in res.stderr


def test_missing_file():
    res = run("sst", "dump", "/nonexistent/x.sst")
    assert res.returncode == 2
    assert "No such file" in res.stderr


def test_config_check_passes_the_two_line_entry_and_names_three_mistakes_in_one_run(tmp_path):
    """The README's minimal entry passes as it is; a file with three mistakes gets all three."""
    cfg = tmp_path / "gc.yaml"
    cfg.write_text("repositories:\n  - repository: my-repo\n    storage_conn_id: aws_default\n")
    r = run("config", "check", str(cfg))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == f"{cfg}: 1 good, 0 bad", r.stdout + r.stderr
    cfg.write_text(
        "repositories:\n"
        "  - {repository: a-repo, mode: sweep, shedule: '@daily'}\n"
        "  - {repository: b-repo, min_age_seconds: -1}\n"
    )
    r = run("config", "check", str(cfg))
    errors = [ln for ln in r.stdout.splitlines() if ln.startswith("error  ")]
    assert r.returncode == 2, r.stdout
    assert len(errors) == 3, r.stdout
    assert "(a-repo): unknown field(s) ['shedule']" in errors[0]
    assert "(a-repo): field 'mode'" in errors[1]
    assert "(b-repo): field 'min_age_seconds'" in errors[2]
    assert r.stdout.splitlines()[-1] == f"{cfg}: 0 good, 2 bad (3 problems)"


def test_config_check_says_each_entry_and_the_nearest_field_of_a_typo(tmp_path):
    common = "lakefs_conn_id: l, storage_conn_id: s, spark_conn_id: p, min_age_seconds: 86400, mode: mark_only"
    cfg = tmp_path / "gc.yaml"
    cfg.write_text(
        "repositories:\n"
        f"  - {{repository: a-repo, {common}, shedule: '@daily'}}\n"
        f"  - {{repository: b-repo, {common}, spark: {{drivr_memory: 1g}}}}\n"
        f"  - {{repository: c-repo, {common}}}\n"
    )
    r = run("config", "check", str(cfg))
    assert r.returncode == 2, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == (
        "ok     c-repo: DAG lakefs_gc__c-repo, mode mark_only, schedule none (manual runs), min age 86400s"
    )
    assert lines[1].startswith(
        f"error  {cfg}: repositories[0] (a-repo): unknown field(s) ['shedule'] (did you mean: 'shedule' -> 'schedule'?)"
    )
    assert lines[2].startswith(
        f"error  {cfg}: repositories[1] (b-repo): field 'spark': unknown key(s) "
        "['drivr_memory'] (did you mean: 'drivr_memory' -> 'driver_memory'?)"
    )
    assert lines[-1] == f"{cfg}: 1 good, 2 bad (2 problems)"
    cfg.write_text("repositorys: []\n")
    r = run("config", "check", str(cfg))
    assert r.returncode == 2
    assert r.stdout == ""
    # every problem of the file at once: the misspelt key, and so no repositories list
    assert r.stderr.strip().splitlines() == [
        f"lakefs-gc config check: error: {cfg}: unknown top-level key(s) ['repositorys'] "
        "(did you mean: 'repositorys' -> 'repositories'?) (allowed: defaults, repositories, pools, discover)",
        f"lakefs-gc config check: error: {cfg}: 'repositories' must be a non-empty list (or give a 'discover' section)",
    ]


def test_config_pools_prints_what_airflow_pools_import_reads(tmp_path):
    import json

    cfg = tmp_path / "gc.yaml"
    cfg.write_text("pools: {lakefs_gc_spark: 3}\nrepositories: [{repository: my-repo}]\n")
    r = run("config", "pools", str(cfg))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {
        "lakefs_gc_spark": {
            "slots": 3,
            "include_deferred": False,
            "description": (
                "lakeFS GC: the Spark steps of the repositories whose spark.pool names it (a few runs at a time)"
            ),
        }
    }
    cfg.write_text("pools: {lakefs_gc_spark: 0}\nrepositories: [{repository: my-repo}]\n")
    r = run("config", "pools", str(cfg))
    assert r.returncode == 2
    assert "lakefs-gc config pools: error: " in r.stderr
    assert "slots must be an integer >= 1" in r.stderr


def test_config_check_of_the_checked_in_file_passes():
    r = run("config", "check", str(Path(__file__).resolve().parents[2] / "config" / "gc_repositories.yaml"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1].endswith(": 1 good, 0 bad"), r.stdout + r.stderr


def test_config_check_names_the_file_in_a_yaml_error(tmp_path):
    cfg = tmp_path / "gc.yaml"
    cfg.write_text("repositories:\n  - repository: my-repo\n   storage_conn_id: [unclosed\n")
    r = run("config", "check", str(cfg))
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{cfg}: not valid YAML" in r.stdout + r.stderr
    assert f'in "{cfg}", line' in r.stdout + r.stderr
    assert "<unicode string>" not in r.stdout + r.stderr


@pytest.mark.parametrize("command", [["config", "check"], ["sst", "dump"]])
def test_a_reader_that_stops_early_gets_no_traceback(tmp_path, command):
    """``lakefs-gc ... | head -1``: the pipe closes after the first line; the command stops quietly."""
    if command[0] == "config":
        target = tmp_path / "gc.yaml"  # a line per repository, many more than a pipe holds
        target.write_text("repositories:\n" + "".join(f"  - repository: repo-{i}\n" for i in range(20_000)))
    else:
        target = LAKEFS_SST / "range.sst"
    proc = subprocess.run(
        f"'{EXE}' {' '.join(command)} '{target}' | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert len(proc.stdout.splitlines()) == 1, proc.stdout[:500]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "BrokenPipeError" not in proc.stderr, proc.stderr[-2000:]


def test_config_pools_says_when_the_file_names_none_and_fails_on_a_bad_one(tmp_path):
    cfg = tmp_path / "gc.yaml"
    cfg.write_text("repositories:\n  - repository: my-repo\n    storage_conn_id: aws_default\n")
    r = run("config", "pools", str(cfg))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {}
    assert f"{cfg} names no pools" in r.stderr
    cfg.write_text("pools:\n  lakefs_gc_spark: -3\n" + cfg.read_text())
    r = run("config", "pools", str(cfg))
    assert r.returncode == 2
    assert "slots must be an integer >= 1, got -3" in r.stderr
    assert r.stdout == ""
