"""
Undo a sweep: bring back what one GC run deleted, where the store still keeps it.

What a run deleted is in its report: the parts of the mark's ``deleted/`` list that a sweep marked
done, minus that sweep's dead letters. Each store keeps deleted data its own way, and each way is
asked only about those keys, never about a key written again since (each adapter answers for its
store: ``Storage.restore_key``, ``Storage.restorability``):

- ``s3://`` with bucket versioning: the sweep's DeleteObjects left a delete marker on top of the
  version it hid. The marker is removed (DeleteObject with its version id) only when it is the
  key's latest version and was made while the sweep ran; a newer write is latest and is left alone
  (a write racing the restore stays latest: removing a marker below it changes nothing).
- Azure Blob with soft delete: ``undelete`` of a soft-deleted blob deleted while the sweep ran,
  only when no blob of that name exists.
- GCS with soft delete: ``restore`` of the soft-deleted generation deleted while the sweep ran,
  with ``ifGenerationMatch=0`` (GCS refuses it if an object of that name exists).
- ``local://`` with ``quarantine_days``: the sweep moved its files to
  ``sweeps/<sweep>/quarantine/<key>``; a restore links each back (a link never replaces a file)
  and removes the quarantined name. A later sweep purges quarantines whose days have passed.

Every key gets one outcome (:data:`OUTCOMES`, :mod:`lakefs_gc.storage.restoring`) and a detail; the
restore writes them with a summary under ``unified/<mark>/restores/<restore_id>/`` (a dry run writes
nothing). A key an earlier restore of the run brought back (its report says so) is ``already
restored``, by that restore's id, and the store is not asked again. :func:`restorability`
says, at sweep time, whether and until when the store keeps what the sweep deletes: the sweep's
report carries it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from lakefs_gc.errors import LakeFSGCError
from lakefs_gc.report import formats, layout
from lakefs_gc.report.marks import find_run, iter_marks, iter_sweeps, parquet_parts, read_summary
from lakefs_gc.report.run_summary import RunSummary
from lakefs_gc.storage.restoring import (
    ALREADY_RESTORED,
    DELETED_AGAIN,
    NO_VERSION,
    NOT_IN_RUN,
    OUTCOMES,
    PRESENT,
    RESTORED,
    RETENTION_PASSED,
    WOULD_RESTORE,
    WRITTEN_SINCE,
    parse_time,
)
from lakefs_gc.timestamps import iso
from lakefs_gc.words import plural

if TYPE_CHECKING:
    from lakefs_gc.contract import Restorability
    from lakefs_gc.storage.base import Storage

__all__ = [
    "ALREADY_RESTORED",
    "CLOCK_SLACK",
    "DELETED_AGAIN",
    "DONE",
    "NOT_DONE",
    "NOT_IN_RUN",
    "NO_VERSION",
    "OUTCOMES",
    "PRESENT",
    "RESTORED",
    "RETENTION_PASSED",
    "WOULD_RESTORE",
    "WRITTEN_SINCE",
    "RestoreReport",
    "SweptRun",
    "earlier_restores",
    "find_mark",
    "purge_quarantine",
    "restorability",
    "restore_run",
    "start_quarantine",
    "swept_run",
]

log = logging.getLogger(__name__)

# Outcomes that leave the key as the person asked (the others fail the restore: exit status 1, a failed task)
DONE = (RESTORED, WOULD_RESTORE, ALREADY_RESTORED, PRESENT)
NOT_DONE = tuple(o for o in OUTCOMES if o not in DONE)

# Slack around the sweep's own times when matching the store's deletion time (clocks of the worker
# and the store differ; the window is only ever as wide as the sweep plus this).
CLOCK_SLACK = timedelta(minutes=2)


# ---------------------------------------------------------------------------------------------
# At sweep time: does the store keep what the sweep deletes, and until when
# ---------------------------------------------------------------------------------------------


def restorability(storage: Storage, now: datetime, quarantine_days: int = 0, sdir: str | None = None) -> Restorability:
    """
    Say what the store does with the objects a sweep deletes now (read from the store itself).

    ``sdir``: the sweep's folder, whose quarantine record says until when (a store that quarantines:
    ``local://``).
    """
    record = (
        formats.read_quarantine(storage, layout.quarantine_file(sdir))
        if storage.quarantines and quarantine_days and sdir
        else None
    )
    return storage.restorability(now, quarantine_days, record["until"] if record else None)


# ---------------------------------------------------------------------------------------------
# What a run deleted
# ---------------------------------------------------------------------------------------------


@dataclass
class SweptRun:
    """What the sweeps of one mark deleted: the keys, the sweep folders, and when."""

    mark_id: str
    summary: RunSummary
    keys: set[str] = field(default_factory=set)  # deleted (or quarantined) by its sweeps
    sweep_dirs: list[str] = field(default_factory=list)
    start: datetime | None = None  # the window the deletions happened in
    end: datetime | None = None

    def in_window(self, t: datetime | None) -> bool:
        return (
            t is not None
            and self.start is not None
            and self.end is not None
            and self.start - CLOCK_SLACK <= t <= self.end + CLOCK_SLACK
        )

    def window(self) -> tuple[str, str]:
        """Return the sweeps' window as ISO times (:func:`swept_run` sets both ends)."""
        if self.start is None or self.end is None:
            raise LakeFSGCError(f"mark {self.mark_id}: the window of its sweeps is unknown")
        return iso(self.start), iso(self.end)

    def quarantines(self) -> list[tuple[str, str]]:
        """Return (sweep folder, its quarantine folder) of each sweep."""
        return [(sdir, layout.quarantine_dir(sdir)) for sdir in self.sweep_dirs]

    def quarantine_ends(self, storage: Storage) -> list[str]:
        """Return the end of each sweep's quarantine record that reads."""
        found = [formats.read_quarantine(storage, layout.quarantine_file(s)) for s in self.sweep_dirs]
        return [r["until"] for r in found if r]


def find_mark(storage: Storage, run: str) -> str:
    """Return the mark id of ``run``: a mark id, or the Airflow run id of a mark or of a sweep-only run."""
    try:
        return find_run(storage, run).mark_id
    except LookupError as e:
        raise LakeFSGCError(str(e)) from None


def swept_run(storage: Storage, mark_id: str) -> SweptRun:
    """Return the keys the sweeps of ``mark_id`` deleted, and when."""
    summary = read_summary(storage, mark_id) or RunSummary()
    run = SweptRun(mark_id, summary)
    parts = parquet_parts(storage, layout.deleted_dir(mark_id))
    base = layout.sweeps_dir(mark_id)
    times: list[datetime | None] = []
    sweep_summaries = {sweep: doc for sweep, doc, _ in iter_sweeps(storage, mark_id)}  # sweep_only runs
    for sdir in storage.list_prefixes(base):
        done = {
            o.key.rsplit("/", 1)[1].removesuffix(".json"): o
            for o in storage.list(sdir + "done/")
            if o.key.endswith(".json")
        }  # done/<part id>.json (layout.done_marker)
        if not done:
            continue
        run.sweep_dirs.append(sdir)
        dead: set[str] = set()
        for dl in parquet_parts(storage, layout.dead_letters_dir(sdir)):
            dead.update(formats.read_dead_letter_keys(storage, dl))
        for part in parts:
            if layout.part_id(part) in done:
                run.keys.update(a for a in formats.read_addresses(storage, part) if a and a not in dead)
        times += [datetime.fromtimestamp(o.last_modified, UTC) for o in done.values()]
        sweep_summary = sweep_summaries.get(sdir[len(base) :].rstrip("/"))
        if sweep_summary is not None and sweep_summary.start_time is not None:
            times.append(_parse(sweep_summary.start_time))
    if not run.sweep_dirs:
        raise LakeFSGCError(
            f"mark {mark_id} was never swept ({storage.full_uri(base)} has no finished part): nothing to restore"
        )
    start = _parse(summary.start_time) if summary.start_time is not None else None
    run.start = min([t for t in times + [start] if t is not None])
    run.end = max(t for t in times if t is not None)
    return run


_parse = parse_time


# ---------------------------------------------------------------------------------------------
# One restore
# ---------------------------------------------------------------------------------------------


@dataclass
class RestoreReport:
    """One restore: each key's (key, outcome, detail), the counts of the outcomes, and where its report is."""

    mark_id: str
    restore_id: str
    dry_run: bool
    counts: dict[str, int]
    rows: list[tuple[str, str, str]]
    report_uri: str | None  # None: a dry run, which writes nothing
    window: tuple[str, str]
    # each earlier restore's id -> how many of the keys it brought back ("already restored")
    already_by: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {
            "mark_id": self.mark_id,
            "restore_id": self.restore_id,
            "dry_run": self.dry_run,
            "keys": len(self.rows),
            "counts": self.counts,
            **({"already_restored_by": self.already_by} if self.already_by else {}),
            "sweep_window": list(self.window),
            "outcomes": "outcomes.parquet",
        }

    def counts_text(self) -> str:
        """Return the outcomes' counts as a person reads them: ``3 restored, 2 already restored by r1``."""
        parts = []
        for outcome, n in self.counts.items():
            by = f" by {', '.join(sorted(self.already_by))}" if outcome == ALREADY_RESTORED and self.already_by else ""
            parts.append(f"{n:,} {outcome}{by}")
        return ", ".join(parts) or "no keys"

    def line(self) -> str:
        """Return the restore's summary line: ``mark M, 5 keys: 5 restored`` (``dry run:`` first for a dry run)."""
        return f"{'dry run: ' if self.dry_run else ''}mark {self.mark_id}, {plural(len(self.rows), 'key')}: {self.counts_text()}"


def earlier_restores(storage: Storage, mark_id: str) -> dict[str, tuple[str, str, str]]:
    """
    Return every key a finished restore of ``mark_id`` brought back: key -> (restore id, its time, detail).

    A finished restore is one whose ``summary.json`` is there (written after its outcomes); the
    first restore in time that restored a key names it.
    """
    found: list[tuple[str, str, str]] = []  # (time, restore id, folder)
    for rdir in storage.list_prefixes(layout.restores_dir(mark_id)):
        key = rdir + "summary.json"
        if not storage.exists(key) or not storage.exists(rdir + "outcomes.parquet"):
            continue
        try:
            doc = json.loads(storage.get(key))
        except ValueError:
            continue
        if isinstance(doc, dict) and not doc.get("dry_run"):
            rid = doc.get("restore_id") or rdir.rstrip("/").rsplit("/", 1)[-1]
            found.append((str(doc.get("time") or ""), str(rid), rdir))
    by_key: dict[str, tuple[str, str, str]] = {}
    for when, rid, rdir in sorted(found):
        for key, outcome, detail in formats.read_restore_outcomes(storage, rdir + "outcomes.parquet"):
            if outcome == RESTORED and key not in by_key:
                by_key[key] = (rid, when, detail)
    return by_key


def restore_run(
    storage: Storage,
    run: str,
    keys: Iterable[str] | None = None,
    dry_run: bool = False,
    restore_id: str | None = None,
    now: datetime | None = None,
) -> RestoreReport:
    """
    Restore what run ``run`` (a mark id or an Airflow run id) deleted, or only ``keys`` of it.

    Writes the restore's report and returns it; a dry run writes nothing (its report is returned only).
    """
    now = now or datetime.now(UTC)
    mark_id = find_mark(storage, run)
    swept = swept_run(storage, mark_id)
    wanted = sorted(swept.keys) if keys is None else list(dict.fromkeys(_relative(storage, k) for k in keys))
    rid = restore_id or f"restore-{now.strftime('%Y%m%dT%H%M%SZ')}{'-dry-run' if dry_run else ''}"
    earlier = earlier_restores(storage, mark_id)
    rows: list[tuple[str, str, str]] = []
    already_by: dict[str, int] = {}
    for key in wanted:
        if key not in swept.keys:
            rows.append((key, NOT_IN_RUN, f"not in the keys the sweeps of mark {mark_id} deleted"))
        elif key in earlier and earlier[key][0] == rid:  # this restore again (a task run twice): its record stays
            rows.append((key, RESTORED, earlier[key][2]))
        elif key in earlier:  # never asked again: the store would answer "present", or a newer write
            by, when, _ = earlier[key]
            now_there = "the object is there" if storage.exists(key) else "gone again since"
            on = f"{when[:19]}Z" if len(when) >= 19 else "?"  # its summary's time, to the second
            rows.append((key, ALREADY_RESTORED, f"by {by} on {on} ({now_there})"))
            already_by[by] = already_by.get(by, 0) + 1
        else:
            rows.append((key, *storage.restore_key(key, swept, dry_run, now)))
    counts = {o: sum(1 for r in rows if r[1] == o) for o in OUTCOMES}
    counts = {k: v for k, v in counts.items() if v}
    rdir = layout.restore_dir(mark_id, rid)
    uri = None if dry_run else storage.full_uri(rdir + "summary.json")
    report = RestoreReport(mark_id, rid, dry_run, counts, rows, uri, swept.window(), already_by)
    if not dry_run:
        formats.write_restore_outcomes(storage, rdir + "outcomes.parquet", rows)
        storage.put(rdir + "summary.json", json.dumps({**report.summary(), "time": iso(now)}, indent=2).encode())
    log.info("restore %s of mark %s: %s", rid, mark_id, counts)
    return report


def _relative(storage: Storage, key: str) -> str:
    key = key.strip()
    prefix = storage.uri.rstrip("/") + "/"
    return key[len(prefix) :] if key.startswith(prefix) else key


# ---------------------------------------------------------------------------------------------
# Quarantine: written by the sweep, purged by a later one
# ---------------------------------------------------------------------------------------------


def start_quarantine(storage: Storage, sdir: str, days: int, now: datetime) -> str:
    """Record the sweep's quarantine before it moves anything; returns its end (ISO)."""
    until = iso(now + timedelta(days=days))
    existing = formats.read_quarantine(storage, layout.quarantine_file(sdir))
    if existing is None:  # a retried task keeps the first record
        formats.write_quarantine(storage, layout.quarantine_file(sdir), days, iso(now), until)
        return until
    return str(existing["until"])  # a str: read_quarantine checked it


def purge_quarantine(storage: Storage, now: datetime) -> int:
    """
    Delete the quarantined files of every sweep whose quarantine has ended; return the number of files.

    A sweep whose record is missing or unreadable is left alone.
    """
    if not storage.quarantines:
        return 0
    purged = 0
    for mark_id, _, _ in iter_marks(storage):
        for sdir in storage.list_prefixes(layout.sweeps_dir(mark_id)):
            record = formats.read_quarantine(storage, layout.quarantine_file(sdir))
            until = _parse(record["until"]) if record else None
            if until is None or until > now:
                continue
            qdir = layout.quarantine_dir(sdir)
            keys = [o.key for o in storage.list(qdir)]
            for i in range(0, len(keys), 1000):
                storage.delete_batch(keys[i : i + 1000])
            purged += len(keys)
    return purged
