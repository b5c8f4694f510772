"""
One repository entry validated: its fields merged over ``defaults``, every problem of the entry named.

Part of :mod:`lakefs_gc.config` (import from there).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from lakefs_gc.config.model import (
    DEFAULT_CLEAN_DAYS,
    ConfigError,
    NotifySettings,
    RepoConfig,
    SpaceSettings,
    SparkSettings,
    SweepSettings,
    TaskSettings,
)
from lakefs_gc.config.sections import (
    _parse_clean_run_every,
    _parse_notify,
    _parse_space,
    _parse_spark,
    _parse_sweep,
    _parse_tasks,
    _unknown,
)
from lakefs_gc.contract import FLOWS, SCHEDULABLE_MODES

if TYPE_CHECKING:
    from lakefs_gc.gc.flow import CleanRunEvery

_T = TypeVar("_T")

# lakeFS repository ids: ^[a-z0-9][a-z0-9-]{2,62}$ (pkg/graveler validation).
_REPO_RE = re.compile(r"^[a-z0-9][a-z0-9-]{2,62}$")
_CONN_ID_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,250}$")
_PRESETS = frozenset(
    {"@once", "@continuous", "@hourly", "@daily", "@weekly", "@monthly", "@quarterly", "@yearly", "@annually"}
)
_CRON_FIELD_RE = re.compile(r"^[0-9A-Za-z*/,\-?LW#]+$")

_ENTRY_FIELDS = frozenset(
    {
        "repository",
        "lakefs_conn_id",
        "storage_conn_id",
        "spark_conn_id",
        "schedule",
        "min_age_seconds",
        "mode",
        "work_dir",
        "tags",
        "spark",
        "sweep",
        "tasks",
        "space",
        "flow",
        "clean_run_every",
        "notify",
    }
)
_REQUIRED = ("repository",)
# What an entry gets when neither it nor ``defaults`` sets the field. storage_conn_id has none: a
# local:// namespace needs no storage connection, and prepare_run refuses another namespace without
# one, naming the field.
ENTRY_DEFAULTS: Mapping[str, Any] = {
    "lakefs_conn_id": "lakefs_default",
    "spark_conn_id": "spark_default",
    "min_age_seconds": 86400,
    "mode": "mark_and_sweep",
    "schedule": None,
}


def _parse_entry(entry: Mapping[str, Any], defaults: Mapping[str, Any], where: str) -> RepoConfig:
    """
    Parse one entry merged over ``defaults`` and over :data:`ENTRY_DEFAULTS`.

    Every problem of the entry is found (one line each in the :class:`ConfigError`), not only the first.
    """
    problems: list[str] = []

    def err(fld: str, msg: str) -> ConfigError:
        return ConfigError(f"{where}: field '{fld}': {msg}")

    def bad(fld: str, msg: str) -> None:
        problems.append(str(err(fld, msg)))

    def check(fn: Callable[[], _T]) -> _T | None:
        """Run a section's parser: its value, or None (the first problem of the section recorded)."""
        try:
            return fn()
        except ConfigError as e:
            problems.append(str(e))
            return None

    unknown = set(entry) - _ENTRY_FIELDS
    if unknown:
        problems.append(
            f"{where}: unknown field(s) {_unknown(unknown, _ENTRY_FIELDS)} (allowed: {sorted(_ENTRY_FIELDS)})"
        )
    merged: dict[str, Any] = {**ENTRY_DEFAULTS, **defaults, **entry}
    for section in ("spark", "sweep", "tasks", "space", "notify"):
        given = [v for v in (defaults.get(section), entry.get(section)) if v]
        if any(not isinstance(v, Mapping) for v in given):
            bad(section, f"must be a mapping, got {next(v for v in given if not isinstance(v, Mapping))!r}")
            given = [v for v in given if isinstance(v, Mapping)]
        merged[section] = {k: v for g in given for k, v in g.items()}
    for fld in _REQUIRED:
        if merged.get(fld) is None:
            bad(fld, "missing (required; set it in the entry or under 'defaults')")

    name: Any = merged.get("repository")  # as the file has it: a str past the checks below
    if name is not None and (not isinstance(name, str) or not _REPO_RE.match(name)):
        bad("repository", f"must be a lakeFS repository id (^[a-z0-9][a-z0-9-]{{2,62}}$), got {name!r}")
    for fld in ("lakefs_conn_id", "storage_conn_id", "spark_conn_id"):
        v = merged.get(fld)
        if (v is not None or fld != "storage_conn_id") and (not isinstance(v, str) or not _CONN_ID_RE.match(v)):
            bad(fld, f"must be an Airflow connection id (letters, digits, _ . -), got {v!r}")
    mode = merged["mode"]
    if mode not in SCHEDULABLE_MODES:
        hint = (
            (" (sweep_only needs the mark id of an earlier run: trigger it by hand with the Params mode and mark_id)")
            if mode == "sweep_only"
            else ""
        )
        bad("mode", f"must be one of {', '.join(SCHEDULABLE_MODES)}, got {mode!r}{hint}")
    age = merged["min_age_seconds"]
    if isinstance(age, bool) or not isinstance(age, int) or age < 0:
        bad("min_age_seconds", f"must be an integer >= 0 (seconds), got {age!r}")
    schedule = merged.get("schedule")
    if schedule is not None and (not isinstance(schedule, str) or not _valid_schedule(schedule)):
        bad("schedule", f"must be a cron expression (5 fields), a preset such as @daily, or null, got {schedule!r}")
    work_dir = merged.get("work_dir")
    if work_dir is not None and (not isinstance(work_dir, str) or not work_dir.strip()):
        bad("work_dir", f"must be a non-empty path/URI string or null, got {work_dir!r}")
    tags = merged.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) and t for t in tags):
        bad("tags", f"must be a list of non-empty strings, got {tags!r}")
    spark = check(lambda: _parse_spark(merged["spark"], err))
    sweep = check(lambda: _parse_sweep(merged["sweep"], err))
    tasks = check(lambda: _parse_tasks(merged["tasks"], err))
    space = check(lambda: _parse_space(merged["space"], err))
    flow = merged.get("flow", "auto")
    if flow not in FLOWS:
        bad("flow", f"must be one of {', '.join(FLOWS)}, got {flow!r}")
    every = check(lambda: _parse_clean_run_every(merged.get("clean_run_every", {"days": DEFAULT_CLEAN_DAYS}), err))
    notify = check(lambda: _parse_notify(merged["notify"], err))
    if problems:
        raise ConfigError("\n".join(problems))
    # no problem: every section parsed (check returns None only after recording one)
    return RepoConfig(
        repository=name,
        lakefs_conn_id=merged["lakefs_conn_id"],
        storage_conn_id=merged.get("storage_conn_id"),
        spark_conn_id=merged["spark_conn_id"],
        min_age_seconds=age,
        mode=mode,
        schedule=schedule,
        work_dir=work_dir,
        tags=tuple(tags),
        spark=cast("SparkSettings", spark),
        sweep=cast("SweepSettings", sweep),
        tasks=cast("TaskSettings", tasks),
        space=cast("SpaceSettings", space),
        flow=flow,
        clean_run_every=cast("CleanRunEvery", every),
        notify=cast("NotifySettings", notify),
    )


def _valid_schedule(s: str) -> bool:
    s = s.strip()
    if s.startswith("@"):
        return s in _PRESETS
    parts = s.split()
    return len(parts) == 5 and all(_CRON_FIELD_RE.match(x) for x in parts)


def parse_entry(entry: Mapping[str, Any], where: str = "<entry>") -> RepoConfig:
    """One repository entry on its own (the task group's arguments): ``ConfigError`` naming every bad field."""
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where}: an entry must be a mapping of its fields")
    return _parse_entry(entry, {}, where)
