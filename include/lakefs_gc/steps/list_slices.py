"""
Spark step ``list_slices``: every object of the namespace that GC may consider, older than the cutoff.

Written as Parquet (address, size, last_modified_ms, checksum) under the work location.

Slices (``data/<slice>/``) are listed in parallel, one task per group of slices; a slice whose
descending xid says it was created after the cutoff is skipped unlisted (reference 2.2). Legacy
objects at the namespace root (older repositories keep every object there) are listed in parallel
too, by key range; ``_lakefs/`` and the ``dummy`` marker are never listed.

Incremental (lakefs_gc.gc.flow): only the slices created since the newest one the base run
listed, and that one again; never the root or loose objects under ``data/`` (clean runs only).

A namespace of few objects is listed by the Airflow task itself, without Spark
(:func:`lakefs_gc.steps.run_in_task`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, cast

from lakefs_gc.contract import RunContext, SlicesResult, StepInputs
from lakefs_gc.engine import Engine, LocalEngine, NeedsSpark
from lakefs_gc.lakefs import xid
from lakefs_gc.listing import slices
from lakefs_gc.progress import watch
from lakefs_gc.report import layout
from lakefs_gc.spark.runtime import StorageRef, cutoff_seconds, partitions
from lakefs_gc.storage.native import LISTED_DDL

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

    from lakefs_gc.listing.slices import ListedCounter

# a listing task: (prefix, recursive, after, up_to), as slices.listing_tasks makes them
_Task = tuple[str, bool, str | None, str | None]

TASK_SCHEMA = "prefix string, recursive boolean, after string, up_to string"  # slices.listing_tasks's


def _list(sref: StorageRef, cutoff_s: float, task_batches: Iterable[pa.RecordBatch],
          listed: ListedCounter | None = None) -> Iterator[pa.RecordBatch]:
    """
    Turn the listing tasks of a partition into the listing's batches: mapInArrow's function.

    The tasks come as Arrow batches of prefix, recursive, after, up_to.
    """
    tasks = [tuple(t.values()) for b in task_batches for t in b.to_pylist()]
    return slices.list_batches(sref.open(), cutoff_s, tasks, listed)


def _plan(ctx: RunContext,
          sref: StorageRef) -> tuple[float, bool, str | None, list[str], list[str], int, list[_Task]]:
    cutoff_s = cutoff_seconds(ctx)
    incremental = ctx.flow == "incremental" and ctx.base is not None
    since = ctx.base.last_slice if incremental and ctx.base is not None else None
    to_list, skipped, before = slices.plan_slices(sref.open(), cutoff_s, since)
    return cutoff_s, incremental, since, to_list, skipped, before, slices.listing_tasks(to_list, root=not incremental)


def _result(out_dir: str, to_list: list[str], skipped: list[str], before: int, since: str | None, incremental: bool,
            count: int, nbytes: int) -> SlicesResult:
    xids = [s for s in (p[len("data/"):].rstrip("/") for p in to_list) if xid.is_xid(s)]
    return SlicesResult(listed_dir=out_dir, first_slice=min(xids) if xids else (since or ""),
                        slices_listed=len(to_list), slices_skipped=len(skipped), listed_objects=count,
                        listed_bytes=nbytes, slices_before_base=before, root_listed=not incremental)


def run(engine: Engine, inputs: StepInputs, environ: Mapping[str, str] | None = None) -> SlicesResult:
    """
    List the slices on ``engine``: one Spark task per group of listing tasks, or this process.

    A :class:`LocalEngine` lists into a local work location only, at most its limit of objects;
    else it raises :class:`NeedsSpark` (nothing written).
    """
    ctx = inputs.context
    out_dir = layout.listed_dir(ctx.work_dir)
    if isinstance(engine, LocalEngine):
        folder = slices.local_folder(out_dir)
        if folder is None:
            raise NeedsSpark(f"the work location {out_dir} is not a local folder")
    sref = engine.sref
    cutoff_s, incremental, since, to_list, skipped, before, tasks = _plan(ctx, sref)
    if isinstance(engine, LocalEngine):
        import pyarrow.compute as pc

        batches, count, nbytes = [], 0, 0
        for b in slices.list_batches(sref.open(), cutoff_s, tasks):
            batches.append(b)
            count += len(b)
            if count > engine.limit:
                raise NeedsSpark(f"more than {engine.limit:,} object(s) to list")
            nbytes += pc.sum(b.column(1)).as_py() or 0
        slices.write_listed_here(cast("str", folder), batches)  # a local folder: checked above
        return _result(out_dir, to_list, skipped, before, since, incremental, count, nbytes)

    from pyspark.sql import functions as F

    spark = cast("SparkSession", engine.spark)  # a SparkEngine (a LocalEngine returned above)
    with watch(spark, "list_slices", "objects listed") as listed:
        task_df = spark.createDataFrame(spark.sparkContext.parallelize(tasks, partitions(len(tasks), engine.n * 4)),
                                        TASK_SCHEMA)
        task_df.mapInArrow(lambda ts: _list(sref, cutoff_s, ts, listed), LISTED_DDL) \
            .write.mode("overwrite").parquet(out_dir)
    agg = spark.read.parquet(out_dir).agg(F.count("*").alias("n"), F.sum("size").alias("b")).collect()[0]
    return _result(out_dir, to_list, skipped, before, since, incremental, int(agg["n"]), int(agg["b"] or 0))
