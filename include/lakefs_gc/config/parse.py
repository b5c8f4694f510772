"""
The GC configuration file read and validated, every problem named (file, entry, field).

Part of :mod:`lakefs_gc.config` (import from there).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

import yaml  # type: ignore[import-untyped, unused-ignore]

from lakefs_gc.config.model import (
    DEFAULT_CLEAN_DAYS,
    ENV_CONFIG,
    ConfigError,
    DiscoverySettings,
    DiscoverySource,
    GCConfig,
    NotifierSpec,
    NotifySettings,
    RemovedRepository,
    RepoConfig,
    SpaceSettings,
    SparkSettings,
    SweepSettings,
    TaskSettings,
    default_config_path,
)
from lakefs_gc.contract import FLOWS, SCHEDULABLE_MODES, STEPS
from lakefs_gc.gc.flow import CleanRunEvery

_T = TypeVar("_T")
# How a section's parser names a problem: ConfigError("<where>: field '<field>': <message>")
_Err = Callable[[str, str], ConfigError]

# lakeFS repository ids: ^[a-z0-9][a-z0-9-]{2,62}$ (pkg/graveler validation).
_REPO_RE = re.compile(r"^[a-z0-9][a-z0-9-]{2,62}$")
_CONN_ID_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,250}$")
_MEMORY_RE = re.compile(r"^[0-9]+[kKmMgGtT]?[bB]?$")
_PRESETS = frozenset({"@once", "@continuous", "@hourly", "@daily", "@weekly", "@monthly",
                      "@quarterly", "@yearly", "@annually"})
_CRON_FIELD_RE = re.compile(r"^[0-9A-Za-z*/,\-?LW#]+$")

_ENTRY_FIELDS = frozenset({"repository", "lakefs_conn_id", "storage_conn_id", "spark_conn_id",
                           "schedule", "min_age_seconds", "mode", "work_dir", "tags", "spark", "sweep", "tasks",
                           "space", "flow", "clean_run_every", "notify"})
_REQUIRED = ("repository",)
# What an entry gets when neither it nor ``defaults`` sets the field. storage_conn_id has none: a
# local:// namespace needs no storage connection, and prepare_run refuses another namespace without
# one, naming the field.
ENTRY_DEFAULTS: Mapping[str, Any] = {"lakefs_conn_id": "lakefs_default", "spark_conn_id": "spark_default",
                                     "min_age_seconds": 86400, "mode": "mark_and_sweep", "schedule": None}
_SPARK_FIELDS = frozenset({"conf", "driver_memory", "executor_memory", "parallelism", "binary",
                           "python", "py_files", "jobs_dir", "fast_start", "in_process_max_keys", "pool"})


_SWEEP_FIELDS = frozenset({"confirm_after_seconds", "max_delete_share", "max_delete_count",
                           "mark_max_age_seconds", "rate", "concurrency", "batch_size", "quarantine_days"})
_SPACE_FIELDS = frozenset({"enabled", "stale_branch_days"})
_TASK_FIELDS = frozenset({"retries", "retry_delay_seconds", "execution_timeout_seconds", "execution_timeouts"})
_TOP_LEVEL = ("defaults", "repositories", "pools", "discover")
_DISCOVER_FIELDS = frozenset({"sources", "schedule", "state_file"})
_SOURCE_FIELDS = frozenset({"lakefs_conn_id", "include", "exclude", "defaults", "overrides"})
_POOL_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,256}$")
# notifier kind -> (its required options, its allowed options)
NOTIFIER_KINDS: Mapping[str, tuple[frozenset[str], frozenset[str]]] = {
    "smtp": (frozenset({"to"}), frozenset({"to", "from_email", "smtp_conn_id", "subject"})),
    "slack": (frozenset({"channel"}), frozenset({"channel", "slack_conn_id", "username"})),
    "class": (frozenset({"path"}), frozenset({"path", "args"})),
}
# notifier kind -> (the module of its Airflow notifier, its class, the package that installs it)
NOTIFIER_TARGETS: Mapping[str, tuple[str, str, str]] = {
    "smtp": ("airflow.providers.smtp.notifications.smtp", "SmtpNotifier", "apache-airflow-providers-smtp"),
    "slack": ("airflow.providers.slack.notifications.slack", "SlackNotifier", "apache-airflow-providers-slack"),
}


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported here (its parents are imported to find it; nothing else runs)."""
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False

def _unknown(names: set[str], allowed: Iterable[str]) -> str:
    """``['shedule'] (did you mean 'schedule'?)``: the unknown names, each with its nearest allowed one."""
    import difflib

    hints = [f"{n!r} -> {m[0]!r}" for n in sorted(names) if (m := difflib.get_close_matches(n, list(allowed), 1, 0.6))]
    return f"{sorted(names)}" + (f" (did you mean: {', '.join(hints)}?)" if hints else "")



def load_config(path: str | os.PathLike[str] | None = None, *, strict: bool = True) -> GCConfig:
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


def raise_entry_errors(path: str | os.PathLike[str] | None = None) -> None:
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


def parse_config(doc: Any, path: str | os.PathLike[str] = "<config>", *, strict: bool = True) -> GCConfig:
    """
    Validate an already-parsed document (``path`` is only used in messages).

    ``strict``: see :func:`load_config`.
    """
    p = Path(path)
    if not isinstance(doc, Mapping):
        raise ConfigError(f"{p}: top level must be a mapping with a 'repositories' list")
    problems: list[str] = []  # the file's own problems, every one of them
    unknown = set(doc) - set(_TOP_LEVEL)
    if unknown:
        problems.append(f"{p}: unknown top-level key(s) {_unknown(unknown, _TOP_LEVEL)} "
                        f"(allowed: {', '.join(_TOP_LEVEL)})")
    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, Mapping):
        problems.append(f"{p}: 'defaults' must be a mapping")
        defaults = {}
    bad = set(defaults) - (_ENTRY_FIELDS - {"repository"})
    if bad:
        problems.append(f"{p}: defaults: unknown field(s) {_unknown(bad, _ENTRY_FIELDS - {'repository'})}")
    entries: Any = doc.get("repositories")  # as the file has it: a list past the check below
    if entries is None and doc.get("discover") is not None:
        entries = []
    if not isinstance(entries, list) or not (entries or doc.get("discover") is not None):
        problems.append(f"{p}: 'repositories' must be a non-empty list (or give a 'discover' section)")
    pools = _parse_pools(doc.get("pools"), p, problems)
    discovery = _parse_discover(doc.get("discover"), p, problems)
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
    removed: tuple[RemovedRepository, ...] = ()
    refreshed_at = None
    if discovery is not None:
        from lakefs_gc.config.discovered import discovered_entries

        found, found_errors, removed, refreshed_at = discovered_entries(
            discovery, {r.repository for r in repos}, lambda entry, where: _parse_entry(entry, defaults, where), p)
        if found_errors and strict:
            raise ConfigError(found_errors[0])
        repos.extend(found)
        errors.extend(found_errors)
    return GCConfig(path=p, repositories=tuple(repos), entry_errors=tuple(errors), pools=pools,
                    discovery=discovery, removed=removed, refreshed_at=refreshed_at)


def _parse_pools(raw: Any, p: Path, problems: list[str]) -> tuple[tuple[str, int], ...]:
    """``pools: {name: slots}``: the Airflow pools the set-up and ``make airflow`` create."""
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        problems.append(f"{p}: 'pools' must be a mapping of pool name to its slots, e.g. {{lakefs_gc_spark: 2}}")
        return ()
    out = []
    for name, slots in raw.items():
        if not isinstance(name, str) or not _POOL_RE.match(name):
            problems.append(f"{p}: pools: {name!r} is not an Airflow pool name (letters, digits, _ . -)")
        elif isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            problems.append(f"{p}: pools: {name}: slots must be an integer >= 1, got {slots!r}")
        else:
            out.append((name, slots))
    return tuple(out)


def _patterns(raw: Any, where: str, fld: str, problems: list[str], required: bool) -> tuple[str, ...]:
    if raw is None and not required:
        return ()
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(x, str) and x for x in raw):
        problems.append(f"{where}: field '{fld}': must be a non-empty list of repository name patterns "
                        f"(shell style: fleet-*, *-prod), got {raw!r}")
        return ()
    return tuple(raw)


def _parse_discover(raw: Any, p: Path, problems: list[str]) -> DiscoverySettings | None:
    """
    ``discover``: lakeFS connections whose repositories matching a pattern each get a GC DAG.

    Checked here (no network): the refresh (DAG ``lakefs_gc_discover``) lists the repositories and
    records them in ``state_file``; the DAG files read that file.
    """
    if raw is None:
        return None
    where = f"{p}: discover"
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: must be a mapping with 'sources' (a list of {{lakefs_conn_id, include}})")
        return None
    unknown = set(raw) - _DISCOVER_FIELDS
    if unknown:
        problems.append(f"{where}: unknown key(s) {_unknown(unknown, _DISCOVER_FIELDS)} "
                        f"(allowed: {sorted(_DISCOVER_FIELDS)})")
    schedule = raw.get("schedule", DiscoverySettings.schedule)
    if schedule is not None and (not isinstance(schedule, str) or not _valid_schedule(schedule)):
        problems.append(f"{where}: field 'schedule': must be a cron expression, a preset such as @hourly, or null, "
                        f"got {schedule!r}")
    state = raw.get("state_file")
    if state is not None and (not isinstance(state, str) or not state.strip()):
        problems.append(f"{where}: field 'state_file': must be a path, got {state!r}")
    state_path = Path(state) if state else p.with_name(p.stem + ".discovered.json")
    if not state_path.is_absolute():
        state_path = p.parent / state_path
    sources_raw = raw.get("sources")
    if not isinstance(sources_raw, list) or not sources_raw:
        problems.append(f"{where}: field 'sources': must be a non-empty list of {{lakefs_conn_id, include, "
                        f"exclude, defaults, overrides}}")
        return None
    sources = []
    for i, src in enumerate(sources_raw):
        w = f"{where}.sources[{i}]"
        if not isinstance(src, Mapping):
            problems.append(f"{w}: must be a mapping")
            continue
        unknown = set(src) - _SOURCE_FIELDS
        if unknown:
            problems.append(f"{w}: unknown key(s) {_unknown(unknown, _SOURCE_FIELDS)} (allowed: {sorted(_SOURCE_FIELDS)})")
        conn = src.get("lakefs_conn_id", ENTRY_DEFAULTS["lakefs_conn_id"])
        if not isinstance(conn, str) or not _CONN_ID_RE.match(conn):
            problems.append(f"{w}: field 'lakefs_conn_id': must be an Airflow connection id, got {conn!r}")
        include = _patterns(src.get("include"), w, "include", problems, required=True)
        exclude = _patterns(src.get("exclude"), w, "exclude", problems, required=False)
        defaults = src.get("defaults") or {}
        if not isinstance(defaults, Mapping):
            problems.append(f"{w}: field 'defaults': must be a mapping of entry fields")
            defaults = {}
        bad = set(defaults) - (_ENTRY_FIELDS - {"repository", "lakefs_conn_id"})
        if bad:
            problems.append(f"{w}: defaults: unknown field(s) {_unknown(bad, _ENTRY_FIELDS)} (not repository or "
                            "lakefs_conn_id: the source sets them)")
        overrides = src.get("overrides") or {}
        if not isinstance(overrides, Mapping) or not all(isinstance(v, Mapping) for v in overrides.values()):
            problems.append(f"{w}: field 'overrides': must map a repository id to its entry fields")
            overrides = {}
        for repo, fields in overrides.items():
            bad = set(fields) - (_ENTRY_FIELDS - {"repository", "lakefs_conn_id"})
            if bad:
                problems.append(f"{w}: overrides: {repo}: unknown field(s) {_unknown(bad, _ENTRY_FIELDS)}")
        sources.append(DiscoverySource(lakefs_conn_id=str(conn), include=include, exclude=exclude,
                                       defaults=tuple(defaults.items()),
                                       overrides=tuple((str(k), tuple(v.items())) for k, v in overrides.items())))
    return DiscoverySettings(sources=tuple(sources), schedule=schedule, state_file=state_path)


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
        problems.append(f"{where}: unknown field(s) {_unknown(unknown, _ENTRY_FIELDS)} "
                        f"(allowed: {sorted(_ENTRY_FIELDS)})")
    merged: dict[str, Any] = {**ENTRY_DEFAULTS, **defaults, **entry}
    for section in ("spark", "sweep", "tasks", "space", "notify"):
        merged[section] = {**(defaults.get(section) or {}), **(entry.get(section) or {})}
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
    space = check(lambda: _parse_space(merged["space"], err))
    flow = merged.get("flow", "auto")
    if flow not in FLOWS:
        bad("flow", f"must be one of {', '.join(FLOWS)}, got {flow!r}")
    every = check(lambda: _parse_clean_run_every(merged.get("clean_run_every", {"days": DEFAULT_CLEAN_DAYS}), err))
    notify = check(lambda: _parse_notify(merged["notify"], err))
    if problems:
        raise ConfigError("\n".join(problems))
    # no problem: every section parsed (check returns None only after recording one)
    return RepoConfig(repository=name, lakefs_conn_id=merged["lakefs_conn_id"],
                      storage_conn_id=merged.get("storage_conn_id"), spark_conn_id=merged["spark_conn_id"],
                      min_age_seconds=age, mode=mode, schedule=schedule, work_dir=work_dir,
                      tags=tuple(tags), spark=cast("SparkSettings", spark), sweep=cast("SweepSettings", sweep),
                      tasks=cast("TaskSettings", tasks), space=cast("SpaceSettings", space), flow=flow, clean_run_every=cast("CleanRunEvery", every),
                      notify=cast("NotifySettings", notify))


def _parse_notify(raw: Any, err: _Err) -> NotifySettings:
    """
    Parse ``notify: {on_failure: [...], on_success: [...]}``.

    Each notifier is one of ``{smtp: {to, ...}}``, ``{slack: {channel, ...}}`` or ``{class: {path, args}}``.
    """
    _check_section(raw, "notify", frozenset({"on_failure", "on_success"}), err)
    out: dict[str, tuple[NotifierSpec, ...]] = {}
    for when in ("on_failure", "on_success"):
        items = raw.get(when) or []
        if not isinstance(items, list):
            raise err(f"notify.{when}", "must be a list of notifiers, e.g. [{smtp: {to: [ops@example.com]}}]")
        specs = []
        for j, item in enumerate(items):
            fld = f"notify.{when}[{j}]"
            if not isinstance(item, Mapping) or len(item) != 1:
                raise err(fld, f"must be one of {{smtp: {{...}}}}, {{slack: {{...}}}}, {{class: {{path: ...}}}}, "
                               f"got {item!r}")
            (kind, options), = item.items()
            if kind not in NOTIFIER_KINDS:
                raise err(fld, f"unknown notifier {kind!r} (one of {', '.join(NOTIFIER_KINDS)})")
            required, allowed = NOTIFIER_KINDS[kind]
            if not isinstance(options, Mapping):
                raise err(f"{fld}.{kind}", "must be a mapping of the notifier's options")
            unknown = set(options) - allowed
            if unknown:
                raise err(f"{fld}.{kind}", f"unknown option(s) {_unknown(unknown, allowed)} (allowed: {sorted(allowed)})")
            missing = sorted(required - set(options))
            if missing:
                raise err(f"{fld}.{kind}", f"missing {', '.join(missing)}")
            if kind == "smtp":
                to = options["to"]
                if isinstance(to, str):
                    to = [to]
                if not isinstance(to, list) or not to or not all(isinstance(t, str) and "@" in t for t in to):
                    raise err(f"{fld}.smtp.to", f"must be a mail address or a list of them, got {options['to']!r}")
                options = {**options, "to": tuple(to)}
            if kind == "class" and (not isinstance(options["path"], str) or "." not in options["path"]):
                raise err(f"{fld}.class.path", f"must be a dotted path such as my_pkg.notifiers.MyNotifier, "
                                                f"got {options['path']!r}")
            if kind == "class" and not isinstance(options.get("args") or {}, Mapping):
                raise err(f"{fld}.class.args", "must be a mapping of the notifier's keyword arguments")
            module = NOTIFIER_TARGETS[kind][0] if kind in NOTIFIER_TARGETS else str(options["path"]).rpartition(".")[0]
            if not _installed(module):
                package = NOTIFIER_TARGETS[kind][2] if kind in NOTIFIER_TARGETS else module
                raise err(f"{fld}.{kind}", f"{module} is not installed here: install {package} into every Airflow "
                                           "component")
            specs.append(NotifierSpec(kind=kind, options=tuple(sorted(options.items()))))
        out[when] = tuple(specs)
    return NotifySettings(**out)


def _parse_clean_run_every(raw: Any, err: _Err) -> CleanRunEvery:
    """
    Parse ``clean_run_every: {runs: N}`` and/or ``{days: D}`` (whichever comes first).

    Null: never (an ``auto`` run is then clean only when no earlier run can be its base).
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


def _check_section(raw: Any, name: str, allowed: frozenset[str], err: _Err) -> None:
    if not isinstance(raw, Mapping):
        raise err(name, "must be a mapping")
    unknown = set(raw) - allowed
    if unknown:
        raise err(name, f"unknown key(s) {_unknown(unknown, allowed)} (allowed: {sorted(allowed)})")


def _parse_spark(raw: Any, err: _Err) -> SparkSettings:
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
    pool = raw.get("pool")
    if pool is not None and (not isinstance(pool, str) or not _POOL_RE.match(pool)):
        raise err("spark.pool", f"must be an Airflow pool name (letters, digits, _ . -) or null, got {pool!r}")
    fast_start = raw.get("fast_start", True)
    if not isinstance(fast_start, bool):
        raise err("spark.fast_start", f"must be true or false, got {fast_start!r}")
    return SparkSettings(
        conf={k: _conf_str(v) for k, v in conf.items()}, fast_start=fast_start, in_process_max_keys=in_process,
        driver_memory=raw.get("driver_memory"), executor_memory=raw.get("executor_memory"),
        parallelism=par, binary=raw.get("binary"), python=raw.get("python"),
        py_files=raw.get("py_files"), jobs_dir=raw.get("jobs_dir"), pool=pool)


def _parse_sweep(raw: Any, err: _Err) -> SweepSettings:
    _check_section(raw, "sweep", _SWEEP_FIELDS, err)

    def num(fld: str, lo: float, hi: float | None = None, integer: bool = True, optional: bool = False) -> Any:
        """Return the field as the file has it: in range, an int (a number when not ``integer``); None when absent (or null and ``optional``)."""
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


def _parse_space(raw: Any, err: _Err) -> SpaceSettings:
    _check_section(raw, "space", _SPACE_FIELDS, err)
    d = SpaceSettings()
    enabled = raw.get("enabled", d.enabled)
    if not isinstance(enabled, bool):
        raise err("space.enabled", f"must be true or false, got {enabled!r}")
    days = raw.get("stale_branch_days", d.stale_branch_days)
    if isinstance(days, bool) or not isinstance(days, int) or not 0 <= days <= 36500:
        raise err("space.stale_branch_days", f"must be an integer 0..36500 (days), got {days!r}")
    return SpaceSettings(enabled=enabled, stale_branch_days=days)


def _parse_tasks(raw: Any, err: _Err) -> TaskSettings:
    _check_section(raw, "tasks", _TASK_FIELDS, err)

    def whole(name: str, v: object, lo: int) -> int:
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


def parse_entry(entry: Mapping[str, Any], where: str = "<entry>") -> RepoConfig:
    """One repository entry on its own (the task group's arguments): ``ConfigError`` naming every bad field."""
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where}: an entry must be a mapping of its fields")
    return _parse_entry(entry, {}, where)
