"""
The sections of a repository entry (spark, sweep, tasks, space, notify, clean_run_every), each parsed.

Part of :mod:`lakefs_gc.config` (import from there).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from lakefs_gc.config.model import (
    ConfigError,
    NotifierSpec,
    NotifySettings,
    SpaceSettings,
    SparkSettings,
    SweepSettings,
    TaskSettings,
)
from lakefs_gc.contract import STEPS
from lakefs_gc.gc.flow import CleanRunEvery

# How a section's parser names a problem: ConfigError("<where>: field '<field>': <message>")
_Err = Callable[[str, str], ConfigError]

_MEMORY_RE = re.compile(r"^[0-9]+[kKmMgGtT]?[bB]?$")
_POOL_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,256}$")
_SPARK_FIELDS = frozenset(
    {
        "conf",
        "driver_memory",
        "executor_memory",
        "parallelism",
        "binary",
        "python",
        "py_files",
        "jobs_dir",
        "fast_start",
        "in_process_max_keys",
        "pool",
    }
)
_SWEEP_FIELDS = frozenset(
    {
        "confirm_after_seconds",
        "max_delete_share",
        "max_delete_count",
        "mark_max_age_seconds",
        "rate",
        "concurrency",
        "batch_size",
        "quarantine_days",
    }
)
_SPACE_FIELDS = frozenset({"enabled", "stale_branch_days"})
_TASK_FIELDS = frozenset({"retries", "retry_delay_seconds", "execution_timeout_seconds", "execution_timeouts"})
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
                raise err(
                    fld, f"must be one of {{smtp: {{...}}}}, {{slack: {{...}}}}, {{class: {{path: ...}}}}, got {item!r}"
                )
            ((kind, options),) = item.items()
            if kind not in NOTIFIER_KINDS:
                raise err(fld, f"unknown notifier {kind!r} (one of {', '.join(NOTIFIER_KINDS)})")
            required, allowed = NOTIFIER_KINDS[kind]
            if not isinstance(options, Mapping):
                raise err(f"{fld}.{kind}", "must be a mapping of the notifier's options")
            unknown = set(options) - allowed
            if unknown:
                raise err(
                    f"{fld}.{kind}", f"unknown option(s) {_unknown(unknown, allowed)} (allowed: {sorted(allowed)})"
                )
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
                raise err(
                    f"{fld}.class.path",
                    f"must be a dotted path such as my_pkg.notifiers.MyNotifier, got {options['path']!r}",
                )
            if kind == "class" and not isinstance(options.get("args") or {}, Mapping):
                raise err(f"{fld}.class.args", "must be a mapping of the notifier's keyword arguments")
            module = NOTIFIER_TARGETS[kind][0] if kind in NOTIFIER_TARGETS else str(options["path"]).rpartition(".")[0]
            if not _installed(module):
                package = NOTIFIER_TARGETS[kind][2] if kind in NOTIFIER_TARGETS else module
                raise err(
                    f"{fld}.{kind}", f"{module} is not installed here: install {package} into every Airflow component"
                )
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
        raise err(
            "spark.in_process_max_keys",
            f"must be a whole number of keys >= 0 (0: every Spark step is a spark-submit), got {in_process!r}",
        )
    pool = raw.get("pool")
    if pool is not None and (not isinstance(pool, str) or not _POOL_RE.match(pool)):
        raise err("spark.pool", f"must be an Airflow pool name (letters, digits, _ . -) or null, got {pool!r}")
    fast_start = raw.get("fast_start", True)
    if not isinstance(fast_start, bool):
        raise err("spark.fast_start", f"must be true or false, got {fast_start!r}")
    return SparkSettings(
        conf={k: _conf_str(v) for k, v in conf.items()},
        fast_start=fast_start,
        in_process_max_keys=in_process,
        driver_memory=raw.get("driver_memory"),
        executor_memory=raw.get("executor_memory"),
        parallelism=par,
        binary=raw.get("binary"),
        python=raw.get("python"),
        py_files=raw.get("py_files"),
        jobs_dir=raw.get("jobs_dir"),
        pool=pool,
    )


def _parse_sweep(raw: Any, err: _Err) -> SweepSettings:
    _check_section(raw, "sweep", _SWEEP_FIELDS, err)

    def num(fld: str, lo: float, hi: float | None = None, integer: bool = True, optional: bool = False) -> Any:
        """Return the field as the file has it: in range, an int (a number when not ``integer``); None when absent (or null and ``optional``)."""
        v = raw.get(fld)
        if v is None:
            if optional or fld not in raw:
                return None
        ok = (
            not isinstance(v, bool)
            and isinstance(v, int if integer else (int, float))
            and v >= lo
            and (hi is None or v <= hi)
        )
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
    return SweepSettings(
        **{
            k: (v if v is not None or k in ("confirm_after_seconds", "concurrency") else getattr(d, k))
            for k, v in vals.items()
        }
    )


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
        execution_timeout_seconds=whole(
            "execution_timeout_seconds", raw.get("execution_timeout_seconds", d.execution_timeout_seconds), 1
        ),
        execution_timeouts={k: whole(f"execution_timeouts.{k}", v, 1) for k, v in per_task.items()},
    )


def _conf_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
