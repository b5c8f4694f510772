"""
Spark step ``list_committed``: the addresses of every commit to keep.

The commits: lakeFS's ``commits.csv`` (its async prepare) united with the documented retention
walked from the API (:mod:`lakefs_gc.gc.retention`: lakeFS's walk can leave a branch's "HEAD as of
N days ago" out). Then the metaranges and the ranges' locations (driver, a few threads) -> the
ranges (executors in one Spark job; the driver itself when they hold few entries,
``DRIVER_READ_MAX_ENTRIES``; or the Airflow task's own process, without Spark, when they hold at most
``spark.in_process_max_keys``: :func:`lakefs_gc.steps.run_in_task`) -> namespace-relative addresses, each once, written as address parts
in the mark's ``state/committed/`` (read there by ``compute_candidates`` now and by later
incremental runs), beside the ids of the commits and ranges read and the identities (size,
checksum, path) of every entry read, ``state/identities/`` (the staged check's, lakefs_gc.listing.staged).
The commits also include every branch HEAD ``mark_uncommitted`` recorded around lakeFS's mark. Fails closed (hazard H1): an
unreadable commits.csv, metarange or range fails the step.

Incremental (lakefs_gc.gc.flow): only the commits to keep that the chain since the last clean run
has not read (a set difference of commit ids, never commit dates: lakeFS lets a client date a
commit), and of their ranges only those not read before; the addresses the chain read are kept
by ``compute_candidates`` from the chain's ``state/committed/`` folders.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, cast

from lakefs_gc.contract import CommittedResult, PartsDir, StepInputs
from lakefs_gc.engine import Engine, LocalEngine, NeedsSpark
from lakefs_gc.errors import ContractError
from lakefs_gc.gc.retention import documented_commits
from lakefs_gc.listing import committed
from lakefs_gc.progress import watch
from lakefs_gc.report import formats, layout
from lakefs_gc.spark.addresses import clear, write_distinct_parts, write_parts_here
from lakefs_gc.spark.runtime import StorageRef, lakefs_ref, partitions
from lakefs_gc.timestamps import parse_iso

if TYPE_CHECKING:
    from pyspark import Accumulator
    from pyspark.sql import SparkSession

# The ranges to read are read by the driver itself when they hold at most this many entries in all
# (the metaranges say how many): a Spark job's fixed cost (tasks, cold Python workers, a shuffle:
# seconds) is most of the time of a few ranges, e.g. an incremental run's new ones. Above it,
# executors read them.
DRIVER_READ_MAX_ENTRIES = 200_000


def _range_addresses(sref: StorageRef, part_dir: str, index: int, keys: Iterable[str],
                     ranges_read: Accumulator[int] | None = None) -> Iterator[str]:
    """
    Yield the addresses of the ranges at ``keys`` (executors: storage only, no lakeFS client).

    The identities of their entries are written as identity part ``index`` under ``part_dir``.
    """
    st = sref.open()
    roots = sref.roots
    identities: list[tuple[int, str, str]] = []
    n = 0
    for key in keys:
        for address, path, size, checksum in committed.range_entries(st, key, roots):
            identities.append((size, checksum, path))
            if address is not None:
                yield address
        n += 1
    formats.write_identities(st, part_dir + layout.part_name(index), identities)
    if ranges_read is not None:
        ranges_read.add(n)


def run(engine: Engine, inputs: StepInputs, environ: Mapping[str, str] | None = None) -> CommittedResult:
    """
    List the committed addresses on ``engine``: the ranges read by Spark tasks or on this driver.

    A :class:`LocalEngine` reads ranges holding at most its limit of entries, or raises
    :class:`NeedsSpark` when they hold more, or a range does not say how many (nothing was written:
    spark-submit runs the step, and asks lakeFS to prepare its commits again).
    """
    ctx = inputs.context
    repo = ctx.repository
    sref, lakefs = engine.sref, lakefs_ref(ctx, environ)
    roots = sref.roots
    st = sref.open()
    base = ctx.base if ctx.flow == "incremental" else None
    if ctx.flow == "incremental" and base is None:
        raise ContractError("an incremental run's context has no base run")
    read_commits, read_ranges = formats.read_read_ids(st, base.read_file) if base else (set(), set())
    unc = inputs.get("mark_uncommitted")
    heads: set[str] = set()
    if unc is not None and unc.heads_file:  # the staged check compares candidates with these HEADs' entries
        before, after = formats.read_heads(st, unc.heads_file)
        heads = set(before.values()) | set(after.values())
    with lakefs.client() as client:
        prep = client.prepare_commits(repo, timeout_seconds=float(ctx.settings.prepare_commits_timeout_seconds))
        csv_loc = prep["gc_commits_location"]
        rows = committed.parse_commits_csv(st.get(committed.relative_key(roots, csv_loc)), csv_loc)
        rules = client.require_gc_rules(repo)
        documented = documented_commits(client, repo, rules.default_retention_days,
                                        {r.branch_id: r.retention_days for r in rules.branches or ()},
                                        parse_iso(ctx.start_time).timestamp())
        listed = {c for c, _ in rows}
        lacked = {c: m for c, m in documented.items() if c not in listed}
        keep = {c: m for c, m in rows} | lacked
        # a HEAD at the mark that lakeFS's list lacks (moved since, and older than the retention): its
        # entries are what a re-staged entry could equal; read like any commit to keep
        keep |= {c: client.commit_metarange(repo, c) for c in sorted(heads - set(keep))}
        new = {c: m for c, m in keep.items() if c not in read_commits}
        metarange_ids = sorted({m for m in new.values() if m})
        # the metaranges on the driver (a Spark job would cost more), only the ranges on executors
        entries, to_read, range_keys = committed.ranges_to_read(client, repo, st, roots, metarange_ids, read_ranges)
        all_ranges = sorted(entries)
    # (a range without its count, 0, is read by executors: lakeFS never writes an empty range)
    counted = all(entries[r] > 0 for r in to_read)
    here = counted and sum(entries[r] for r in to_read) <= (
        engine.limit if isinstance(engine, LocalEngine) else DRIVER_READ_MAX_ENTRIES)
    if isinstance(engine, LocalEngine) and not here:
        raise NeedsSpark(f"{len(to_read)} range(s) to read hold more than {engine.limit:,} entries, or do not say "
                         f"how many")
    n = engine.n
    state = layout.state_committed_dir(inputs.mark_id())
    identities = layout.state_identities_dir(inputs.mark_id())
    clear(sref, state)  # what an earlier attempt left
    clear(sref, identities)
    if here:
        count, kept = write_parts_here(_range_addresses(sref, identities, 0, range_keys), st, state, n)
        identity_parts = 1
    else:
        spark = cast("SparkSession", engine.spark)  # not here: a SparkEngine (a LocalEngine refused above)
        parts = partitions(len(range_keys), n)
        range_keys_rdd = spark.sparkContext.parallelize(range_keys, parts)
        with watch(spark, "list_committed", "ranges read", total=len(to_read)) as ranges_read:
            addresses = range_keys_rdd.mapPartitionsWithIndex(
                lambda i, keys: _range_addresses(sref, identities, i, keys, ranges_read))
            count, kept = write_distinct_parts(addresses, sref, state, n)
        identity_parts = range_keys_rdd.getNumPartitions()
    read_file = layout.state_read_file(inputs.mark_id())
    formats.write_read_ids(st, read_file, read_commits | set(keep), read_ranges | set(all_ranges))
    return CommittedResult(committed_dir=kept, commits_csv=csv_loc, active_commits=len(rows),
                           metaranges=len(metarange_ids), ranges=len(to_read), committed_addresses=count,
                           documented_commits=len(documented), commits_lakefs_lacked=len(lacked),
                           new_commits=len(new), ranges_known=len(all_ranges) - len(to_read),
                           read_file=read_file, identity_dir=PartsDir(identities, identity_parts))
