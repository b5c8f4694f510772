"""
The sections of a repository entry (spark, sweep, tasks, space, notify, clean_run_every), each parsed.

Part of :mod:`lakefs_gc.config` (import from there).
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from lakefs_gc.config.model import (
    POOL_PATTERN,
    RULE,
    ConfigError,
    NotifierSpec,
    NotifySettings,
    Rule,
    SpaceSettings,
    SparkSettings,
    SweepSettings,
    TaskSettings,
)
from lakefs_gc.contract import STEPS, from_wire
from lakefs_gc.contract.wire import value_from_wire
from lakefs_gc.errors import ContractError
from lakefs_gc.gc.flow import CleanRunEvery

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

# How a section's parser names a problem: ConfigError("<where>: field '<field>': <message>")
_Err = Callable[[str, str], ConfigError]
_S = TypeVar("_S", bound="DataclassInstance")

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
    return read_section(CleanRunEvery, raw, "clean_run_every", err, rules=_CLEAN_RUN_EVERY_RULES)


def _check_section(raw: Any, name: str, allowed: frozenset[str], err: _Err) -> None:
    if not isinstance(raw, Mapping):
        raise err(name, "must be a mapping")
    unknown = set(raw) - allowed
    if unknown:
        raise err(name, f"unknown key(s) {_unknown(unknown, allowed)} (allowed: {sorted(allowed)})")


def read_section(
    cls: type[_S], raw: Any, name: str, err: _Err, rules: Mapping[str, Rule] | None = None, **by_hand: Any
) -> _S:
    """
    Read section ``name`` into ``cls`` through the wire codec, each field by its type hint and :class:`Rule`.

    A field of the wrong type or against its rule: ``field '<name>.<field>': must be <words>, got <value>``
    (the first such field, in the class's order). ``rules``: the rules of a class the config does not
    own, by field, instead of its :func:`setting` metadata. ``by_hand``: the fields the section reads
    itself (those without a rule), already read.
    """
    _check_section(raw, name, _names(cls), err)
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
            raise err(f"{name}.{f.name}", f"must be {_words(hints[f.name], rule)}, got {v!r}")
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


def _parse_spark(raw: Any, err: _Err) -> SparkSettings:
    _check_section(raw, "spark", _names(SparkSettings), err)
    conf = raw.get("conf") or {}
    if not isinstance(conf, Mapping) or not all(isinstance(k, str) for k in conf):
        raise err("spark.conf", "must be a mapping of Spark property names to values")
    for k, v in conf.items():
        if isinstance(v, (dict, list)) or v is None:
            raise err(f"spark.conf.{k}", f"must be a scalar, got {v!r}")
    return read_section(SparkSettings, raw, "spark", err, conf={k: _conf_str(v) for k, v in conf.items()})


def _parse_sweep(raw: Any, err: _Err) -> SweepSettings:
    return read_section(SweepSettings, raw, "sweep", err)


def _parse_space(raw: Any, err: _Err) -> SpaceSettings:
    return read_section(SpaceSettings, raw, "space", err)


def _parse_tasks(raw: Any, err: _Err) -> TaskSettings:
    _check_section(raw, "tasks", _names(TaskSettings), err)
    per_task = raw.get("execution_timeouts") or {}
    if not isinstance(per_task, Mapping):
        raise err("tasks.execution_timeouts", "must be a mapping of task id to seconds")
    bad = set(per_task) - set(STEPS)
    if bad:
        raise err("tasks.execution_timeouts", f"unknown task id(s) {sorted(bad)} (tasks: {', '.join(STEPS)})")
    settings = read_section(TaskSettings, raw, "tasks", err)
    for k, v in per_task.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise err(f"tasks.execution_timeouts.{k}", f"must be an integer >= 1, got {v!r}")
    return dataclasses.replace(settings, execution_timeouts=dict(per_task))


def _conf_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
