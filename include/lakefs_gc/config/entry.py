"""
One repository entry validated: its fields merged over ``defaults``, every problem of the entry named (of its sections too).

Part of :mod:`lakefs_gc.config` (import from there).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lakefs_gc.config.keep import parse_keep
from lakefs_gc.config.listing import merge_listing, parse_listing
from lakefs_gc.config.model import (
    DEFAULT_CLEAN_DAYS,
    ConfigError,
    RepoConfig,
)
from lakefs_gc.config.prices import merge_prices, parse_prices
from lakefs_gc.config.sections import (
    _parse_clean_run_every,
    _parse_leftovers,
    _parse_notify,
    _parse_space,
    _parse_spark,
    _parse_sweep,
    _parse_tasks,
    _unknown,
)
from lakefs_gc.contract import FLOWS, SCHEDULABLE_MODES

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
        "leftovers",
        "flow",
        "clean_run_every",
        "notify",
        "listing",
        "prices",
        "keep",
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


@dataclass(frozen=True)
class Found:
    """One problem of a block of the file (an entry, ``defaults``), before it has a line: ``at`` finds it."""

    at: str | None  # the path of what is wrong in the block (spark.driver_memory); None: the block itself
    text: str  # "<where>: field 'mode': must be one of ..."


def _parse_entry(entry: Mapping[str, Any], defaults: Mapping[str, Any], where: str) -> RepoConfig:
    """Parse one entry merged over ``defaults`` and :data:`ENTRY_DEFAULTS`: :class:`ConfigError` naming every problem."""
    repo, found = _check_entry(entry, defaults, where)
    if repo is None:
        raise ConfigError("\n".join(f.text for f in found))
    return repo


def _check_entry(
    entry: Mapping[str, Any],
    defaults: Mapping[str, Any],
    where: str,
    allowed: frozenset[str] = _ENTRY_FIELDS,
    required: tuple[str, ...] = _REQUIRED,
) -> tuple[RepoConfig | None, list[Found]]:
    """
    Check one entry merged over ``defaults`` and over :data:`ENTRY_DEFAULTS`: the entry, or None and every problem.

    Every problem of the entry is found, those of its sections too, not only the first of each.
    ``allowed``, ``required``: its fields (``defaults`` checked on its own has no repository).
    """
    found: list[Found] = []

    def bad(fld: str, msg: str, at: str | None = None) -> None:
        found.append(Found(at or fld, f"{where}: field '{fld}': {msg}"))

    for key in sorted(set(entry) - allowed, key=str):
        found.append(Found(str(key), f"{where}: {_unknown('field', key, allowed)}"))
    merged: dict[str, Any] = {**ENTRY_DEFAULTS, **defaults, **entry}
    for section in ("spark", "sweep", "tasks", "space", "notify", "leftovers", "keep"):
        given = [v for v in (defaults.get(section), entry.get(section)) if v]
        if any(not isinstance(v, Mapping) for v in given):
            bad(section, f"must be a mapping, got {next(v for v in given if not isinstance(v, Mapping))!r}")
            given = [v for v in given if isinstance(v, Mapping)]
        merged[section] = {k: v for g in given for k, v in g.items()}
    for fld in required:
        if merged.get(fld) is None:
            found.append(
                Found(None, f"{where}: field '{fld}': missing (required; set it in the entry or under 'defaults')")
            )

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
    spark = _parse_spark(merged["spark"], bad)
    sweep = _parse_sweep(merged["sweep"], bad)
    tasks = _parse_tasks(merged["tasks"], bad)
    space = _parse_space(merged["space"], bad)
    leftovers = _parse_leftovers(merged["leftovers"], bad)
    flow = merged.get("flow", "auto")
    if flow not in FLOWS:
        bad("flow", f"must be one of {', '.join(FLOWS)}, got {flow!r}")
    every = _parse_clean_run_every(merged.get("clean_run_every", {"days": DEFAULT_CLEAN_DAYS}), bad)
    notify = _parse_notify(merged["notify"], bad)
    listing = parse_listing(merge_listing(defaults.get("listing"), entry.get("listing")), bad)
    prices = parse_prices(merge_prices(defaults.get("prices"), entry.get("prices")), bad)
    keep = parse_keep(merged["keep"] or None, bad)
    if found:
        return None, found
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
        spark=spark,
        sweep=sweep,
        tasks=tasks,
        space=space,
        leftovers=leftovers,
        flow=flow,
        clean_run_every=every,
        notify=notify,
        listing=listing,
        prices=prices,
        keep=keep,
    ), found


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
