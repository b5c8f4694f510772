"""
Spark step ``list_slices``: every object of the namespace that GC may consider, older than the cutoff.

Written as Parquet (address, size, last_modified_ms, checksum) under the work location.

Slices (``data/<slice>/``) are listed in parallel, one task per group of slices; a slice whose
descending xid says it was created after the cutoff is skipped unlisted (reference 2.2). Legacy
objects at the namespace root (older repositories keep every object there) are listed in parallel
too, by key range; ``_lakefs/`` and the ``dummy`` marker are never listed.

Incremental (lakefs_gc.gc.flow): only the slices created since the newest one the base run
listed, and that one again; never the root or loose objects under ``data/`` (clean runs only).

From an inventory (``listing_source: inventory``, clean runs; :mod:`lakefs_gc.listing.inventory`):
the newest complete inventory's rows under ``data/``, in the slices created before its T_inv, and
LIST for the rest (the slices created after T_inv, the root); the same listing, so nothing after
this step changes. No usable inventory refuses the run (nothing deleted), or, with
``inventory_fallback: list``, lists as above and records why. An incremental run lists by LIST
(only its new slices: an inventory adds nothing), saying so when the inventory was asked for.

Where the listing runs is the engine's choice: Spark tasks, or, for a namespace of few objects
(an inventory of few bytes) and a local work location, the Airflow task itself, without Spark
(:mod:`lakefs_gc.engine`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lakefs_gc.contract import RunContext, SlicesResult, StepInputs
from lakefs_gc.lakefs import xid
from lakefs_gc.listing import inventory, slices
from lakefs_gc.report import layout
from lakefs_gc.spark.runtime import StorageRef, cutoff_seconds

if TYPE_CHECKING:
    from lakefs_gc.engine import Engine
    from lakefs_gc.engine.protocol import ListingTask


def _plan(
    ctx: RunContext, sref: StorageRef
) -> tuple[float, bool, str | None, list[str], list[str], int, list[ListingTask]]:
    cutoff_s = cutoff_seconds(ctx)
    incremental = ctx.flow == "incremental" and ctx.base is not None
    since = ctx.base.last_slice if incremental and ctx.base is not None else None
    to_list, skipped, before = slices.plan_slices(sref.open(), cutoff_s, since)
    return cutoff_s, incremental, since, to_list, skipped, before, slices.listing_tasks(to_list, root=not incremental)


def _result(
    out_dir: str,
    to_list: list[str],
    skipped: list[str],
    before: int,
    since: str | None,
    incremental: bool,
    count: int,
    nbytes: int,
) -> SlicesResult:
    xids = [s for s in (p[len("data/") :].rstrip("/") for p in to_list) if xid.is_xid(s)]
    return SlicesResult(
        listed_dir=out_dir,
        first_slice=min(xids) if xids else (since or ""),
        slices_listed=len(to_list),
        slices_skipped=len(skipped),
        listed_objects=count,
        listed_bytes=nbytes,
        slices_before_base=before,
        root_listed=not incremental,
    )


def run(engine: Engine[Any, Any], inputs: StepInputs, environ: Mapping[str, str] | None = None) -> SlicesResult:
    """
    List the slices on ``engine`` (Spark tasks, or this process for few objects), or read them from an inventory.

    An engine that cannot list them raises :class:`lakefs_gc.engine.NeedsSpark` before writing
    anything; an inventory that cannot serve refuses the run
    (:class:`~lakefs_gc.inventory.InventoryRefused`), or, with ``inventory_fallback: list``, the
    slices are listed and the result says why.
    """
    ctx = inputs.context
    out_dir = layout.listed_dir(ctx.work_dir)
    cutoff_s, incremental, since, to_list, skipped, before, tasks = _plan(ctx, engine.sref)
    asked = ctx.settings.listing_source == "inventory"
    if asked and incremental:
        source: dict[str, Any] = {"listing_fallback": INCREMENTAL}
    elif asked:
        choice = inventory.choose(ctx, engine.sref)
        source = inventory.summary_fields(choice, ctx.start_time, 0, 0)
        if choice.read is not None:
            top_up = [p for p in to_list if inventory.topped_up(_slice_id(p), choice.read.top_up_after_s)]
            root = [t for t in slices.listing_tasks([], root=True) if t[0] != "data/"]  # loose data/: the inventory's
            count, nbytes, rows, deferred = engine.read_inventory_into(
                out_dir, choice.read, slices.listing_tasks(top_up, root=False) + root, cutoff_s
            )
            result = _result(out_dir, to_list, skipped, before, since, incremental, count, nbytes)
            fields = inventory.summary_fields(choice, ctx.start_time, rows, len(top_up), deferred)
            return dataclasses.replace(result, **fields)
    else:
        source = {}
    count, nbytes = engine.list_into(out_dir, tasks, cutoff_s)
    return dataclasses.replace(_result(out_dir, to_list, skipped, before, since, incremental, count, nbytes), **source)


# why an incremental run asked to list from an inventory lists by LIST (its report says so)
INCREMENTAL = "an incremental run lists only the slices created since its base run, by LIST"


def _slice_id(prefix: str) -> str:
    return prefix[len("data/") :].rstrip("/")
