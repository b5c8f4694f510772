"""
The GC configuration file read and validated, every problem named (file, entry, field).

The top level (``defaults``, ``repositories``, ``pools``, ``discover``) is checked here; one entry in
:mod:`~lakefs_gc.config.entry`, its sections in :mod:`~lakefs_gc.config.sections`.

Part of :mod:`lakefs_gc.config` (import from there).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped, unused-ignore]

from lakefs_gc.config.entry import (
    _CONN_ID_RE,
    _ENTRY_FIELDS,
    ENTRY_DEFAULTS,
    _parse_entry,
    _valid_schedule,
    parse_entry,
)
from lakefs_gc.config.model import (
    ENV_CONFIG,
    ConfigError,
    DiscoverySettings,
    DiscoverySource,
    GCConfig,
    RemovedRepository,
    RepoConfig,
    default_config_path,
)
from lakefs_gc.config.sections import _POOL_RE, NOTIFIER_KINDS, NOTIFIER_TARGETS, _unknown

__all__ = [
    "ENTRY_DEFAULTS",
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
        raise ConfigError(
            f"{p}: cannot read the GC configuration ({e.strerror or e}); set {ENV_CONFIG} to its path"
        ) from e
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        # PyYAML names a text it was given "<unicode string>": name the file instead
        raise ConfigError(f"{p}: not valid YAML: {str(e).replace('<unicode string>', str(p))}") from e
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
        raise ConfigError(
            f"{cfg.path}: {n} bad repository entr{'y' if n == 1 else 'ies'}, whose GC DAG "
            f"{'is' if n == 1 else 'are'} not built (every other entry's DAG is); fix "
            f"{'it' if n == 1 else 'them'} in the file:\n" + "\n".join(cfg.entry_errors)
        )


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
        problems.append(
            f"{p}: unknown top-level key(s) {_unknown(unknown, _TOP_LEVEL)} (allowed: {', '.join(_TOP_LEVEL)})"
        )
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
            discovery, {r.repository for r in repos}, lambda entry, where: _parse_entry(entry, defaults, where), p
        )
        if found_errors and strict:
            raise ConfigError(found_errors[0])
        repos.extend(found)
        errors.extend(found_errors)
    return GCConfig(
        path=p,
        repositories=tuple(repos),
        entry_errors=tuple(errors),
        pools=pools,
        discovery=discovery,
        removed=removed,
        refreshed_at=refreshed_at,
    )


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
        problems.append(
            f"{where}: field '{fld}': must be a non-empty list of repository name patterns "
            f"(shell style: fleet-*, *-prod), got {raw!r}"
        )
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
        problems.append(
            f"{where}: unknown key(s) {_unknown(unknown, _DISCOVER_FIELDS)} (allowed: {sorted(_DISCOVER_FIELDS)})"
        )
    schedule = raw.get("schedule", DiscoverySettings.schedule)
    if schedule is not None and (not isinstance(schedule, str) or not _valid_schedule(schedule)):
        problems.append(
            f"{where}: field 'schedule': must be a cron expression, a preset such as @hourly, or null, got {schedule!r}"
        )
    state = raw.get("state_file")
    if state is not None and (not isinstance(state, str) or not state.strip()):
        problems.append(f"{where}: field 'state_file': must be a path, got {state!r}")
    state_path = Path(state) if state else p.with_name(p.stem + ".discovered.json")
    if not state_path.is_absolute():
        state_path = p.parent / state_path
    sources_raw = raw.get("sources")
    if not isinstance(sources_raw, list) or not sources_raw:
        problems.append(
            f"{where}: field 'sources': must be a non-empty list of {{lakefs_conn_id, include, "
            f"exclude, defaults, overrides}}"
        )
        return None
    sources = []
    for i, src in enumerate(sources_raw):
        w = f"{where}.sources[{i}]"
        if not isinstance(src, Mapping):
            problems.append(f"{w}: must be a mapping")
            continue
        unknown = set(src) - _SOURCE_FIELDS
        if unknown:
            problems.append(
                f"{w}: unknown key(s) {_unknown(unknown, _SOURCE_FIELDS)} (allowed: {sorted(_SOURCE_FIELDS)})"
            )
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
            problems.append(
                f"{w}: defaults: unknown field(s) {_unknown(bad, _ENTRY_FIELDS)} (not repository or "
                "lakefs_conn_id: the source sets them)"
            )
        overrides = src.get("overrides") or {}
        if not isinstance(overrides, Mapping) or not all(isinstance(v, Mapping) for v in overrides.values()):
            problems.append(f"{w}: field 'overrides': must map a repository id to its entry fields")
            overrides = {}
        for repo, fields in overrides.items():
            bad = set(fields) - (_ENTRY_FIELDS - {"repository", "lakefs_conn_id"})
            if bad:
                problems.append(f"{w}: overrides: {repo}: unknown field(s) {_unknown(bad, _ENTRY_FIELDS)}")
        sources.append(
            DiscoverySource(
                lakefs_conn_id=str(conn),
                include=include,
                exclude=exclude,
                defaults=tuple(defaults.items()),
                overrides=tuple((str(k), tuple(v.items())) for k, v in overrides.items()),
            )
        )
    return DiscoverySettings(sources=tuple(sources), schedule=schedule, state_file=state_path)


def _parse_listed_entry(entry: Any, i: int, defaults: Mapping[str, Any], p: Path, seen: dict[str, int]) -> RepoConfig:
    where = f"{p}: repositories[{i}]"
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where}: each entry must be a mapping")
    name = entry.get("repository")
    if isinstance(name, str):
        where = f"{where} ({name})"
    repo = _parse_entry(entry, defaults, where)
    if repo.repository in seen:
        raise ConfigError(
            f"{where}: field 'repository': duplicate repository "
            f"{repo.repository!r} (also repositories[{seen[repo.repository]}])"
        )
    return repo
