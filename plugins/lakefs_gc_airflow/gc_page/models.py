"""
The GC page's answers as types: the response models of :mod:`lakefs_gc_airflow.gc_page.app`'s routes.

They describe the JSON the routes return (its OpenAPI: ``app.openapi()``), as Airflow's own UI
plugins describe theirs; the page's TypeScript types (``www/src/types.ts``) are checked against that
description by ``tests/airflow/gc_page/test_gc_page_api_types.py``. The routes serialize with
``response_model_exclude_unset``: a field a route leaves out stays out, a None it sets is null. A
field that is left out but never null is :func:`absent` (neither required nor nullable). A run
record and the space document keep every field they have beyond the ones named here
(``extra="allow"``): ``summary.json``'s and ``space.json``'s other fields reach the page as before.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def absent() -> Any:
    """Declare a field the answer may leave out, never null (unset: not serialized; no default in the schema)."""
    return Field(default=None, json_schema_extra=_no_default)


class _Open(BaseModel):
    """A document with fields of its own beyond the ones the page reads: kept and sent as they are."""

    model_config = ConfigDict(extra="allow")


# /api/repositories


class Repo(BaseModel):
    """A configured repository whose DAG the user may read."""

    repository: str
    dag_id: str
    schedule: str | None
    lakefs_conn_id: str
    storage_conn_id: str | None


class Removed(BaseModel):
    """A discovered repository gone from lakeFS: its DAG is no longer built (its reports stay)."""

    repository: str
    dag_id: str
    lakefs_conn_id: str
    removed_at: str


class FleetReader(BaseModel):
    """What a run of one repository would list from, as the discovery refresh found it: an inventory, or why none."""

    inventory_id: str | None
    inventory_time: str | None
    reason: str | None


class FleetInventory(BaseModel):
    """
    One inventory location the entries read, as the discovery refresh found it (``discovered.InventoryRecord``).

    The newest inventory there that verified for a repository reading it (null: for none), whether
    it verified for every one (else ``reason``: for which not, and why), and each reader's own outcome.
    """

    location: str
    name: str
    storage_conn_id: str | None
    checked_at: str
    inventory_id: str | None
    inventory_time: str | None
    verified: bool
    reason: str | None
    repositories: dict[str, FleetReader]


class OrphanedNamespace(BaseModel):
    """
    A storage namespace whose repository is gone from lakeFS, as the discovery refresh recorded it (``orphans.Orphan``).

    Its size by a bounded listing (``complete`` false: at least that; null: ``size_problem`` says
    why); ``lakefs-gc reclaim-namespace`` removes it after the grace period.
    """

    namespace: str
    lakefs_conn_id: str
    repository: str
    first_seen: str
    last_seen: str
    orphaned_at: str
    objects: int | None
    bytes: int | None
    complete: bool
    measured_at: str | None
    size_problem: str | None
    held_by: str | None


class ReposAnswer(BaseModel):
    """The repositories and the config's errors; a config that does not read is its error alone."""

    repositories: list[Repo]
    errors: list[str]
    config: str = absent()
    removed: list[Removed] = absent()
    refreshed_at: str | None = None
    inventories: list[FleetInventory] = absent()  # when the refresh recorded some
    orphans: list[OrphanedNamespace] = absent()  # namespaces of repositories gone from lakeFS, when there are


# /api/dags/{dag_id}/runs


class FailureReason(BaseModel):
    """Why a failed run failed: the one line its first failed task left (its XCom ``refusal`` or ``error``)."""

    task_id: str
    refused: bool  # a refusal (a setting to change; no retry), else an error
    reason: str


class DagRun(BaseModel):
    """A run of the repository's DAG in Airflow's database; a failed one with why, when its task said (else null)."""

    run_id: str
    state: str
    run_type: str
    logical_date: str | None
    start_date: str | None
    end_date: str | None
    failed_tasks: list[str]
    reason: FailureReason | None


class Guard(BaseModel):
    """The run's blast-radius guard."""

    max_delete_share: float | None
    max_delete_count: int | None


class RunRules(_Open):
    """The GC rules the run ran under."""

    min_age_seconds: int | None
    effective_min_age_seconds: int | None
    grace_period_seconds: int | None
    confirm_after_seconds: int | None
    active_commits: int | None
    staged_check: str | None


class RunListing(BaseModel):
    """
    What a run asked to list from an inventory listed from (``runs.listing``); null for a run that listed by LIST as always.

    ``source`` ``inventory``: the inventory's fields (``inventory_deferred`` null in a report written
    before it was counted); ``list``: ``fallback``, why the inventory was not used.
    """

    source: str
    inventory_id: str | None
    inventory_time: str | None
    inventory_age_seconds: int | None
    inventory_rows: int | None
    inventory_files: int | None
    slices_topped_up: int | None
    inventory_deferred: int | None
    fallback: str | None


class Freeing(BaseModel):
    """What a delete does to the bill on the run's store (the sweep's ``freeing``): now, later (``on``) or never."""

    when: str
    on: str | None
    how: str
    detail: str


class FreedOn(BaseModel):
    """Bytes the run deleted that the store frees on one date."""

    on: str
    bytes: int


class RunCost(BaseModel):
    """
    What a run's storage requests cost and what the bytes it freed now save a month (issue 54).

    ``requests``: by kind, every store's together; US dollars at the prices of ``prices_as_of``
    (the public list prices of that date, or ``config``).
    """

    requests: dict[str, int]
    request_cost_usd: float
    saving_bytes: int
    monthly_saving_usd: float
    prices_as_of: str


class Run(_Open):
    """
    One GC run (``runs.run_record`` merged with its DAG run, ``runs.merge``).

    A report that does not read has its ``problem`` and no figures; a DAG run with no report only
    its ids, ``report`` None.
    """

    mark_id: str | None
    sweep: str | None
    airflow_run_id: str | None = None
    start_time: str | None = None
    cutoff_time: str | None = None
    mode: str | None = None
    flow: str | None = None
    dry_run: bool = absent()
    success: bool = absent()
    unsafe_min_age_override: bool = absent()
    held_back_until: str | None = None
    held_back_reason: str | None = None
    dead_letters: str | None = None
    delete_skipped: str | None = None
    guard: Guard = absent()
    rules: RunRules = absent()
    report: str | None
    problem: str | None
    rows: list[tuple[str, str]]
    seconds: dict[str, float]
    listed_objects: int | None = None
    candidates: int | None = None
    to_delete: int | None = None
    deleted: int | None = None
    already_gone: int | None = None
    held_back: int | None = None
    delete_failed: int | None = None
    reclaimed_bytes: int | None = None
    # reclaimed_bytes as the bill sees them (a sweep whose store said; the bytes null where not known)
    freeing: Freeing | None = None
    freed_now_bytes: int | None = None
    freed_later: list[FreedOn] | None = None
    still_billed_bytes: int | None = None
    candidate_bytes: int | None = None
    space_file: str | None = None
    listing: RunListing | None = None  # a run asked to list from an inventory
    cost: RunCost | None = None  # a run whose steps counted their requests
    would_delete: int = absent()  # a dry run's
    dag_run: DagRun | None


class Amount(BaseModel):
    """Objects and their bytes."""

    objects: int
    bytes: int


class HeldBy(BaseModel):
    """What one branch holds, per class: alone, and shared with other branches."""

    alone: dict[str, Amount]
    shared: dict[str, Amount]


class Attribution(_Open):
    """The namespace's objects by what holds them (``Attribution.as_dict``)."""

    total: Amount
    classes: dict[str, Amount]
    branches: dict[str, HeldBy]
    tags: dict[str, Amount]
    sharing: str


class SpaceRules(BaseModel):
    """The retention rules the attribution ran under: the default and per branch, in days."""

    default_days: int
    branches: dict[str, int]


class StaleBranch(BaseModel):
    """A branch whose HEAD is older than ``stale_branch_days``, and what it alone holds."""

    branch: str
    head_age_days: float
    alone: Amount


class SpaceDoc(_Open):
    """The newest run's ``space.json`` (attribute_space) with its ids; one that does not read is its ``problem``."""

    mark_id: str
    airflow_run_id: str | None
    problem: str | None
    version: int = absent()
    repository: str = absent()
    computed_at: str = absent()
    cutoff: str = absent()
    rules: SpaceRules = absent()
    stale_branch_days: int = absent()
    stale: list[StaleBranch] = absent()
    attribution: Attribution = absent()


class RunsAnswer(BaseModel):
    """
    A repository's GC runs, newest first; ``space`` only when its namespace reads (``error`` None).

    ``grace_period_seconds``: lakeFS's grace period, as lakeFS answers now, else as the newest report
    recorded it (``grace_period_source`` says which), else null; the trigger form warns below it.
    ``inventory``: for a repository that lists from an inventory, what the discovery refresh last
    found at its location (left out when it recorded nothing).
    """

    repository: str
    dag_id: str
    namespace: str | None
    error: str | None
    version: str
    grace_period_seconds: int | None
    grace_period_source: str | None
    space: SpaceDoc | None = None
    inventory: FleetInventory = absent()  # the refresh's record of the inventory the repository reads
    runs: list[Run]
    steps: list[str]


# /api/dags/{dag_id}/explain, /api/dags/{dag_id}/whatif


class ExplainAnswer(BaseModel):
    """``lakefs-gc explain``'s answer: the verdict on one address, its reason and the facts found."""

    target: str
    address: str
    note: str | None
    verdict: str
    reason: str
    fates: list[str]
    lines: list[str]


class WhatIfAnswer(BaseModel):
    """``lakefs-gc whatif``'s answer: what the next run would free after the change."""

    change: str
    lines: list[str]
