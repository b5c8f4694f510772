"""Earlier marks as the report layout holds them: their summaries and their Parquet parts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from lakefs_gc.errors import SweepRefused
from lakefs_gc.report.layout import UNIFIED, candidates_dir, deleted_dir, report_dir, summary_key


def read_summary(storage, mark_id: str) -> dict[str, Any] | None:
    """A mark's summary.json, None when there is none; unreadable is :class:`SweepRefused`."""
    key = summary_key(mark_id)
    if not storage.exists(key):
        return None
    try:
        doc = json.loads(storage.get(key))
    except ValueError as e:
        raise SweepRefused(f"mark {mark_id}: {storage.full_uri(key)} is not valid JSON ({e}); nothing was deleted") from None
    if not isinstance(doc, dict):
        raise SweepRefused(f"mark {mark_id}: {storage.full_uri(key)} is not a JSON object; nothing was deleted")
    return doc


def iter_marks(storage) -> Iterator[tuple[str, dict[str, Any] | None, str | None]]:
    """(mark id, summary, problem) of every folder under ``unified/``: the summary when it reads,
    else None and what is wrong with it (never skipped silently)."""
    for prefix in storage.list_prefixes(UNIFIED):
        mark_id = prefix[len(UNIFIED):].rstrip("/")
        if not mark_id:
            continue
        try:
            summary = read_summary(storage, mark_id)
        except SweepRefused as e:
            yield mark_id, None, str(e)
            continue
        yield mark_id, summary, None if summary is not None else "no summary.json"


def iter_sweeps(storage, mark_id: str) -> Iterator[tuple[str, dict[str, Any] | None, str | None]]:
    """(sweep folder, summary, problem) of every sweep-only run of a mark
    (``unified/<mark>/sweeps/<sweep>/summary.json``), read like :func:`read_summary` reads a mark's."""
    base = report_dir(mark_id) + "sweeps/"
    for prefix in storage.list_prefixes(base):
        sweep = prefix[len(base):].rstrip("/")
        key = f"{prefix}summary.json"
        if not sweep or not storage.exists(key):
            continue  # a sweep of a mark_and_sweep run: its summary is the mark's own
        try:
            doc = json.loads(storage.get(key))
        except ValueError as e:
            yield sweep, None, f"{storage.full_uri(key)} is not valid JSON ({e})"
            continue
        yield (sweep, doc, None) if isinstance(doc, dict) else (sweep, None, f"{storage.full_uri(key)} is not a JSON object")


def parquet_parts(storage, prefix: str) -> list[str]:
    return sorted(o.key for o in storage.list(prefix, recursive=True) if o.key.endswith(".parquet"))


def candidate_parts(storage, mark_id: str) -> list[str]:
    """The Parquet parts listing every candidate of a mark (``candidates/``, else ``deleted/``)."""
    return parquet_parts(storage, candidates_dir(mark_id)) or parquet_parts(storage, deleted_dir(mark_id))
