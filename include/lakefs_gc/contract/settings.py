"""
The settings of one run: its Params, validated once.

Part of :mod:`lakefs_gc.contract` (import from there).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lakefs_gc.errors import SettingsError
from lakefs_gc.words import noun

MODES = ("mark_and_sweep", "mark_only", "sweep_only")
FLOWS = ("auto", "clean", "incremental")  # lakefs_gc.gc.flow
STAGED_CHECKS = ("candidates", "full")  # lakefs_gc.listing.staged
LISTING_SOURCES = ("list", "inventory")  # lakefs_gc.listing.inventory: LIST calls, or the store's inventory
INVENTORY_FALLBACKS = ("none", "list")  # an inventory that cannot serve: refuse the run, or list instead
SCHEDULABLE_MODES = ("mark_and_sweep", "mark_only")  # sweep_only needs a mark id: a manual run's Param
# lakeFS's expiry of an upload address (catalog.LinkAddressTime, 24 h: linkPhysicalAddress and
# completePresignMultipartUpload refuse an older one; GET /config/garbage-collection's grace_period)
UPLOAD_ADDRESS_EXPIRY_SECONDS = 86400


def uploads_threshold_problem(
    days: float, name: str = "abort_uploads_after_days", expiry_seconds: int = UPLOAD_ADDRESS_EXPIRY_SECONDS
) -> str | None:
    """Return why ``days`` is refused as ``name`` (below lakeFS's expiry of upload addresses), else None."""
    if days == 0 or days * 86400 >= expiry_seconds:
        return None
    least = expiry_seconds / 86400
    return (
        f"must be 0 (never abort) or at least {least:g} {noun(least, 'day')}, lakeFS's expiry of upload addresses "
        f"({expiry_seconds}s), got {days:g}: a multipart upload a client may still complete could be aborted. "
        f"Set {name} >= {least:g} (the default is 7), or 0 never to abort uploads"
    )


@dataclass(frozen=True)
class RunSettings:
    """The knobs of one run. The defaults here are the only defaults (config, Params, jobs)."""

    mode: str = "mark_and_sweep"
    flow: str = "auto"  # clean | incremental | auto (lakefs_gc.gc.flow.choose_flow)
    min_age_seconds: int = 86400
    unsafe_min_age_override: bool = False
    dry_run: bool = False
    mark_id: str = ""  # sweep_only (required there, ignored elsewhere): the mark to sweep
    confirm_after_seconds: int = 0  # resolved: never -1 here (see settings_from_params)
    max_delete_share: float = 0.5  # blast-radius guard: share of listed objects
    max_delete_count: int = 10_000_000  # ... and absolute count
    mark_max_age_seconds: int = 7 * 86400  # sweep_only refuses older marks
    delete_rate: float = 3000.0  # deletes per second in total; 0 = unlimited
    delete_concurrency: int = 2  # delete tasks at once
    delete_batch_size: int = 1000  # keys per DeleteObjects request (S3: at most 1,000)
    delete_max_attempts: int = 8  # per key, including the first
    # local:// only: move swept files into the sweep's quarantine folder for this many days instead
    # of deleting them (lakefs-gc restore brings them back; a later sweep purges them); 0: delete
    quarantine_days: int = 0
    # incomplete multipart uploads under the namespace initiated longer ago than this many days are
    # aborted by the sweep (lakefs_gc.sweeping.uploads); 0: never. Never below lakeFS's expiry of upload
    # addresses (UPLOAD_ADDRESS_EXPIRY_SECONDS)
    abort_uploads_after_days: float = 7.0
    prepare_commits_timeout_seconds: int = 1200  # lakeFS's async prepare_commits task
    # The defence against live staged entries lakeFS's uncommitted mark lacks (lakefs_gc.listing.staged):
    # "candidates" asks lakeFS only about the candidates that could be one; "full" lists every branch
    # against its HEAD commit (two listings per branch: the cost follows the repository's size).
    staged_check: str = "candidates"
    # where the bytes go (attribute_space, clean runs): computed at all, and a branch is stale when its
    # HEAD commit is older than this many days
    attribute_space: bool = True
    stale_branch_days: int = 30
    # what list_slices lists from (lakefs_gc.listing.inventory; docs/inventory.md): "list" (LIST calls)
    # or "inventory", the newest complete inventory report delivered at inventory_location (S3: its
    # <destination-prefix>/<source-bucket>/<config-ID>), verified, at most inventory_max_age_days old
    listing_source: str = "list"
    inventory_location: str = ""
    inventory_name: str = ""  # Azure: the inventory rule's name; GCS: the report configuration's id ("" any)
    inventory_source_prefix: str | None = None  # S3: the configuration's Filter Prefix ("" none); None: not given
    inventory_max_age_days: float = 8.0
    inventory_fallback: str = "none"  # an inventory that cannot serve: "none" refuses the run, "list" lists
    # the GC's own leftovers (lakefs_gc.report.leftovers; save_report removes them): marks with their
    # reports older than keep_marks_days, except the newest keep_marks_runs and any a later run, a
    # pending sweep or an undo still needs; run work folders older than keep_work_days
    expire_leftovers: bool = True
    keep_marks_days: int = 90
    keep_marks_runs: int = 10
    keep_work_days: int = 7

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise SettingsError(f"Param 'mode' must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.flow not in FLOWS:
            raise SettingsError(f"Param 'flow' must be one of {', '.join(FLOWS)}, got {self.flow!r}")
        if self.staged_check not in STAGED_CHECKS:
            raise SettingsError(
                f"Param 'staged_check' must be one of {', '.join(STAGED_CHECKS)}, got {self.staged_check!r}"
            )
        if self.listing_source not in LISTING_SOURCES:
            raise SettingsError(
                f"Param 'listing_source' must be one of {', '.join(LISTING_SOURCES)}, got {self.listing_source!r}"
            )
        if self.inventory_fallback not in INVENTORY_FALLBACKS:
            raise SettingsError(
                f"Param 'inventory_fallback' must be one of {', '.join(INVENTORY_FALLBACKS)}, "
                f"got {self.inventory_fallback!r}"
            )
        if self.listing_source == "inventory" and not self.inventory_location.strip():
            raise SettingsError(
                "Param 'inventory_location' is empty, but listing_source is inventory: give where the "
                "inventory reports are delivered (e.g. s3://dest-bucket/prefix/source-bucket/config-id; "
                "the repositories file's listing.inventory.location), or set listing_source to list"
            )
        for name, (lo, hi) in BOUNDS.items():
            _check_range(name, getattr(self, name), lo, hi)
        problem = uploads_threshold_problem(self.abort_uploads_after_days)
        if problem:
            raise SettingsError(f"Param 'abort_uploads_after_days' {problem}")


PARAM_NAMES = tuple(f.name for f in dataclasses.fields(RunSettings))
AUTO = -1  # confirm_after_seconds: one schedule interval for scheduled and backfill runs, 0 for manual
# The range of every numeric setting (upper bound None: none). RunSettings refuses a value outside it;
# the run form gives Airflow the same range to refuse at trigger time (lakefs_gc_airflow.params).
BOUNDS: dict[str, tuple[float, float | None]] = {
    "min_age_seconds": (0, None),
    "confirm_after_seconds": (0, None),  # the Param also takes AUTO
    "max_delete_share": (0.0, 1.0),
    "max_delete_count": (0, None),
    "mark_max_age_seconds": (0, None),
    "delete_rate": (0.0, None),
    "delete_concurrency": (1, None),
    "delete_batch_size": (1, 1000),
    "delete_max_attempts": (1, None),
    "quarantine_days": (0, 3650),
    "abort_uploads_after_days": (0.0, 3650.0),  # and 0 or at least UPLOAD_ADDRESS_EXPIRY_SECONDS
    "prepare_commits_timeout_seconds": (1, None),
    "stale_branch_days": (0, 36500),
    "inventory_max_age_days": (0.0, 3650.0),
    "keep_marks_days": (1, 36500),
    "keep_marks_runs": (1, None),
    "keep_work_days": (1, 36500),
}


def _check_range(name: str, value: Any, lo: float, hi: float | None = None) -> None:
    if value < lo or (hi is not None and value > hi):
        bound = f"between {lo} and {hi}" if hi is not None else f">= {lo}"
        raise SettingsError(f"Param {name!r} must be {bound}, got {value!r}")


def _coerce(name: str, value: Any, kind: type) -> Any:
    """
    Return a Param value as ``kind``.

    Airflow validates Params against their JSON schema; this guards hand-made runs (``airflow dags
    trigger --conf``) and jobs started by hand.
    """
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise SettingsError(f"Param {name!r} must be true or false, got {value!r}")
    if kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise SettingsError(f"Param {name!r} must be a whole number, got {value!r}")
    if kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise SettingsError(f"Param {name!r} must be a number, got {value!r}")
    if not isinstance(value, str):
        raise SettingsError(f"Param {name!r} must be a string, got {value!r}")
    return value.strip()


def settings_from_params(
    params: Mapping[str, Any], *, run_type: str = "manual", schedule_interval_seconds: int = 0
) -> RunSettings:
    """
    Return the run's settings from its validated Params (``context["params"]``): one pure function.

    Params this contract does not know are ignored (a DAG may carry others); a missing or null Param
    (an optional field left empty, like ``mark_id``) takes the :class:`RunSettings` default.
    ``confirm_after_seconds`` of -1 resolves to one schedule interval for scheduled and backfill runs
    and 0 for manual ones.
    """
    hints = typing.get_type_hints(RunSettings)
    values: dict[str, Any] = {}
    for name in PARAM_NAMES:
        if name in params and params[name] is not None:
            values[name] = _coerce(name, params[name], hints[name])
    confirm = values.get("confirm_after_seconds", AUTO)
    if confirm == AUTO:
        kind = run_type.split(".")[-1].lower()
        values["confirm_after_seconds"] = schedule_interval_seconds if kind in ("scheduled", "backfill") else 0
    elif confirm < AUTO:
        raise SettingsError(f"Param 'confirm_after_seconds' must be >= -1 (-1: one schedule interval), got {confirm}")
    return RunSettings(**values)
