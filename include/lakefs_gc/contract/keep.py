"""
The keep rules: retention a repository adds to lakeFS's own, which can only keep more.

``keep.tags_days``: every tagged commit created within N days (``forever``: every tagged commit);
``keep.branches``: the last N commits (first-parent) of every branch whose id matches a glob;
``keep.paths``: globs on the logical path in lakeFS: an object ever committed at a matching path
is never collected. The first two add commits to the ones the run keeps; the third adds the
addresses found at matching paths in every range of the namespace (lakefs_gc.gc.keep_rules).

Part of :mod:`lakefs_gc.contract` (import from there).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class BranchKeep:
    """Keep the last ``last`` commits (HEAD included, first parents) of every branch matching ``pattern``."""

    pattern: str
    last: int


@dataclass(frozen=True)
class KeepRules:
    """A repository's keep rules (none by default: lakeFS's rules alone)."""

    tags_days: int | None = None  # tagged commits created within this many days; None: no tag rule
    tags_forever: bool = False  # every tagged commit
    branches: tuple[BranchKeep, ...] = ()
    paths: tuple[str, ...] = ()  # globs on the logical path

    @property
    def active(self) -> bool:
        return self.tags_days is not None or self.tags_forever or bool(self.branches) or bool(self.paths)

    def tags_label(self) -> str:
        """Return the tag rule as the report and ``explain`` name it."""
        return "tags_days: forever" if self.tags_forever else f"tags_days: {self.tags_days}"


@dataclass(frozen=True)
class KeptByRule:
    """
    What one keep rule kept in a run (list_committed), by its name (:meth:`KeepRules.tags_label`, ...).

    A commit rule: the commits it names and, of those, the ones lakeFS's rules do not keep
    (``added``); the path rule: the tables read for it and the addresses found at its paths.
    """

    rule: str
    commits: int = 0
    added: int = 0
    tables: int = 0
    addresses: int = 0

    def text(self) -> str:
        """Return what the rule kept, as the report says it: ``tags_days: 30: 4 commits (2 more than lakeFS's rules keep)``."""
        from lakefs_gc.words import plural

        if self.rule.startswith("paths "):
            return (
                f"{self.rule}: {plural(self.addresses, 'address', 'addresses')} at its paths "
                f"(in {plural(self.tables, 'table')} of the history read for it)"
            )
        return f"{self.rule}: {plural(self.commits, 'commit')} ({self.added:,} more than lakeFS's rules keep)"


def branch_label(rule: BranchKeep) -> str:
    """Return a branch rule as the report and ``explain`` name it."""
    return f"branches {rule.pattern!r} (last {rule.last})"


def paths_label(patterns: Iterable[str]) -> str:
    """Return the path rule as the report and ``explain`` name it."""
    return "paths " + ", ".join(repr(p) for p in patterns)


def glob_problem(pattern: object) -> str | None:
    """Return what is wrong with a glob (None: good), in words that say how to fix it."""
    if not isinstance(pattern, str) or not pattern:
        return f"must be a non-empty glob such as 'tables/critical/**', got {pattern!r}"
    if pattern.startswith("/"):
        return f"a logical path in lakeFS has no leading '/': write {pattern.lstrip('/')!r}, got {pattern!r}"
    try:
        _regex(pattern)
    except ValueError as e:
        return f"{e}, got {pattern!r}"
    return None


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    """
    Return ``pattern`` as a regular expression matching whole paths.

    ``*`` and ``?``: any characters / one character but ``/``; ``**``: anything, ``/`` too
    (``**/``: any folders, none too); ``[abc]``, ``[!abc]``: one character of a class. An
    unclosed ``[`` is refused (ValueError), not taken literally.
    """
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = i + 1 + (pattern[i + 1 : i + 2] == "!")
            j = pattern.find("]", j + 1)  # a ']' first in the class is one of its characters
            if j < 0:
                raise ValueError("an unclosed '[' (write '[[]' for a literal '[')")
            body = pattern[i + 1 : j]
            neg = body.startswith("!")
            body = body[1:] if neg else body
            body = body.replace("\\", "\\\\").replace("^", "\\^")
            out.append("[" + ("^/" if neg else "") + body + "]")  # a negated class never matches '/'

            i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def matcher(patterns: Iterable[str]) -> Callable[[str], bool]:
    """Return whether a path (a branch id) matches any of ``patterns`` (checked by :func:`glob_problem`)."""
    regexes = [_regex(p) for p in patterns]
    return lambda path: any(r.fullmatch(path) for r in regexes)
