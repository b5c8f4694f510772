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
    errors = [ln for ln in r.stdout.splitlines() if ": error: " in ln]
    assert r.returncode == 2, r.stdout
    assert len(errors) == 3, r.stdout
    assert errors[0].startswith(f"{cfg}:2: error: repositories[0] (a-repo): unknown field 'shedule'")
    assert errors[1].startswith(f"{cfg}:2: error: repositories[0] (a-repo): field 'mode'")
    assert errors[2].startswith(f"{cfg}:3: error: repositories[1] (b-repo): field 'min_age_seconds'")
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
    assert lines[1] == (f"{cfg}:2: error: repositories[0] (a-repo): unknown field 'shedule' (did you mean 'schedule'?)")
    assert lines[2] == (
        f"{cfg}:3: error: repositories[1] (b-repo): field 'spark': unknown key 'drivr_memory' "
        "(did you mean 'driver_memory'?)"
    )
    assert lines[-1] == f"{cfg}: 1 good, 2 bad (2 problems)"
    cfg.write_text("# the list of repositories\nrepositorys: []\n")
    r = run("config", "check", str(cfg))
    assert r.returncode == 2
    assert r.stderr == ""
    # every problem of the file at once: the misspelt key, and so no repositories list
    assert r.stdout.splitlines() == [
        f"{cfg}:2: error: unknown top-level key 'repositorys' (did you mean 'repositories'?)",
        f"{cfg}:2: error: 'repositories' must be a non-empty list (or give a 'discover' section)",
        f"{cfg}: 0 good, 0 bad (2 problems); 2 problems of the file as a whole: no GC DAG is built until they "
        "are fixed",
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


FIVE_IN_ONE = """\
repositories:
  - repository: my-repo
    mode: sweep
    min_age_seconds: -1
    spark:
      driver_memory: lots
      parallelism: 0
    sweep: {max_delete_share: 5}
  - repository: other-repo
"""


def test_config_check_names_every_problem_of_one_entry_each_at_its_line(tmp_path):
    """Five mistakes in one entry (two of them in one section): five lines, each at its line."""
    cfg = tmp_path / "gc.yaml"
    cfg.write_text(FIVE_IN_ONE)
    r = run("config", "check", str(cfg))
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr == ""
    assert r.stdout.splitlines() == [
        "ok     other-repo: DAG lakefs_gc__other-repo, mode mark_and_sweep, schedule none (manual runs), "
        "min age 86400s",
        f"{cfg}:3: error: repositories[0] (my-repo): field 'mode': must be one of mark_and_sweep, mark_only, "
        "got 'sweep'",
        f"{cfg}:4: error: repositories[0] (my-repo): field 'min_age_seconds': must be an integer >= 0 (seconds), "
        "got -1",
        f"{cfg}:6: error: repositories[0] (my-repo): field 'spark.driver_memory': must be a Spark memory size "
        "such as 1g or 512m, got 'lots'",
        f"{cfg}:7: error: repositories[0] (my-repo): field 'spark.parallelism': must be an integer >= 1, got 0",
        f"{cfg}:8: error: repositories[0] (my-repo): field 'sweep.max_delete_share': must be a number 0..1, got 5",
        f"{cfg}: 1 good, 1 bad (5 problems)",
    ]


def test_config_check_names_every_problem_of_defaults_once_and_the_entries_too(tmp_path):
    """``defaults`` is a block of its own: each bad field once, at its line (a problem of the whole
    file: no DAG is built), and the entries are checked as well, without repeating it."""
    cfg = tmp_path / "gc.yaml"
    cfg.write_text(
        "defaults:\n"
        "  mode: sweep\n"
        "  tasks: {retries: -1, execution_timeouts: {delet: 60}}\n"
        "  notify:\n"
        "    on_failure:\n"
        "      - smtp: {to: nobody, colour: red}\n"
        "repositories:\n"
        "  - repository: my-repo\n"
        "    shedule: '@daily'\n"
        "pools: {lakefs_gc_spark: 0}\n"
    )
    r = run("config", "check", str(cfg))
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout.splitlines() == [
        f"{cfg}:2: error: defaults: field 'mode': must be one of mark_and_sweep, mark_only, got 'sweep'",
        f"{cfg}:3: error: defaults: field 'tasks.execution_timeouts': unknown task id 'delet' (did you mean 'delete'?)",
        f"{cfg}:3: error: defaults: field 'tasks.retries': must be an integer >= 0, got -1",
        f"{cfg}:6: error: defaults: field 'notify.on_failure[0].smtp': unknown option 'colour' "
        "(allowed: from_email, smtp_conn_id, subject, to)",
        f"{cfg}:6: error: defaults: field 'notify.on_failure[0].smtp.to': must be a mail address or a list of "
        "them, got 'nobody'",
        f"{cfg}:9: error: repositories[0] (my-repo): unknown field 'shedule' (did you mean 'schedule'?)",
        f"{cfg}:10: error: pools: lakefs_gc_spark: slots must be an integer >= 1, got 0",
        f"{cfg}: 0 good, 1 bad (7 problems); 6 problems of the file as a whole: no GC DAG is built until they "
        "are fixed",
    ]


def test_config_check_flags_a_duplicate_even_when_its_first_copy_is_bad(tmp_path):
    cfg = tmp_path / "gc.yaml"
    cfg.write_text(
        "repositories:\n"
        "  - repository: my-repo\n"
        "    mode: sweep\n"
        "  - repository: other-repo\n"
        "  - repository: my-repo\n"
        "    mode: mark_only\n"
        "  - {repository: other-repo, mode: mark_only}\n"
    )
    r = run("config", "check", str(cfg))
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout.splitlines()[1:] == [
        f"{cfg}:3: error: repositories[0] (my-repo): field 'mode': must be one of mark_and_sweep, mark_only, "
        "got 'sweep'",
        f"{cfg}:5: error: repositories[2] (my-repo): field 'repository': duplicate repository 'my-repo' "
        "(also repositories[0])",
        f"{cfg}:7: error: repositories[3] (other-repo): field 'repository': duplicate repository 'other-repo' "
        "(also repositories[1])",
        f"{cfg}: 1 good, 3 bad (3 problems)",
    ]


def test_config_check_flags_a_key_given_twice(tmp_path):
    """YAML keeps the second of two equal keys without a word: a second ``repositories:`` would
    drop every entry of the first."""
    cfg = tmp_path / "gc.yaml"
    cfg.write_text(
        "repositories:\n"
        "  - repository: my-repo\n"
        "    mode: mark_only\n"
        "    mode: mark_and_sweep\n"
        "repositories:\n"
        "  - repository: other-repo\n"
        "    spark: {parallelism: 2, parallelism: 4}\n"
    )
    r = run("config", "check", str(cfg))
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout.splitlines() == [
        f"{cfg}:5: error: key 'repositories': given twice (lines 1 and 5): YAML keeps the second and drops the "
        "first without a word",
        f"{cfg}:7: error: repositories[0] (other-repo): field 'spark.parallelism': given twice on line 7: "
        "YAML keeps the second and drops the first without a word",
        f"{cfg}: 0 good, 1 bad (2 problems); 1 problem of the file as a whole: no GC DAG is built until it is fixed",
    ]
