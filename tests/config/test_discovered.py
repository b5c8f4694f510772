"""The config's ``discover``, ``pools`` and ``notify`` sections, and the refresh's record
(``lakefs_gc.config.discovered``): what the DAG files build from it, without calling lakeFS."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
import yaml

from lakefs_gc.config import ConfigError, load_config, parse_config
from lakefs_gc.config.discovered import priority_weight, read_discovered, record_sizes, refresh

FILE = """
pools: {lakefs_gc_spark: 3}
defaults: {min_age_seconds: 7200, spark: {pool: lakefs_gc_spark}}
repositories: [{repository: named-repo, min_age_seconds: 100}]
discover:
  schedule: "@hourly"
  sources:
    - include: ["fleet-*", "named-repo"]
      exclude: ["fleet-tmp-*"]
      defaults: {schedule: "@daily", notify: {on_failure: [{smtp: {to: ops@example.com}}]}}
      overrides: {fleet-b: {min_age_seconds: 90000}}
"""


@pytest.fixture
def cfg_file(tmp_path):
    p = tmp_path / "gc.yaml"
    p.write_text(FILE)
    return p


def test_before_any_refresh_only_the_named_entries(cfg_file):
    cfg = load_config(cfg_file)
    assert [r.repository for r in cfg.repositories] == ["named-repo"]
    assert cfg.discovery.state_file == cfg_file.with_name("gc.discovered.json")
    assert cfg.discovery.schedule == "@hourly"
    assert cfg.pools == (("lakefs_gc_spark", 3),)
    assert cfg.pools_import()["lakefs_gc_spark"]["slots"] == 3
    assert cfg.refreshed_at is None


def test_a_refresh_gives_the_matched_repositories_their_merged_settings(cfg_file):
    cfg = load_config(cfg_file)
    _, changes = refresh(cfg.discovery, lambda conn: ["fleet-a", "fleet-b", "fleet-tmp-1", "other", "named-repo"])
    record_sizes(cfg.discovery, {("lakefs_default", "fleet-a"): 1_000_000})
    assert len(changes) == 3  # fleet-a, fleet-b, named-repo (matched, though listed by name)
    cfg = load_config(cfg_file)
    by = {r.repository: r for r in cfg.repositories}
    assert list(by) == ["named-repo", "fleet-a", "fleet-b"]  # the named entry wins over the source
    assert by["named-repo"].min_age_seconds == 100
    assert not by["named-repo"].discovered
    a, b = by["fleet-a"], by["fleet-b"]
    assert a.discovered and a.schedule == "@daily" and a.min_age_seconds == 7200  # noqa: PT018
    assert b.min_age_seconds == 90000  # the override
    assert a.spark.pool == "lakefs_gc_spark"
    assert a.notify.on_failure[0].option("to") == ("ops@example.com",)
    assert a.priority_weight == priority_weight(1_000_000) == 61
    assert b.priority_weight == 1
    assert cfg.refreshed_at is not None


def test_a_repository_gone_from_lakefs_is_recorded_removed_then_forgotten(cfg_file):
    cfg = load_config(cfg_file)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    refresh(cfg.discovery, lambda conn: ["fleet-a", "fleet-b"], now=t0)
    _, changes = refresh(cfg.discovery, lambda conn: ["fleet-a"], now=t0 + timedelta(hours=1))
    assert changes == [
        "lakefs_default: repository fleet-b is gone from lakeFS: its GC DAG lakefs_gc__fleet-b is no longer built"
    ]
    cfg = load_config(cfg_file)
    assert [r.repository for r in cfg.repositories] == ["named-repo", "fleet-a"]
    assert [(r.repository, r.removed_at) for r in cfg.removed] == [("fleet-b", (t0 + timedelta(hours=1)).isoformat())]
    refresh(cfg.discovery, lambda conn: ["fleet-a"], now=t0 + timedelta(days=31))
    assert load_config(cfg_file).removed == ()
    # created again: back, no longer removed
    refresh(cfg.discovery, lambda conn: ["fleet-a", "fleet-b"], now=t0 + timedelta(hours=2))
    assert "fleet-b" in {r.repository for r in load_config(cfg_file).repositories}


def test_a_lakefs_that_does_not_answer_leaves_the_record(cfg_file):
    cfg = load_config(cfg_file)
    refresh(cfg.discovery, lambda conn: ["fleet-a"])
    before = cfg.discovery.state_file.read_text()

    def down(conn):
        raise OSError("connection refused")

    with pytest.raises(OSError, match="connection refused"):
        refresh(cfg.discovery, down)
    assert cfg.discovery.state_file.read_text() == before


def test_sizes_are_recorded_and_kept_across_refreshes(cfg_file):
    cfg = load_config(cfg_file)
    refresh(cfg.discovery, lambda conn: ["fleet-a"])
    record_sizes(cfg.discovery, {("lakefs_default", "fleet-a"): 99})
    refresh(cfg.discovery, lambda conn: ["fleet-a"])
    assert read_discovered(cfg.discovery.state_file).sizes == {"lakefs_default": {"fleet-a": 99}}


def test_a_bad_discovered_entry_breaks_only_itself(cfg_file, tmp_path):
    doc = yaml.safe_load(FILE)
    doc["discover"]["sources"][0]["overrides"] = {"fleet-b": {"mode": "sweep"}}
    cfg_file.write_text(yaml.safe_dump(doc))
    cfg = load_config(cfg_file)
    refresh(cfg.discovery, lambda conn: ["fleet-a", "fleet-b"])
    cfg = load_config(cfg_file, strict=False)
    assert [r.repository for r in cfg.repositories] == ["named-repo", "fleet-a"]
    line = cfg_file.read_text().splitlines().index("        mode: sweep") + 1  # in the source's overrides
    assert cfg.entry_problems == [
        f"{cfg_file}:{line}: discover.sources[0] (fleet-b): field 'mode': must be one of "
        "mark_and_sweep, mark_only, got 'sweep'"
    ]


def test_an_unreadable_record_names_the_file_and_the_fix(cfg_file):
    cfg = load_config(cfg_file)
    cfg.discovery.state_file.write_text(json.dumps({"format": 99}))
    with pytest.raises(
        ConfigError,
        match=r"gc.discovered.json: the discovered repositories do not read .* run the DAG "
        r"lakefs_gc_discover again",
    ):
        load_config(cfg_file)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"discover": {"sources": []}}, "discover: field 'sources': must be a non-empty list"),
        (
            {"discover": {"sources": [{"exclude": ["x"]}]}},
            "discover.sources[0]: field 'include': must be a non-empty list",
        ),
        (
            {"discover": {"sources": [{"include": "a*", "defaults": {"repository": "x"}}]}},
            "discover.sources[0]: defaults: unknown field 'repository' (allowed: ",
        ),
        (
            {"discover": {"sources": [{"include": "a*"}], "schedul": "@daily"}},
            "discover: unknown key 'schedul' (did you mean 'schedule'?)",
        ),
        (
            {"discover": {"sources": [{"include": "a*"}], "schedule": "often"}},
            "discover: field 'schedule': must be a cron",
        ),
        ({"pools": {"p": 0}, "repositories": [{"repository": "abc"}]}, "pools: p: slots must be an integer >= 1"),
        ({"pools": [1], "repositories": [{"repository": "abc"}]}, "'pools' must be a mapping"),
    ],
)
def test_bad_fleet_sections_are_named(doc, message):
    with pytest.raises(ConfigError) as e:
        parse_config(doc, "gc.yaml")
    assert message in str(e.value)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"notify": {"on_failure": [{"pigeon": {}}]}}, "field 'notify.on_failure[0]': unknown notifier 'pigeon'"),
        ({"notify": {"on_failure": [{"smtp": {}}]}}, "field 'notify.on_failure[0].smtp': missing to"),
        (
            {"notify": {"on_success": [{"smtp": {"to": "nobody"}}]}},
            "field 'notify.on_success[0].smtp.to': must be a mail",
        ),
        (
            {"notify": {"on_failure": [{"slack": {"channel": "#x", "colour": 1}}]}},
            "unknown option 'colour' (allowed: channel, ",
        ),
        ({"notify": {"on_failure": [{"class": {"path": "no_such_pkg.N"}}]}}, "no_such_pkg is not installed here"),
        ({"notify": {"on_fail": []}}, "field 'notify': unknown key 'on_fail' (did you mean 'on_failure'?)"),
        ({"notify": {"on_failure": [{"class": {"path": "nodots"}}]}}, "field 'notify.on_failure[0].class.path'"),
        ({"spark": {"pool": "no spaces"}}, "field 'spark.pool': must be an Airflow pool name"),
    ],
)
def test_bad_notifiers_and_pools_of_an_entry_are_named(entry, message):
    with pytest.raises(ConfigError) as e:
        parse_config({"repositories": [{"repository": "abc", **entry}]}, "gc.yaml")
    assert message in str(e.value)
