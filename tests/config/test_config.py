"""The GC config loader: the checked-in file is valid, and every error names file, entry and field."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from lakefs_gc.config import (
    ConfigError,
    default_config_path,
    load_config,
    project_root,
    raise_entry_errors,
    resolve_work_dir,
)

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "gc.yaml"
    p.write_text(textwrap.dedent(text))
    return p


def test_checked_in_config_has_the_sample_repository():
    assert project_root() == REPO
    cfg = load_config(REPO / "config" / "gc_repositories.yaml")
    sample = {r.repository: r for r in cfg.repositories}["sample-repo"]
    assert sample.dag_id == "lakefs_gc__sample-repo"
    assert sample.mode == "mark_and_sweep"
    assert sample.min_age_seconds >= 86400  # not below lakeFS's default grace period
    assert sample.schedule is None  # unpausing it (the trigger dialog does) starts no deleting on a schedule
    assert (sample.lakefs_conn_id, sample.storage_conn_id, sample.spark_conn_id) == (
        "lakefs_default",
        "aws_default",
        "spark_default",
    )


def test_env_var_overrides_the_path(tmp_path, monkeypatch):
    p = write(
        tmp_path,
        """
        repositories:
          - {repository: other-repo, lakefs_conn_id: lk, storage_conn_id: s3, spark_conn_id: sp,
             min_age_seconds: 100000, mode: mark_only, schedule: "0 3 * * *"}
    """,
    )
    monkeypatch.setenv("LAKEFS_GC_CONFIG", str(p))
    [r] = load_config().repositories
    assert (r.repository, r.mode, r.schedule, r.min_age_seconds) == ("other-repo", "mark_only", "0 3 * * *", 100000)


def test_defaults_are_merged_and_spark_settings_parsed(tmp_path):
    p = write(
        tmp_path,
        """
        defaults:
          lakefs_conn_id: lk
          storage_conn_id: s3
          spark_conn_id: sp
          min_age_seconds: 86400
          mode: mark_and_sweep
          spark: {driver_memory: 2g, parallelism: 8, conf: {spark.ui.enabled: false}}
        repositories:
          - repository: repo-a
          - repository: repo-b
            mode: mark_only
            spark: {executor_memory: 3g, conf: {spark.sql.shuffle.partitions: 2}}
    """,
    )
    a, b = load_config(p).repositories
    assert a.mode == "mark_and_sweep"
    assert b.mode == "mark_only"
    assert a.spark.driver_memory == "2g"
    assert b.spark.driver_memory == "2g"
    assert b.spark.executor_memory == "3g"
    assert a.spark.spark_conf() == {
        "spark.default.parallelism": "8",
        "spark.sql.shuffle.partitions": "8",
        "spark.ui.enabled": "false",
    }
    # the entry's spark.conf replaces the defaults' conf (mapping keys merge one level deep)
    assert b.spark.spark_conf()["spark.sql.shuffle.partitions"] == "2"


def test_a_minimal_entry_is_two_lines_and_gets_the_documented_defaults(tmp_path):
    """The provider README's minimal entry: the repository and the connection that serves its
    namespace; everything else has the default the README states."""
    p = write(
        tmp_path,
        """
        repositories:
          - repository: my-repo
            storage_conn_id: aws_default
    """,
    )
    [r] = load_config(p).repositories
    assert (r.lakefs_conn_id, r.storage_conn_id, r.spark_conn_id) == ("lakefs_default", "aws_default", "spark_default")
    assert (r.min_age_seconds, r.mode, r.schedule, r.work_dir, r.flow) == (86400, "mark_and_sweep", None, None, "auto")
    # local:// namespaces need no storage connection: one line
    [r] = load_config(write(tmp_path, "repositories:\n  - repository: local-repo\n")).repositories
    assert r.storage_conn_id is None


def test_every_problem_of_a_file_is_reported_at_once(tmp_path):
    """Three mistakes (two in one entry, one in another): one load names all three."""
    p = write(
        tmp_path,
        """
        repositories:
          - repository: repo-a
            mode: sweep
            shedule: "@daily"
          - repository: repo-b
            sweep: {max_delete_share: 5}
          - repository: repo-c
    """,
    )
    cfg = load_config(p, strict=False)
    assert [r.repository for r in cfg.repositories] == ["repo-c"]
    text = "\n".join(cfg.entry_errors)
    assert "(repo-a): unknown field 'shedule' (did you mean 'schedule'?)" in text
    assert "(repo-a): field 'mode': must be one of" in text
    assert "(repo-b): field 'sweep.max_delete_share'" in text
    assert len(text.splitlines()) == 3


def test_work_dir_resolution(monkeypatch):
    monkeypatch.delenv("LAKEFS_GC_WORK_DIR", raising=False)
    assert resolve_work_dir(None) == "/tmp/lakefs-gc-work"
    monkeypatch.setenv("LAKEFS_GC_WORK_DIR", "/data/gc")
    assert resolve_work_dir(None) == "/data/gc"
    assert resolve_work_dir("/explicit") == "/explicit"


BASE = "{lakefs_conn_id: lk, storage_conn_id: s3, spark_conn_id: sp, min_age_seconds: 86400"


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        # missing field
        (
            "  - {lakefs_conn_id: lk, storage_conn_id: s3, spark_conn_id: sp, min_age_seconds: 1, mode: mark_only}",
            r"repositories\[0\]: field 'repository': missing",
        ),
        (
            "  - {repository: repo-a, lakefs_conn_id: null, spark_conn_id: sp, min_age_seconds: 1, mode: mark_only}",
            r"repositories\[0\] \(repo-a\): field 'lakefs_conn_id': must be an Airflow connection id",
        ),
        # bad mode
        (
            f"  - {BASE}, repository: repo-a, mode: sweep}}",
            r"repositories\[0\] \(repo-a\): field 'mode': must be one of mark_and_sweep, mark_only, got 'sweep'",
        ),
        # sweep_only cannot be scheduled: it needs a mark id
        (
            f"  - {BASE}, repository: repo-a, mode: sweep_only}}",
            r"\(repo-a\): field 'mode': must be one of mark_and_sweep, mark_only, got 'sweep_only' \(sweep_only needs the "
            r"mark id",
        ),
        (
            f"  - {BASE}, repository: repo-a, mode: mark_only, tasks: {{retries: -1}}}}",
            r"\(repo-a\): field 'tasks.retries': must be an integer >= 0",
        ),
        (
            f"  - {BASE}, repository: repo-a, mode: mark_only, tasks: {{execution_timeouts: {{delet: 60}}}}}}",
            r"\(repo-a\): field 'tasks.execution_timeouts': unknown task id 'delet' \(did you mean 'delete'\?\)",
        ),
        # duplicate repository
        (
            f"  - {BASE}, repository: repo-a, mode: mark_only}}\n  - {BASE}, repository: repo-a, mode: mark_only}}",
            r"repositories\[1\] \(repo-a\): field 'repository': duplicate repository 'repo-a' \(also repositories\[0\]\)",
        ),
        (f"  - {BASE}, repository: Bad_Name, mode: mark_only}}", r"field 'repository': must be a lakeFS repository id"),
        (
            "  - {repository: repo-a, lakefs_conn_id: lk, storage_conn_id: s3, spark_conn_id: sp, "
            "min_age_seconds: -5, mode: mark_only}",
            r"\(repo-a\): field 'min_age_seconds': must be an integer >= 0",
        ),
        (
            f"  - {BASE}, repository: repo-a, mode: mark_only, schedule: every day}}",
            r"\(repo-a\): field 'schedule': must be a cron expression",
        ),
        (
            f"  - {BASE}, repository: repo-a, mode: mark_only, shedule: '@daily'}}",
            r"\(repo-a\): unknown field 'shedule' \(did you mean 'schedule'\?\)",
        ),
        (
            f"  - {BASE}, repository: repo-a, mode: mark_only, spark: {{driver_memory: lots}}}}",
            r"\(repo-a\): field 'spark.driver_memory': must be a Spark memory size",
        ),
        (
            f"  - {BASE}, repository: repo-a, mode: mark_only, spark: {{fast_start: 'yes'}}}}",
            r"\(repo-a\): field 'spark.fast_start': must be true or false, got 'yes'",
        ),
        (
            f"  - {BASE}, repository: repo-a, mode: mark_only, spark: {{in_process_max_keys: -1}}}}",
            r"\(repo-a\): field 'spark.in_process_max_keys': must be a whole number of keys >= 0 \(0: every Spark step is a "
            r"spark-submit\), got -1",
        ),
        (
            f"  - {BASE}, repository: repo-a, mode: mark_only, space: {{stale_branch_days: -1}}}}",
            r"\(repo-a\): field 'space.stale_branch_days': must be an integer 0..36500 \(days\), got -1",
        ),
        (
            f"  - {BASE}, repository: repo-a, mode: mark_only, space: {{enabled: 'no'}}}}",
            r"\(repo-a\): field 'space.enabled': must be true or false, got 'no'",
        ),
    ],
)
def test_errors_name_file_entry_and_field(tmp_path, entries, expected):
    p = write(tmp_path, "repositories:\n" + entries + "\n")
    with pytest.raises(ConfigError, match=expected) as e:
        load_config(p)
    assert re.match(rf"{re.escape(str(p))}:[23]: ", str(e.value)), str(e.value)  # the file and the line


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        (f"  - {BASE}, repository: repo-a, mode: sweep}}", r"repositories\[1\] \(repo-a\): field 'mode'"),
        ("  - just-a-name", r"repositories\[1\]: each entry must be a mapping"),
        (
            f"  - {BASE}, repository: good-one, mode: mark_only}}",
            r"repositories\[1\] \(good-one\): field 'repository': "
            r"duplicate repository 'good-one' \(also repositories\[0\]\)",
        ),
    ],
)
def test_not_strict_keeps_the_good_entries_and_names_the_bad_one(tmp_path, entries, expected):
    p = write(
        tmp_path,
        f"repositories:\n  - {BASE}, repository: good-one, mode: mark_only}}\n{entries}\n"
        f"  - {BASE}, repository: good-two, mode: mark_only}}\n",
    )
    with pytest.raises(ConfigError, match=expected):
        load_config(p)  # strict, the default: the first error
    cfg = load_config(p, strict=False)
    assert [r.repository for r in cfg.repositories] == ["good-one", "good-two"]
    [message] = cfg.entry_errors
    assert message.startswith(f"{p}:3: repositories[1]")
    with pytest.raises(ConfigError, match=expected) as e:
        raise_entry_errors(p)
    assert str(e.value).startswith(f"{p}: 1 bad repository entry, whose GC DAG is not built")


def test_raise_entry_errors_leaves_whole_file_errors_to_the_dag_file(tmp_path):
    raise_entry_errors(write(tmp_path, f"repositories:\n  - {BASE}, repository: repo-a, mode: mark_only}}\n"))
    for text in ("repositories: [\n", "repositories: []\n", "defaults: {shedule: x}\nrepositories: [{}]\n"):
        p = write(tmp_path, text)
        with pytest.raises(ConfigError):
            load_config(p, strict=False)
        raise_entry_errors(p)  # gc_dags.py raises these: one import error, not two


def test_missing_file_and_bad_yaml_are_clear(tmp_path):
    with pytest.raises(ConfigError, match=r"nope\.yaml: cannot read the GC configuration.*LAKEFS_GC_CONFIG"):
        load_config(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(write(tmp_path, "repositories: [\n"))
    with pytest.raises(ConfigError, match="'repositories' must be a non-empty list"):
        load_config(write(tmp_path, "repositories: []\n"))


def test_project_root_and_config_path_follow_the_environment(monkeypatch, tmp_path):
    """Installed as a wheel there is no checkout around the package: LAKEFS_GC_HOME says where
    config/ is (the jobs and their zip come from the package: tests/airflow/wheel/test_wheel.py)."""
    monkeypatch.delenv("LAKEFS_GC_CONFIG", raising=False)
    monkeypatch.setenv("LAKEFS_GC_HOME", str(tmp_path))
    assert project_root() == tmp_path
    assert default_config_path() == tmp_path / "config" / "gc_repositories.yaml"


def test_task_settings_default_to_retries_and_timeouts(tmp_path):
    p = write(
        tmp_path,
        f"""\
        repositories:
          - {BASE}, repository: repo-a, mode: mark_only, tasks: {{execution_timeouts: {{delete: 60}}}}}}
        """,
    )
    t = load_config(p).repositories[0].tasks
    assert (t.retries, t.retry_delay_seconds) == (2, 120)
    assert (t.timeout("delete"), t.timeout("list_slices")) == (60, 6 * 3600)


def test_the_space_section_sets_the_attributions_params(tmp_path):
    """``space:`` gives the defaults of the Params attribute_space and stale_branch_days; merged from defaults."""
    from lakefs_gc.config import SpaceSettings

    p = write(
        tmp_path,
        f"""\
        defaults: {{space: {{stale_branch_days: 90}}}}
        repositories:
          - {BASE}, repository: repo-a, mode: mark_only}}
          - {BASE}, repository: repo-b, mode: mark_only, space: {{enabled: false}}}}
        """,
    )
    a, b = load_config(p).repositories
    assert a.space == SpaceSettings(enabled=True, stale_branch_days=90)
    assert b.space == SpaceSettings(enabled=False, stale_branch_days=90)


def test_every_problem_of_every_section_of_an_entry_is_named_at_its_line(tmp_path):
    """Not only the first of each section: every bad field, each at the line it is on."""
    p = write(
        tmp_path,
        """\
        repositories:
          - repository: repo-a
            spark:
              driver_memory: lots
              parallelism: 0
              drivr_memory: 1g
            sweep: {max_delete_share: 5, batch_size: 0}
            notify:
              on_failure: [{smtp: {to: nobody}}, {pigeon: {}}]
            tasks: {execution_timeouts: {delete: 0}}
          - repository: repo-b
        """,
    )
    cfg = load_config(p, strict=False)
    assert [r.repository for r in cfg.repositories] == ["repo-b"]
    [message] = cfg.entry_errors
    at = f"{p}:{{}}: repositories[0] (repo-a): field "
    assert message.splitlines() == [
        at.format(4) + "'spark.driver_memory': must be a Spark memory size such as 1g or 512m, got 'lots'",
        at.format(5) + "'spark.parallelism': must be an integer >= 1, got 0",
        at.format(6) + "'spark': unknown key 'drivr_memory' (did you mean 'driver_memory'?)",
        at.format(7) + "'sweep.max_delete_share': must be a number 0..1, got 5",
        at.format(7) + "'sweep.batch_size': must be an integer 1..1000, got 0",
        at.format(9) + "'notify.on_failure[0].smtp.to': must be a mail address or a list of them, got 'nobody'",
        at.format(9) + "'notify.on_failure[1]': unknown notifier 'pigeon' (one of smtp, slack, class)",
        at.format(10) + "'tasks.execution_timeouts.delete': must be an integer >= 1, got 0",
    ]
    assert cfg.entry_problems == message.splitlines()
    with pytest.raises(ConfigError) as e:
        raise_entry_errors(p)
    assert str(e.value).splitlines()[1:] == message.splitlines()


def test_bad_defaults_fail_the_whole_file_each_problem_once_at_its_line(tmp_path):
    """``defaults`` applies to every entry: its problems are the file's (no DAG is built), named once,
    not once per entry; the entries' own problems are still found (``check_config``)."""
    from lakefs_gc.config import check_config

    p = write(
        tmp_path,
        """\
        defaults:
          mode: sweep
          spark: {parallelism: 0, pool: lakefs_gc_spark}
        repositories:
          - repository: repo-a
          - repository: repo-b
            shedule: "@daily"
        """,
    )
    with pytest.raises(ConfigError) as e:
        load_config(p, strict=False)
    assert str(e.value).splitlines() == [
        f"{p}:2: defaults: field 'mode': must be one of mark_and_sweep, mark_only, got 'sweep'",
        f"{p}:3: defaults: field 'spark.parallelism': must be an integer >= 1, got 0",
    ]
    checked = check_config(p)
    assert [str(x) for x in checked.problems] == [
        *str(e.value).splitlines(),
        f"{p}:7: repositories[1] (repo-b): unknown field 'shedule' (did you mean 'schedule'?)",
    ]
    # the rest of defaults still applies to the entries checked
    assert [(r.repository, r.spark.pool) for r in checked.config.repositories] == [("repo-a", "lakefs_gc_spark")]


def test_a_duplicate_repository_is_bad_even_when_its_first_entry_is(tmp_path):
    p = write(
        tmp_path,
        f"""\
        repositories:
          - {BASE}, repository: repo-a, mode: sweep}}
          - {BASE}, repository: repo-a, mode: mark_only}}
          - {BASE}, repository: repo-b, mode: mark_only}}
        """,
    )
    cfg = load_config(p, strict=False)
    assert [r.repository for r in cfg.repositories] == ["repo-b"]
    assert cfg.entry_errors[1] == (
        f"{p}:3: repositories[1] (repo-a): field 'repository': duplicate repository 'repo-a' (also repositories[0])"
    )
