"""
The ``keep`` section of an entry: retention rules added to lakeFS's, which can only keep more.

Part of :mod:`lakefs_gc.config` (import from there). What each rule keeps: docs/configuration.md;
why none can make the GC delete more: docs/safety.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakefs_gc.config.sections import _Bad, _check_section
from lakefs_gc.contract.keep import BranchKeep, KeepRules, glob_problem

KEEP_FIELDS = frozenset({"tags_days", "branches", "paths"})
FOREVER = "forever"


def _days(raw: Any, bad: _Bad) -> tuple[int | None, bool]:
    """``tags_days``: (days, for ever); a bad value is recorded and read as no tag rule."""
    if raw is None:
        return None, False
    if raw == FOREVER:
        return None, True
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        bad(
            "keep.tags_days",
            f"must be a whole number of days >= 1 or {FOREVER!r} (leave it out to keep no tagged commit "
            f"beyond lakeFS's rules), got {raw!r}",
        )
        return None, False
    return raw, False


def _branches(raw: Any, bad: _Bad) -> tuple[BranchKeep, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        bad("keep.branches", f"must be a list such as [{{pattern: 'release-*', last: 10}}], got {raw!r}")
        return ()
    out: list[BranchKeep] = []
    for i, item in enumerate(raw):
        where = f"keep.branches[{i}]"
        if not isinstance(item, Mapping):
            bad(where, f"must be a mapping such as {{pattern: 'release-*', last: 10}}, got {item!r}")
            continue
        pattern: Any
        last: Any
        ok = _check_section(item, where, frozenset({"pattern", "last"}), bad)
        pattern, last = item.get("pattern"), item.get("last")  # Any, as the file has them
        problem = glob_problem(pattern)
        if problem:
            bad(f"{where}.pattern", problem.replace("a logical path in lakeFS", "a branch id"))
            ok = False
        if isinstance(last, bool) or not isinstance(last, int) or last < 1:
            bad(f"{where}.last", f"must be a whole number of commits >= 1 (1: the HEAD alone), got {last!r}")
            ok = False
        if ok:
            out.append(BranchKeep(pattern=pattern, last=last))
    return tuple(out)


def _paths(raw: Any, bad: _Bad) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        bad("keep.paths", f"must be a list of globs such as ['tables/critical/**'], got {raw!r}")
        return ()
    out = []
    for i, pattern in enumerate(raw):
        problem = glob_problem(pattern)
        if problem:
            bad(f"keep.paths[{i}]", problem)
        else:
            out.append(pattern)
    return tuple(out)


def parse_keep(raw: Any, bad: _Bad) -> KeepRules:
    """
    Parse ``keep: {tags_days: N | forever, branches: [{pattern, last}], paths: [glob, ...]}``.

    Every problem recorded, naming the field and the fix; null or absent: no rule.
    """
    if raw is None or raw == {}:
        return KeepRules()
    if not _check_section(raw, "keep", KEEP_FIELDS, bad):
        return KeepRules()
    days, forever = _days(raw.get("tags_days"), bad)
    return KeepRules(
        tags_days=days,
        tags_forever=forever,
        branches=_branches(raw.get("branches"), bad),
        paths=_paths(raw.get("paths"), bad),
    )
