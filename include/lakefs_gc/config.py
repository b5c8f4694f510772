"""
The checked-in list of repositories to collect (``config/gc_repositories.yaml``), validated.

Pure Python (no Airflow): the DAG files call :func:`load_config` when they are parsed (the only
parse-time work), and tests call it directly. Every error names the file, the entry and the field,
e.g. ``config/gc_repositories.yaml: repositories[0] (sample-repo): field 'mode': must be one of
mark_and_sweep, mark_only, got 'sweep'``.

A bad entry breaks only itself: ``load_config(strict=False)`` (what ``dags/gc_dags.py`` reads)
returns every good entry and the bad entries' messages in ``GCConfig.entry_errors``, and
:func:`raise_entry_errors` (all of ``dags/gc_config_errors.py``) raises them, so Airflow records them
as that file's import error while the DAGs of ``gc_dags.py`` stay. A file that cannot be read, is
not YAML or has a bad top level or ``defaults`` fails as a whole.

Values resolved at run time, not here: the work location (:func:`resolve_work_dir`), which depends
on the worker's environment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any

import yaml

from lakefs_gc.contract import FLOWS, SCHEDULABLE_MODES, STEPS, RunSettings
from lakefs_gc.gc.flow import CleanRunEvery

DEFAULT_CLEAN_DAYS = 7  # clean_run_every: an auto run is clean at least weekly

ENV_CONFIG = "LAKEFS_GC_CONFIG"
ENV_WORK_DIR = "LAKEFS_GC_WORK_DIR"
DEFAULT_WORK_DIR = "/tmp/lakefs-gc-work"
ENV_PROJECT_ROOT = "LAKEFS_GC_HOME"


def project_root() -> Path:
    """
    Where ``config/`` is, and what relative ``spark.py_files`` / ``spark.jobs_dir`` are taken
    from: ``$LAKEFS_GC_HOME``, else the checkout this package runs from
    (``include/lakefs_gc/config.py``), else the working directory (an installed package: set
    ``LAKEFS_GC_CONFIG``; the jobs and their zip come from the package itself).
    """
    env = os.environ.get(ENV_PROJECT_ROOT)
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    if here.parent.name == "include" and (here.parents[1] / "pyproject.toml").is_file():
        return here.parents[1]
    return Path.cwd()

# lakeFS repository ids: ^[a-z0-9][a-z0-9-]{2,62}$ (pkg/graveler validation).
_REPO_RE = re.compile(r"^[a-z0-9][a-z0-9-]{2,62}$")
_CONN_ID_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,250}$")
_MEMORY_RE = re.compile(r"^[0-9]+[kKmMgGtT]?[bB]?$")
_PRESETS = frozenset({"@once", "@continuous", "@hourly", "@daily", "@weekly", "@monthly",
                      "@quarterly", "@yearly", "@annually"})
_CRON_FIELD_RE = re.compile(r"^[0-9A-Za-z*/,\-?LW#]+$")

_ENTRY_FIELDS = frozenset({"repository", "lakefs_conn_id", "storage_conn_id", "spark_conn_id",
                           "schedule", "min_age_seconds", "mode", "work_dir", "tags", "spark", "sweep", "tasks",
                           "flow", "clean_run_every"})
_REQUIRED = ("repository",)
# What an entry gets when neither it nor ``defaults`` sets the field. storage_conn_id has none: a
# local:// namespace needs no storage connection, and prepare_run refuses another namespace without
# one, naming the field.
ENTRY_DEFAULTS: Mapping[str, Any] = {"lakefs_conn_id": "lakefs_default", "spark_conn_id": "spark_default",
                                     "min_age_seconds": 86400, "mode": "mark_and_sweep", "schedule": None}
_SPARK_FIELDS = frozenset({"conf", "driver_memory", "executor_memory", "parallelism", "binary",
                           "python", "py_files", "jobs_dir", "fast_start", "in_process_max_keys"})


_SWEEP_FIELDS = frozenset({"confirm_after_seconds", "max_delete_share", "max_delete_count",
                           "mark_max_age_seconds", "rate", "concurrency", "batch_size", "quarantine_days"})
_TASK_FIELDS = frozenset({"retries", "retry_delay_seconds", "execution_timeout_seconds", "execution_timeouts"})
_PRESET_SECONDS = {"@hourly": 3600, "@daily": 86400, "@weekly": 7 * 86400, "@monthly": 28 * 86400,
                   "@quarterly": 90 * 86400, "@yearly": 365 * 86400, "@annually": 365 * 86400}


def _unknown(names: set[str], allowed) -> str:
    """``['shedule'] (did you mean 'schedule'?)``: the unknown names, each with its nearest allowed one."""
    import difflib

    hints = [f"{n!r} -> {m[0]!r}" for n in sorted(names) if (m := difflib.get_close_matches(n, list(allowed), 1, 0.6))]
    return f"{sorted(names)}" + (f" (did you mean: {', '.join(hints)}?)" if hints else "")


class ConfigError(ValueError):
    """The GC configuration file is missing, unreadable or invalid (the message says where)."""


@dataclass(frozen=True)
class SparkSettings:
    conf: dict[str, str] = field(default_factory=dict)
    driver_memory: str | None = None
    executor_memory: str | None = None
    parallelism: int | None = None
    binary: str | None = None       # spark-submit path; None: the one next to the running Python
    python: str | None = None       # PYSPARK_PYTHON; None: the running Python
    py_files: str | None = None     # None: a zip of the installed package (lakefs_gc.spark.bundle)
    jobs_dir: str | None = None     # None: the jobs inside the package (lakefs_gc/spark/jobs)
    fast_start: bool = True         # the driver JVM's start-up options (lakefs_gc.spark.jvm)
    in_process_max_keys: int = 10_000  # a step of at most this many keys runs in its task, without Spark (0: never)

    def spark_conf(self) -> dict[str, str]:
        """``conf`` plus the parallelism as Spark properties (explicit conf keys win)."""
        out: dict[str, str] = {}
        if self.parallelism:
            out["spark.default.parallelism"] = str(self.parallelism)
            out["spark.sql.shuffle.partitions"] = str(self.parallelism)
        out.update(self.conf)
        return out


@dataclass(frozen=True)
class SweepSettings:
    """How a run deletes: the defaults of the run's Params (their own defaults: ``RunSettings``)."""

    confirm_after_seconds: int | None = None  # None: one schedule interval for scheduled runs, 0 for manual
    max_delete_share: float = RunSettings.max_delete_share
    max_delete_count: int = RunSettings.max_delete_count
    mark_max_age_seconds: int = RunSettings.mark_max_age_seconds
    rate: float = RunSettings.delete_rate
    concurrency: int | None = None            # delete tasks at once; None: spark.parallelism
    batch_size: int = RunSettings.delete_batch_size
    quarantine_days: int = RunSettings.quarantine_days  # local:// only


@dataclass(frozen=True)
class TaskSettings:
    """
    Airflow task behaviour. Every GC step is idempotent (outputs overwritten, the sweep resumes
    from its done markers), so failures are retried; refusals (bad settings, missing rules, unsafe
    input) fail at once without retry.
    """

    retries: int = 2
    retry_delay_seconds: int = 120
    execution_timeout_seconds: int = 6 * 3600
    execution_timeouts: dict[str, int] = field(default_factory=dict)  # per task id, overriding the above

    def timeout(self, task_id: str) -> int:
        return self.execution_timeouts.get(task_id, self.execution_timeout_seconds)


def schedule_interval_seconds(schedule: str | None) -> int:
    """The shortest gap between two runs of ``schedule`` (0 for manual-only / @once / @continuous)."""
    if not schedule or schedule in ("@once", "@continuous"):
        return 0
    if schedule in _PRESET_SECONDS:
        return _PRESET_SECONDS[schedule]
    from datetime import datetime

    from croniter import croniter

    it = croniter(schedule, datetime(2024, 1, 1, tzinfo=UTC))
    fires = [it.get_next(float) for _ in range(64)]
    return int(min(b - a for a, b in zip(fires, fires[1:])))


@dataclass(frozen=True)
class RepoConfig:
    repository: str
    lakefs_conn_id: str
    storage_conn_id: str | None  # None: none set (a local:// namespace needs none)
    spark_conn_id: str
    min_age_seconds: int
    mode: str
    schedule: str | None = None
    work_dir: str | None = None
    tags: tuple[str, ...] = ()
    spark: SparkSettings = field(default_factory=SparkSettings)
    sweep: SweepSettings = field(default_factory=SweepSettings)
    tasks: TaskSettings = field(default_factory=TaskSettings)
    flow: str = "auto"                   # the default of the run's Param flow (lakefs_gc.gc.flow)
    clean_run_every: CleanRunEvery = field(default_factory=lambda: CleanRunEvery(days=DEFAULT_CLEAN_DAYS))

    @property
    def dag_id(self) -> str:
        return f"lakefs_gc__{self.repository}"


@dataclass(frozen=True)
class GCConfig:
    path: Path
    repositories: tuple[RepoConfig, ...]
    entry_errors: tuple[str, ...] = ()  # the bad entries' messages (``strict=False`` only), in file order

    @property
    def entry_problems(self) -> list[str]:
        """Every problem of the bad entries, one line each (an entry's message holds all of its own)."""
        return [line for message in self.entry_errors for line in message.splitlines()]


def default_config_path() -> Path:
    """``$LAKEFS_GC_CONFIG`` if set, else the checked-in ``config/gc_repositories.yaml``."""
    env = os.environ.get(ENV_CONFIG)
    return Path(env) if env else project_root() / "config" / "gc_repositories.yaml"


def resolve_work_dir(configured: str | None) -> str:
    """The base work location: the entry's ``work_dir``, else ``$LAKEFS_GC_WORK_DIR``, else /tmp."""
    return configured or os.environ.get(ENV_WORK_DIR) or DEFAULT_WORK_DIR


def load_config(path: str | os.PathLike | None = None, *, strict: bool = True) -> GCConfig:
    """
    Read and validate the config file; raise :class:`ConfigError` naming file, entry and field.

    ``strict=False``: a bad entry is left out and its message kept in ``entry_errors`` (errors of the
    whole file still raise).
    """
    p = Path(path) if path is not None else default_config_path()
    try:
        text = p.read_text()
    except OSError as e:
        raise ConfigError(f"{p}: cannot read the GC configuration ({e.strerror or e}); "
                          f"set {ENV_CONFIG} to its path") from e
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not valid YAML: {e}") from e
    return parse_config(doc, p, strict=strict)


def raise_entry_errors(path: str | os.PathLike | None = None) -> None:
    """
    Raise one :class:`ConfigError` naming every bad entry of the config file, if it has any.

    Errors of the whole file are not raised here: ``dags/gc_dags.py`` raises them (one import error
    for them, not two).
    """
    try:
        cfg = load_config(path, strict=False)
    except ConfigError:
        return
    if cfg.entry_errors:
        n = len(cfg.entry_errors)
        raise ConfigError(f"{cfg.path}: {n} bad repository entr{'y' if n == 1 else 'ies'}, whose GC DAG "
                          f"{'is' if n == 1 else 'are'} not built (every other entry's DAG is); fix "
                          f"{'it' if n == 1 else 'them'} in the file:\n" + "\n".join(cfg.entry_errors))


def parse_config(doc: Any, path: str | os.PathLike = "<config>", *, strict: bool = True) -> GCConfig:
    """
    Validate an already-parsed document (``path`` is only used in messages); ``strict``: see
    :func:`load_config`.
    """
    p = Path(path)
    if not isinstance(doc, Mapping):
        raise ConfigError(f"{p}: top level must be a mapping with a 'repositories' list")
    problems: list[str] = []  # the file's own problems, every one of them
    unknown = set(doc) - {"defaults", "repositories"}
    if unknown:
        problems.append(f"{p}: unknown top-level key(s) {_unknown(unknown, ('defaults', 'repositories'))} "
                        "(allowed: defaults, repositories)")
    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, Mapping):
        problems.append(f"{p}: 'defaults' must be a mapping")
        defaults = {}
    bad = set(defaults) - (_ENTRY_FIELDS - {"repository"})
    if bad:
        problems.append(f"{p}: defaults: unknown field(s) {_unknown(bad, _ENTRY_FIELDS - {'repository'})}")
    entries = doc.get("repositories")
    if not isinstance(entries, list) or not entries:
        problems.append(f"{p}: 'repositories' must be a non-empty list")
    if problems:
        raise ConfigError("\n".join(problems))

    repos: list[RepoConfig] = []
    errors: list[str] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        try:
            repo = _parse_listed_entry(entry, i, defaults, p, seen)
        except ConfigError as e:
            if strict:
                raise
            errors.append(str(e))
            continue
        seen[repo.repository] = i
        repos.append(repo)
    return GCConfig(path=p, repositories=tuple(repos), entry_errors=tuple(errors))


def _parse_listed_entry(entry: Any, i: int, defaults: Mapping[str, Any], p: Path,
                        seen: dict[str, int]) -> RepoConfig:
    where = f"{p}: repositories[{i}]"
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where}: each entry must be a mapping")
    name = entry.get("repository")
    if isinstance(name, str):
        where = f"{where} ({name})"
    repo = _parse_entry(entry, defaults, where)
    if repo.repository in seen:
        raise ConfigError(f"{where}: field 'repository': duplicate repository "
                          f"{repo.repository!r} (also repositories[{seen[repo.repository]}])")
    return repo


def _parse_entry(entry: Mapping[str, Any], defaults: Mapping[str, Any], where: str) -> RepoConfig:
    """
    One entry merged over ``defaults`` and over :data:`ENTRY_DEFAULTS`; every problem of the entry
    is found (one line each in the :class:`ConfigError`), not only the first.
    """
    problems: list[str] = []

    def err(fld: str, msg: str) -> ConfigError:
        return ConfigError(f"{where}: field '{fld}': {msg}")

    def bad(fld: str, msg: str) -> None:
        problems.append(str(err(fld, msg)))

    def check(fn):
        """A section's parser (the first problem of the section), its value or None."""
        try:
            return fn()
        except ConfigError as e:
            problems.append(str(e))
            return None

    unknown = set(entry) - _ENTRY_FIELDS
    if unknown:
        problems.append(f"{where}: unknown field(s) {_unknown(unknown, _ENTRY_FIELDS)} "
                        f"(allowed: {sorted(_ENTRY_FIELDS)})")
    merged: dict[str, Any] = {**ENTRY_DEFAULTS, **defaults, **entry}
    for section in ("spark", "sweep", "tasks"):
        merged[section] = {**(defaults.get(section) or {}), **(entry.get(section) or {})}
    for fld in _REQUIRED:
        if merged.get(fld) is None:
            bad(fld, "missing (required; set it in the entry or under 'defaults')")

    name = merged.get("repository")
    if name is not None and (not isinstance(name, str) or not _REPO_RE.match(name)):
        bad("repository", f"must be a lakeFS repository id (^[a-z0-9][a-z0-9-]{{2,62}}$), got {name!r}")
    for fld in ("lakefs_conn_id", "storage_conn_id", "spark_conn_id"):
        v = merged.get(fld)
        if (v is not None or fld != "storage_conn_id") and (not isinstance(v, str) or not _CONN_ID_RE.match(v)):
            bad(fld, f"must be an Airflow connection id (letters, digits, _ . -), got {v!r}")
    mode = merged["mode"]
    if mode not in SCHEDULABLE_MODES:
        hint = (" (sweep_only needs the mark id of an earlier run: trigger it by hand with the Params mode and "
                "mark_id)") if mode == "sweep_only" else ""
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
    flow = merged.get("flow", "auto")
    if flow not in FLOWS:
        bad("flow", f"must be one of {', '.join(FLOWS)}, got {flow!r}")
    every = check(lambda: _parse_clean_run_every(merged.get("clean_run_every", {"days": DEFAULT_CLEAN_DAYS}), err))
    if problems:
        raise ConfigError("\n".join(problems))
    return RepoConfig(repository=name, lakefs_conn_id=merged["lakefs_conn_id"],
                      storage_conn_id=merged.get("storage_conn_id"), spark_conn_id=merged["spark_conn_id"],
                      min_age_seconds=age, mode=mode, schedule=schedule, work_dir=work_dir,
                      tags=tuple(tags), spark=spark, sweep=sweep, tasks=tasks, flow=flow, clean_run_every=every)


def _parse_clean_run_every(raw: Any, err) -> CleanRunEvery:
    """
    ``clean_run_every: {runs: N}`` and/or ``{days: D}`` (whichever comes first); null: never
    (an ``auto`` run is then clean only when no earlier run can be its base).
    """
    if raw is None:
        return CleanRunEvery()
    _check_section(raw, "clean_run_every", frozenset({"runs", "days"}), err)
    runs, days = raw.get("runs"), raw.get("days")
    if runs is not None and (isinstance(runs, bool) or not isinstance(runs, int) or runs < 1):
        raise err("clean_run_every.runs", f"must be an integer >= 1 (1: every run is clean), got {runs!r}")
    if days is not None and (isinstance(days, bool) or not isinstance(days, (int, float)) or days <= 0):
        raise err("clean_run_every.days", f"must be a number of days > 0, got {days!r}")
    return CleanRunEvery(runs=runs, days=days)


def _check_section(raw: Any, name: str, allowed: frozenset[str], err) -> None:
    if not isinstance(raw, Mapping):
        raise err(name, "must be a mapping")
    unknown = set(raw) - allowed
    if unknown:
        raise err(name, f"unknown key(s) {_unknown(unknown, allowed)} (allowed: {sorted(allowed)})")


def _parse_spark(raw: Any, err) -> SparkSettings:
    _check_section(raw, "spark", _SPARK_FIELDS, err)
    conf = raw.get("conf") or {}
    if not isinstance(conf, Mapping) or not all(isinstance(k, str) for k in conf):
        raise err("spark.conf", "must be a mapping of Spark property names to values")
    for k, v in conf.items():
        if isinstance(v, (dict, list)) or v is None:
            raise err(f"spark.conf.{k}", f"must be a scalar, got {v!r}")
    for fld in ("driver_memory", "executor_memory"):
        v = raw.get(fld)
        if v is not None and (not isinstance(v, str) or not _MEMORY_RE.match(v)):
            raise err(f"spark.{fld}", f"must be a Spark memory size such as 1g or 512m, got {v!r}")
    par = raw.get("parallelism")
    if par is not None and (isinstance(par, bool) or not isinstance(par, int) or par < 1):
        raise err("spark.parallelism", f"must be an integer >= 1, got {par!r}")
    for fld in ("binary", "python", "py_files", "jobs_dir"):
        v = raw.get(fld)
        if v is not None and (not isinstance(v, str) or not v):
            raise err(f"spark.{fld}", f"must be a non-empty string, got {v!r}")
    in_process = raw.get("in_process_max_keys", SparkSettings.in_process_max_keys)
    if isinstance(in_process, bool) or not isinstance(in_process, int) or in_process < 0:
        raise err("spark.in_process_max_keys", f"must be a whole number of keys >= 0 (0: every Spark step is a "
                                               f"spark-submit), got {in_process!r}")
    fast_start = raw.get("fast_start", True)
    if not isinstance(fast_start, bool):
        raise err("spark.fast_start", f"must be true or false, got {fast_start!r}")
    return SparkSettings(
        conf={k: _conf_str(v) for k, v in conf.items()}, fast_start=fast_start, in_process_max_keys=in_process,
        driver_memory=raw.get("driver_memory"), executor_memory=raw.get("executor_memory"),
        parallelism=par, binary=raw.get("binary"), python=raw.get("python"),
        py_files=raw.get("py_files"), jobs_dir=raw.get("jobs_dir"))


def _parse_sweep(raw: Any, err) -> SweepSettings:
    _check_section(raw, "sweep", _SWEEP_FIELDS, err)

    def num(fld, lo, hi=None, integer=True, optional=False):
        v = raw.get(fld)
        if v is None:
            if optional or fld not in raw:
                return None
        ok = not isinstance(v, bool) and isinstance(v, int if integer else (int, float)) and v >= lo \
            and (hi is None or v <= hi)
        if not ok:
            bound = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise err(f"sweep.{fld}", f"must be {'an integer' if integer else 'a number'} {bound}, got {v!r}")
        return v

    d = SweepSettings()
    vals = {
        "confirm_after_seconds": num("confirm_after_seconds", 0, optional=True),
        "max_delete_share": num("max_delete_share", 0, 1, integer=False),
        "max_delete_count": num("max_delete_count", 0),
        "mark_max_age_seconds": num("mark_max_age_seconds", 0),
        "rate": num("rate", 0, integer=False),
        "concurrency": num("concurrency", 1, optional=True),
        "batch_size": num("batch_size", 1, 1000),
        "quarantine_days": num("quarantine_days", 0, 3650),
    }
    return SweepSettings(**{k: (v if v is not None or k in ("confirm_after_seconds", "concurrency")
                               else getattr(d, k)) for k, v in vals.items()})


def _parse_tasks(raw: Any, err) -> TaskSettings:
    _check_section(raw, "tasks", _TASK_FIELDS, err)

    def whole(name: str, v: Any, lo: int) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise err(f"tasks.{name}", f"must be an integer >= {lo}, got {v!r}")
        return v

    d = TaskSettings()
    per_task = raw.get("execution_timeouts") or {}
    if not isinstance(per_task, Mapping):
        raise err("tasks.execution_timeouts", "must be a mapping of task id to seconds")
    bad = set(per_task) - set(STEPS)
    if bad:
        raise err("tasks.execution_timeouts", f"unknown task id(s) {sorted(bad)} (tasks: {', '.join(STEPS)})")
    return TaskSettings(
        retries=whole("retries", raw.get("retries", d.retries), 0),
        retry_delay_seconds=whole("retry_delay_seconds", raw.get("retry_delay_seconds", d.retry_delay_seconds), 0),
        execution_timeout_seconds=whole("execution_timeout_seconds",
                                        raw.get("execution_timeout_seconds", d.execution_timeout_seconds), 1),
        execution_timeouts={k: whole(f"execution_timeouts.{k}", v, 1) for k, v in per_task.items()})


def _conf_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _valid_schedule(s: str) -> bool:
    s = s.strip()
    if s.startswith("@"):
        return s in _PRESETS
    parts = s.split()
    return len(parts) == 5 and all(_CRON_FIELD_RE.match(x) for x in parts)
