"""
One result type per step.

Part of :mod:`lakefs_gc.contract` (import from there).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from lakefs_gc.contract.approval import Approval
from lakefs_gc.contract.context import PartsDir
from lakefs_gc.contract.cost import RequestCount
from lakefs_gc.contract.keep import KeptByRule


@dataclass(frozen=True)
class UncommittedResult:
    """mark_uncommitted: lakeFS wrote the staged addresses; its run id names this mark."""

    run_id: str
    locations: tuple[str, ...]  # every non-empty page location (hazard H2)
    pages: int
    seconds: float = 0.0
    # the staged entries read through the API (lakefs_gc.listing.uncommitted.api_staged)
    staged_branches: int = 0  # branches read, each against its HEAD commit
    staged_entries_checked: int = 0  # entries a branch reads at an address its HEAD commit lacks
    staged_addresses_lakefs_omitted: int = 0  # live staged addresses lakeFS's mark lacked: kept
    staged_file: str | None = None  # key of the Parquet holding those (lakeFS's uncommitted format)
    staged_objects_listed: int = 0  # objects listed to find them (branches and HEAD commits)
    staged_branches_gone: tuple[str, ...] = ()  # deleted during the run (their staged entries are garbage)
    staged_check: str = "full"  # RunSettings.staged_check as this step ran it
    lakefs_seconds: float = 0.0  # of seconds: lakeFS's own mark (prepare_uncommited, every page)
    heads_file: str | None = None  # candidates: every branch's HEAD before and after lakeFS's mark
    branches_moved: int = 0  # candidates: HEAD moved during lakeFS's mark (listed in full)
    branch_reads_file: str | None = None  # the staged addresses lakeFS's mark lacked, by branch (attribute_space)
    requests: tuple[RequestCount, ...] = ()  # the storage requests it sent, by store and kind (issue 54)


@dataclass(frozen=True, kw_only=True)
class SparkStepResult:
    """
    What every Spark step's result has.

    ``incomplete`` says why the task fails although the step ran to its end (delete: keys left as
    dead letters); None when it did all its work.
    """

    incomplete: str | None = None
    requests: tuple[RequestCount, ...] = ()  # the storage requests it sent, by store and kind (issue 54)


@dataclass(frozen=True)
class CommittedResult(SparkStepResult):
    """list_committed: the committed addresses read now, each once, and the commits and ranges read for them."""

    committed_dir: PartsDir  # the addresses read now, each once: the mark's state/committed/
    commits_csv: str
    active_commits: int
    metaranges: int
    ranges: int
    committed_addresses: int
    documented_commits: int = 0  # kept by the documented rules, walked from the API (gc/retention.py)
    commits_lakefs_lacked: int = 0  # of which commits.csv did not list: kept anyway
    seconds: float = 0.0
    new_commits: int = 0  # commits read now (incremental: not read since the chain's clean run)
    ranges_known: int = 0  # incremental: ranges of new commits read before (skipped)
    read_file: str = ""  # key: the commit and range ids read since the chain's clean run
    identity_dir: PartsDir | None = None  # (size, checksum, path) of every entry of the ranges read now
    kept_by_rules: tuple[KeptByRule, ...] = ()  # the config's keep rules: what each kept (issue 55)
    kept_by_paths: PartsDir | None = None  # the addresses at the path rule's paths (compute_candidates keeps them)


@dataclass(frozen=True)
class SlicesResult(SparkStepResult):
    """list_slices: the namespace's objects listed now (Parquet under ``listed_dir``), and the slices listed."""

    listed_dir: str  # Parquet: address, size, last_modified_ms, checksum
    first_slice: str
    slices_listed: int
    slices_skipped: int
    listed_objects: int
    listed_bytes: int
    seconds: float = 0.0
    slices_before_base: int = 0  # incremental: older than the base's newest slice, not listed
    root_listed: bool = True  # the namespace root and loose data/ objects (clean runs only)
    # what listed the namespace (RunSettings.listing_source; lakefs_gc.listing.inventory): "list" (LIST
    # calls) or "inventory"; then which inventory, its T_inv, its age at the run's start, the rows
    # read from its data files, and the slices created after T_inv that LIST listed (the top-up)
    listing_source: str = "list"
    inventory_id: str | None = None  # the manifest's URI
    inventory_time: str | None = None  # T_inv, ISO 8601 UTC
    inventory_age_seconds: int | None = None
    inventory_rows: int | None = None  # every row of its data files, under the namespace or not
    inventory_files: int | None = None
    slices_topped_up: int | None = None
    listing_fallback: str | None = None  # the inventory was asked for but the run listed: why
    inventory_deferred: int | None = None  # its rows under data/ not older than the cutoff: left for a later run


@dataclass(frozen=True)
class CandidatesResult(SparkStepResult):
    """compute_candidates: the candidates, those to delete after delayed confirmation and those held back."""

    report_dir: str
    uncommitted_files: int
    candidates: int
    candidate_bytes: int
    to_delete: int  # after delayed confirmation
    to_delete_bytes: int
    held_back: int
    confirm_after_seconds: int
    held_back_reason: str | None = None
    confirmed_by_mark: str | None = None
    unreadable_marks: tuple[str, ...] = ()  # earlier marks not used for confirmation, with the reason
    seconds: float = 0.0
    uncommitted_dir: PartsDir | None = None  # this run's staged addresses, kept for later runs
    carried_checked: int = 0  # incremental: earlier staged or held-back addresses checked again
    carried_candidates: int = 0  # ... of which candidates now
    # the staged check on the candidates (lakefs_gc.listing.staged), when it ran here
    staged_check: str = "full"
    staged_suspicious: int = 0  # candidates a staged entry could read (size and checksum of an entry)
    staged_stats: int = 0  # statObject calls made for them
    staged_kept: int = 0  # candidates a branch reads now: kept, never deleted
    commits_since: int = 0  # commits made since list_committed read them, read now
    committed_since_kept: int = 0  # candidates those commits reference: kept
    staged_check_seconds: float = 0.0
    branch_reads_file: str | None = None  # what each branch read where the staged check asked (attribute_space)


@dataclass(frozen=True)
class SpaceResult(SparkStepResult):
    """
    attribute_space: where the namespace's bytes go at this run (issue 43), in ``space.json`` beside the summary.

    The totals here (bytes, each object once, in its first class: lakefs_gc.gc.attribution); the
    branches, tags and stale branches in ``space_key``. ``skipped``: why there is no attribution
    (an incremental run, switched off, or an input lakeFS could not give: the run goes on).
    """

    space_key: str | None = None  # key of space.json in the namespace
    objects: int = 0  # every listed object
    bytes: int = 0
    head_bytes: int = 0  # read by a branch HEAD
    retention_bytes: int = 0  # only in retention windows (kept commits, not HEAD)
    staged_bytes: int = 0  # only staged
    deleted_bytes: int = 0  # unreferenced: deleted this run (marked, in a dry or mark-only run)
    held_back_bytes: int = 0  # unreferenced: held back (delayed confirmation, the staged check)
    young_bytes: int = 0  # unreferenced: newer than the cutoff
    branches: int = 0
    stale_branches: int = 0  # HEAD older than the run's stale_branch_days
    stale_alone_bytes: int = 0  # what the stale branches alone hold
    seconds: float = 0.0
    skipped: str | None = None


@dataclass(frozen=True)
class DeleteCounts:
    """The deleter's counters: one shape for a part, a task and a run."""

    keys: int = 0  # keys asked for: deleted + already_gone + failed
    deleted: int = 0  # removed by this sweep (dry run: would be removed)
    already_gone: int = 0  # not there when the sweep asked (storage said "not found")
    retried: int = 0  # key-attempts retried
    requests: int = 0
    failed: int = 0  # still failing after retries: dead letters
    parts: int = 0
    resumed_parts: int = 0  # parts a retry found already done
    throttled: int = 0  # requests the store throttled (SlowDown, 429, 503, ServerBusy...)

    def __add__(self, other: DeleteCounts) -> DeleteCounts:
        return DeleteCounts(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in dataclasses.fields(self)}
        )


@dataclass(frozen=True)
class Restorability:
    """
    Whether, and until when, the store keeps what a sweep deleted.

    Read from the store at sweep time (lakefs_gc.sweeping.restore.retention). ``restorable`` None:
    unknown (the credential may not read the setting); ``until`` None: no end the GC knows of, or
    not restorable.
    """

    how: str = "none"  # s3 versioning | azure soft delete | gcs soft delete | local quarantine | none
    restorable: bool | None = None
    until: str | None = None
    detail: str = ""


FREED_NOW, FREED_LATER, STILL_BILLED = "now", "later", "never"  # Freeing.when


@dataclass(frozen=True)
class FreedOn:
    """Bytes a sweep deleted that the store frees on one date (ISO 8601, UTC)."""

    on: str
    bytes: int


@dataclass(frozen=True)
class Freeing:
    """
    What a delete now does to the bill, read from the store at sweep time (``Storage.freeing``).

    ``when``: ``now`` (the bytes are no longer billed), ``later`` (billed until ``on``, ISO 8601
    UTC, when the store's own rule or the GC's quarantine frees them), or ``never`` (billed until
    someone acts: ``detail`` says why). What the GC cannot read or prove counts as ``never``: a
    bill figure errs towards "still billed", never below what the bill says.
    """

    when: str = STILL_BILLED
    on: str | None = None
    how: str = "none"  # what keeps the bytes: s3 versioning | azure soft delete | gcs versioning | ... | none
    detail: str = ""

    def split(self, nbytes: int) -> tuple[int, tuple[FreedOn, ...], int]:
        """Return ``nbytes`` deleted now as (freed now, freed later by date, still billed)."""
        if self.when == FREED_NOW:
            return nbytes, (), 0
        if self.when == FREED_LATER and self.on is not None:
            return 0, (FreedOn(self.on, nbytes),) if nbytes else (), 0
        return 0, (), nbytes


@dataclass(frozen=True)
class Uploads:
    """
    Incomplete multipart uploads under the namespace, as the sweep found them (lakefs_gc.sweeping.uploads).

    ``old``: initiated longer ago than ``older_than_days`` (S3, GCS: aborted, or in a dry run would
    be; Azure: blobs of uncommitted blocks only, reported, the service drops them itself);
    ``young``: initiated since, untouched and not sized. ``skipped``: why none were looked at.
    """

    how: str = "none"  # s3 multipart | gcs multipart | azure uncommitted blocks | none
    older_than_days: float = 0.0
    young: int = 0
    old: int = 0
    old_bytes: int = 0  # the sum of their parts' (blocks') sizes
    aborted: int = 0  # by this sweep (0 in a dry run and on Azure)
    aborted_bytes: int = 0
    already_gone: int = 0  # completed or aborted by someone else between the listing and the abort
    failed: int = 0  # still failing after retries (the task fails)
    error: str | None = None  # the listing failed: none were looked at (the task fails)
    skipped: str | None = None
    detail: str = ""


@dataclass(frozen=True)
class DeleteResult(SparkStepResult):
    """delete: what the sweep deleted (dry run: would have), how fast, and whether it can be brought back."""

    counts: DeleteCounts = field(default_factory=DeleteCounts)
    skipped: str | None = None  # why nothing ran (mark_only)
    dry_run: bool = False  # counts.deleted is then what would have gone
    concurrency: int = 0
    rate: float = 0.0
    sweep_dir: str | None = None
    dead_letters: str | None = None
    seconds: float = 0.0
    soft_delete_days: int | None = None  # Azure: days the account keeps deleted blobs (0: off; None: not Azure/unknown)
    restorable: Restorability | None = None  # whether lakefs-gc restore can bring this sweep's deletions back
    quarantine_purged: int = 0  # local://: quarantined files of earlier sweeps purged (their days passed)
    uploads: Uploads | None = None  # incomplete multipart uploads (None: the sweep did not look)
    # the bill (issue 54): what a delete now does on this store, and the bytes this sweep deleted split by
    # it (the run's reclaimed bytes; 0 for a dry run; None: not known, e.g. a sweep with dead letters)
    freeing: Freeing | None = None
    freed_now_bytes: int | None = None  # no longer billed now
    freed_later: tuple[FreedOn, ...] = ()  # billed until the date the store frees them
    still_billed_bytes: int | None = None  # billed until someone acts (Freeing.detail says why)
    # the delete rate all of the sweep's tasks shared (keys/s): its halvings on throttles, its lowest and last
    # value (None: never limited: delete_rate 0 and never throttled)
    rate_cuts: int = 0
    rate_lowest: float | None = None
    rate_final: float | None = None
    approval: Approval | None = None  # a person's answer, when the repository asks for one (sweep.confirm)


@dataclass(frozen=True)
class ReportResult:
    """save_report: where the run's summary.json is, and the run in a few lines."""

    summary_uri: str
    seconds: float = 0.0
    summary: str = ""  # the run in a few lines (lakefs_gc.report.render.summary_text)
    report_url: str | None = None  # a URL a browser can open for summary_uri, when there is one
    lakefs_url: str | None = None  # the repository in lakeFS's UI
