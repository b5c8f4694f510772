"""
Step ``prepare_run``: the run context every later task reads.

Takes a :class:`~lakefs_gc.lakefs.client.LakeFSClient` and returns a contract type; the Airflow
operator only reads connections and Params around it, so the same code runs in tests, benches and
by hand.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lakefs_gc.contract import (
    ApprovalRule,
    KeepRules,
    LakeFSRetries,
    MarkRef,
    Prices,
    RunContext,
    RunSettings,
    StorageLocation,
)
from lakefs_gc.contract.settings import uploads_threshold_problem
from lakefs_gc.errors import LakeFSGCError, SettingsError
from lakefs_gc.gc.clock import make_run_clock
from lakefs_gc.gc.flow import CleanRunEvery, FlowChoice, choose_flow, rules_fingerprint
from lakefs_gc.gc.guards import check_mark
from lakefs_gc.report import layout
from lakefs_gc.report.marks import iter_marks
from lakefs_gc.report.run_summary import RunSummary
from lakefs_gc.storage import LOCAL_ROOT_HELP, StorageOptions, kind_named, kind_of, open_storage, parse_namespace
from lakefs_gc.storage.base import StorageError
from lakefs_gc.timestamps import parse_iso

if TYPE_CHECKING:
    from lakefs_gc.lakefs.client import LakeFSClient
    from lakefs_gc.storage.base import Storage

log = logging.getLogger(__name__)


def prepare_run(
    client: LakeFSClient,
    repository: str,
    settings: RunSettings,
    *,
    now: datetime,
    airflow_run_id: str,
    work_dir: str,
    storage_options: StorageOptions | None = None,
    local_root: str | None = None,
    parallelism: int | None = None,
    storage_conn_id: str | None = None,
    lakefs_conn_id: str | None = None,
    lakefs_retries: Mapping[str, Any] | None = None,
    clean_run_every: CleanRunEvery | None = None,
    prices: Prices | None = None,
    keep: KeepRules | None = None,
    approval: ApprovalRule | None = None,
    preflight: bool = False,
) -> RunContext:
    """
    Return the run context every later task reads.

    Resolve the repository (namespace, blockstore type), lakeFS's grace period and GC rules, fix
    the run clock, check the namespace is where the GC will look, and, for sweep_only, the mark;
    for a marking run, choose its flow (:func:`lakefs_gc.gc.flow.choose_flow`: clean, or
    incremental on an earlier run; ``clean_run_every`` bounds the chain of incremental runs).

    ``storage_options``: the storage connection's settings, of the namespace's kind (required for
    ``s3://``, Azure and ``gs://`` namespaces: without them the GC would fall back to whatever
    credentials the worker happens to have). ``local_root``: lakeFS's
    ``blockstore.local.path`` (required for ``local://``). ``lakefs_retries``: the lakeFS
    connection's retry extras that are set (:class:`~lakefs_gc.contract.LakeFSRetries`'s fields:
    ``max_retries`` a whole number, the others seconds). Raises :class:`LakeFSGCError` (or its
    subclasses) naming what to fix; nothing has been deleted then. ``preflight``: first run
    ``lakefs-gc doctor``'s checks (:mod:`lakefs_gc.doctor.preflight`), failing closed.
    """
    repo = client.get_repository(repository)
    rules = client.require_gc_rules(repository)  # fail before any Spark job starts
    blockstore = client.blockstore_type(getattr(repo, "storage_id", None) or "")
    grace = int(client.grace_period_seconds())
    clock = make_run_clock(now, settings.min_age_seconds, grace, settings.unsafe_min_age_override)
    problem = uploads_threshold_problem(settings.abort_uploads_after_days, expiry_seconds=grace)
    if problem:  # lakeFS's expiry of upload addresses, as this lakeFS reports it
        raise SettingsError(f"Param 'abort_uploads_after_days' {problem}")
    if settings.unsafe_min_age_override and settings.min_age_seconds < grace:
        log.warning(
            "unsafe_min_age_override is set: cutoff %s uses min age %ss below the grace period %ss; "
            "this is recorded in the report",
            clock.cutoff_time,
            settings.min_age_seconds,
            grace,
        )
    ns = repo.storage_namespace
    location = _location(ns, blockstore, storage_options, local_root, repository, storage_conn_id, lakefs_conn_id)
    try:
        storage = open_storage(ns, storage_options, location.local_root)  # a kind without settings ignores them
    except (ValueError, StorageError) as e:
        raise SettingsError(f"repository {repository!r}: {e}") from e
    if location.local_root:
        check_namespace(storage, ns)
    elif settings.quarantine_days:
        raise SettingsError(
            f"repository {repository!r}: quarantine_days ({settings.quarantine_days}) is for local:// namespaces "
            f"(lakeFS's local blockstore), and {ns!r} is not one: to keep what a sweep deletes restorable there, "
            f"turn on the store's own (S3 bucket versioning, Azure blob soft delete, GCS soft delete) and set "
            f"quarantine_days to 0; nothing was deleted"
        )
    if preflight:  # lakefs-gc doctor's checks: the run's key, the store's rights (lakefs_gc.doctor.preflight)
        from lakefs_gc.doctor.preflight import preflight as doctor_checks

        doctor_checks(client, repository, repo.default_branch, storage, now, settings.quarantine_days)
    sweep_mark = None
    choice, fingerprint = FlowChoice("clean", ""), ""
    if settings.mode != "sweep_only":
        fingerprint = rules_fingerprint(
            getattr(rules, "default_retention_days", None),
            {r.branch_id: r.retention_days for r in getattr(rules, "branches", None) or ()},
        )
        choice = choose_flow(
            settings.flow,
            iter_marks(storage),
            namespace=ns,
            rules=fingerprint,
            now=parse_iso(clock.start_time),
            every=clean_run_every or CleanRunEvery(),
        )
        log.info("flow %s: %s", choice.flow, choice.reason)
    if settings.mode == "sweep_only":
        mark = check_mark(storage, settings.mark_id, parse_iso(clock.start_time), settings.mark_max_age_seconds)
        sweep_mark = MarkRef(
            mark_id=settings.mark_id,
            start_time=str(mark.start_time),
            cutoff_time=mark.cutoff_time,
            listed_objects=mark.listed_objects,
            to_delete=mark.to_delete,
        )
    return RunContext(
        repository=repository,
        lakefs_endpoint=client.endpoint,
        storage=location,
        grace_period_seconds=grace,
        start_time=clock.start_time,
        cutoff_time=clock.cutoff_time,
        effective_min_age_seconds=clock.effective_min_age_seconds,
        work_dir=layout.run_work_dir(work_dir, repository, airflow_run_id),
        airflow_run_id=airflow_run_id,
        settings=settings,
        parallelism=parallelism,
        sweep_mark=sweep_mark,
        lakefs_retries=LakeFSRetries(**(lakefs_retries or {})),
        flow=choice.flow,
        flow_reason=choice.reason,
        gc_rules=fingerprint,
        # choose_flow gives every incremental choice its base's summary (none: a ContractError)
        base=(choice.base_summary or RunSummary()).incremental_base(choice.base)
        if choice.flow == "incremental"
        else None,
        prices=prices or Prices(),
        keep=keep or KeepRules(),
        approval=approval or ApprovalRule(),
    )


def _location(
    ns: str,
    blockstore: str,
    options: StorageOptions | None,
    local_root: str | None,
    repository: str,
    storage_conn_id: str | None,
    lakefs_conn_id: str | None,
) -> StorageLocation:
    named = kind_named(ns)
    if named is not None and named.needs_local_root:
        if not local_root:
            raise SettingsError(
                f"repository {repository!r} has namespace {ns!r}: {LOCAL_ROOT_HELP} (connection {lakefs_conn_id!r})"
            )
        try:
            parse_namespace(ns, local_root)
        except ValueError as e:
            raise SettingsError(str(e)) from e
        return StorageLocation(ns, blockstore, local_root=local_root)
    try:
        kind, _ = kind_of(ns)
    except ValueError as e:
        raise SettingsError(f"repository {repository!r}: {e}") from e
    if options is None:
        raise SettingsError(
            f"repository {repository!r} has namespace {ns!r}, but the storage connection {storage_conn_id!r} is "
            f"not defined: define it ({kind.connection_help}) or fix storage_conn_id in the GC config"
        )
    if kind.options_type is None or not isinstance(options, kind.options_type):
        raise SettingsError(
            f"repository {repository!r} has namespace {ns!r}, but the storage connection {storage_conn_id!r} is "
            f"for another store ({type(options).__name__}): it must be {kind.connection_help}"
        )
    return StorageLocation(ns, blockstore, **kind.recorded(options))


def check_namespace(storage: Storage, ns: str) -> None:
    """
    Check that a local namespace holds lakeFS's marker under the configured root.

    The marker: ``_lakefs/dummy``, or ``dummy`` in old repositories. Without it the GC would be
    looking at the wrong directory and could take someone else's files for garbage.
    """
    try:
        found = storage.exists("_lakefs/dummy") or storage.exists("dummy")
    except Exception as e:
        raise LakeFSGCError(f"cannot read storage namespace {ns!r} ({storage.uri}): {type(e).__name__}: {e}") from e
    if not found:
        where = getattr(storage, "root", None) or storage.uri
        raise LakeFSGCError(
            f"storage namespace {ns!r} has no lakeFS marker (_lakefs/dummy) at {where}: the GC is not looking "
            f"where lakeFS keeps this repository. Check the storage connection (endpoint, bucket) or, for "
            f'local://, the lakeFS connection\'s "local_blockstore_root"; nothing was deleted'
        )
