"""
The GC's own leftovers expire: old marks (with their reports, sweeps, restores and quarantine) and run work folders.

Which leftover goes is decided by pure functions over what the store holds, each kept one with its
reason, checked in this order (the first that holds is the one reported):

- a mark of this run (written, or swept by a sweep_only run);
- ``the base of incremental runs``: the newest successful marking run, this run's own state and
  every earlier mark those states read (the chain since their clean run);
- ``confirms later runs`` (delayed confirmation): the mark a run starting now would confirm its
  candidates with, and every newer one;
- ``one of the newest N`` of this GC's marks, and marks ``within retention`` (``keep_marks_days``);
- past those, what the store is asked about: ``sweep pending`` (a successful mark never swept, or
  with dead letters, younger than ``mark_max_age_seconds``: a sweep_only run may still sweep it) and
  the ``undo window`` (its sweep deleted keys the store still keeps: the sweep's ``restorable``
  until, its quarantine's until; kept while the end is unknown or there is none).

A folder under ``unified/`` whose summary does not read, or is not this GC's (lakeFS's own GC
writes there too), is never removed. A run's work folder (``<work_dir>/<repository>/<run>/``, a
local folder only) goes once its newest file is older than ``keep_work_days``. Quarantined files of
a sweep whose days have passed are purged by the next sweep, as before (``sweep.quarantine_days``).
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from lakefs_gc.contract import Restorability
from lakefs_gc.gc.confirmation import confirming_mark
from lakefs_gc.report import formats, layout
from lakefs_gc.report.marks import iter_marks, iter_sweeps, parquet_parts
from lakefs_gc.storage.restoring import parse_time
from lakefs_gc.words import plural

if TYPE_CHECKING:
    from lakefs_gc.contract import RunSettings, StepInputs
    from lakefs_gc.report.run_summary import RunSummary
    from lakefs_gc.storage.base import Storage

log = logging.getLogger(__name__)

THIS_RUN = "this run's own"
BASE = "the base of incremental runs"
CONFIRMS = "confirms later runs' candidates (delayed confirmation)"
NEWEST = "one of the newest {n}"
WITHIN = "within retention"
PENDING = "sweep pending"
UNREADABLE = "its summary does not read"
NOT_OURS = "not this GC's (no summary of this GC: lakeFS's own GC, or a mark that never started)"
# a run's work folder is named by its Airflow run id (layout.safe_name): manual__…, scheduled__…
_RUN_FOLDER = re.compile(r"^[a-z_]+__[A-Za-z0-9._-]+$")
_REFERENCED = re.compile(r"_lakefs/retention/gc/(?:unified|uncommitted)/([^/]+)/")


@dataclass(frozen=True)
class Retention:
    """How long the leftovers stay (the run's Params ``keep_*``), and the settings that make a mark still needed."""

    marks_days: int = 90
    keep_runs: int = 10
    work_days: int = 7
    mark_max_age_seconds: int = 7 * 86400  # a sweep_only run refuses older marks: no sweep is pending past it
    confirm_after_seconds: int = 0

    @classmethod
    def of(cls, s: RunSettings) -> Retention:
        return cls(
            s.keep_marks_days, s.keep_marks_runs, s.keep_work_days, s.mark_max_age_seconds, s.confirm_after_seconds
        )


@dataclass(frozen=True)
class SweepFacts:
    """What the store says of a mark's sweeps: whether one deleted anything, dead letters, and how long the store keeps it."""

    swept: bool = False  # a sweep finished at least one part (a done marker; a dry run writes none)
    dead_letters: bool = False  # keys a later sweep of the mark retries
    kept_by_store: tuple[Restorability, ...] = ()  # each sweep's record of what the store keeps


@dataclass(frozen=True)
class Verdict:
    """One leftover: a mark or a run's work folder, kept (``keep``: why) or removed (``keep`` None)."""

    kind: str  # mark | work
    name: str
    keep: str | None


@dataclass
class Outcome:
    """What the expiry did (a dry run: would do), for the run's report."""

    dry_run: bool = False
    marks: int = 0  # marks removed
    work: int = 0  # run work folders removed
    objects: int = 0
    bytes: int = 0
    kept: dict[tuple[str, str], int] = field(default_factory=dict)  # (mark | work folder, why) -> count
    problems: list[str] = field(default_factory=list)

    def kept_lines(self) -> tuple[str, ...]:
        """``2 marks: the base of incremental runs``, … (the most first)."""
        ranked = sorted(self.kept.items(), key=lambda kv: (-kv[1], kv[0]))
        return tuple(f"{plural(n, kind)}: {why}" for (kind, why), n in ranked)


# ---------------------------------------------------------------------------------------------
# The decision (pure)
# ---------------------------------------------------------------------------------------------


def _ours(s: RunSummary) -> bool:
    """Whether this GC wrote the summary (lakeFS's own GC writes only its own fields, never these)."""
    return s.repository is not None or s.airflow_run_id is not None or s.note is not None


def _referenced(summary: RunSummary | None) -> set[str]:
    """Return the marks an incremental run on ``summary`` reads: its own and those its state names."""
    state = summary.incremental_state if summary is not None else None
    if state is None:
        return set()
    dirs = [d.dir for d in (*(state.committed_dirs or ()), *(state.identity_dirs or ()))]
    dirs += [state.uncommitted_dir.dir if state.uncommitted_dir else "", state.read_file or ""]
    found = {m.group(1) for d in dirs for m in _REFERENCED.finditer(d)}
    return found | ({state.clean_run_id} if state.clean_run_id else set())


def _started(summary: RunSummary | None) -> datetime | None:
    return parse_time(summary.start_time) if summary is not None else None


def first_pass(
    marks: Sequence[tuple[str, RunSummary | None, str | None]],
    retention: Retention,
    now: datetime,
    this_run: Iterable[str] = (),
    this_summary: RunSummary | None = None,
) -> dict[str, str | None]:
    """
    Return, per mark folder, why its summary alone keeps it, or None: past that, the store is asked (:func:`second_pass`).

    ``this_run``: the marks this run writes or sweeps; ``this_summary``: the summary this run is
    about to write (its state names the chain the next incremental run reads).
    """
    out: dict[str, str | None] = {}
    mine = set(this_run)
    successful = [
        (t, m, s)
        for m, s, _ in marks
        if s is not None and s.success is True and s.mode != "sweep_only" and (t := _started(s)) and t < now
    ]
    newest_base = max(successful, key=lambda x: x[0], default=None)
    base = _referenced(this_summary) | (({newest_base[1]} | _referenced(newest_base[2])) if newest_base else set())
    confirm_from: datetime | None = None
    if retention.confirm_after_seconds > 0:
        found, _ = confirming_mark(marks, now - timedelta(seconds=retention.confirm_after_seconds))
        confirm_from = parse_time(str(found[1].start_time)) if found else None
    ours = sorted(
        ((t, m) for m, s, _ in marks if s is not None and _ours(s) and (t := _started(s))),
        reverse=True,
    )
    newest = {m for _, m in ours[: retention.keep_runs]}
    for mark_id, summary, problem in marks:
        started = _started(summary)
        if mark_id in mine:
            out[mark_id] = THIS_RUN
        elif problem is not None and summary is None and problem != "no summary.json":
            out[mark_id] = UNREADABLE
        elif summary is None or not _ours(summary):
            out[mark_id] = NOT_OURS
        elif started is None:
            out[mark_id] = f"{UNREADABLE} (no start_time)"
        elif mark_id in base:
            out[mark_id] = BASE
        elif confirm_from is not None and summary.success is True and started >= confirm_from:
            out[mark_id] = CONFIRMS
        elif mark_id in newest:
            out[mark_id] = NEWEST.format(n=retention.keep_runs)
        elif now - started < timedelta(days=retention.marks_days):
            out[mark_id] = WITHIN
        else:
            out[mark_id] = None
    return out


def second_pass(summary: RunSummary, facts: SweepFacts, retention: Retention, now: datetime) -> str | None:
    """Return why a mark past its retention is still needed (a sweep pending, an undo window), or None: it goes."""
    started = _started(summary)
    young = started is not None and now - started < timedelta(seconds=retention.mark_max_age_seconds)
    if summary.success is True and summary.mode != "sweep_only" and young and (not facts.swept or facts.dead_letters):
        return PENDING
    if not facts.swept:
        return None
    ends: list[datetime] = []
    for r in facts.kept_by_store:
        if r.restorable is None:
            return f"undo window unknown ({r.how}: the store would not say)"
        if r.restorable and r.until is None:
            return f"undo window with no end ({r.how})"
        end = parse_time(r.until) if r.restorable else None
        if end is not None:
            ends.append(end)
    latest = max(ends, default=None)
    return f"undo window until {latest.strftime('%Y-%m-%d')}" if latest is not None and latest > now else None


def work_verdicts(
    folders: Iterable[tuple[str, datetime]], retention: Retention, now: datetime, this_run: str
) -> list[Verdict]:
    """Return a verdict per run work folder (name, its newest file's time): gone past ``work_days``."""
    out = []
    for name, newest in folders:
        if name == this_run:
            out.append(Verdict("work", name, THIS_RUN))
        elif now - newest < timedelta(days=retention.work_days):
            out.append(Verdict("work", name, WITHIN))
        else:
            out.append(Verdict("work", name, None))
    return out


# ---------------------------------------------------------------------------------------------
# What the store holds, and the removal
# ---------------------------------------------------------------------------------------------


def sweep_facts(storage: Storage, mark_id: str, summary: RunSummary) -> SweepFacts:
    """Read a mark's sweeps: done markers, dead letters, and each sweep's record of what the store keeps."""
    base = layout.sweeps_dir(mark_id)
    sdirs = list(storage.list_prefixes(base))
    done = [o for sdir in sdirs for o in storage.list(sdir + "done/") if o.key.endswith(".json")]
    dead = any(parquet_parts(storage, layout.dead_letters_dir(sdir)) for sdir in sdirs)
    kept: list[Restorability] = []
    for sdir in sdirs:
        record = formats.read_quarantine(storage, layout.quarantine_file(sdir))
        if record is not None:
            kept.append(Restorability("local quarantine", True, str(record["until"])))
    sweep_only = [s for _, s, _ in iter_sweeps(storage, mark_id) if s is not None and not s.dry_run]
    kept += [s.restorable for s in [summary, *sweep_only] if s.restorable is not None and not s.dry_run]
    if done and not kept:  # a sweep of a version that recorded nothing: what the store does with deletes now
        last = datetime.fromtimestamp(max(o.last_modified for o in done), UTC)
        try:
            kept.append(storage.restorability(last))
        except Exception as exc:
            kept.append(Restorability("unknown", None, None, f"could not be read: {exc}"))
    return SweepFacts(bool(done), dead, tuple(kept))


def _remove_keys(storage: Storage, prefix: str, out: Outcome) -> None:
    found = list(storage.list(prefix, recursive=True))
    out.objects += len(found)
    out.bytes += sum(o.size for o in found)
    if out.dry_run:
        return
    keys = [o.key for o in found]
    size = max(1, storage.max_delete_batch)
    for i in range(0, len(keys), size):
        failed = [
            f for f in storage.delete_batch(keys[i : i + size]) if f[1] not in ("NoSuchKey", "BlobNotFound", "404")
        ]
        if failed:
            out.problems.append(
                f"{plural(len(failed), 'key')} under {storage.full_uri(prefix)} not removed ({failed[0][1]})"
            )


def _work_folders(root: str) -> list[tuple[str, datetime, int, int]]:
    """Return each run work folder under ``root``: (name, its newest file's time, files, bytes)."""
    found = []
    for entry in sorted(os.scandir(root), key=lambda e: e.name) if os.path.isdir(root) else []:
        if not entry.is_dir(follow_symlinks=False) or not _RUN_FOLDER.match(entry.name):
            continue
        newest, files, size = entry.stat(follow_symlinks=False).st_mtime, 0, 0
        for dirpath, _, names in os.walk(entry.path):
            for n in names:
                st = os.lstat(os.path.join(dirpath, n))
                newest, files, size = max(newest, st.st_mtime), files + 1, size + st.st_size
        found.append((entry.name, datetime.fromtimestamp(newest, UTC), files, size))
    return found


def expire(
    storage: Storage,
    retention: Retention,
    now: datetime,
    *,
    this_run: Iterable[str] = (),
    this_summary: RunSummary | None = None,
    work_root: str | None = None,
    this_work: str = "",
    dry_run: bool = False,
) -> Outcome:
    """
    Remove the expired marks of ``storage`` and run work folders under ``work_root`` (a local folder); return what went and what stayed.

    A mark goes as one folder, ``unified/<mark>/``, with lakeFS's ``uncommitted/<mark>/`` of it. A
    dry run removes nothing and counts what it would.
    """
    out = Outcome(dry_run=dry_run)
    marks = list(iter_marks(storage))
    summaries = {m: s for m, s, _ in marks}
    verdicts: list[Verdict] = []
    for mark_id, first in first_pass(marks, retention, now, this_run, this_summary).items():
        summary = summaries[mark_id]
        why = first
        if first is None and summary is not None:
            why = second_pass(summary, sweep_facts(storage, mark_id, summary), retention, now)
        verdicts.append(Verdict("mark", mark_id, why))
    found = _work_folders(work_root) if work_root else []
    folders = {name: (files, size) for name, _, files, size in found}
    verdicts += work_verdicts([(name, t) for name, t, _, _ in found], retention, now, this_work)
    for v in verdicts:
        if v.keep is not None:
            what = ("mark" if v.kind == "mark" else "work folder", v.keep)
            out.kept[what] = out.kept.get(what, 0) + 1
        elif v.kind == "mark":
            out.marks += 1
            _remove_keys(storage, layout.report_dir(v.name), out)
            _remove_keys(storage, layout.uncommitted_dir(v.name).removesuffix("uncommitted/"), out)
        elif work_root:
            out.work += 1
            out.objects += folders[v.name][0]
            out.bytes += folders[v.name][1]
            try:
                if not dry_run:
                    shutil.rmtree(os.path.join(work_root, v.name))
            except OSError as exc:
                out.problems.append(f"the work folder {v.name} not removed ({exc})")
    log.info(
        "leftovers%s: %s and %s removed (%s), kept: %s",
        " (dry run: would be)" if dry_run else "",
        plural(out.marks, "mark"),
        plural(out.work, "work folder"),
        plural(out.objects, "object"),
        "; ".join(out.kept_lines()) or "none",
    )
    return out


def expire_for_run(
    storage: Storage, inputs: StepInputs, summary: RunSummary, now: datetime | None = None
) -> dict[str, Any]:
    """
    Expire the leftovers at the end of a run (``save_report``); return the summary's ``leftovers_*`` fields.

    Never fails the run: a failure is its ``leftovers_note`` and a warning, and the next run tries
    again (nothing of this run depends on it).
    """
    ctx = inputs.context
    s = ctx.settings
    if not s.expire_leftovers:
        return {"leftovers_note": "not expired: the Param expire_leftovers is false"}
    work = ctx.work_dir.removeprefix("file://").rstrip("/")
    local = "://" not in work
    # only a run folder as prepare_run makes it, <work_dir>/<repository>/<run>: never another folder's siblings
    ours = local and work == layout.run_work_dir(
        posixpath.dirname(posixpath.dirname(work)), ctx.repository, ctx.airflow_run_id
    )
    try:
        out = expire(
            storage,
            Retention.of(s),
            now or datetime.now(UTC),
            this_run={inputs.mark_id()},
            this_summary=summary,
            work_root=posixpath.dirname(work) if ours else None,
            this_work=posixpath.basename(work),
            dry_run=s.dry_run,
        )
    except Exception as exc:
        log.warning("the GC's leftovers were not expired: %s", exc)
        return {"leftovers_note": f"not expired: {exc} (the next run tries again)"}
    if not ours:
        out.problems.append(
            f"the work location {ctx.work_dir} is not a local folder <work_dir>/<repository>/<run>: "
            "the run folders beside it are left (a lifecycle rule on the store can expire them)"
        )
    return {
        "leftovers_removed_marks": out.marks,
        "leftovers_removed_work": out.work,
        "leftovers_removed_objects": out.objects,
        "leftovers_removed_bytes": out.bytes,
        "leftovers_kept": out.kept_lines(),
        "leftovers_note": "; ".join(out.problems) or None,
    }
