"""
Spark step ``list_committed``: the addresses of every commit to keep.

The commits: lakeFS's ``commits.csv`` (its async prepare) united with the documented retention
walked from the API (:mod:`lakefs_gc.gc.retention`: lakeFS's walk can leave a branch's "HEAD as of
N days ago" out). Then the metaranges and the ranges' locations (driver, a few threads) -> the
ranges (read where the engine places them: executors in one Spark job, the driver when they hold
few entries, or the Airflow task's own process, without Spark, when they hold at most
``spark.in_process_max_keys``: :class:`lakefs_gc.placement.Placement`) -> namespace-relative addresses, each once, written as address parts
in the mark's ``state/committed/`` (read there by ``compute_candidates`` now and by later
incremental runs), beside the ids of the commits and ranges read and the identities (size,
checksum, path) of every entry read, ``state/identities/`` (the staged check's, lakefs_gc.listing.staged).
The commits also include every branch HEAD ``mark_uncommitted`` recorded around lakeFS's mark, and
the commits the config's keep rules name (:mod:`lakefs_gc.gc.keep_rules`: added, never replacing);
a path rule's addresses, found in every range of lakeFS's folder not read for the kept commits, go
to the mark's ``state/kept_by_paths/``, which ``compute_candidates`` subtracts too. Fails closed
(hazard H1): an unreadable commits.csv, metarange or range fails the step.

Incremental (lakefs_gc.gc.flow): only the commits to keep that the chain since the last clean run
has not read (a set difference of commit ids, never commit dates: lakeFS lets a client date a
commit), and of their ranges only those not read before; the addresses the chain read are kept
by ``compute_candidates`` from the chain's ``state/committed/`` folders.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lakefs_gc.contract import CommittedResult, KeptByRule, PartsDir, StepInputs
from lakefs_gc.contract.keep import paths_label
from lakefs_gc.gc import keep_rules
from lakefs_gc.gc.retention import documented_commits
from lakefs_gc.listing import committed
from lakefs_gc.report import formats, layout
from lakefs_gc.spark.runtime import lakefs_ref
from lakefs_gc.timestamps import parse_iso

if TYPE_CHECKING:
    from lakefs_gc.engine import Engine


def run(engine: Engine[Any, Any], inputs: StepInputs, environ: Mapping[str, str] | None = None) -> CommittedResult:
    """
    List the committed addresses on ``engine``: the ranges read where it places them.

    An engine that cannot read them (the task's own, past its bound, or a range that does not say
    how many entries it holds) raises :class:`lakefs_gc.engine.NeedsSpark` before writing anything:
    spark-submit runs the step, and asks lakeFS to prepare its commits again (unless the task
    waited for them before the step: ``inputs.prepared_commits``, read by both).
    """
    ctx = inputs.context
    repo = ctx.repository
    sref, lakefs = engine.sref, lakefs_ref(ctx, environ)
    roots = sref.roots
    st = sref.open()
    base = ctx.incremental_base()
    read_commits, read_ranges = formats.read_read_ids(st, base.read_file) if base else (set(), set())
    unc = inputs.get("mark_uncommitted")
    heads: set[str] = set()
    if unc is not None and unc.heads_file:  # the staged check compares candidates with these HEADs' entries
        before, after = formats.read_heads(st, unc.heads_file)
        heads = set(before.values()) | set(after.values())
    with lakefs.client() as client:
        # lakeFS's commits preparation: awaited before the step (the task deferred to Airflow's triggerer
        # meanwhile, lakefs_gc_airflow.triggers) and handed in, or asked for here
        prepared = inputs.prepared_commits
        if prepared is not None:
            csv_loc = prepared.gc_commits_location
        else:
            timeout = float(ctx.settings.prepare_commits_timeout_seconds)
            csv_loc = client.prepare_commits(repo, timeout_seconds=timeout)["gc_commits_location"]
        rows = committed.parse_commits_csv(st.get(committed.relative_key(roots, csv_loc)), csv_loc)
        rules = client.require_gc_rules(repo)
        documented = documented_commits(
            client,
            repo,
            rules.default_retention_days,
            {r.branch_id: r.retention_days for r in rules.branches or ()},
            parse_iso(ctx.start_time).timestamp(),
        )
        listed = {c for c, _ in rows}
        lacked = {c: m for c, m in documented.items() if c not in listed}
        keep = {c: m for c, m in rows} | lacked
        # a HEAD at the mark that lakeFS's list lacks (moved since, and older than the retention): its
        # entries are what a re-staged entry could equal; read like any commit to keep
        keep |= {c: client.commit_metarange(repo, c) for c in sorted(heads - set(keep))}
        # the config's keep rules (lakefs_gc.gc.keep_rules): their commits join lakeFS's, never replace them
        by_lakefs = dict(keep)
        ruled = keep_rules.rule_commits(client, repo, ctx.keep, parse_iso(ctx.start_time).timestamp())
        for _, commits in ruled:
            keep |= {c: m for c, m in commits.items() if c not in keep}
        new = {c: m for c, m in keep.items() if c not in read_commits}
        metarange_ids = sorted({m for m in new.values() if m})
        # the metaranges on the driver (a Spark job would cost more), only the ranges on executors
        by_metarange = committed.metarange_ranges(client, repo, st, roots, metarange_ids)
        entries = {r: c for ranges in by_metarange.values() for r, c in ranges}
        to_read = [r for r in sorted(entries) if r not in read_ranges]
        range_keys = committed.range_keys(client, repo, roots, to_read)
        all_ranges = sorted(entries)
        tables = keep_rules.table_dir(client, repo, roots) if ctx.keep.paths else ""
    # (a range without its count, 0, says nothing: lakeFS never writes an empty range)
    entries_known = all(entries[r] > 0 for r in to_read)
    # the path rule's tables: every one in lakeFS's folder not read for the kept commits (now or by the chain)
    path_tables = (
        keep_rules.tables_not_read(st, tables, read_ranges | set(all_ranges) | set(by_metarange)) if tables else []
    )
    engine.admit("tables the path rules read", len(path_tables))
    state = layout.state_committed_dir(inputs.mark_id())
    identities = layout.state_identities_dir(inputs.mark_id())
    count, kept, identity_parts = engine.read_ranges(
        range_keys, len(to_read), sum(entries[r] for r in to_read) if entries_known else None, state, identities
    )
    kept_by, paths_dir = _apply_rules(
        engine, inputs, ruled, by_lakefs, by_metarange, dict(zip(to_read, range_keys)), path_tables
    )
    read_file = layout.state_read_file(inputs.mark_id())
    formats.write_read_ids(st, read_file, read_commits | set(keep), read_ranges | set(all_ranges))
    return CommittedResult(
        committed_dir=kept,
        commits_csv=csv_loc,
        active_commits=len(rows),
        metaranges=len(metarange_ids),
        ranges=len(to_read),
        committed_addresses=count,
        documented_commits=len(documented),
        commits_lakefs_lacked=len(lacked),
        new_commits=len(new),
        ranges_known=len(all_ranges) - len(to_read),
        read_file=read_file,
        identity_dir=PartsDir(identities, identity_parts),
        kept_by_rules=kept_by,
        kept_by_paths=paths_dir,
    )


def _apply_rules(
    engine: Engine[Any, Any],
    inputs: StepInputs,
    ruled: list[tuple[str, dict[str, str]]],
    by_lakefs: Mapping[str, str],
    by_metarange: Mapping[str, list[tuple[str, int]]],
    read_keys: Mapping[str, str],
    path_tables: list[str],
) -> tuple[tuple[KeptByRule, ...], PartsDir | None]:
    """
    Return what each keep rule kept, and the path rule's addresses (read on ``engine``).

    The commit rules' commits were read with lakeFS's; recorded for ``explain``: the ranges read
    now that only a rule's commits hold (``read_keys``: range id -> key). The path rule reads
    ``path_tables`` (lakefs_gc.gc.keep_rules.tables_not_read).
    """
    ctx, mark_id = inputs.context, inputs.mark_id()
    st = engine.sref.open()
    lakefs_ranges = {r for m in set(by_lakefs.values()) for r, _ in by_metarange.get(m, ())}
    out, recorded = [], []
    for rule, commits in ruled:
        added = sum(1 for c in commits if c not in by_lakefs)
        out.append(KeptByRule(rule, commits=len(commits), added=added))
        own = {r for m in set(commits.values()) for r, _ in by_metarange.get(m, ())} - lakefs_ranges
        recorded.append((rule, sorted(read_keys[r] for r in own if r in read_keys)))
    kept_paths = None
    if ctx.keep.paths:
        part_dir = keep_rules.paths_dir(mark_id)
        count, parts = keep_rules.read_path_rules(engine, ctx.keep.paths, path_tables, part_dir)
        out.append(KeptByRule(paths_label(ctx.keep.paths), tables=len(path_tables), addresses=count))
        kept_paths = PartsDir(part_dir, parts) if parts else None  # no table to read: no part
    if ctx.keep.active:
        keep_rules.write_rule_ranges(
            st, keep_rules.rules_file(mark_id), recorded, paths_label(ctx.keep.paths) if ctx.keep.paths else None
        )
    return tuple(out), kept_paths
