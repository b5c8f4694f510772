"""lakefs_gc.words: the one helper for counts and possessives."""

from __future__ import annotations

import doctest

import lakefs_gc.words as words
from lakefs_gc.words import plural, possessive


def test_doctests():
    assert doctest.testmod(words).failed == 0


def test_plural_and_possessive_read_right():
    assert plural(1, "object") == "1 object"
    assert plural(1, "day") == "1 day"
    assert plural(2, "entry", "entries") == "2 entries"
    assert plural(1_000_000, "object") == "1,000,000 objects"
    assert possessive("lakeFS") == "lakeFS's"
    assert possessive("branches") == "branches'"
