"""``lakefs_gc.config.lines``: the config file read as ``yaml.safe_load`` reads it, with the line of every part."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from lakefs_gc.config.lines import load_yaml

REPO = Path(__file__).resolve().parents[2]

TEXT = """\
base: &base
  mode: mark_only
  tasks: {retries: 1}
defaults:
  <<: *base
  schedule: "@daily"
repositories:
  - repository: a-repo
    spark:
      conf: {spark.sql.shuffle.partitions: 4}
      driver_memory: lots
  - {repository: b-repo, notify: {on_failure: [{slack: {channel: "#x"}}]}}
  - repository: c-repo
    mode: mark_only
    mode: mark_and_sweep
dates: [2024-01-01, 1.5, yes, ~, 0o17]
"""


def test_the_values_are_safe_loads():
    doc, _ = load_yaml(TEXT)
    assert doc == yaml.safe_load(TEXT)
    assert type(doc["repositories"][0]) is dict  # plain containers: nothing the parser could trip on
    assert type(doc["repositories"]) is list


@pytest.mark.parametrize("path", sorted((REPO / "config").glob("*.yaml")), ids=lambda p: p.name)
def test_the_checked_in_files_read_as_safe_load_reads_them(path):
    doc, _ = load_yaml(path.read_text())
    assert doc == yaml.safe_load(path.read_text())


def test_each_field_path_has_its_line():
    doc, lines = load_yaml(TEXT)
    a, b, c = doc["repositories"]
    assert lines.find(a, "spark.driver_memory") == 11
    assert lines.find(a, "spark.conf.spark.sql.shuffle.partitions") == 10  # a key holding dots, found whole
    assert lines.find(b, "notify.on_failure[0].slack") == 12
    assert lines.find(doc["repositories"], "[2]") == 13
    assert lines.find(c, None) == 13  # the entry itself
    assert lines.find(a, "spark.executor_memory") == 9  # a key it lacks: its parent's line
    assert lines.find(a, "sweep.rate") == 8  # nothing of it: the entry's
    assert lines.find(doc["defaults"], "mode") == 2  # merged in (<<): where the anchor has it
    assert lines.find(doc["defaults"], "schedule") == 6
    assert lines.find({"not": "of the document"}, "not") is None


def test_a_key_given_twice_is_noted_with_both_lines():
    doc, lines = load_yaml(TEXT)
    assert lines.twice(doc["repositories"][2]) == [("mode", 14, 15)]
    assert lines.twice(doc["defaults"]) == []  # a key merged in and set again is no repeat
    assert lines.twice(doc) == []


def test_yaml_errors_are_safe_loads():
    with pytest.raises(yaml.YAMLError, match="line 2"):
        load_yaml("a: [\n")
    with pytest.raises(yaml.YAMLError, match="unhashable"):
        load_yaml("? [a]\n: 1\n")


def test_a_document_that_holds_itself_loads():
    doc, lines = load_yaml("a: &x [1, *x]\n")
    assert doc["a"][1] is doc["a"]
    assert lines.find(doc, "a[1][1][0]") == 1
