"""
Earlier marks as the report layout holds them: their summaries and their Parquet parts.

A summary is read back as a :class:`~lakefs_gc.report.run_summary.RunSummary` (any version's: the
reports a person reads, ``lakefs-gc report``, the flow's choice of a base), and viewed as a
:class:`MarkSummary`, the fields the GC's decisions read (the sweep-only mark check, delayed
confirmation, a sweep's context).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lakefs_gc.errors import ContractError, SweepRefused
from lakefs_gc.report.layout import (
    UNIFIED,
    candidates_dir,
    deleted_dir,
    safe_name,
    summary_key,
    sweep_summary_key,
    sweeps_dir,
)
from lakefs_gc.report.run_summary import RunSummary
from lakefs_gc.timestamps import parse_iso

if TYPE_CHECKING:
    from lakefs_gc.storage.base import Storage


@dataclass(frozen=True)
class MarkSummary:
    """
    What the GC's decisions read of a mark's summary (lakeFS's fields and ours): a view of its :class:`RunSummary`.

    ``success`` is true only for a JSON ``true``; ``start_time`` is kept as written (``None``
    when absent) and checked by :meth:`started`; ``listed_objects`` is what the blast-radius
    guard compares against (``guard_objects``, else ``listed_objects``); ``to_delete`` is the
    mark's ``deleted/`` list (``candidates`` in summaries older than delayed confirmation).
    """

    run_id: str = ""
    success: bool = False
    mode: str = ""
    start_time: Any = None
    cutoff_time: str = ""
    listed_objects: int = 0
    to_delete: int = 0

    @classmethod
    def of(cls, summary: RunSummary) -> MarkSummary:
        """View a summary; a missing or empty count is 0."""
        s = summary
        listed = s.guard_objects if s.guard_objects is not None else s.listed_objects
        return cls(
            run_id=s.run_id or "",
            success=s.success is True,
            mode=s.mode or "",
            start_time=s.start_time,
            cutoff_time=s.cutoff_time or "",
            listed_objects=listed or 0,
            to_delete=(s.to_delete if s.to_delete is not None else s.candidates) or 0,
        )

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> MarkSummary:
        """
        From a summary.json document.

        A missing or empty count is 0; a count that is not a number (any field of the wrong type)
        raises ``ValueError``.
        """
        try:
            return cls.of(RunSummary.from_doc(doc))
        except ContractError as e:
            raise ValueError(str(e)) from None

    def started(self) -> datetime:
        """Return the mark's start time; ``ValueError`` when it has no valid one."""
        if not isinstance(self.start_time, str):
            raise ValueError(f"no start_time ({self.start_time!r})")
        return parse_iso(self.start_time)


def _load(storage: Storage, key: str) -> RunSummary:
    """Read the summary at ``key``; ``ValueError`` says what is wrong with it (after its URI)."""
    try:
        doc = json.loads(storage.get(key))
    except ValueError as e:
        raise ValueError(f"{storage.full_uri(key)} is not valid JSON ({e})") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{storage.full_uri(key)} is not a JSON object")
    try:
        return RunSummary.from_doc(doc)
    except ContractError as e:
        raise ValueError(f"{storage.full_uri(key)} has a field of the wrong type ({e})") from None


def read_summary(storage: Storage, mark_id: str) -> RunSummary | None:
    """Return a mark's summary, None when there is none; unreadable is :class:`SweepRefused`."""
    key = summary_key(mark_id)
    if not storage.exists(key):
        return None
    try:
        return _load(storage, key)
    except ValueError as e:
        raise SweepRefused(f"mark {mark_id}: {e}; nothing was deleted") from None


def read_mark(storage: Storage, mark_id: str) -> MarkSummary | None:
    """
    Return a mark's summary as :class:`MarkSummary`, None when there is none.

    Unreadable (not JSON, not an object, a count that is not a number or another field of the
    wrong type) is :class:`SweepRefused`.
    """
    summary = read_summary(storage, mark_id)
    return None if summary is None else MarkSummary.of(summary)


def mark_ids(storage: Storage) -> Iterator[str]:
    """Return the id of every folder under ``unified/`` (a mark's, whether its summary reads or not)."""
    for prefix in storage.list_prefixes(UNIFIED):
        if mark_id := prefix[len(UNIFIED) :].rstrip("/"):
            yield mark_id


def iter_marks(storage: Storage) -> Iterator[tuple[str, RunSummary | None, str | None]]:
    """
    (mark id, summary, problem) of every folder under ``unified/``.

    The summary when it reads, else None and what is wrong with it (never skipped silently).
    """
    for mark_id in mark_ids(storage):
        try:
            summary = read_summary(storage, mark_id)
        except SweepRefused as e:
            yield mark_id, None, str(e)
            continue
        yield mark_id, summary, None if summary is not None else "no summary.json"


def newest_listed(storage: Storage, look_at: int = 20) -> int | None:
    """
    Return the objects the newest GC run of the namespace listed (None: no run, or none that reads).

    The newest of the last ``look_at`` mark folders by name, by their summaries' start times.
    """
    marks = sorted(p for p in storage.list_prefixes(UNIFIED) if p[len(UNIFIED) :].rstrip("/"))[-look_at:]
    best: tuple[str, int] | None = None
    for prefix in marks:
        try:
            summary = read_summary(storage, prefix[len(UNIFIED) :].rstrip("/"))
        except SweepRefused:
            continue
        if summary and summary.listed_objects is not None and str(summary.start_time) > (best[0] if best else ""):
            best = (str(summary.start_time), summary.listed_objects)
    return best[1] if best else None


def iter_sweeps(storage: Storage, mark_id: str) -> Iterator[tuple[str, RunSummary | None, str | None]]:
    """
    (sweep folder, summary, problem) of every sweep-only run of a mark.

    Its ``unified/<mark>/sweeps/<sweep>/summary.json``, read like :func:`read_summary` reads a mark's.
    """
    base = sweeps_dir(mark_id)
    for prefix in storage.list_prefixes(base):
        sweep = prefix[len(base) :].rstrip("/")
        key = f"{prefix}summary.json"
        if not sweep or not storage.exists(key):
            continue  # a sweep of a mark_and_sweep run: its summary is the mark's own
        try:
            yield sweep, _load(storage, key), None
        except ValueError as e:
            yield sweep, None, str(e)


@dataclass(frozen=True)
class FoundRun:
    """The GC run :func:`find_run` found: its mark, and the summary of the run it was asked for."""

    mark_id: str
    summary_key: str  # the summary of the mark, or of the sweep-only run that ``run`` named
    summary: RunSummary


def find_run(storage: Storage, run: str) -> FoundRun:
    """
    Return the GC run ``run`` names.

    ``run``: a mark id, or the Airflow run id of a mark or of a sweep-only run (its sweep folder's
    name too). Raises :class:`LookupError` naming where it looked.
    """
    if "/" not in run and run not in (".", ".."):
        summary = read_summary(storage, run)
        if summary is not None:
            return FoundRun(run, summary_key(run), summary)
    for mark_id, s, _ in iter_marks(storage):
        if s is not None and s.airflow_run_id == run:
            return FoundRun(mark_id, summary_key(mark_id), s)
        for sweep, ss, _ in iter_sweeps(storage, mark_id):
            if ss is not None and (ss.airflow_run_id == run or sweep == safe_name(run)):
                return FoundRun(mark_id, sweep_summary_key(mark_id, sweep), ss)
    raise LookupError(
        f"no GC run {run!r} in {storage.full_uri(UNIFIED)} (neither a mark id nor an Airflow run id); "
        f"list the runs with: lakefs-gc report {storage.uri}"
    )


def parquet_parts(storage: Storage, prefix: str) -> list[str]:
    return sorted(o.key for o in storage.list(prefix, recursive=True) if o.key.endswith(".parquet"))


def candidate_parts(storage: Storage, mark_id: str) -> list[str]:
    """Return the Parquet parts listing every candidate of a mark (``candidates/``, else ``deleted/``)."""
    return parquet_parts(storage, candidates_dir(mark_id)) or parquet_parts(storage, deleted_dir(mark_id))
