"""Spark step ``list_committed``: the addresses of every commit to keep.

The commits: lakeFS's ``commits.csv`` (its async prepare) united with the documented retention
walked from the API (:mod:`lakefs_gc.gc.retention`: lakeFS's walk can leave a branch's "HEAD as of
N days ago" out). Then metaranges (driver: a few) -> ranges (executors) -> namespace-relative
addresses, written as Parquet (column ``address``) under the work location. Fails closed (hazard
H1): an unreadable commits.csv, metarange or range fails the step.
"""

from __future__ import annotations

from collections.abc import Mapping

from lakefs_gc.contract import CommittedResult, StepInputs
from lakefs_gc.gc.clock import parse_iso
from lakefs_gc.gc.decision import ADDRESS_SCHEMA
from lakefs_gc.gc.retention import documented_commits
from lakefs_gc.listing import committed
from lakefs_gc.progress import watch
from lakefs_gc.report import layout
from lakefs_gc.spark.runtime import LakeFSRef, StorageRef, lakefs_ref, parallelism, partitions, storage_ref


def _metarange_ranges(sref: StorageRef, keys):
    st = sref.open()
    for key in keys:
        for range_id, _ in committed.metarange_range_ids(st, key):
            yield range_id


def _range_addresses(sref: StorageRef, lakefs: LakeFSRef, repo: str, range_ids, ranges_read=None):
    st = sref.open()
    roots = sref.roots
    n = 0
    with lakefs.client() as client:
        for rid in range_ids:
            key = committed.relative_key(roots, client.range_location(repo, rid))
            for address in committed.range_addresses(st, key, roots):
                yield (address,)
            n += 1
    if ranges_read is not None:
        ranges_read.add(n)


def run(spark, inputs: StepInputs, environ: Mapping[str, str] | None = None) -> CommittedResult:
    ctx = inputs.context
    repo = ctx.repository
    sref, lakefs = storage_ref(ctx, environ), lakefs_ref(ctx, environ)
    roots = sref.roots
    out_dir = layout.committed_dir(ctx.work_dir)
    with lakefs.client() as client:
        prep = client.prepare_commits(repo, timeout_seconds=float(ctx.settings.prepare_commits_timeout_seconds))
        csv_loc = prep["gc_commits_location"]
        rows = committed.parse_commits_csv(sref.open().get(committed.relative_key(roots, csv_loc)), csv_loc)
        rules = client.require_gc_rules(repo)
        documented = documented_commits(client, repo, rules.default_retention_days,
                                        {r.branch_id: r.retention_days for r in rules.branches or ()},
                                        parse_iso(ctx.start_time).timestamp())
        listed = {c for c, _ in rows}
        lacked = {c: m for c, m in documented.items() if c not in listed}
        metarange_ids = sorted({m for _, m in rows if m} | {m for m in lacked.values() if m})
        mr_keys = [committed.relative_key(roots, client.meta_range_location(repo, m)) for m in metarange_ids]
    n = parallelism(spark, ctx)
    range_ids = (spark.sparkContext.parallelize(mr_keys, partitions(len(mr_keys), n))
                 .mapPartitions(lambda keys: _metarange_ranges(sref, keys))
                 .distinct(n)
                 .cache())
    num_ranges = range_ids.count()
    with watch(spark, "list_committed", "ranges read", total=num_ranges) as ranges_read:
        addresses = range_ids.mapPartitions(lambda ids: _range_addresses(sref, lakefs, repo, ids, ranges_read))
        spark.createDataFrame(addresses, ADDRESS_SCHEMA).distinct().write.mode("overwrite").parquet(out_dir)
    count = spark.read.parquet(out_dir).count()
    range_ids.unpersist()
    return CommittedResult(committed_dir=out_dir, commits_csv=csv_loc, active_commits=len(rows),
                           metaranges=len(metarange_ids), ranges=num_ranges, committed_addresses=count,
                           documented_commits=len(documented), commits_lakefs_lacked=len(lacked))
