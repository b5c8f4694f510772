"""
Spark step ``list_slices``: every object of the namespace that GC may consider, older than the cutoff.

Written as Parquet (address, size, last_modified_ms, checksum) under the work location.

Slices (``data/<slice>/``) are listed in parallel, one task per group of slices; a slice whose
descending xid says it was created after the cutoff is skipped unlisted (reference 2.2). Legacy
objects at the namespace root (older repositories keep every object there) are listed in parallel
too, by key range; ``_lakefs/`` and the ``dummy`` marker are never listed.

Incremental (lakefs_gc.gc.flow): only the slices created since the newest one the base run
listed, and that one again; never the root or loose objects under ``data/`` (clean runs only).

Where the listing runs is the engine's choice: Spark tasks, or, for a namespace of few objects
and a local work location, the Airflow task itself, without Spark (:mod:`lakefs_gc.engine`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lakefs_gc.contract import RunContext, SlicesResult, StepInputs
from lakefs_gc.lakefs import xid
from lakefs_gc.listing import slices
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
    List the slices on ``engine``: Spark tasks, or this process for few objects.

    An engine that cannot list them raises :class:`lakefs_gc.engine.NeedsSpark` before writing anything.
    """
    ctx = inputs.context
    out_dir = layout.listed_dir(ctx.work_dir)
    cutoff_s, incremental, since, to_list, skipped, before, tasks = _plan(ctx, engine.sref)
    count, nbytes = engine.list_into(out_dir, tasks, cutoff_s)
    return _result(out_dir, to_list, skipped, before, since, incremental, count, nbytes)
