"""
The GC configuration file read and validated, every problem named (file, line, entry, field).

The top level (``defaults``, ``repositories``, ``pools``, ``discover``) is checked here; one entry in
:mod:`~lakefs_gc.config.entry`, its sections in :mod:`~lakefs_gc.config.sections`; the lines come
from :mod:`~lakefs_gc.config.lines`. ``defaults`` is a block of its own: its problems are the
file's (named once, not in every entry), and the entries are checked over the rest of it.

Part of :mod:`lakefs_gc.config` (import from there).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped, unused-ignore]

from lakefs_gc.config.entry import (
    _CONN_ID_RE,
    _ENTRY_FIELDS,
    ENTRY_DEFAULTS,
    Found,
    _check_entry,
    _valid_schedule,
    parse_entry,
)
from lakefs_gc.config.lines import Lines, load_yaml
from lakefs_gc.config.model import (
    ENV_CONFIG,
    ConfigError,
    DiscoverySettings,
    DiscoverySource,
    GCConfig,
    Problem,
    RemovedRepository,
    RepoConfig,
    default_config_path,
)
from lakefs_gc.config.sections import _POOL_RE, NOTIFIER_KINDS, NOTIFIER_TARGETS, _unknown
from lakefs_gc.words import noun, plural, verb

__all__ = [
    "ENTRY_DEFAULTS",
    "ConfigCheck",
    "check_config",
    "NOTIFIER_KINDS",
    "NOTIFIER_TARGETS",
    "load_config",
    "parse_config",
    "parse_entry",
    "raise_entry_errors",
]

_TOP_LEVEL = ("defaults", "repositories", "pools", "discover")
_DISCOVER_FIELDS = frozenset({"sources", "schedule", "state_file"})
_SOURCE_FIELDS = frozenset({"lakefs_conn_id", "include", "exclude", "defaults", "overrides"})
_SECTIONS = frozenset({"spark", "sweep", "tasks", "space", "notify", "clean_run_every", "leftovers", "keep"})


@dataclass(frozen=True)
class ConfigCheck:
    """
    Everything ``lakefs-gc config check`` says of a file: every problem, each with its line.

    ``config``: the entries as ``load_config(strict=False)`` reads them (the good ones, the bad ones'
    messages and problems), checked even when the file has problems of its own; ``file_problems``:
    those (its top level, ``defaults``, ``pools``, ``discover``): with any, ``load_config`` raises them
    and no DAG is built.
    """

    config: GCConfig
    file_problems: tuple[Problem, ...] = ()

    @property
    def problems(self) -> list[Problem]:
        """Every problem of the file, the file's own and its entries', in the order of their lines."""
        return sorted((*self.file_problems, *self.config.problems), key=_by_line)


def load_config(path: str | os.PathLike[str] | None = None, *, strict: bool = True) -> GCConfig:
    """
    Read and validate the config file; raise :class:`ConfigError` naming file, line, entry and field.

    ``strict=False``: a bad entry is left out and its message kept in ``entry_errors`` (errors of the
    whole file still raise, every one of them).
    """
    return _config(check_config(path), strict)


def check_config(path: str | os.PathLike[str] | None = None) -> ConfigCheck:
    """
    Read the config file and find every problem of it (:class:`ConfigCheck`).

    Raise :class:`ConfigError` only when it cannot be read or is not YAML.
    """
    p = Path(path) if path is not None else default_config_path()
    try:
        text = p.read_text()
    except OSError as e:
        raise ConfigError(
            f"{p}: cannot read the GC configuration ({e.strerror or e}); set {ENV_CONFIG} to its path"
        ) from e
    try:
        doc, lines = load_yaml(text)
    except yaml.YAMLError as e:
        # PyYAML names a text it was given "<unicode string>": name the file instead
        raise ConfigError(f"{p}: not valid YAML: {str(e).replace('<unicode string>', str(p))}") from e
    return _check(doc, p, lines)


def raise_entry_errors(path: str | os.PathLike[str] | None = None) -> None:
    """
    Raise one :class:`ConfigError` naming every problem of every bad entry of the config file, if it has any.

    Errors of the whole file are not raised here: ``dags/gc_dags.py`` raises them (one import error
    for them, not two).
    """
    try:
        cfg = load_config(path, strict=False)
    except ConfigError:
        return
    if cfg.entry_errors:
        n = len(cfg.entry_errors)
        raise ConfigError(
            f"{cfg.path}: {plural(n, 'bad repository entry', 'bad repository entries')}, whose GC "
            f"{noun(n, 'DAG')} {verb(n, 'is', 'are')} not built (every other entry's DAG is); fix "
            f"{verb(n, 'it', 'them')} in the file:\n" + "\n".join(cfg.entry_problems)
        )


def parse_config(doc: Any, path: str | os.PathLike[str] = "<config>", *, strict: bool = True) -> GCConfig:
    """
    Validate an already-parsed document (``path`` is only used in messages, which have no line).

    ``strict``: see :func:`load_config`.
    """
    return _config(_check(doc, Path(path), Lines()), strict)


def _config(checked: ConfigCheck, strict: bool) -> GCConfig:
    if checked.file_problems:
        raise ConfigError("\n".join(map(str, checked.file_problems)))
    if strict and checked.config.entry_errors:
        raise ConfigError(checked.config.entry_errors[0])
    return checked.config


class _Whole:
    """The problems of the file as a whole, each at the line of what it names."""

    def __init__(self, p: Path, lines: Lines) -> None:
        self.p, self.lines = p, lines
        self.found: list[Problem] = []

    def __call__(self, container: object, at: str | None, message: str) -> None:
        self.found.append(Problem(self.p, self.lines.find(container, at), message, whole_file=True))


def _check(doc: Any, p: Path, lines: Lines) -> ConfigCheck:
    """Every problem of the document: the file's own (its top level, ``defaults``, ``pools``, ``discover``) and each entry's."""
    whole = _Whole(p, lines)
    if not isinstance(doc, Mapping):
        whole(doc, None, "top level must be a mapping with a 'repositories' list")
        return ConfigCheck(GCConfig(path=p, repositories=()), tuple(whole.found))
    for key in sorted(set(doc) - set(_TOP_LEVEL), key=str):
        whole(doc, str(key), _unknown("top-level key", key, _TOP_LEVEL))
    for at, a, b in _twice(doc, lines, skip="repositories"):
        whole(doc, at, f"key '{at}': {_given_twice(a, b)}")
    defaults = _check_defaults(doc.get("defaults"), doc, whole)
    entries: Any = doc.get("repositories")  # as the file has it: a list past the check below
    if entries is None and doc.get("discover") is not None:
        entries = []
    if not isinstance(entries, list) or not (entries or doc.get("discover") is not None):
        whole(doc, "repositories", "'repositories' must be a non-empty list (or give a 'discover' section)")
        entries = entries if isinstance(entries, list) else []
    pools = _parse_pools(doc.get("pools"), doc, whole)
    discovery = _parse_discover(doc.get("discover"), p, doc, whole)

    repos: list[RepoConfig] = []
    bad: list[list[Problem]] = []  # each bad entry's problems, in the order of their lines

    def bad_entry(container: object, found: list[Found]) -> str:
        bad.append(sorted((Problem(p, lines.find(container, f.at), f.text) for f in found), key=_by_line))
        return "\n".join(map(str, bad[-1]))

    first: dict[str, int] = {}  # repository -> its first entry, good or bad
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            bad_entry(entries, [Found(f"[{i}]", f"repositories[{i}]: each entry must be a mapping")])
            continue
        repo, found = _check_listed_entry(entry, i, defaults, first, lines)
        if repo is None:
            bad_entry(entry, found)
        else:
            repos.append(repo)
    removed: tuple[RemovedRepository, ...] = ()
    refreshed_at = None
    if discovery is not None:
        from lakefs_gc.config.discovered import discovered_entries

        sources = doc["discover"]["sources"]

        def parse_found(entry: Mapping[str, Any], i: int, where: str) -> RepoConfig:
            repo, found = _check_entry(entry, defaults, where)
            if repo is None:
                at = [Found(_source_at(sources[i], str(entry["repository"]), f.at), f.text) for f in found]
                raise ConfigError(bad_entry(sources[i], at))
            return repo

        try:
            found_repos, _, removed, refreshed_at = discovered_entries(
                discovery, {r.repository for r in repos}, parse_found
            )
        except ConfigError as e:  # the refresh's record does not read
            whole(doc["discover"], "state_file", str(e))
        else:
            repos.extend(found_repos)
    config = GCConfig(
        path=p,
        repositories=tuple(repos),
        entry_errors=tuple("\n".join(map(str, ps)) for ps in bad),
        problems=tuple(x for ps in bad for x in ps),
        pools=pools,
        discovery=discovery,
        removed=removed,
        refreshed_at=refreshed_at,
    )
    return ConfigCheck(config, tuple(whole.found))


def _by_line(problem: Problem) -> tuple[bool, int]:
    """In the order of their lines (a stable sort: those of one line as they were found); none last."""
    return problem.line is None, problem.line or 0


def _twice(node: Any, lines: Lines, skip: str | None = None, path: str = "") -> list[tuple[str, int, int]]:
    """Each key given twice in one mapping under ``node``: (its path, its first line, its second), but under ``skip``."""
    out: list[tuple[str, int, int]] = []
    todo: list[tuple[Any, str]] = [(node, path)]
    seen: set[int] = set()  # an alias can make the document hold itself
    while todo:
        at, where = todo.pop()
        if id(at) in seen or not isinstance(at, (dict, list)):
            continue
        seen.add(id(at))
        if isinstance(at, list):
            todo.extend((v, f"{where}[{j}]") for j, v in enumerate(at))
            continue
        out.extend((f"{where}.{k}" if where else str(k), a, b) for k, a, b in lines.twice(at))
        todo.extend((v, f"{where}.{k}" if where else str(k)) for k, v in at.items() if where or k != skip)
    return sorted(out, key=lambda x: x[2])


def _given_twice(a: int, b: int) -> str:
    where = f"on line {a}" if a == b else f"(lines {a} and {b})"
    return f"given twice {where}: YAML keeps the second and drops the first without a word"


def _check_defaults(raw: Any, doc: Mapping[str, Any], whole: _Whole) -> Mapping[str, Any]:
    """
    Check ``defaults`` on its own, every problem a problem of the whole file; return it without them.

    The entries are then checked over what is left, so that no entry repeats a problem of ``defaults``.
    """
    raw = raw or {}
    if not isinstance(raw, Mapping):
        whole(doc, "defaults", "'defaults' must be a mapping")
        return {}
    _, found = _check_entry(raw, {}, "defaults", allowed=_ENTRY_FIELDS - {"repository"}, required=())
    out = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in raw.items()}
    for f in found:
        whole(raw, f.at, f.text)
        top, *rest = re.split(r"[.\[]", f.at or "")
        section = out.get(top)
        if top in _SECTIONS and rest and isinstance(section, dict):
            section.pop(rest[0], None)
        else:
            out.pop(top, None)
    return out


def _check_listed_entry(
    entry: Mapping[str, Any], i: int, defaults: Mapping[str, Any], first: dict[str, int], lines: Lines
) -> tuple[RepoConfig | None, list[Found]]:
    """One entry of ``repositories``: the entry, or None and every problem (a duplicate repository too)."""
    where = f"repositories[{i}]"
    name = entry.get("repository")
    if isinstance(name, str):
        where = f"{where} ({name})"
    repo, found = _check_entry(entry, defaults, where)
    found += [Found(at, f"{where}: field '{at}': {_given_twice(a, b)}") for at, a, b in _twice(entry, lines)]
    if isinstance(name, str) and name in first:
        found.append(
            Found(
                "repository",
                f"{where}: field 'repository': duplicate repository {name!r} (also repositories[{first[name]}])",
            )
        )
    elif isinstance(name, str):
        first[name] = i
    return (None if found else repo), found


def _source_at(source: Any, repo: str, at: str | None) -> str | None:
    """Where a discovered entry's field is under its source: its override, else the source's defaults."""
    top = re.split(r"[.\[]", at or "")[0]
    overrides = source.get("overrides") if isinstance(source, Mapping) else None
    override = overrides.get(repo) if isinstance(overrides, Mapping) else None
    if isinstance(override, Mapping) and top in override:
        return f"overrides.{repo}.{at}"
    defaults = source.get("defaults") if isinstance(source, Mapping) else None
    if isinstance(defaults, Mapping) and top in defaults:
        return f"defaults.{at}"
    return None


def _parse_pools(raw: Any, doc: Mapping[str, Any], whole: _Whole) -> tuple[tuple[str, int], ...]:
    """``pools: {name: slots}``: the Airflow pools the set-up and ``make airflow`` create."""
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        whole(doc, "pools", "'pools' must be a mapping of pool name to its slots, e.g. {lakefs_gc_spark: 2}")
        return ()
    out = []
    for name, slots in raw.items():
        if not isinstance(name, str) or not _POOL_RE.match(name):
            whole(raw, str(name), f"pools: {name!r} is not an Airflow pool name (letters, digits, _ . -)")
        elif isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            whole(raw, name, f"pools: {name}: slots must be an integer >= 1, got {slots!r}")
        else:
            out.append((name, slots))
    return tuple(out)


def _patterns(raw: Any, src: Mapping[str, Any], w: str, fld: str, whole: _Whole, required: bool) -> tuple[str, ...]:
    if raw is None and not required:
        return ()
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(x, str) and x for x in raw):
        whole(
            src,
            fld,
            f"{w}: field '{fld}': must be a non-empty list of repository name patterns "
            f"(shell style: fleet-*, *-prod), got {raw!r}",
        )
        return ()
    return tuple(raw)


def _parse_discover(raw: Any, p: Path, doc: Mapping[str, Any], whole: _Whole) -> DiscoverySettings | None:
    """
    ``discover``: lakeFS connections whose repositories matching a pattern each get a GC DAG.

    Checked here (no network): the refresh (DAG ``lakefs_gc_discover``) lists the repositories and
    records them in ``state_file``; the DAG files read that file.
    """
    if raw is None:
        return None
    before = len(whole.found)
    where = "discover"
    if not isinstance(raw, Mapping):
        whole(doc, "discover", f"{where}: must be a mapping with 'sources' (a list of {{lakefs_conn_id, include}})")
        return None
    for key in sorted(set(raw) - _DISCOVER_FIELDS, key=str):
        whole(raw, str(key), f"{where}: {_unknown('key', key, _DISCOVER_FIELDS)}")
    schedule = raw.get("schedule", DiscoverySettings.schedule)
    if schedule is not None and (not isinstance(schedule, str) or not _valid_schedule(schedule)):
        whole(
            raw,
            "schedule",
            f"{where}: field 'schedule': must be a cron expression, a preset such as @hourly, or null, got {schedule!r}",
        )
    state = raw.get("state_file")
    if state is not None and (not isinstance(state, str) or not state.strip()):
        whole(raw, "state_file", f"{where}: field 'state_file': must be a path, got {state!r}")
    state_path = Path(state) if isinstance(state, str) and state.strip() else p.with_name(p.stem + ".discovered.json")
    if not state_path.is_absolute():
        state_path = p.parent / state_path
    sources_raw = raw.get("sources")
    if not isinstance(sources_raw, list) or not sources_raw:
        whole(
            raw,
            "sources",
            f"{where}: field 'sources': must be a non-empty list of {{lakefs_conn_id, include, "
            f"exclude, defaults, overrides}}",
        )
        return None
    sources = [_parse_source(src, f"{where}.sources[{i}]", sources_raw, i, whole) for i, src in enumerate(sources_raw)]
    if len(whole.found) > before:  # its entries are not looked for
        return None
    return DiscoverySettings(
        sources=tuple(s for s in sources if s is not None), schedule=schedule, state_file=state_path
    )


def _parse_source(src: Any, w: str, sources: list[Any], i: int, whole: _Whole) -> DiscoverySource | None:
    """One ``discover.sources`` item; None when it is not a mapping."""
    if not isinstance(src, Mapping):
        whole(sources, f"[{i}]", f"{w}: must be a mapping")
        return None
    for key in sorted(set(src) - _SOURCE_FIELDS, key=str):
        whole(src, str(key), f"{w}: {_unknown('key', key, _SOURCE_FIELDS)}")
    conn = src.get("lakefs_conn_id", ENTRY_DEFAULTS["lakefs_conn_id"])
    if not isinstance(conn, str) or not _CONN_ID_RE.match(conn):
        whole(src, "lakefs_conn_id", f"{w}: field 'lakefs_conn_id': must be an Airflow connection id, got {conn!r}")
    include = _patterns(src.get("include"), src, w, "include", whole, required=True)
    exclude = _patterns(src.get("exclude"), src, w, "exclude", whole, required=False)
    allowed = _ENTRY_FIELDS - {"repository", "lakefs_conn_id"}
    defaults = src.get("defaults") or {}
    if not isinstance(defaults, Mapping):
        whole(src, "defaults", f"{w}: field 'defaults': must be a mapping of entry fields")
        defaults = {}
    for key in sorted(set(defaults) - allowed, key=str):
        whole(
            defaults,
            str(key),
            f"{w}: defaults: {_unknown('field', key, allowed)} (not repository or lakefs_conn_id: the source sets them)",
        )
    overrides = src.get("overrides") or {}
    if not isinstance(overrides, Mapping) or not all(isinstance(v, Mapping) for v in overrides.values()):
        whole(src, "overrides", f"{w}: field 'overrides': must map a repository id to its entry fields")
        overrides = {}
    for repo, fields in overrides.items():
        for key in sorted(set(fields) - allowed, key=str):
            whole(fields, str(key), f"{w}: overrides: {repo}: {_unknown('field', key, allowed)}")
    return DiscoverySource(
        lakefs_conn_id=str(conn),
        include=include,
        exclude=exclude,
        defaults=tuple(defaults.items()),
        overrides=tuple((str(k), tuple(v.items())) for k, v in overrides.items()),
    )
