"""Spark step ``list_committed``: the addresses of every commit to keep.

The commits: lakeFS's ``commits.csv`` (its async prepare) united with the documented retention
walked from the API (:mod:`lakefs_gc.gc.retention`: lakeFS's walk can leave a branch's "HEAD as of
N days ago" out). Then metaranges (executors) -> ranges (executors) -> namespace-relative
addresses, each once, written in one Spark job as address parts in the mark's ``state/committed/``
(read there by ``compute_candidates`` now and by later incremental runs), beside the ids of the
commits and ranges read. Fails closed (hazard H1): an unreadable commits.csv, metarange or range
fails the step.

Incremental (lakefs_gc.gc.flow): only the commits to keep that the chain since the last clean run
has not read (a set difference of commit ids, never commit dates: lakeFS lets a client date a
commit), and of their ranges only those not read before; the addresses the chain read are kept
by ``compute_candidates`` from the chain's ``state/committed/`` folders.
"""

from __future__ import annotations

from collections.abc import Mapping

from lakefs_gc.contract import CommittedResult, StepInputs
from lakefs_gc.errors import ContractError
from lakefs_gc.gc.clock import parse_iso
from lakefs_gc.gc.decision import ADDRESS_SCHEMA
from lakefs_gc.gc.retention import documented_commits
from lakefs_gc.listing import committed
from lakefs_gc.progress import watch
from lakefs_gc.report import formats, layout
from lakefs_gc.spark.addresses import clear, write_parts
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
    st = sref.open()
    base = ctx.base if ctx.flow == "incremental" else None
    if ctx.flow == "incremental" and base is None:
        raise ContractError("an incremental run's context has no base run")
    read_commits, read_ranges = formats.read_read_ids(st, base.read_file) if base else (set(), set())
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
        keep = {c: m for c, m in rows} | lacked
        new = {c: m for c, m in keep.items() if c not in read_commits}
        metarange_ids = sorted({m for m in new.values() if m})
        mr_keys = [committed.relative_key(roots, client.meta_range_location(repo, m)) for m in metarange_ids]
    n = parallelism(spark, ctx)
    all_ranges = sorted(spark.sparkContext.parallelize(mr_keys, partitions(len(mr_keys), n))
                        .mapPartitions(lambda keys: _metarange_ranges(sref, keys)).distinct(n).collect())
    to_read = [r for r in all_ranges if r not in read_ranges]
    range_ids = spark.sparkContext.parallelize(to_read, partitions(len(to_read), n))
    state = layout.state_committed_dir(inputs.mark_id())
    clear(sref, state)  # what an earlier attempt left
    with watch(spark, "list_committed", "ranges read", total=len(to_read)) as ranges_read:
        addresses = range_ids.mapPartitions(lambda ids: _range_addresses(sref, lakefs, repo, ids, ranges_read))
        count, _, kept = write_parts(spark.createDataFrame(addresses, ADDRESS_SCHEMA), sref, state, n, distinct=True)
    read_file = layout.state_read_file(inputs.mark_id())
    formats.write_read_ids(st, read_file, read_commits | set(keep), read_ranges | set(all_ranges))
    return CommittedResult(committed_dir=kept, commits_csv=csv_loc, active_commits=len(rows),
                           metaranges=len(metarange_ids), ranges=len(to_read), committed_addresses=count,
                           documented_commits=len(documented), commits_lakefs_lacked=len(lacked),
                           new_commits=len(new), ranges_known=len(all_ranges) - len(to_read),
                           read_file=read_file)
