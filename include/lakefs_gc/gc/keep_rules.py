"""
The keep rules (:class:`lakefs_gc.contract.KeepRules`) applied: what each adds to what a run keeps.

``tags_days`` and ``branches`` name commits, read from lakeFS's API (its tags; each matching
branch's first-parent log): ``list_committed`` adds them to the commits it keeps, so their ranges'
addresses join the committed set like those of lakeFS's own list.

``paths`` names every address ever committed at a matching logical path. A commit lakeFS expires
may be reachable from no branch or tag any more (a deleted branch's), so the commit log cannot
find them all; the namespace can: lakeFS writes every range of every commit under one folder
(``_lakefs/<id>``, content-addressed, never removed by any GC, lakeFS's or this one), so every
table there that the run did not read for its kept commits is read here and its entries at a
matching path kept. Staged entries need nothing more: every staged address is kept whatever its
path. A table that is neither a range nor a metarange, or cannot be read, fails the step (nothing
is deleted). The cost: the ranges of the whole history, read again each run that has a path rule.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from lakefs_gc.contract.keep import KeepRules, branch_label, matcher
from lakefs_gc.errors import LakeFSGCError
from lakefs_gc.lakefs import graveler
from lakefs_gc.lakefs.sstable import SSTableReader
from lakefs_gc.report import formats, layout

if TYPE_CHECKING:
    from pyspark import Accumulator

    from lakefs_gc.lakefs.client import LakeFSClient
    from lakefs_gc.spark.runtime import StorageRef
    from lakefs_gc.storage import Storage

DAY = 86400
TABLE_NAME = re.compile(r"^[0-9a-f]{64}$")  # a range's or metarange's id: the SHA-256 of its content
NO_TABLE = "0" * 64  # lakeFS answers a table's location without looking it up


def rule_commits(
    client: LakeFSClient, repo: str, rules: KeepRules, now: float, without: str | None = None
) -> list[tuple[str, dict[str, str]]]:
    """
    Return (the rule's name, {commit id: metarange id}) of every rule that keeps commits, in the config's order.

    ``tags_days``: the commit of every tag, created at most N days before ``now`` (for ever: all);
    ``branches``: the first ``last`` commits of the first-parent log of each live branch whose id
    matches (its HEAD first). ``without``: that branch left out, as if deleted (``whatif``).
    """
    out: list[tuple[str, dict[str, str]]] = []
    if rules.tags_days is not None or rules.tags_forever:
        threshold = now - (rules.tags_days or 0) * DAY
        tagged: dict[str, str] = {}
        for _, cid in client.tags(repo):
            if cid and cid not in tagged:
                commit = client.commit_node(repo, cid)
                if rules.tags_forever or float(commit.creation_date) >= threshold:
                    tagged[cid] = commit.meta_range_id or ""
        out.append((rules.tags_label(), tagged))
    for rule in rules.branches:
        match = matcher([rule.pattern])
        last: dict[str, str] = {}
        for branch, head in client.branches(repo):
            if head and match(branch) and branch != without:
                log = client.first_parent_log(repo, head, page=min(rule.last, 1000))
                last.update((c.id, c.meta_range_id or "") for c in itertools.islice(log, rule.last))
        out.append((branch_label(rule), last))
    return out


def table_dir(client: LakeFSClient, repo: str, roots: tuple[str, ...]) -> str:
    """Return the namespace folder lakeFS writes ranges and metaranges to (``_lakefs/``)."""
    from lakefs_gc.listing.committed import relative_key

    key = relative_key(roots, client.range_location(repo, NO_TABLE))
    if not key.endswith("/" + NO_TABLE):
        raise LakeFSGCError(
            f"lakeFS places range {NO_TABLE} at {key!r}, not in a folder of tables: the path rules cannot run"
        )
    return key[: -len(NO_TABLE)]


def tables_not_read(st: Storage, folder: str, read: set[str]) -> list[str]:
    """Return the keys of the tables (ranges, metaranges) in ``folder`` whose id is not in ``read``."""
    out = []
    for o in st.list(folder, recursive=False):
        name = o.key.rsplit("/", 1)[-1]
        if TABLE_NAME.match(name) and name not in read:
            out.append(o.key)
    return sorted(out)


def matching_addresses(st: Storage, roots: tuple[str, ...], keys: Iterable[str], patterns: tuple[str, ...]) -> set[str]:
    """Return the namespace-relative addresses the ranges at ``keys`` hold at a path matching ``patterns`` (metaranges skipped)."""
    match = matcher(patterns)
    found: set[str] = set()
    for key in keys:
        with st.open_input(key) as f, SSTableReader(f, name=st.full_uri(key)) as r:
            kind = graveler.table_type(r)
            if kind == graveler.METARANGES_TYPE:
                continue
            if kind != graveler.RANGES_TYPE:
                raise LakeFSGCError(
                    f"{st.full_uri(key)} is neither a range nor a metarange (type {kind!r}): the path rules "
                    f"cannot tell what it holds. Nothing was deleted; move the file out of lakeFS's folder"
                )
            for block in graveler.iter_range_identities(r):
                for address, address_type, path, _, _ in block:
                    if match(path.decode("utf-8", "surrogateescape")):
                        rel = graveler.normalize_address(address, address_type, roots)
                        if rel is not None:
                            found.add(rel)
    return found


def path_addresses(
    sref: StorageRef,
    patterns: tuple[str, ...],
    part_dir: str,
    items: Iterable[tuple[int, list[str]]],
    progress: Accumulator[int] | None,
) -> Iterator[tuple[int, int]]:
    """
    Write, per item (part index, table keys), the addresses its ranges hold at a path matching ``patterns``.

    As address part ``index`` under ``part_dir`` (empty when none: the folder's parts are counted);
    yield (index, addresses written). Metaranges are skipped; any other table fails (hazard H1).
    """
    st, roots = sref.open(), sref.roots
    for index, keys in items:
        found = matching_addresses(st, roots, keys, patterns)
        formats.write_addresses(st, part_dir + layout.part_name(index), sorted(found))
        if progress is not None:
            progress.add(len(keys))
        yield index, len(found)


def chunks(keys: list[str], n: int) -> list[tuple[int, list[str]]]:
    """Return ``keys`` in at most ``n`` work items (part index, keys), a similar number each."""
    n = max(1, min(n, len(keys)))
    return [(i, keys[i::n]) for i in range(n)] if keys else []


def read_path_rules(engine: Any, patterns: tuple[str, ...], keys: list[str], part_dir: str) -> tuple[int, int]:
    """
    Read the tables ``keys`` on ``engine`` (where it places the work) for the path rules ``patterns``.

    Return (addresses kept, parts written under ``part_dir``, cleared first).
    """
    from lakefs_gc.spark.addresses import clear

    sref = engine.sref
    clear(sref, part_dir)
    items = chunks(keys, engine.n * 4)
    done = engine.map(
        "list_committed: the path rules",
        "tables read",
        items,
        lambda part, progress: path_addresses(sref, patterns, part_dir, part, progress),
        len(items),
        total=len(keys),
    )
    return sum(count for _, count in done), len(items)


def paths_dir(mark_id: str) -> str:
    """Return where a mark keeps the addresses found at the path rule's paths."""
    return layout.state_dir(mark_id) + "kept_by_paths/"


def rules_file(mark_id: str) -> str:
    """Return where a mark records, for ``explain``, the ranges only a commit rule's commits hold."""
    return layout.state_dir(mark_id) + "keep_rules.json"


def write_rule_ranges(st: Storage, key: str, by_rule: list[tuple[str, list[str]]], paths: str | None) -> None:
    """Write :func:`rules_file`: the namespace keys of the ranges only a rule's commits hold, by rule, and the path rule's name."""
    doc = {"rules": [{"rule": r, "ranges": keys} for r, keys in by_rule], "paths": paths}
    st.put(key, json.dumps(doc, indent=1).encode())


def read_rule_ranges(st: Storage, key: str) -> tuple[list[tuple[str, list[str]]], str | None]:
    """Return what :func:`write_rule_ranges` wrote; nothing when the mark had no rule."""
    if not st.exists(key):
        return [], None
    doc = json.loads(st.get(key))
    return [(r["rule"], list(r["ranges"])) for r in doc["rules"]], doc.get("paths")
