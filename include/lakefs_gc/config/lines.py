"""
Where each part of the config file is: the line of every mapping key and list item, for messages.

:func:`load_yaml` reads the file as ``yaml.safe_load`` does (the same values: PyYAML's safe loader
with its own constructors, which only note the marks of the nodes they build) and returns a
:class:`Lines` beside the document; :meth:`Lines.find` turns a field path of a message
(``spark.driver_memory``, ``notify.on_failure[0].slack``) into the line of that field, e.g. for
``gc.yaml:7: repositories[1] (my-repo): field 'spark.driver_memory': ...``.

Part of :mod:`lakefs_gc.config` (import from there).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import yaml  # type: ignore[import-untyped, unused-ignore]

__all__ = ["Lines", "load_yaml"]

_PART = re.compile(r"\[(\d+)\]")
_MERGE = "tag:yaml.org,2002:merge"  # the key << (its mapping is merged into the one holding it)


class Lines:
    """The 1-based line of each mapping and list of one document, of each of its keys and of each of its items."""

    def __init__(self) -> None:
        self._at: dict[int, tuple[int, dict[Any, int] | list[int]]] = {}
        self._twice: dict[int, list[tuple[Any, int, int]]] = {}
        self._kept: list[object] = []  # the containers noted: alive while this is, so their ids stay theirs

    def note(self, container: object, line: int, parts: dict[Any, int] | list[int]) -> None:
        self._kept.append(container)
        self._at[id(container)] = (line, parts)

    def note_twice(self, mapping: object, key: Any, first: int, second: int) -> None:
        self._twice.setdefault(id(mapping), []).append((key, first, second))

    def of(self, container: object) -> int | None:
        """Return the line where ``container`` (a mapping or list of the document) starts; None if it is not one."""
        at = self._at.get(id(container))
        return at[0] if at else None

    def twice(self, mapping: object) -> list[tuple[Any, int, int]]:
        """Each key ``mapping`` has twice in the file: (key, its first line, its second line); YAML keeps the second."""
        return list(self._twice.get(id(mapping), ()))

    def find(self, container: object, path: str | None) -> int | None:
        """
        Return the line of ``path`` (dotted keys and ``[i]`` items) under ``container``.

        As deep as the document has it: a key it lacks gives its parent's line; None when
        ``container`` is not a part of the document. A key holding dots (``spark.conf``'s
        ``spark.sql.shuffle.partitions``) is found whole.
        """
        line = self.of(container)
        if line is None or not path:
            return line
        parts = [p for p in _PART.sub(r".[\1]", path).split(".") if p]
        node: Any = container
        i = 0
        while i < len(parts):
            at = self._at.get(id(node))
            if at is None:
                break
            if isinstance(node, list) and isinstance(at[1], list):
                m = _PART.fullmatch(parts[i])
                if not m or int(m.group(1)) >= len(node):
                    break
                line, node, i = at[1][int(m.group(1))], node[int(m.group(1))], i + 1
                continue
            if not isinstance(node, dict) or not isinstance(at[1], dict):
                break
            keys = at[1]
            for j in range(len(parts), i, -1):  # the longest run of parts that is one key
                key = ".".join(parts[i:j])
                if key in keys and key in node:
                    line, node, i = keys[key], node[key], j
                    break
            else:
                break
        return line


class _Loader(yaml.SafeLoader):  # type: ignore[misc, unused-ignore]
    lines: Lines


def _mapping(loader: _Loader, node: yaml.MappingNode) -> Iterator[dict[Any, Any]]:
    data: dict[Any, Any] = {}
    yield data
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:  # before the merge keys (<<) are flattened into it
        if key_node.tag == _MERGE:
            continue
        key = loader.construct_object(key_node)
        if isinstance(key, (str, int, float, bool)) or key is None:
            if key in seen:
                loader.lines.note_twice(data, key, seen[key], key_node.start_mark.line + 1)
            seen[key] = key_node.start_mark.line + 1
    data.update(loader.construct_mapping(node))  # what SafeLoader's mapping constructor does
    keys: dict[Any, int] = {}
    for key_node, _ in node.value:  # constructed above: the loader returns the same object
        key = loader.construct_object(key_node)
        if isinstance(key, (str, int, float, bool)) or key is None:
            keys[key] = key_node.start_mark.line + 1
    keys.update(seen)  # the mapping's own keys over those merged into it
    loader.lines.note(data, node.start_mark.line + 1, keys)


def _sequence(loader: _Loader, node: yaml.SequenceNode) -> Iterator[list[Any]]:
    data: list[Any] = []
    yield data
    data.extend(loader.construct_sequence(node))  # what SafeLoader's sequence constructor does
    loader.lines.note(data, node.start_mark.line + 1, [item.start_mark.line + 1 for item in node.value])


_Loader.add_constructor("tag:yaml.org,2002:map", _mapping)
_Loader.add_constructor("tag:yaml.org,2002:seq", _sequence)


def load_yaml(text: str) -> tuple[Any, Lines]:
    """
    Return ``yaml.safe_load(text)`` and the lines of its mappings and lists.

    Raises ``yaml.YAMLError`` as ``safe_load`` does.
    """
    loader = _Loader(text)
    loader.lines = Lines()
    try:
        return loader.get_single_data(), loader.lines
    finally:
        loader.dispose()
