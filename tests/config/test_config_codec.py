"""The sections read through the wire codec: each field declared once (type and rule), its messages as before."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from lakefs_gc.config import ConfigError, SpaceSettings, SparkSettings, SweepSettings, TaskSettings
from lakefs_gc.config.entry import parse_entry
from lakefs_gc.config.model import RULE
from lakefs_gc.config.sections import _CLEAN_RUN_EVERY_RULES
from lakefs_gc.gc.flow import CleanRunEvery

CONFIG = Path(__file__).resolve().parents[2] / "include" / "lakefs_gc" / "config"
# the section classes read through read_section, and the fields each section reads by hand (no rule)
SECTIONS = {"spark": SparkSettings, "sweep": SweepSettings, "space": SpaceSettings, "tasks": TaskSettings}
BY_HAND = {"spark": {"conf"}, "tasks": {"execution_timeouts"}, "sweep": {"approval_above"}}

# (section, field, value, message): a wrong type and an out-of-range value of every converted field,
# each message as the hand-written parsers gave it before the sections went through the codec
CASES = [
    ("spark", "driver_memory", 5, "field 'spark.driver_memory': must be a Spark memory size such as 1g or 512m, got 5"),
    (
        "spark",
        "driver_memory",
        "1 g",
        "field 'spark.driver_memory': must be a Spark memory size such as 1g or 512m, got '1 g'",
    ),
    (
        "spark",
        "executor_memory",
        5,
        "field 'spark.executor_memory': must be a Spark memory size such as 1g or 512m, got 5",
    ),
    (
        "spark",
        "executor_memory",
        "1 g",
        "field 'spark.executor_memory': must be a Spark memory size such as 1g or 512m, got '1 g'",
    ),
    ("spark", "parallelism", "x", "field 'spark.parallelism': must be an integer >= 1, got 'x'"),
    ("spark", "parallelism", 0, "field 'spark.parallelism': must be an integer >= 1, got 0"),
    ("spark", "binary", 5, "field 'spark.binary': must be a non-empty string, got 5"),
    ("spark", "binary", "", "field 'spark.binary': must be a non-empty string, got ''"),
    ("spark", "python", 5, "field 'spark.python': must be a non-empty string, got 5"),
    ("spark", "python", "", "field 'spark.python': must be a non-empty string, got ''"),
    ("spark", "py_files", 5, "field 'spark.py_files': must be a non-empty string, got 5"),
    ("spark", "py_files", "", "field 'spark.py_files': must be a non-empty string, got ''"),
    ("spark", "jobs_dir", 5, "field 'spark.jobs_dir': must be a non-empty string, got 5"),
    ("spark", "jobs_dir", "", "field 'spark.jobs_dir': must be a non-empty string, got ''"),
    ("spark", "fast_start", "yes", "field 'spark.fast_start': must be true or false, got 'yes'"),
    (
        "spark",
        "in_process_max_keys",
        True,
        "field 'spark.in_process_max_keys': must be a whole number of keys >= 0 (0: every Spark step is a spark-submit), got True",
    ),
    (
        "spark",
        "in_process_max_keys",
        -1,
        "field 'spark.in_process_max_keys': must be a whole number of keys >= 0 (0: every Spark step is a spark-submit), got -1",
    ),
    ("spark", "pool", 5, "field 'spark.pool': must be an Airflow pool name (letters, digits, _ . -) or null, got 5"),
    (
        "spark",
        "pool",
        "no spaces",
        "field 'spark.pool': must be an Airflow pool name (letters, digits, _ . -) or null, got 'no spaces'",
    ),
    ("sweep", "confirm_after_seconds", "x", "field 'sweep.confirm_after_seconds': must be an integer >= 0, got 'x'"),
    ("sweep", "confirm_after_seconds", -1, "field 'sweep.confirm_after_seconds': must be an integer >= 0, got -1"),
    ("sweep", "max_delete_share", "x", "field 'sweep.max_delete_share': must be a number 0..1, got 'x'"),
    ("sweep", "max_delete_share", 1.5, "field 'sweep.max_delete_share': must be a number 0..1, got 1.5"),
    ("sweep", "max_delete_count", 0.5, "field 'sweep.max_delete_count': must be an integer >= 0, got 0.5"),
    ("sweep", "max_delete_count", -1, "field 'sweep.max_delete_count': must be an integer >= 0, got -1"),
    ("sweep", "mark_max_age_seconds", "x", "field 'sweep.mark_max_age_seconds': must be an integer >= 0, got 'x'"),
    ("sweep", "mark_max_age_seconds", -1, "field 'sweep.mark_max_age_seconds': must be an integer >= 0, got -1"),
    ("sweep", "confirm", 1, "field 'sweep.confirm': must be automatic or approval, got 1"),
    ("sweep", "confirm", "always", "field 'sweep.confirm': must be automatic or approval, got 'always'"),
    (
        "sweep",
        "approval_timeout_hours",
        "x",
        "field 'sweep.approval_timeout_hours': must be a number of hours > 0, at most 720, got 'x'",
    ),
    (
        "sweep",
        "approval_timeout_hours",
        721,
        "field 'sweep.approval_timeout_hours': must be a number of hours > 0, at most 720, got 721",
    ),
    ("sweep", "rate", "x", "field 'sweep.rate': must be a number >= 0, got 'x'"),
    ("sweep", "rate", -1, "field 'sweep.rate': must be a number >= 0, got -1"),
    ("sweep", "concurrency", 1.5, "field 'sweep.concurrency': must be an integer >= 1, got 1.5"),
    ("sweep", "concurrency", 0, "field 'sweep.concurrency': must be an integer >= 1, got 0"),
    ("sweep", "batch_size", "x", "field 'sweep.batch_size': must be an integer 1..1000, got 'x'"),
    ("sweep", "batch_size", 1001, "field 'sweep.batch_size': must be an integer 1..1000, got 1001"),
    ("sweep", "quarantine_days", True, "field 'sweep.quarantine_days': must be an integer 0..3650, got True"),
    ("sweep", "quarantine_days", 3651, "field 'sweep.quarantine_days': must be an integer 0..3650, got 3651"),
    (
        "sweep",
        "abort_uploads_after_days",
        "x",
        "field 'sweep.abort_uploads_after_days': must be a number of days: 0 (never) or 1..3650, got 'x'",
    ),
    (
        "sweep",
        "abort_uploads_after_days",
        3651,
        "field 'sweep.abort_uploads_after_days': must be a number of days: 0 (never) or 1..3650, got 3651",
    ),
    ("space", "enabled", "no", "field 'space.enabled': must be true or false, got 'no'"),
    ("space", "stale_branch_days", "x", "field 'space.stale_branch_days': must be an integer 0..36500 (days), got 'x'"),
    ("space", "stale_branch_days", -1, "field 'space.stale_branch_days': must be an integer 0..36500 (days), got -1"),
    ("tasks", "retries", "x", "field 'tasks.retries': must be an integer >= 0, got 'x'"),
    ("tasks", "retries", -1, "field 'tasks.retries': must be an integer >= 0, got -1"),
    ("tasks", "retry_delay_seconds", 1.5, "field 'tasks.retry_delay_seconds': must be an integer >= 0, got 1.5"),
    ("tasks", "retry_delay_seconds", -1, "field 'tasks.retry_delay_seconds': must be an integer >= 0, got -1"),
    (
        "tasks",
        "execution_timeout_seconds",
        None,
        "field 'tasks.execution_timeout_seconds': must be an integer >= 1, got None",
    ),
    (
        "tasks",
        "execution_timeout_seconds",
        0,
        "field 'tasks.execution_timeout_seconds': must be an integer >= 1, got 0",
    ),
    ("tasks", "deferrable", "yes", "field 'tasks.deferrable': must be true or false, got 'yes'"),
    (
        "clean_run_every",
        "runs",
        "x",
        "field 'clean_run_every.runs': must be an integer >= 1 (1: every run is clean), got 'x'",
    ),
    (
        "clean_run_every",
        "runs",
        0,
        "field 'clean_run_every.runs': must be an integer >= 1 (1: every run is clean), got 0",
    ),
    ("clean_run_every", "days", "x", "field 'clean_run_every.days': must be a number of days > 0, got 'x'"),
    ("clean_run_every", "days", 0, "field 'clean_run_every.days': must be a number of days > 0, got 0"),
]


def test_every_converted_field_is_declared_once_with_its_rule():
    for section, cls in SECTIONS.items():
        ruled = {f.name for f in dataclasses.fields(cls) if RULE in f.metadata}
        assert ruled | BY_HAND.get(section, set()) == {f.name for f in dataclasses.fields(cls)}, section
        assert not ruled & BY_HAND.get(section, set())
    assert set(_CLEAN_RUN_EVERY_RULES) == {f.name for f in dataclasses.fields(CleanRunEvery)}
    # no second declaration: the parsers name no ruled field (the model holds its type and rule) ...
    parsers = (CONFIG / "sections.py").read_text() + (CONFIG / "entry.py").read_text()
    for cls in SECTIONS.values():
        for f in dataclasses.fields(cls):
            if RULE in f.metadata:
                assert f'"{f.name}"' not in parsers, f.name
    # ... and clean_run_every's rules (a class the config does not own) are its one table in sections.py
    for name in _CLEAN_RUN_EVERY_RULES:
        assert (CONFIG / "sections.py").read_text().count(f'"{name}"') == 1, name


def test_every_converted_field_has_a_wrong_type_and_an_out_of_range_case():
    covered = {(s, f) for s, f, _, _ in CASES}
    fields = {(s, f.name) for s, cls in SECTIONS.items() for f in dataclasses.fields(cls) if RULE in f.metadata}
    assert covered == fields | {("clean_run_every", name) for name in _CLEAN_RUN_EVERY_RULES}


@pytest.mark.parametrize(("section", "name", "value", "message"), CASES)
def test_a_bad_value_gives_the_message_of_before(section, name, value, message):
    with pytest.raises(ConfigError) as e:
        parse_entry({"repository": "abc", section: {name: value}}, "gc.yaml: repositories[0] (abc)")
    assert str(e.value) == f"gc.yaml: repositories[0] (abc): {message}"


def test_good_values_are_read_as_their_types():
    r = parse_entry(
        {
            "repository": "abc",
            "spark": {"conf": {"a": True}, "driver_memory": "2g", "pool": "gc", "fast_start": False},
            "sweep": {"max_delete_share": 1, "confirm_after_seconds": None, "batch_size": 1000},
            "space": {"enabled": False, "stale_branch_days": 0},
            "tasks": {"retries": 0, "execution_timeouts": {"delete": 60}},
            "clean_run_every": {"runs": 3, "days": None},
        }
    )
    assert r.spark == SparkSettings(conf={"a": "true"}, driver_memory="2g", pool="gc", fast_start=False)
    assert r.sweep == SweepSettings(max_delete_share=1.0, confirm_after_seconds=None, batch_size=1000)
    assert type(r.sweep.max_delete_share) is float
    assert r.space == SpaceSettings(enabled=False, stale_branch_days=0)
    assert r.tasks == TaskSettings(retries=0, execution_timeouts={"delete": 60})
    assert r.clean_run_every == CleanRunEvery(runs=3)


def test_an_unknown_key_of_a_section_names_the_class_fields():
    with pytest.raises(ConfigError, match=r"field 'space': unknown key 'enable' \(did you mean 'enabled'\?\)$"):
        parse_entry({"repository": "abc", "space": {"enable": True}})


@pytest.mark.parametrize("section", ["spark", "sweep", "tasks", "space", "notify"])
@pytest.mark.parametrize("value", ["x", [1], 5])
def test_a_section_that_is_not_a_mapping_is_a_config_error_naming_it(section, value):
    with pytest.raises(ConfigError, match=rf"field '{section}': must be a mapping, got {re.escape(repr(value))}"):
        parse_entry({"repository": "abc", section: value}, "gc.yaml: repositories[0] (abc)")
