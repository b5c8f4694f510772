"""
The sections of an entry (spark, sweep, tasks, space, notify, clean_run_every) parsed, every problem recorded.

Part of :mod:`lakefs_gc.config` (import from there).
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from lakefs_gc.config.model import (
    POOL_PATTERN,
    RULE,
    LeftoversSettings,
    NotifierSpec,
    NotifySettings,
    Rule,
    SpaceSettings,
    SparkSettings,
    SweepSettings,
    TaskSettings,
)
from lakefs_gc.contract import STEPS, from_wire
from lakefs_gc.contract.settings import uploads_threshold_problem
from lakefs_gc.contract.wire import value_from_wire
from lakefs_gc.errors import ContractError
from lakefs_gc.gc.flow import CleanRunEvery

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_S = TypeVar("_S", bound="DataclassInstance")


class _Bad(Protocol):
    """
    How a section's parser records a problem and goes on: ``field '<field>': <message>``.

    ``at``: the path of what is wrong, for its line (default ``field``), e.g. the unknown key itself.
    """

    def __call__(self, field: str, message: str, /, at: str | None = None) -> None: ...


_POOL_RE = re.compile(POOL_PATTERN)
# The rules of a class the config does not own (lakefs_gc.gc.flow): per field, as setting() gives the others
_CLEAN_RUN_EVERY_RULES: Mapping[str, Rule] = {
    "runs": Rule(lo=1, must_be="an integer >= 1 (1: every run is clean)"),
    "days": Rule(above=0, must_be="a number of days > 0"),
}
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


def _unknown(kind: str, name: Any, allowed: Iterable[str]) -> str:
    """``unknown field 'shedule' (did you mean 'schedule'?)``, else the allowed names."""
    import difflib

    allowed = sorted(allowed)
    close = difflib.get_close_matches(str(name), allowed, 1, 0.6)
    return f"unknown {kind} {name!r} " + (
        f"(did you mean {close[0]!r}?)" if close else f"(allowed: {', '.join(allowed)})"
    )


def _parse_notify(raw: Any, bad: _Bad) -> NotifySettings:
    """
    Parse ``notify: {on_failure: [...], on_success: [...]}``.

    Each notifier is one of ``{smtp: {to, ...}}``, ``{slack: {channel, ...}}`` or ``{class: {path, args}}``.
    """
    if not _check_section(raw, "notify", frozenset({"on_failure", "on_success"}), bad):
        return NotifySettings()
    out: dict[str, tuple[NotifierSpec, ...]] = {}
    for when in ("on_failure", "on_success"):
        items = raw.get(when) or []
        if not isinstance(items, list):
            bad(f"notify.{when}", "must be a list of notifiers, e.g. [{smtp: {to: [ops@example.com]}}]")
            continue
        specs = (_notifier(item, f"notify.{when}[{j}]", bad) for j, item in enumerate(items))
        out[when] = tuple(spec for spec in specs if spec is not None)
    return NotifySettings(**out)


def _notifier(item: Any, fld: str, bad: _Bad) -> NotifierSpec | None:
    """One notifier of ``notify``; None when it is bad (every problem of it recorded)."""
    if not isinstance(item, Mapping) or len(item) != 1:
        bad(fld, f"must be one of {{smtp: {{...}}}}, {{slack: {{...}}}}, {{class: {{path: ...}}}}, got {item!r}")
        return None
    ((kind, options),) = item.items()
    if kind not in NOTIFIER_KINDS:
        bad(fld, f"unknown notifier {kind!r} (one of {', '.join(NOTIFIER_KINDS)})")
        return None
    required, allowed = NOTIFIER_KINDS[kind]
    if not isinstance(options, Mapping):
        bad(f"{fld}.{kind}", "must be a mapping of the notifier's options")
        return None
    problems: list[tuple[str, str, str | None]] = []
    for name in sorted(set(options) - allowed, key=str):
        problems.append((f"{fld}.{kind}", _unknown("option", name, allowed), f"{fld}.{kind}.{name}"))
    missing = sorted(required - set(options))
    if missing:
        problems.append((f"{fld}.{kind}", f"missing {', '.join(missing)}", None))
    if kind == "smtp" and "to" in options:
        to = options["to"]
        if isinstance(to, str):
            to = [to]
        if not isinstance(to, list) or not to or not all(isinstance(t, str) and "@" in t for t in to):
            problems.append(
                (f"{fld}.smtp.to", f"must be a mail address or a list of them, got {options['to']!r}", None)
            )
        options = {**options, "to": tuple(to) if isinstance(to, list) else to}
    path_ok = kind != "class" or isinstance(options.get("path"), str) and "." in options["path"]
    if kind == "class" and "path" in options and not path_ok:
        problems.append(
            (
                f"{fld}.class.path",
                f"must be a dotted path such as my_pkg.notifiers.MyNotifier, got {options['path']!r}",
                None,
            )
        )
    if kind == "class" and not isinstance(options.get("args") or {}, Mapping):
        problems.append((f"{fld}.class.args", "must be a mapping of the notifier's keyword arguments", None))
    if path_ok:
        module = NOTIFIER_TARGETS[kind][0] if kind in NOTIFIER_TARGETS else str(options["path"]).rpartition(".")[0]
        if not _installed(module):
            package = NOTIFIER_TARGETS[kind][2] if kind in NOTIFIER_TARGETS else module
            problems.append(
                (
                    f"{fld}.{kind}",
                    f"{module} is not installed here: install {package} into every Airflow component",
                    None,
                )
            )
    for field_, message, at in problems:
        bad(field_, message, at)
    return None if problems else NotifierSpec(kind=kind, options=tuple(sorted(options.items())))


def _parse_clean_run_every(raw: Any, bad: _Bad) -> CleanRunEvery:
    """
    Parse ``clean_run_every: {runs: N}`` and/or ``{days: D}`` (whichever comes first).

    Null: never (an ``auto`` run is then clean only when no earlier run can be its base).
    """
    if raw is None:
        return CleanRunEvery()
    return read_section(CleanRunEvery, raw, "clean_run_every", bad, rules=_CLEAN_RUN_EVERY_RULES)


def _check_section(raw: Any, name: str, allowed: frozenset[str], bad: _Bad) -> bool:
    """Record each unknown key of section ``name``; False when it is not even a mapping."""
    if not isinstance(raw, Mapping):
        bad(name, "must be a mapping")
        return False
    for key in sorted(set(raw) - allowed, key=str):
        bad(name, _unknown("key", key, allowed), f"{name}.{key}")
    return True


def read_section(
    cls: type[_S], raw: Any, name: str, bad: _Bad, rules: Mapping[str, Rule] | None = None, **by_hand: Any
) -> _S:
    """
    Read section ``name`` into ``cls`` through the wire codec, each field by its type hint and :class:`Rule`.

    A field of the wrong type or against its rule: ``field '<name>.<field>': must be <words>, got <value>``,
    every such field (in the class's order; the section read has its default instead). ``rules``: the
    rules of a class the config does not own, by field, instead of its :func:`setting` metadata.
    ``by_hand``: the fields the section reads itself (those without a rule), already read.
    """
    if not _check_section(raw, name, _names(cls), bad):
        return dataclasses.replace(cls(), **by_hand)
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        rule = rules.get(f.name) if rules is not None else f.metadata.get(RULE)
        if rule is None or f.name not in raw:
            continue
        v = raw[f.name]
        try:
            value = value_from_wire(hints[f.name], v, f"{name}.{f.name}")
        except ContractError:
            value, ok = None, False
        else:
            ok = value is None or rule.ok(value)
        if not ok:
            bad(f"{name}.{f.name}", f"must be {_words(hints[f.name], rule)}, got {v!r}")
            continue
        values[f.name] = value
    return dataclasses.replace(from_wire(cls, values, name), **by_hand)


def _names(cls: type[DataclassInstance]) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def _words(tp: Any, rule: Rule) -> str:
    """Return what a field must be, as its message says it: the rule's words, else from the type and bounds."""
    if rule.must_be is not None:
        return rule.must_be + rule.note
    base = next(a for a in typing.get_args(tp) or (tp,) if a is not type(None))
    if base is bool:
        return "true or false" + rule.note
    bound = f"{rule.lo}..{rule.hi}" if rule.hi is not None else f">= {rule.lo}"
    return f"{'an integer' if base is int else 'a number'} {bound}{rule.note}"


def _parse_spark(raw: Any, bad: _Bad) -> SparkSettings:
    conf = (raw.get("conf") or {}) if isinstance(raw, Mapping) else {}
    if not isinstance(conf, Mapping) or not all(isinstance(k, str) for k in conf):
        bad("spark.conf", "must be a mapping of Spark property names to values")
        conf = {}
    for k, v in conf.items():
        if isinstance(v, (dict, list)) or v is None:
            bad(f"spark.conf.{k}", f"must be a scalar, got {v!r}")
    good = {k: _conf_str(v) for k, v in conf.items() if not (isinstance(v, (dict, list)) or v is None)}
    return read_section(SparkSettings, raw, "spark", bad, conf=good)


def _approval_above(raw: Any, bad: _Bad) -> str | None:
    """Read ``sweep.approval_above``: ``guard``, a share of the listed objects (0 < x < 1) or a count of keys (>= 1)."""
    if not isinstance(raw, Mapping) or raw.get("approval_above") is None:
        return None
    v = raw["approval_above"]
    if v == "guard":
        return "guard"
    if isinstance(v, int) and not isinstance(v, bool) and v >= 1:
        return str(v)
    if isinstance(v, float) and 0 < v < 1:
        return repr(v)
    bad(
        "sweep.approval_above",
        "must be guard (ask where the blast-radius guard would refuse), a share of the listed objects "
        f"between 0 and 1 (e.g. 0.2) or a whole count of objects >= 1 (e.g. 50000), got {v!r}",
    )
    return None


def _parse_sweep(raw: Any, bad: _Bad) -> SweepSettings:
    sweep = read_section(SweepSettings, raw, "sweep", bad, approval_above=_approval_above(raw, bad))
    if sweep.confirm == "approval" and sweep.approval_above is not None:
        bad(
            "sweep.approval_above",
            "is given with confirm: approval, which already asks for every sweep: keep one of the two",
        )
    problem = uploads_threshold_problem(sweep.abort_uploads_after_days, "sweep.abort_uploads_after_days")
    if problem:  # below lakeFS's expiry of upload addresses: refused, as the run's Param would be
        bad("sweep.abort_uploads_after_days", problem)
        return dataclasses.replace(sweep, abort_uploads_after_days=SweepSettings.abort_uploads_after_days)
    return sweep


def _parse_space(raw: Any, bad: _Bad) -> SpaceSettings:
    return read_section(SpaceSettings, raw, "space", bad)


def _parse_leftovers(raw: Any, bad: _Bad) -> LeftoversSettings:
    return read_section(LeftoversSettings, raw, "leftovers", bad)


def _parse_tasks(raw: Any, bad: _Bad) -> TaskSettings:
    per_task = (raw.get("execution_timeouts") or {}) if isinstance(raw, Mapping) else {}
    if not isinstance(per_task, Mapping):
        bad("tasks.execution_timeouts", "must be a mapping of task id to seconds")
        per_task = {}
    for k in sorted(set(per_task) - set(STEPS), key=str):
        bad("tasks.execution_timeouts", _unknown("task id", k, STEPS), f"tasks.execution_timeouts.{k}")
    settings = read_section(TaskSettings, raw, "tasks", bad)
    good = {}
    for k, v in per_task.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            bad(f"tasks.execution_timeouts.{k}", f"must be an integer >= 1, got {v!r}")
        elif k in STEPS:
            good[k] = v
    return dataclasses.replace(settings, execution_timeouts=good)


def _conf_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
