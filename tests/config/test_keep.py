"""The ``keep`` section of the repositories file (issue 55): the three rules read and merged over
``defaults``, every bad rule refused by ``lakefs-gc config check`` naming its field and the fix; the
globs' meaning; the rules' lines in the report and their way to the run context."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lakefs_gc.config import load_config
from lakefs_gc.contract import BranchKeep, KeepRules, KeptByRule, from_wire, to_wire
from lakefs_gc.contract.keep import matcher

EXE = shutil.which("lakefs-gc", path=str(Path(sys.executable).parent))


def write(tmp_path, text: str) -> Path:
    p = tmp_path / "gc.yaml"
    p.write_text(textwrap.dedent(text))
    return p


def test_no_keep_section_is_lakefs_rules_alone(tmp_path):
    [repo] = load_config(write(tmp_path, "repositories:\n  - repository: repo-a\n")).repositories
    assert repo.keep == KeepRules()
    assert not repo.keep.active


def test_the_rules_are_read_and_merged_over_defaults_key_by_key(tmp_path):
    p = write(
        tmp_path,
        """
        defaults:
          keep: {tags_days: 30, paths: ["tables/critical/**"]}
        repositories:
          - repository: repo-a
            keep:
              tags_days: forever
              branches: [{pattern: "release-*", last: 10}]
          - repository: repo-b
        """,
    )
    a, b = load_config(p).repositories
    assert a.keep == KeepRules(
        tags_forever=True, branches=(BranchKeep("release-*", 10),), paths=("tables/critical/**",)
    )
    assert b.keep == KeepRules(tags_days=30, paths=("tables/critical/**",))
    assert from_wire(KeepRules, to_wire(a.keep), "keep") == a.keep  # as the DAG hands it to prepare_run


def test_config_check_refuses_each_bad_rule_naming_the_field_and_the_fix(tmp_path):
    assert EXE, "console script lakefs-gc is not installed in the venv (run scripts/setup.sh)"
    p = write(
        tmp_path,
        """
        repositories:
          - repository: repo-a
            keep:
              tags_days: -3
              branches:
                - {pattern: "rel[", last: 0}
                - {pattern: "main", lst: 2}
              paths: ["/tables/**", "a[b", ""]
              tag_days: 3
        """,
    )
    r = subprocess.run([EXE, "config", "check", str(p)], capture_output=True, text=True, timeout=60, check=False)
    errors = [ln.split(": error: ", 1)[1] for ln in r.stdout.splitlines() if ": error: " in ln]
    assert r.returncode == 2, r.stdout + r.stderr
    want = [
        "field 'keep': unknown key 'tag_days' (did you mean 'tags_days'?)",
        "field 'keep.tags_days': must be a whole number of days >= 1 or 'forever' (leave it out to keep no "
        "tagged commit beyond lakeFS's rules), got -3",
        "field 'keep.branches[0].pattern': an unclosed '[' (write '[[]' for a literal '['), got 'rel['",
        "field 'keep.branches[0].last': must be a whole number of commits >= 1 (1: the HEAD alone), got 0",
        "field 'keep.branches[1]': unknown key 'lst' (did you mean 'last'?)",
        "field 'keep.branches[1].last': must be a whole number of commits >= 1 (1: the HEAD alone), got None",
        "field 'keep.paths[0]': a logical path in lakeFS has no leading '/': write 'tables/**', got '/tables/**'",
        "field 'keep.paths[1]': an unclosed '[' (write '[[]' for a literal '['), got 'a[b'",
        "field 'keep.paths[2]': must be a non-empty glob such as 'tables/critical/**', got ''",
    ]
    got = sorted(e.removeprefix("repositories[0] (repo-a): ") for e in errors)
    assert got == sorted(want), r.stdout


@pytest.mark.parametrize(
    ("pattern", "matches", "not_matches"),
    [
        ("tables/**", ["tables/a", "tables/a/b/c.csv"], ["tables", "other/tables/a"]),
        ("tables/*.csv", ["tables/a.csv"], ["tables/x/a.csv", "tables/a.csvx"]),
        ("**/keep.txt", ["keep.txt", "a/b/keep.txt"], ["a/keep.txt.bak"]),
        ("obj/[0-3].bin", ["obj/0.bin", "obj/3.bin"], ["obj/4.bin", "obj/10.bin"]),
        ("obj/[!0-5].bin", ["obj/7.bin", "obj/!.bin"], ["obj/1.bin", "obj/5.bin"]),
        ("a[!x]b", ["a-b"], ["a/b", "axb"]),
        ("a[^]b", ["a^b"], ["axb"]),
        ("a?c", ["abc"], ["a/c", "ac"]),
        ("x.(y)+", ["x.(y)+"], ["xx(y)", "x.yy"]),
    ],
)
def test_globs_match_whole_logical_paths_star_within_a_folder(pattern, matches, not_matches):
    m = matcher([pattern])
    assert [p for p in matches if not m(p)] == []
    assert [p for p in not_matches if m(p)] == []


def test_the_report_names_what_each_rule_kept():
    from lakefs_gc.contract import CommittedResult, PartsDir
    from lakefs_gc.report.render import step_line, summary_rows
    from lakefs_gc.report.run_summary import RunSummary

    kept = (
        KeptByRule("tags_days: 30", commits=4, added=1),
        KeptByRule("branches 'release-*' (last 10)", commits=1, added=0),
        KeptByRule("paths 'tables/critical/**'", tables=12, addresses=1),
    )
    rows = [v for label, v in summary_rows(RunSummary(kept_by_rules=kept)) if label == "kept by the rule"]
    assert rows == [
        "tags_days: 30: 4 commits (1 more than lakeFS's rules keep)",
        "branches 'release-*' (last 10): 1 commit (0 more than lakeFS's rules keep)",
        "paths 'tables/critical/**': 1 address at its paths (in 12 tables of the history read for it)",
    ]
    result = CommittedResult(
        committed_dir=PartsDir("d/", 1),
        commits_csv="c",
        active_commits=1,
        metaranges=1,
        ranges=1,
        committed_addresses=1,
        kept_by_rules=kept[:1],
    )
    assert step_line("list_committed", result).endswith(
        "; kept by the rules: tags_days: 30: 4 commits (1 more than lakeFS's rules keep)"
    )
