"""
The holders of each address of a namespace, read in one process or on Spark's executors.

Commits -> their holders (:func:`lakefs_gc.gc.attribution.commit_holders`), metaranges -> ranges,
each range read once with the union of its commits' holders, each address the union of its ranges';
the staged addresses of every branch through lakeFS's API (:func:`lakefs_gc.listing.uncommitted.api_staged`).
Then the listed objects are summed by holder set and by what an unreferenced one is at this run.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakefs_gc.gc.attribution import (
    PYTHON_FATES,
    STAGED,
    TAG,
    Attribution,
    Change,
    Holder,
    Holders,
    Space,
    attribute,
    bit_numbers,
    commit_holders,
    fate,
)
from lakefs_gc.gc.retention import commit_graph, lakefs_walk
from lakefs_gc.listing.committed import (
    in_threads,
    metarange_ranges,
    parse_commits_csv,
    range_addresses,
    range_keys,
    relative_key,
)
from lakefs_gc.listing.uncommitted import api_staged
from lakefs_gc.spark.addresses import NeedsSpark
from lakefs_gc.spark.runtime import partitions

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from pyspark.sql import Column, DataFrame, SparkSession

    from lakefs_gc.contract.keep import KeepRules
    from lakefs_gc.lakefs.client import LakeFSClient
    from lakefs_gc.spark.runtime import StorageRef
    from lakefs_gc.storage.base import Storage


def range_masks(
    client: LakeFSClient,
    repo: str,
    st: Storage,
    roots: tuple[str, ...],
    holders_of: Mapping[str, set[Holder]],
    holders: Holders,
) -> dict[str, int]:
    """{range key in the namespace: the union of its commits' holders} of every range the commits of ``holders_of`` read."""
    commits = sorted(holders_of)
    metaranges = in_threads(lambda c: client.commit_metarange(repo, c), commits)
    by_metarange: dict[str, int] = {}
    for c, m in zip(commits, metaranges):
        if m:
            by_metarange[m] = by_metarange.get(m, 0) | holders.mask(holders_of[c])
    by_range: dict[str, int] = {}
    for m, ranges in metarange_ranges(client, repo, st, roots, sorted(by_metarange)).items():
        for r, _ in ranges:
            by_range[r] = by_range.get(r, 0) | by_metarange[m]
    rids = sorted(by_range)
    return {k: by_range[r] for r, k in zip(rids, range_keys(client, repo, roots, rids))}


def address_masks(
    client: LakeFSClient,
    repo: str,
    st: Storage,
    roots: tuple[str, ...],
    holders_of: Mapping[str, set[Holder]],
    holders: Holders,
) -> dict[str, int]:
    """{address: its holder set} of every address the commits of ``holders_of`` read (each range read once, here)."""
    return masks_of_ranges(st, roots, range_masks(client, repo, st, roots, holders_of, holders))


def masks_of_ranges(
    st: Storage,
    roots: tuple[str, ...],
    ranges: Mapping[str, int],
    among: Container[str] | None = None,
    limit: int | None = None,
    into: dict[str, int] | None = None,
) -> dict[str, int]:
    """
    {address: the union of its ranges' holder sets} of the ranges ``ranges`` (key -> holder set), read in this process.

    ``among``: only these addresses; ``into``: united into this map (returned); more than ``limit``
    entries in all raise :class:`lakefs_gc.engine.NeedsSpark` (a bounded engine's input).
    """
    out = {} if into is None else into
    keys = sorted(ranges)
    entries = 0
    for k, addresses in zip(keys, in_threads(lambda k: list(range_addresses(st, k, roots)), keys)):
        entries += len(addresses)
        if limit is not None and entries > limit:
            raise NeedsSpark(f"more than {limit:,} entries in the kept commits' ranges")
        mask = ranges[k]
        for a in addresses:
            if among is None or a in among:
                out[a] = out.get(a, 0) | mask
    return out


def staged_masks(by_branch: Mapping[str, Iterable[str]], holders: Holders) -> dict[str, int]:
    """{address: its holder set} of every staged address, by the branches staging it."""
    out: dict[str, int] = {}
    for branch, addresses in by_branch.items():
        bit = holders.bit(Holder(STAGED, branch))
        for a in addresses:
            out[a] = out.get(a, 0) | bit
    return out


def groups(
    listed: Iterable[tuple[str, int, int]],
    masks: Mapping[str, int],
    tag_bits: int,
    deleted: Container[str] | None,
    cutoff_ms: int,
) -> dict[tuple[int, str | None], tuple[int, int]]:
    """
    Objects and bytes by (holder set, what an unreferenced object is): the input of :func:`attribute`.

    ``listed``: (address, size, last-modified ms) of every listed object; ``tag_bits``: the tags'
    holders (which keep nothing); ``deleted``: the candidates this run deletes (or marks, in a dry
    run; None: every unreferenced object older than the cutoff, as a run started now would). What
    each is: :func:`lakefs_gc.gc.attribution.fate`.
    """
    out: dict[tuple[int, str | None], list[int]] = {}
    for address, size, modified in listed:
        mask = masks.get(address, 0)
        state = fate(
            PYTHON_FATES, bool(mask & ~tag_bits), None if deleted is None else address in deleted, modified, cutoff_ms
        )
        acc = out.setdefault((mask, state), [0, 0])
        acc[0] += 1
        acc[1] += size
    return {k: (v[0], v[1]) for k, v in out.items()}


def attribute_here(
    client: LakeFSClient,
    repo: str,
    st: Storage,
    roots: tuple[str, ...],
    local_root: str | None,
    listed: Iterable[tuple[str, int, int]],
    deleted: Container[str] | None,
    cutoff_ms: int,
    default_days: int,
    branch_days: Mapping[str, int],
    now: float,
) -> tuple[Attribution, Holders]:
    """Return the attribution of a namespace, every input read in this process (a small repository, the tests)."""
    holders = Holders()
    masks = address_masks(
        client, repo, st, roots, commit_holders(client, repo, default_days, branch_days, now), holders
    )
    for a, m in staged_masks(api_staged(client, repo, roots, local_root).by_branch, holders).items():
        masks[a] = masks.get(a, 0) | m
    tag_bits = holders.mask(h for h in holders.holders if h.kind == TAG)
    summed = groups(listed, masks, tag_bits, deleted, cutoff_ms)
    return attribute(((mask, state, n, b) for (mask, state), (n, b) in summed.items()), holders), holders


COMMIT = "commit"  # a what-if's holders: each kept commit its own


@dataclass(frozen=True)
class WhatIf:
    """What the next run would free after a change, and how its kept commits were predicted."""

    change: Change
    freed: Space
    kept_before: int  # commits the GC keeps now: the documented windows and lakeFS's commits.csv
    kept_after: int  # after the change: the documented windows and lakeFS's walk, predicted
    model_differs: int  # commits where the walk predicted on today's graph differs from lakeFS's list
    held_by_rules: Space | None = None  # what the config's keep rules hold that the change would free (none: no rule)


def lakefs_kept(client: LakeFSClient, repo: str, st: Storage, roots: tuple[str, ...], timeout: float) -> set[str]:
    """Return the commits lakeFS's ``commits.csv`` lists now (it is asked to prepare them)."""
    prep = client.prepare_commits(repo, timeout_seconds=timeout)
    loc = prep["gc_commits_location"]
    return {c for c, _ in parse_commits_csv(st.get(relative_key(roots, loc)), loc)}


def whatif_here(
    client: LakeFSClient,
    repo: str,
    st: Storage,
    roots: tuple[str, ...],
    local_root: str | None,
    listed: Iterable[tuple[str, int, int]],
    cutoff_ms: int,
    default_days: int,
    branch_days: Mapping[str, int],
    now: float,
    change: Change,
    collect: set[str] | None = None,
    lakefs_list: set[str] | None = None,
    keep: KeepRules | None = None,
) -> WhatIf:
    """
    Return what the next run would free after ``change``, nothing deleted: every input read in this process.

    The objects old enough (modified before ``cutoff_ms``) that a kept commit or a staged entry
    holds now and none would after the change. Kept now: the documented windows and lakeFS's list
    (``lakefs_list``, else asked for); after: the documented windows under the changed rules and
    lakeFS's walk predicted on the commit graph (:func:`lakefs_gc.gc.retention.lakefs_walk`: a
    deleted branch's HEAD becomes a dangling leaf, kept for the default rule's days), where it
    differs from lakeFS's list today, lakeFS's list taken as it is (walks from commits the API
    cannot list). The ranges of both sets read once, each commit its own holder. ``collect``: the
    addresses freed, added to it. ``keep``: the config's keep rules, which hold what they hold
    before and after (a deleted branch's commits leave its branch rules): counted apart, never freed.
    """
    branches = dict(client.branches(repo, show_hidden=True))
    csv_now = lakefs_list if lakefs_list is not None else lakefs_kept(client, repo, st, roots, 1200.0)
    nodes = commit_graph(client, repo, branches.values(), csv_now)
    model_now = lakefs_walk(nodes, branches, default_days, branch_days, now)
    before = set(commit_holders(client, repo, default_days, branch_days, now, tags=False)) | csv_now
    after_default, after_days = change.rules(default_days, branch_days)
    after_branches = {b: h for b, h in branches.items() if b != change.delete_branch}
    after = set(commit_holders(client, repo, after_default, after_days, now, tags=False, without=change.delete_branch))
    # lakeFS walks from dangling commits the API cannot list (an expired branch HEAD's chain can
    # still keep a newer commit's parent): what its list has beyond the predicted walk stays kept
    after |= (lakefs_walk(nodes, after_branches, after_default, after_days, now) | (csv_now - model_now)) - (
        model_now - csv_now
    )
    by_rules, by_paths = _rules_hold(client, repo, st, roots, keep, now, change.delete_branch)
    holders = Holders()
    masks = address_masks(client, repo, st, roots, {c: {Holder(COMMIT, c)} for c in before | after | by_rules}, holders)
    kept_before = holders.mask(Holder(COMMIT, c) for c in before)
    kept_after = holders.mask(Holder(COMMIT, c) for c in after)
    kept_by_rules = holders.mask(Holder(COMMIT, c) for c in by_rules)
    held = Space() if keep is not None and keep.active else None
    staged = api_staged(client, repo, roots, local_root)
    staged_before = staged.addresses
    staged_after = frozenset().union(*(a for b, a in staged.by_branch.items() if b != change.delete_branch))
    freed = Space()
    for address, size, modified in listed:
        if modified >= cutoff_ms:
            continue
        mask = masks.get(address, 0)
        if (mask & kept_before or address in staged_before) and not (mask & kept_after or address in staged_after):
            if held is not None and (mask & kept_by_rules or address in by_paths):
                held.add(1, size)
                continue
            freed.add(1, size)
            if collect is not None:
                collect.add(address)
    return WhatIf(change, freed, len(before), len(after), len(model_now ^ csv_now), held)


def _rules_hold(
    client: LakeFSClient,
    repo: str,
    st: Storage,
    roots: tuple[str, ...],
    keep: KeepRules | None,
    now: float,
    without: str | None,
) -> tuple[set[str], set[str]]:
    """Return the commits the keep rules keep after the change (``without`` a deleted branch), and the path rule's addresses."""
    from lakefs_gc.gc import keep_rules

    if keep is None or not keep.active:
        return set(), set()
    commits = {c for _, cs in keep_rules.rule_commits(client, repo, keep, now, without) for c in cs}
    if not keep.paths:
        return commits, set()
    tables = keep_rules.tables_not_read(st, keep_rules.table_dir(client, repo, roots), set())
    return commits, keep_rules.matching_addresses(st, roots, tables, keep.paths)


WORD = 62  # set numbers per long (bits 0..61: never the sign bit)


class _SparkFates:
    """:class:`lakefs_gc.gc.attribution.FateOps` as Spark columns."""

    def not_older(self, modified: Column, cutoff_ms: int) -> Column:
        from pyspark.sql import functions as F

        return modified.isNull() | (modified >= F.lit(cutoff_ms))

    def first(self, cases: Sequence[tuple[Column, str | None]], otherwise: str) -> Column:
        from pyspark.sql import functions as F

        (holds, value), *rest = cases
        out = F.when(holds, F.lit(value))
        for holds, value in rest:
            out = out.when(holds, F.lit(value))
        return out.otherwise(F.lit(otherwise))


def _range_sets(sref: StorageRef, batches: Iterable[Any]) -> Iterator[Any]:
    """(address, holder-set number) of every entry of the ranges in ``batches`` (key, set_id): executors, Arrow."""
    import pyarrow as pa

    st, roots = sref.open(), sref.roots
    for batch in batches:
        for key, set_id in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
            addresses = list(range_addresses(st, key, roots))
            if addresses:
                yield pa.RecordBatch.from_arrays(
                    [pa.array(addresses, pa.string()), pa.array([set_id] * len(addresses), pa.int32())],
                    names=["address", "set_id"],
                )


def spark_groups(
    spark: SparkSession,
    sref: StorageRef,
    ranges: Mapping[str, int],
    staged: Mapping[str, int],
    listed: DataFrame,
    deleted: DataFrame | None,
    cutoff_ms: int,
    tag_bits: int,
    n: int,
) -> dict[tuple[int, str | None], tuple[int, int]]:
    """
    Objects and bytes by (holder set, what an unreferenced object is), as :func:`groups`, on Spark's executors.

    The ranges read by executors into Arrow, each entry with the number of its range's holder set
    (the distinct sets of ranges and staged addresses are few: numbered on the driver); then one
    shuffle by address over the entries, the staged addresses, the listing and the deleted list
    together: an address's numbers (bits of a few longs, united by ``bit_or``), size, time and fate;
    only the sums by (numbers, fate) are collected, and the driver unites each group's numbers into
    its holder set. Bounded memory on
    the driver, and any number of branches and tags.

    ``ranges``: range key -> its holder set; ``staged``: address -> the branches staging it;
    ``listed``: columns ``address``, ``size``, ``last_modified_ms``; ``deleted``: column ``address``,
    the candidates this run deletes (None: every unreferenced object older than the cutoff).
    """
    from pyspark.sql import functions as F

    sets = sorted(set(ranges.values()) | set(staged.values()))
    number = {m: i for i, m in enumerate(sets)}
    items = sorted((k, number[m]) for k, m in ranges.items())
    entries_schema = "address string, set_id int"
    keys = spark.createDataFrame(items, "key string, set_id int").repartition(partitions(len(items), n))
    held = keys.mapInArrow(lambda batches: _range_sets(sref, batches), entries_schema).unionByName(
        spark.createDataFrame([(a, number[m]) for a, m in staged.items()], entries_schema)
    )
    # an address's set numbers as bits of a few longs (WORD bits each): bit_or aggregates them by
    # hash (collect_set would sort every address), and the groups are keyed by plain longs
    words = max(1, -(-len(sets) // WORD))
    bit = F.expr(f"shiftleft(CAST(1 AS BIGINT), set_id % {WORD})")
    zero = F.lit(0).cast("long")
    word_cols = [
        F.when((F.col("set_id") / WORD).cast("int") == w, bit).otherwise(zero).alias(f"w{w}") for w in range(words)
    ]
    none_long = F.lit(None).cast("long")
    rows = held.select(
        "address", *word_cols, none_long.alias("size"), none_long.alias("last_modified_ms"), F.lit(0).alias("deleted")
    ).unionByName(
        listed.select(
            "address",
            *[zero.alias(f"w{w}") for w in range(words)],
            F.col("size").cast("long").alias("size"),
            F.col("last_modified_ms").cast("long").alias("last_modified_ms"),
            F.lit(0).alias("deleted"),
        )
    )
    if deleted is not None:
        rows = rows.unionByName(
            deleted.select(
                "address",
                *[zero.alias(f"w{w}") for w in range(words)],
                none_long.alias("size"),
                none_long.alias("last_modified_ms"),
                F.lit(1).alias("deleted"),
            )
        )
    # keyed by a 64-bit hash of the address, not the string: a smaller shuffle (two addresses of one
    # namespace sharing a hash, about one in 10^7 at 10,000,000 objects, would share their holders
    # in this report; nothing is decided by it)
    per_address = rows.groupBy(F.xxhash64("address").alias("key")).agg(
        *[F.bit_or(f"w{w}").alias(f"w{w}") for w in range(words)],
        F.max("size").alias("size"),
        F.max("last_modified_ms").alias("last_modified_ms"),
        F.max("deleted").alias("deleted"),
    )
    objects = per_address.where(F.col("size").isNotNull())  # the listed ones
    ref_words = [0] * words
    for m in sets:
        if m & ~tag_bits:
            ref_words[number[m] // WORD] |= 1 << (number[m] % WORD)
    referenced = F.lit(False)
    for w, ref in enumerate(ref_words):
        if ref:
            referenced = referenced | ((F.col(f"w{w}").bitwiseAND(F.lit(ref).cast("long"))) != 0)
    state = fate(
        _SparkFates(),
        referenced,
        None if deleted is None else F.col("deleted") == 1,
        F.col("last_modified_ms"),
        cutoff_ms,
    )
    summed = (
        objects.withColumn("state", state)
        .groupBy(*[f"w{w}" for w in range(words)], "state")
        .agg(F.count(F.lit(1)).alias("objects"), F.sum("size").alias("bytes"))
        .collect()
    )
    out: dict[tuple[int, str | None], tuple[int, int]] = {}
    for row in summed:
        mask = 0
        for w in range(words):
            for b in bit_numbers(row[f"w{w}"]):
                mask |= sets[w * WORD + b]
        key = (mask, row["state"])
        o, b = out.get(key, (0, 0))
        out[key] = (o + int(row["objects"]), b + int(row["bytes"] or 0))
    return out
