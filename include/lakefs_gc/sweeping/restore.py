"""
Undo a sweep: bring back what one GC run deleted, where the store still keeps it.

What a run deleted is in its report: the parts of the mark's ``deleted/`` list that a sweep marked
done, minus that sweep's dead letters. Each store keeps deleted data its own way, and each way is
asked only about those keys, never about a key written again since:

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

Every key gets one outcome (:data:`OUTCOMES`) and a detail; the restore writes them with a summary
under ``unified/<mark>/restores/<restore_id>/``. :func:`restorability` says, at sweep time, whether and
until when the store keeps what the sweep deletes: the sweep's report carries it.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from lakefs_gc.contract import Restorability
from lakefs_gc.errors import LakeFSGCError
from lakefs_gc.report import formats, layout
from lakefs_gc.report.marks import find_run, iter_marks, iter_sweeps, parquet_parts, read_summary
from lakefs_gc.timestamps import iso, parse_iso

if TYPE_CHECKING:
    from lakefs_gc.storage.azure import AzureStorage
    from lakefs_gc.storage.base import Storage
    from lakefs_gc.storage.gcs import GCSStorage
    from lakefs_gc.storage.local import LocalStorage
    from lakefs_gc.storage.s3 import S3Storage

log = logging.getLogger(__name__)

RESTORED = "restored"
WOULD_RESTORE = "would restore"            # --dry-run
WRITTEN_SINCE = "written again since"      # never replaced: the newer object stays
PRESENT = "present"                        # not deleted (a dead letter, a dry-run sweep): nothing to do
NO_VERSION = "no version kept"             # the store kept nothing of it (versioning or soft delete off)
RETENTION_PASSED = "retention passed"      # kept once, purged or expired since
DELETED_AGAIN = "deleted again since"      # gone, but not by this run's sweep: not ours to bring back
NOT_IN_RUN = "not deleted by this run"     # --keys named a key the run did not delete
OUTCOMES = (RESTORED, WOULD_RESTORE, WRITTEN_SINCE, PRESENT, NO_VERSION, RETENTION_PASSED, DELETED_AGAIN, NOT_IN_RUN)

# Slack around the sweep's own times when matching the store's deletion time (clocks of the worker
# and the store differ; the window is only ever as wide as the sweep plus this).
CLOCK_SLACK = timedelta(minutes=2)


# ---------------------------------------------------------------------------------------------
# At sweep time: does the store keep what the sweep deletes, and until when
# ---------------------------------------------------------------------------------------------

def restorability(storage: Storage, now: datetime, quarantine_days: int = 0, sdir: str | None = None) -> Restorability:
    """
    Say what the store does with the objects a sweep deletes now (read from the store itself).

    ``sdir``: the sweep's folder, whose quarantine record says until when (local://).
    """
    kind = type(storage).__name__  # the store's kind by its class's name: each kind's own calls cast to it
    if kind == "LocalStorage":
        if quarantine_days:
            record = formats.read_quarantine(storage, layout.quarantine_file(sdir)) if sdir else None
            until = record["until"] if record else iso(now + timedelta(days=quarantine_days))
            return Restorability("local quarantine", True, until,
                                 f"swept files go to the sweep's quarantine/ folder for {quarantine_days} day(s)")
        return Restorability("none", False, None,
                             "local:// files are deleted (quarantine_days is 0: set it to keep them restorable)")
    if kind == "S3Storage":
        return _s3_restorability(cast("S3Storage", storage), now)
    if kind == "AzureStorage":
        days = cast("AzureStorage", storage).soft_delete_days()
        if days is None:
            return Restorability("azure soft delete", None, None,
                                 "the credential may not read the account's blob service properties: unknown")
        if not days:
            return Restorability("none", False, None, "blob soft delete is off for the account: deleted blobs are gone")
        return Restorability("azure soft delete", True, iso(now + timedelta(days=days)),
                             f"blob soft delete keeps deleted blobs {days} day(s)")
    if kind == "GCSStorage":
        return _gcs_restorability(cast("GCSStorage", storage), now)
    return Restorability("none", None, None, f"{kind}: unknown")


def _s3_restorability(st: S3Storage, now: datetime) -> Restorability:
    try:
        status = st.client.get_bucket_versioning(Bucket=st.bucket).get("Status")
    except Exception as exc:
        return Restorability("s3 versioning", None, None, f"cannot read the bucket's versioning ({exc})")
    if status != "Enabled":
        return Restorability("none", False, None,
                             f"bucket versioning is {(status or 'off').lower()}: deleted objects are gone")
    try:
        days = _noncurrent_days(st)
    except Exception as exc:
        return Restorability("s3 versioning", True, None, f"bucket versioning keeps the deleted versions; the "
                                                          f"lifecycle rules could not be read ({exc})")
    if days is None:
        return Restorability("s3 versioning", True, None,
                             "bucket versioning keeps the deleted versions; no lifecycle rule expires them")
    return Restorability("s3 versioning", True, iso(now + timedelta(days=days)),
                         f"bucket versioning keeps the deleted versions; a lifecycle rule expires noncurrent "
                         f"versions after {days} day(s)")


def _noncurrent_days(st: S3Storage) -> int | None:
    """
    Return the fewest NoncurrentDays of the bucket's enabled lifecycle rules.

    Every rule, whatever its filter: the earliest a deleted version may expire.
    """
    try:
        rules = st.client.get_bucket_lifecycle_configuration(Bucket=st.bucket).get("Rules", [])
    except Exception as exc:
        if "NoSuchLifecycleConfiguration" in str(exc):
            return None
        raise
    days = [int(r["NoncurrentVersionExpiration"]["NoncurrentDays"]) for r in rules
            if r.get("Status") == "Enabled" and (r.get("NoncurrentVersionExpiration") or {}).get("NoncurrentDays")]
    return min(days) if days else None


def _gcs_restorability(st: GCSStorage, now: datetime) -> Restorability:
    try:
        st.bucket.reload()
        seconds = int(st.bucket.soft_delete_policy.retention_duration_seconds or 0)
    except Exception as exc:
        return Restorability("gcs soft delete", None, None, f"cannot read the bucket's soft delete policy ({exc})")
    if not seconds:
        return Restorability("none", False, None, "the bucket's soft delete is off: deleted objects are gone")
    return Restorability("gcs soft delete", True, iso(now + timedelta(seconds=seconds)),
                         f"soft delete keeps deleted objects {seconds // 86400} day(s)")


# ---------------------------------------------------------------------------------------------
# What a run deleted
# ---------------------------------------------------------------------------------------------

@dataclass
class SweptRun:
    """What the sweeps of one mark deleted: the keys, the sweep folders, and when."""

    mark_id: str
    summary: dict[str, Any]
    keys: set[str] = field(default_factory=set)           # deleted (or quarantined) by its sweeps
    sweep_dirs: list[str] = field(default_factory=list)
    start: datetime | None = None                         # the window the deletions happened in
    end: datetime | None = None

    def in_window(self, t: datetime | None) -> bool:
        return t is not None and self.start is not None and self.end is not None and \
            self.start - CLOCK_SLACK <= t <= self.end + CLOCK_SLACK


def find_mark(storage: Storage, run: str) -> str:
    """Return the mark id of ``run``: a mark id, or the Airflow run id of a mark or of a sweep-only run."""
    try:
        return find_run(storage, run).mark_id
    except LookupError as e:
        raise LakeFSGCError(str(e)) from None


def swept_run(storage: Storage, mark_id: str) -> SweptRun:
    """Return the keys the sweeps of ``mark_id`` deleted, and when."""
    summary = read_summary(storage, mark_id) or {}
    run = SweptRun(mark_id, summary)
    parts = parquet_parts(storage, layout.deleted_dir(mark_id))
    base = layout.sweeps_dir(mark_id)
    times: list[datetime | None] = []
    sweep_summaries = {sweep: doc for sweep, doc, _ in iter_sweeps(storage, mark_id)}  # sweep_only runs
    for sdir in storage.list_prefixes(base):
        done = {o.key.rsplit("/", 1)[1].removesuffix(".json"): o for o in storage.list(sdir + "done/")
                if o.key.endswith(".json")}  # done/<part id>.json (layout.done_marker)
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
        sweep_summary = sweep_summaries.get(sdir[len(base):].rstrip("/")) or {}
        if isinstance(sweep_summary.get("start_time"), str):
            times.append(_parse(sweep_summary["start_time"]))
    if not run.sweep_dirs:
        raise LakeFSGCError(f"mark {mark_id} was never swept ({storage.full_uri(base)} has no finished part): "
                            f"nothing to restore")
    start = _parse(summary.get("start_time")) if isinstance(summary.get("start_time"), str) else None
    run.start = min([t for t in times + [start] if t is not None])
    run.end = max(t for t in times if t is not None)
    return run


def _parse(s: str | None) -> datetime | None:
    try:
        return parse_iso(s) if s else None
    except ValueError:
        return None


def _window(run: SweptRun) -> tuple[str, str]:
    """Return the sweeps' window as ISO times (:func:`swept_run` sets both ends)."""
    if run.start is None or run.end is None:
        raise LakeFSGCError(f"mark {run.mark_id}: the window of its sweeps is unknown")
    return iso(run.start), iso(run.end)


# ---------------------------------------------------------------------------------------------
# Bringing keys back, store by store
# ---------------------------------------------------------------------------------------------

def _restore_local(st: LocalStorage, key: str, run: SweptRun, dry_run: bool, now: datetime) -> tuple[str, str]:
    target = st.root / key
    for sdir in run.sweep_dirs:
        q = st.root / layout.quarantine_dir(sdir) / key
        if not q.is_file():
            continue
        if target.exists():
            return WRITTEN_SINCE, f"{st.full_uri(key)} exists again; its quarantined copy stays in {sdir}"
        if dry_run:
            return WOULD_RESTORE, f"from {layout.quarantine_dir(sdir)}{key}"
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(q, target)  # never replaces a file written meanwhile
        except FileExistsError:
            return WRITTEN_SINCE, f"{st.full_uri(key)} was written during the restore; the quarantined copy stays"
        os.unlink(q)
        return RESTORED, f"moved back from {layout.quarantine_dir(sdir)}{key}"
    if target.exists():
        return PRESENT, "the file is there (the sweep did not remove it)"
    found = [formats.read_quarantine(st, layout.quarantine_file(s)) for s in run.sweep_dirs]
    records = [r for r in found if r]
    if not records:
        return NO_VERSION, "the sweep deleted the file (quarantine_days was 0)"
    if any((until := _parse(r["until"])) is not None and until < now for r in records):
        return RETENTION_PASSED, f"the quarantine ended {min(r['until'] for r in records)} and was purged"
    return NO_VERSION, "not in the quarantine (restored already, or removed by hand)"


def _restore_s3(st: S3Storage, key: str, run: SweptRun, dry_run: bool, now: datetime) -> tuple[str, str]:
    full = st._name(key)
    versions: list[dict[str, Any]] = []
    markers: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"Bucket": st.bucket, "Prefix": full}
    while True:
        page = st.client.list_object_versions(**kwargs)
        versions += [v for v in page.get("Versions", ()) if v["Key"] == full]
        markers += [m for m in page.get("DeleteMarkers", ()) if m["Key"] == full]
        if not page.get("IsTruncated"):
            break
        kwargs.update(KeyMarker=page["NextKeyMarker"], VersionIdMarker=page.get("NextVersionIdMarker") or "")
        if page["NextKeyMarker"] > full:
            break
    latest = next((x for x in versions + markers if x.get("IsLatest")), None)
    if latest is None:
        return NO_VERSION, "the bucket keeps no version of it (versioning was off when it was deleted)"
    if latest in versions:
        # a delete marker of the sweep below the current version: written again since
        if any(run.in_window(m["LastModified"]) and m["LastModified"] <= latest["LastModified"] for m in markers):
            return WRITTEN_SINCE, f"version {latest['VersionId']} written {iso(latest['LastModified'])} stays current"
        return PRESENT, f"version {latest['VersionId']} is current (not deleted, or restored already)"
    if not run.in_window(latest["LastModified"]):
        start, end = _window(run)
        return DELETED_AGAIN, (f"its delete marker {latest['VersionId']} is from {iso(latest['LastModified'])}, "
                               f"outside the sweep ({start} to {end})")
    hidden = [v for v in versions if v["LastModified"] <= latest["LastModified"]]
    if not hidden:
        return RETENTION_PASSED, "only the sweep's delete marker is left: the version it hid has expired"
    prev = max(hidden, key=lambda v: v["LastModified"])
    if dry_run:
        return WOULD_RESTORE, f"remove delete marker {latest['VersionId']}: version {prev['VersionId']} current again"
    st.client.delete_object(Bucket=st.bucket, Key=full, VersionId=latest["VersionId"])
    return RESTORED, f"delete marker {latest['VersionId']} removed: version {prev['VersionId']} is current again"


def _restore_azure(st: AzureStorage, key: str, run: SweptRun, dry_run: bool, now: datetime) -> tuple[str, str]:
    name = st._name(key)
    if st.exists(key):
        return WRITTEN_SINCE, "a blob of that name exists: left alone"
    deleted = [b for b in st.client.list_blobs(name_starts_with=name, include=["deleted"])
               if b.name == name and getattr(b, "deleted", False)]
    if not deleted:
        return NO_VERSION, "no soft-deleted blob of that name (soft delete off, or its retention passed)"
    ours = [b for b in deleted if run.in_window(getattr(b, "deleted_time", None))]
    if not ours:
        return DELETED_AGAIN, "soft-deleted outside the sweep's time"
    if dry_run:
        return WOULD_RESTORE, "undelete the soft-deleted blob"
    st.client.get_blob_client(name).undelete_blob()
    return RESTORED, "undeleted (blob soft delete)"


def _restore_gcs(st: GCSStorage, key: str, run: SweptRun, dry_run: bool, now: datetime) -> tuple[str, str]:
    name = st._name(key)
    gens = [b for b in st.client.list_blobs(st.bucket_name, prefix=name, soft_deleted=True) if b.name == name]
    if not gens:
        return (WRITTEN_SINCE, "an object of that name exists: left alone") if st.exists(key) else \
            (NO_VERSION, "no soft-deleted generation (soft delete off, or its retention passed)")
    ours = [b for b in gens if run.in_window(getattr(b, "soft_delete_time", None))]
    if not ours:
        return DELETED_AGAIN, "soft-deleted outside the sweep's time"
    gen = max(ours, key=lambda b: b.generation)
    if st.exists(key):
        return WRITTEN_SINCE, "an object of that name exists: left alone"
    if dry_run:
        return WOULD_RESTORE, f"restore generation {gen.generation}"
    try:
        st.bucket.restore_blob(name, generation=gen.generation, if_generation_match=0)
    except Exception as exc:
        if "412" in str(exc) or "Precondition" in type(exc).__name__:
            return WRITTEN_SINCE, "an object of that name was written during the restore: left alone"
        raise
    return RESTORED, f"generation {gen.generation} restored (soft delete)"


# each takes the store its key names (hence Any: the store's class is told by its name)
_RESTORERS: dict[str, Callable[[Any, str, SweptRun, bool, datetime], tuple[str, str]]] = {
    "LocalStorage": _restore_local, "S3Storage": _restore_s3, "AzureStorage": _restore_azure,
    "GCSStorage": _restore_gcs}


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
    report_uri: str
    window: tuple[str, str]

    def summary(self) -> dict[str, Any]:
        return {"mark_id": self.mark_id, "restore_id": self.restore_id, "dry_run": self.dry_run,
                "keys": len(self.rows), "counts": self.counts, "sweep_window": list(self.window),
                "outcomes": "outcomes.parquet"}


def restore_run(storage: Storage, run: str, keys: Iterable[str] | None = None, dry_run: bool = False,
                restore_id: str | None = None, now: datetime | None = None) -> RestoreReport:
    """
    Restore what run ``run`` (a mark id or an Airflow run id) deleted, or only ``keys`` of it.

    Writes the restore's report (also for a dry run) and returns it.
    """
    now = now or datetime.now(UTC)
    kind = type(storage).__name__
    if kind not in _RESTORERS:
        raise LakeFSGCError(f"{storage.uri}: restore does not know this store ({kind})")
    mark_id = find_mark(storage, run)
    swept = swept_run(storage, mark_id)
    wanted = sorted(swept.keys) if keys is None else list(dict.fromkeys(_relative(storage, k) for k in keys))
    restore = _RESTORERS[kind]
    rows: list[tuple[str, str, str]] = []
    for key in wanted:
        if key not in swept.keys:
            rows.append((key, NOT_IN_RUN, f"not in the keys the sweeps of mark {mark_id} deleted"))
            continue
        outcome, detail = restore(storage, key, swept, dry_run, now)
        rows.append((key, outcome, detail))
    counts = {o: sum(1 for r in rows if r[1] == o) for o in OUTCOMES}
    counts = {k: v for k, v in counts.items() if v}
    rid = restore_id or f"restore-{now.strftime('%Y%m%dT%H%M%SZ')}{'-dry-run' if dry_run else ''}"
    rdir = layout.restore_dir(mark_id, rid)
    formats.write_restore_outcomes(storage, rdir + "outcomes.parquet", rows)
    report = RestoreReport(mark_id, rid, dry_run, counts, rows, storage.full_uri(rdir + "summary.json"),
                           _window(swept))
    storage.put(rdir + "summary.json", json.dumps({**report.summary(), "time": iso(now)}, indent=2).encode())
    log.info("restore %s of mark %s: %s", rid, mark_id, counts)
    return report


def _relative(storage: Storage, key: str) -> str:
    key = key.strip()
    prefix = storage.uri.rstrip("/") + "/"
    return key[len(prefix):] if key.startswith(prefix) else key


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
    if type(storage).__name__ != "LocalStorage":
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
                storage.delete_batch(keys[i:i + 1000])
            purged += len(keys)
    return purged
