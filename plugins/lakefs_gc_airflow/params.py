"""
The run form: one Airflow ``Param`` per field of ``lakefs_gc.contract.RunSettings``.

Airflow validates them against their JSON schema when a run is created (the trigger form, the REST
API, ``airflow dags trigger``) and refuses an invalid value with a message naming the Param;
``prepare_run`` turns the validated values into ``RunSettings``
(``lakefs_gc.contract.settings_from_params``), which checks them again. The defaults shown come
from the repository's config entry, falling back to ``RunSettings``'s.

No Param has a top-level ``minimum`` or ``maximum``. Airflow 3's trigger form turns those into a
number input that clamps a typed value to the bound when the field loses focus: 5 typed into the
blast-radius share became 1, which is no guard at all, and -1 typed into the delete rate would
become 0, no limit. The range (``lakefs_gc.contract.BOUNDS``) sits in ``allOf`` instead, which the
form does not read and Airflow's validation does: an out-of-range number stays as typed and the run
is refused, never created with a weaker value. ``mark_id`` may be empty (null): only mode
``sweep_only`` needs it, and ``prepare_run`` refuses that mode without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow.sdk import Param

from lakefs_gc.contract import (
    AUTO,
    BOUNDS,
    FLOWS,
    INVENTORY_FALLBACKS,
    LISTING_SOURCES,
    MODES,
    PARAM_NAMES,
    STAGED_CHECKS,
    RunSettings,
)

if TYPE_CHECKING:
    from lakefs_gc.config import RepoConfig


def _number(
    default: float, kind: str, name: str, title: str, description: str = "", minimum: float | None = None
) -> Param:
    """
    Return a numeric Param whose range Airflow checks when the run is created.

    The range (``BOUNDS[name]``; ``minimum`` overrides its lower bound) is stated in the
    description, and the form cannot clamp the value to it.
    """
    lo, hi = BOUNDS[name]
    lo = lo if minimum is None else minimum
    bound = {"minimum": lo} if hi is None else {"minimum": lo, "maximum": hi}
    allowed = f"from {lo} to {hi}" if hi is not None else f"at least {lo}"
    return Param(
        default,
        type=kind,
        title=title,
        allOf=[bound],
        description=f"{description} Allowed: {allowed}; anything else is refused.".lstrip(),
    )


def gc_params(cfg: RepoConfig, schedule_interval_seconds: int) -> dict[str, Param]:
    sw, d = cfg.sweep, RunSettings
    params = {
        "mode": Param(
            cfg.mode,
            type="string",
            enum=list(MODES),
            title="Run mode",
            description="mark_and_sweep: mark, then delete; mark_only: only write the report; "
            "sweep_only: delete what the earlier mark `mark_id` listed.",
        ),
        "flow": Param(
            cfg.flow,
            type="string",
            enum=list(FLOWS),
            title="Flow",
            description="clean: list every slice and read every retained commit; incremental: only what "
            "changed since an earlier run (its new slices, new commits, and what it left "
            "staged or held back); auto: incremental when an earlier run can be its base, "
            "clean when none can or clean_run_every is reached. The report says which ran "
            "and why.",
        ),
        "staged_check": Param(
            d.staged_check,
            type="string",
            enum=list(STAGED_CHECKS),
            title="Staged-entry check",
            description="How live staged entries lakeFS's uncommitted mark lacks are found. "
            "candidates: ask lakeFS only about the candidates that could be one "
            "(same size and checksum as a committed entry; on local storage also "
            "each branch's changes); full: list every branch against its HEAD "
            "commit (two listings per branch, as long as the repository). Both keep "
            "the same objects; the report counts what the check asked and kept.",
        ),
        "mark_id": Param(
            None,
            type=["null", "string"],
            title="Mark id (sweep_only)",
            description="Run id of an earlier successful mark (its folder under "
            "_lakefs/retention/gc/unified/). Required by mode sweep_only; leave it "
            "empty for the other modes.",
        ),
        "dry_run": Param(
            False,
            type="boolean",
            title="Dry run",
            description="Follow the real code path with a no-op deleter; report what would go.",
        ),
        "min_age_seconds": _number(
            cfg.min_age_seconds,
            "integer",
            "min_age_seconds",
            "Minimum object age (s)",
            "Objects younger than max(this, lakeFS grace period) are kept.",
        ),
        "unsafe_min_age_override": Param(
            False,
            type="boolean",
            title="Unsafe minimum-age override",
            description="Allow a minimum age below lakeFS's grace period "
            "(tests and emergencies only; recorded in the report).",
        ),
        "confirm_after_seconds": _number(
            sw.confirm_after_seconds if sw.confirm_after_seconds is not None else AUTO,
            "integer",
            "confirm_after_seconds",
            "Delayed confirmation (s)",
            "Delete only what an earlier successful mark at least this old also "
            f"found. {AUTO}: one schedule interval ({schedule_interval_seconds}s) for "
            "scheduled and backfill runs, 0 for manual.",
            minimum=AUTO,
        ),
        "max_delete_share": _number(
            sw.max_delete_share,
            "number",
            "max_delete_share",
            "Blast-radius guard: max share",
            "Refuse a sweep deleting more than this share of listed objects (1: no guard).",
        ),
        "max_delete_count": _number(
            sw.max_delete_count,
            "integer",
            "max_delete_count",
            "Blast-radius guard: max count",
            "Refuse a sweep deleting more than this many objects.",
        ),
        "mark_max_age_seconds": _number(
            sw.mark_max_age_seconds, "integer", "mark_max_age_seconds", "Max mark age for sweep_only (s)"
        ),
        "delete_rate": _number(
            sw.rate,
            "number",
            "delete_rate",
            "Deletes per second (0: no limit)",
            "Global rate, split across the delete tasks (S3 allows ~3,500/s per prefix).",
        ),
        "delete_concurrency": _number(
            sw.concurrency or cfg.spark.parallelism or d.delete_concurrency,
            "integer",
            "delete_concurrency",
            "Delete tasks at once",
        ),
        "delete_batch_size": _number(sw.batch_size, "integer", "delete_batch_size", "Keys per DeleteObjects request"),
        "delete_max_attempts": _number(
            d.delete_max_attempts,
            "integer",
            "delete_max_attempts",
            "Delete attempts per key",
            "Retries of throttled or failed deletes, with backoff; keys still failing become dead letters.",
        ),
        "quarantine_days": _number(
            sw.quarantine_days,
            "integer",
            "quarantine_days",
            "Quarantine days (local:// only)",
            "Move swept files into the sweep's quarantine folder under _lakefs/ for this "
            "many days instead of deleting them (lakefs-gc restore brings them back); "
            "0: delete. S3, Azure and GCS keep deleted objects themselves (versioning, "
            "soft delete).",
        ),
        "abort_uploads_after_days": _number(
            sw.abort_uploads_after_days,
            "number",
            "abort_uploads_after_days",
            "Abort incomplete uploads after (days)",
            "The sweep aborts the multipart uploads under the namespace initiated longer ago than this "
            "(S3, GCS; on Azure it reports the uncommitted blocks, which the service drops after 7 days); "
            "0: never. Never below lakeFS's expiry of upload addresses, 1 day.",
        ),
        "attribute_space": Param(
            cfg.space.enabled,
            type="boolean",
            title="Where the bytes go",
            description="A clean run attributes every listed object to what holds it (branch "
            "HEADs, retention windows, staging, tags; unreferenced) in space.json "
            "beside its summary (lakefs-gc report --space, the GC page). A report "
            "only: it never changes what is deleted.",
        ),
        "stale_branch_days": _number(
            cfg.space.stale_branch_days,
            "integer",
            "stale_branch_days",
            "Stale branch after (days)",
            "The attribution lists the branches whose HEAD commit is older than this, with the bytes they alone hold.",
        ),
        **_leftovers_params(cfg),
        "prepare_commits_timeout_seconds": _number(
            d.prepare_commits_timeout_seconds,
            "integer",
            "prepare_commits_timeout_seconds",
            "lakeFS commit preparation timeout (s)",
        ),
        **_listing_params(cfg),
    }
    if set(params) != set(PARAM_NAMES):
        names, fields = set(params), set(PARAM_NAMES)
        raise RuntimeError(
            f"every RunSettings field is a Param: no Param for {sorted(fields - names)}, "
            f"no field for {sorted(names - fields)}"
        )
    return params


def _leftovers_params(cfg: RepoConfig) -> dict[str, Param]:
    """Return how long the GC's own files stay (lakefs_gc.report.leftovers), defaults from the entry's ``leftovers``."""
    lo = cfg.leftovers
    return {
        "expire_leftovers": Param(
            lo.enabled,
            type="boolean",
            title="Expire the GC's own leftovers",
            description="save_report removes this GC's old marks (with their reports, sweeps and quarantine) "
            "and old run work folders; never a mark an incremental run, a pending sweep or an undo still "
            "needs. A dry run removes nothing and reports what it would.",
        ),
        "keep_marks_days": _number(
            lo.marks_days,
            "integer",
            "keep_marks_days",
            "Keep marks (days)",
            "A mark and its reports older than this are removed, unless still needed.",
        ),
        "keep_marks_runs": _number(
            lo.keep_runs, "integer", "keep_marks_runs", "Keep the newest marks", "Kept whatever their age."
        ),
        "keep_work_days": _number(
            lo.work_days,
            "integer",
            "keep_work_days",
            "Keep run work folders (days)",
            "A run's folder in the work location (a local folder) is removed once its newest file is older.",
        ),
    }


def _listing_params(cfg: RepoConfig) -> dict[str, Param]:
    """Return the listing's Params (LIST calls or the store's inventory report), defaults from the entry's ``listing``."""
    inv = cfg.listing.inventory
    return {
        "listing_source": Param(
            cfg.listing.source,
            type="string",
            enum=list(LISTING_SOURCES),
            title="Listing source",
            description="list: list the namespace with LIST calls; inventory: read the newest complete "
            "inventory report delivered at inventory_location (verified: checksum, data files, schema, "
            "bucket and prefix, age), topped up by LIST for the slices created after it. Clean runs "
            "only (an incremental run lists its new slices). docs/inventory.md",
        ),
        "inventory_location": Param(
            inv.location,
            type=["null", "string"],
            title="Inventory location",
            description="Where the inventory reports are delivered, e.g. "
            "s3://dest-bucket/prefix/source-bucket/config-id (S3), "
            "https://<account>.blob.core.windows.net/<container> (Azure), gs://bucket/path (GCS).",
        ),
        "inventory_name": Param(
            inv.name,
            type=["null", "string"],
            title="Inventory rule or configuration",
            description="Azure: the inventory rule's name (required); GCS: the report configuration's id "
            "(empty: any); S3: unused.",
        ),
        "inventory_source_prefix": Param(
            inv.source_prefix,
            type=["null", "string"],
            title="Inventory prefix filter (S3)",
            description='S3: the inventory configuration\'s Filter Prefix ("" when it has none); its '
            "manifest does not say, and the run refuses an S3 inventory without it.",
        ),
        "inventory_max_age_days": _number(
            inv.max_age_days,
            "number",
            "inventory_max_age_days",
            "Inventory max age (days)",
            "An inventory taken longer ago than this is refused.",
        ),
        "inventory_fallback": Param(
            inv.fallback,
            type="string",
            enum=list(INVENTORY_FALLBACKS),
            title="When the inventory cannot serve",
            description="none: refuse the run with the reason (nothing deleted); list: list with LIST "
            "calls instead and say why in the report.",
        ),
    }
