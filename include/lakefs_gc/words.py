"""
Counts and names in the words a person reads: one helper for plurals and possessives.

>>> plural(1, "object"), plural(2, "object"), plural(0, "day"), plural(1_200, "entry", "entries")
('1 object', '2 objects', '0 days', '1,200 entries')
>>> possessive("recent"), possessive("Airflow's"), possessive("pools"), possessive("class")
("recent's", "Airflow's", "pools'", "class's")
>>> noun(1, "DAG"), verb(1, "is", "are"), verb(3, "is", "are")
('DAG', 'is', 'are')
"""

from __future__ import annotations

__all__ = ["noun", "plural", "possessive", "verb"]


def noun(n: float, singular: str, many: str | None = None) -> str:
    """``singular`` for exactly one, else ``many`` (default: ``singular`` + "s")."""
    return singular if n == 1 else (many if many is not None else singular + "s")


def plural(n: int, singular: str, many: str | None = None) -> str:
    """``n`` with thousands separators and the noun in the number it takes: "1 object", "2 objects"."""
    return f"{n:,} {noun(n, singular, many)}"


def verb(n: int, one: str, many: str) -> str:
    """Return the verb that agrees with ``n`` subjects: ``verb(n, "is", "are")``."""
    return one if n == 1 else many


def possessive(name: str) -> str:
    """
    ``name``'s, the way English writes it: "pools'" after a plural "s", unchanged when it already is one.

    A quoted name reads badly with it (``'recent''s``): write ``f"the rule of branch {name!r}"`` for a
    quoted name instead; this helper is for bare words.
    """
    if name.endswith("'s") or name.endswith("s'"):
        return name
    return name + ("'" if name.endswith("s") and not name.endswith("ss") else "'s")
