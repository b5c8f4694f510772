"""
``lakefs-gc explain``: what the GC decided about one physical address, and why.

From the report (every mark's candidates, its ``deleted/`` list, its sweeps, dead letters and
restores, what it found committed and staged, its cutoff) and, when lakeFS is reachable, from the
repository as it is now (the commits the newest mark's ``commits.csv`` keeps, and which of them
reference the address; branch HEADs and the retention rules; the tags' commits, which lakeFS's GC
does not keep as such, treeverse/lakeFS#7621; the staged entries of every branch).

The answer is a list of facts (label, text) and one verdict line: the fate in the newest mark that
saw the address, with the reason a person can act on. A logical path its ref no longer reads is
explained by the address it had in the newest commit that had it (:mod:`lakefs_gc.path_history`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from lakefs_gc.path_history import DEFAULT_MAX_COMMITS, PathNeverOnRef
from lakefs_gc.report import formats, layout
from lakefs_gc.report.marks import candidate_parts, iter_marks, parquet_parts

if TYPE_CHECKING:
    from lakefs_gc.lakefs.client import LakeFSClient
    from lakefs_gc.report.run_summary import RunSummary
    from lakefs_gc.storage.base import Storage

KEPT_HEAD = "kept: in a branch HEAD"
KEPT_COMMIT = "kept: in a commit lakeFS's rules retain"
KEPT_BY_RULE = "kept by the rule"  # a keep rule of the config (lakefs_gc.gc.keep_rules), its name follows
KEPT_STAGED = "kept: staged on a branch"
KEPT_NEW = "kept: newer than the cutoff"
COLLECTED = "deleted"
RESTORED = "deleted, then restored"  # lakefs-gc restore brought it back
HELD_BACK = "held back"
CANDIDATE = "a candidate, not yet swept"
TAG_ONLY = "only a tag's commit references it"  # lakeFS's GC keeps no commit for a tag
UNKNOWN = "no mark saw it"


@dataclass
class Explanation:
    """What the GC decided about one address, and why: the verdict, its reason and the facts found."""

    address: str  # namespace-relative key
    verdict: str = UNKNOWN
    reason: str = ""
    facts: list[tuple[str, str]] = field(default_factory=list)
    fates: list[str] = field(default_factory=list)  # every verdict-like finding (for tests and the page)

    def add(self, label: str, text: str) -> None:
        self.facts.append((label, text))

    def lines(self) -> list[str]:
        width = max((len(label) for label, _ in self.facts), default=0)
        return [f"{self.address}: {self.verdict}" + (f" ({self.reason})" if self.reason else "")] + [
            f"  {label.ljust(width)}  {text}" for label, text in self.facts
        ]


def _in_parts(storage: Storage, keys: Iterable[str], address: str, column: str = formats.ADDRESS) -> str | None:
    for k in keys:
        if formats.part_lists(storage, k, address, column):
            return k
    return None


def _by_rule(storage: Storage, mark_id: str, address: str, roots: tuple[str, ...], committed: bool) -> str | None:
    """
    Return the keep rule of mark ``mark_id`` that kept ``address``, by its name; None: none did.

    ``committed``: the mark found it committed (a commit rule's ranges are then read: those only
    the rule's commits held, as the mark recorded them); else the path rule's addresses.
    """
    from lakefs_gc.gc import keep_rules
    from lakefs_gc.listing.committed import range_addresses

    by_rule, paths = keep_rules.read_rule_ranges(storage, keep_rules.rules_file(mark_id))
    if not committed:
        here = paths and _in_parts(storage, parquet_parts(storage, keep_rules.paths_dir(mark_id)), address)
        return paths if here else None
    for rule, keys in by_rule:
        if any(address in set(range_addresses(storage, k, roots)) for k in keys if storage.exists(k)):
            return rule
    return None


def _mark_fate(
    storage: Storage, mark_id: str, summary: RunSummary, address: str, ex: Explanation, roots: tuple[str, ...] = ()
) -> str | None:
    """Return what mark ``mark_id`` decided about ``address``; None when it says nothing of it."""
    cutoff = summary.cutoff_time if summary.cutoff_time is not None else "?"
    deleted_part = _in_parts(storage, parquet_parts(storage, layout.deleted_dir(mark_id)), address)
    if deleted_part is None and _in_parts(storage, candidate_parts(storage, mark_id), address) is None:
        if _in_parts(storage, parquet_parts(storage, layout.state_committed_dir(mark_id)), address):
            ex.add(f"mark {mark_id}", f"found it committed (in a commit it kept); cutoff {cutoff}")
            rule = _by_rule(storage, mark_id, address, roots, committed=True)
            if rule is not None:
                ex.add(f"mark {mark_id}", f"{KEPT_BY_RULE} {rule}: a commit only that rule keeps references it")
                return f"{KEPT_BY_RULE} {rule}"
            return KEPT_COMMIT
        rule = _by_rule(storage, mark_id, address, roots, committed=False)
        if rule is not None:
            ex.add(f"mark {mark_id}", f"{KEPT_BY_RULE} {rule}: a commit of the history has it at such a path")
            return f"{KEPT_BY_RULE} {rule}"
        # every staged address the mark kept (lakeFS's mark, what it lacked, what the staged check
        # kept: state/uncommitted/), else lakeFS's uncommitted mark itself
        staged = parquet_parts(
            storage, layout.uncommitted_dir(summary.run_id if summary.run_id is not None else mark_id)
        ) + ([summary.staged_file] if summary.staged_file else [])
        staged = [k for k in staged if storage.exists(k)]
        if _in_parts(storage, parquet_parts(storage, layout.state_uncommitted_dir(mark_id)), address) or _in_parts(
            storage, staged, address, formats.PHYSICAL_ADDRESS
        ):
            ex.add(f"mark {mark_id}", f"found it staged on a branch (lakeFS's uncommitted mark); cutoff {cutoff}")
            return KEPT_STAGED
        return None
    if deleted_part is None:
        until = summary.held_back_until
        ex.add(
            f"mark {mark_id}",
            f"a candidate (older than the cutoff {cutoff}, referenced by no kept commit and no "
            f"staged entry), held back by delayed confirmation"
            + (f" until {until}" if until else "")
            + (f": {summary.held_back_reason}" if summary.held_back_reason else ""),
        )
        return HELD_BACK
    ex.add(
        f"mark {mark_id}",
        f"a candidate (older than the cutoff {cutoff}, referenced by no kept commit and no "
        f"staged entry), on its deleted/ list ({deleted_part.rsplit('/', 1)[1]})",
    )
    part = layout.part_id(deleted_part)
    swept: str | None = None
    for sdir in storage.list_prefixes(layout.sweeps_dir(mark_id)):
        sweep = sdir.rstrip("/").rsplit("/", 1)[1]
        marker = storage.stat(layout.done_marker(sdir, deleted_part))
        dead = storage.exists(layout.dead_letters_file(sdir, deleted_part)) and formats.part_lists(
            storage, layout.dead_letters_file(sdir, deleted_part), address, "key"
        )
        if dead:
            ex.add(f"  sweep {sweep}", f"failed to delete it (a dead letter of {part}); a later sweep retries")
        elif marker is not None and swept is None:
            when = datetime.fromtimestamp(marker.last_modified, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
            quarantined = storage.exists(layout.quarantine_dir(sdir) + address)
            ex.add(
                f"  sweep {sweep}",
                f"deleted it by {when}" + (" (kept in the sweep's quarantine)" if quarantined else ""),
            )
            swept = sweep
    restorable = summary.restorable
    if swept and restorable is not None:
        ok = restorable.restorable
        ex.add(
            "  restorable",
            (
                "yes" + (f" until {restorable.until}" if restorable.until else "")
                if ok
                else "no"
                if ok is False
                else "unknown"
            )
            + f" ({restorable.detail})",
        )
    restored = False
    for rdir in storage.list_prefixes(layout.restores_dir(mark_id)):
        key = rdir + "outcomes.parquet"
        if storage.exists(key):
            for k, outcome, detail in formats.read_restore_outcomes(storage, key):
                if k == address:
                    ex.add(f"  restore {rdir.rstrip('/').rsplit('/', 1)[1]}", f"{outcome}: {detail}")
                    restored = restored or outcome == "restored"
    return (RESTORED if restored else COLLECTED) if swept else CANDIDATE


def explain(
    storage: Storage,
    address: str,
    roots: tuple[str, ...],
    client: LakeFSClient | None = None,
    repository: str | None = None,
    run: str | None = None,
    max_marks: int = 10,
    path: str | None = None,
) -> Explanation:
    """
    Explain ``address`` (namespace-relative) from the report in ``storage``, and from lakeFS.

    From lakeFS when ``client`` and ``repository`` are given. ``roots``: every URI naming the
    namespace's root (``NamespaceURI.roots``); ``path``: the logical path it was asked by, if any.
    """
    ex = Explanation(address)
    info = storage.stat(address)
    ex.add(
        "storage",
        f"present ({info.size:,} bytes, written {datetime.fromtimestamp(info.last_modified, UTC):%Y-%m-%d %H:%M:%SZ})"
        if info
        else "not present",
    )
    marks = [
        (m, s)
        for m, s, _ in iter_marks(storage)
        if s is not None and (run is None or m == run or s.airflow_run_id == run)
    ]
    marks.sort(key=lambda ms: str(ms[1].start_time if ms[1].start_time is not None else ""), reverse=True)
    decided: tuple[str, str] | None = None
    for mark_id, summary in marks[:max_marks]:
        fate = _mark_fate(storage, mark_id, summary, address, ex, roots)
        if fate is not None:
            ex.fates.append(fate)
            decided = decided or (fate, mark_id)
    now: list[str] = []
    if client is not None and repository:
        commits_csv = next((s.commits_csv for _, s in marks if s.commits_csv), None)
        now = _repository_now(storage, roots, client, repository, address, commits_csv, ex, path)
        ex.fates += now
    if decided is not None:
        fate, mark_id = decided
        # a mark kept it as committed or staged: the repository now says by what
        more = [f for f in (KEPT_HEAD, KEPT_COMMIT, KEPT_STAGED) if f in now]
        ex.verdict = more[0] if fate in (KEPT_COMMIT, KEPT_STAGED) and more else fate
        ex.reason = f"mark {mark_id}" + (", and the repository now" if ex.verdict != fate else "")
    elif now:
        ex.verdict, ex.reason = now[0], "the repository now; no mark decided on it"
    elif not marks:
        ex.reason = f"no GC mark under {storage.full_uri(layout.UNIFIED)}"
    else:
        ex.verdict = KEPT_NEW if info else UNKNOWN
        ex.reason = "no mark read listed it: newer than their cutoff, or outside data/"
    return ex


def _repository_now(
    storage: Storage,
    roots: tuple[str, ...],
    client: LakeFSClient,
    repository: str,
    address: str,
    commits_csv: str | None,
    ex: Explanation,
    path: str | None,
) -> list[str]:
    """Return what references ``address`` in the repository now (the fates, most protective first)."""
    from lakefs_gc.listing.committed import metarange_ranges, parse_commits_csv, range_entries, range_keys, relative_key
    from lakefs_gc.storage import relative_to

    range_paths: dict[str, list[str]] = {}

    def paths_in(metarange_id: str) -> list[str]:
        """Return the paths at which a metarange's ranges hold ``address`` (each range read once)."""
        if not metarange_id:
            return []
        rids = [rid for rid, _ in metarange_ranges(client, repository, storage, roots, [metarange_id])[metarange_id]]
        new = [rid for rid in rids if rid not in range_paths]
        for rid, rk in zip(new, range_keys(client, repository, roots, new)):  # their locations asked at once
            range_paths[rid] = [p for a, p, _, _ in range_entries(storage, rk, roots) if a == address]
        return [p for rid in rids for p in range_paths[rid]]

    heads = dict(client.branches(repository, show_hidden=True))
    kept: dict[str, str] = {}
    if commits_csv:
        try:
            kept = dict(parse_commits_csv(storage.get(relative_key(roots, commits_csv)), commits_csv))
        except Exception as exc:
            ex.add("lakeFS", f"the newest mark's commits.csv could not be read ({exc})")
    rules = client.require_gc_rules(repository)
    by_branch = {b.branch_id: b.retention_days for b in (getattr(rules, "branches", None) or ())}
    rule = f"retention {getattr(rules, 'default_retention_days', None)} day(s) by default" + (
        f", by branch {by_branch}" if by_branch else ""
    )
    fates: list[str] = []
    for branch, head in sorted(heads.items()):
        for p in paths_in(kept.get(head) or client.commit_metarange(repository, head)):
            ex.add(f"branch {branch}", f"its HEAD {head[:12]} has it at {p!r}")
            fates.append(KEPT_HEAD)
    for commit, metarange in sorted(kept.items()):
        if commit in heads.values():
            continue
        for p in paths_in(metarange):
            ex.add(
                f"commit {commit[:12]}",
                f"has it at {p!r}; lakeFS's rules keep this commit ({rule}; in the newest mark's commits.csv)",
            )
            fates.append(KEPT_COMMIT)
    for branch in sorted(heads):
        for changed, _ in client.branch_changes(repository, branch):
            if path is not None and changed != path:
                continue
            physical = client.stat_address(repository, branch, changed)
            if physical is not None and relative_to(roots, physical) == address:
                ex.add(f"branch {branch}", f"stages it at {changed!r} (uncommitted)")
                fates.append(KEPT_STAGED)
    for tag, commit in client.tags(repository):
        if commit in kept or commit in heads.values():
            continue
        for p in paths_in(client.commit_metarange(repository, commit)):
            ex.add(
                f"tag {tag}",
                f"its commit {commit[:12]} has it at {p!r}, but lakeFS's GC keeps no commit for a "
                f"tag (treeverse/lakeFS#7621): the tag does not protect it",
            )
            fates.append(TAG_ONLY)
    if not fates:
        ex.add("lakeFS", "no branch HEAD, no commit the newest mark keeps and no staged entry references it now")
    order = (KEPT_HEAD, KEPT_COMMIT, KEPT_STAGED, TAG_ONLY)
    return sorted(dict.fromkeys(fates), key=order.index)


def resolve(
    roots: tuple[str, ...],
    target: str,
    client: LakeFSClient | None = None,
    repository: str | None = None,
    ref: str | None = None,
    max_commits: int = DEFAULT_MAX_COMMITS,
    ref_flag: str = "--ref",
    bound_flag: str = "--max-commits",
) -> tuple[str, str | None, str | None]:
    """
    (address, logical path or None, a note saying how a path was read) of what a person typed.

    An address (``data/...``, ``_lakefs/...`` or a full URI in the namespace), or a logical path
    read on ``ref`` (default: the repository's default branch) through lakeFS. A path ``ref`` no
    longer reads is looked for in its history (at most ``max_commits`` commits,
    :mod:`lakefs_gc.path_history`): the newest commit that had it gives the address, and the note
    names that commit. ``ValueError`` names what is wrong; :class:`PathNeverOnRef` (one) says that
    no commit searched had the path. ``ref_flag``, ``bound_flag``: how the asker names the ref and
    the bound (the command's options, or the page's fields).
    """
    from lakefs_gc.path_history import found_note, never_message, search
    from lakefs_gc.storage import relative_to

    target = target.strip()
    address = relative_to(roots, target)
    if address is not None:
        return address, None, None
    if target.startswith(("data/", "_lakefs/")) or "://" in target:
        if "://" in target:
            raise ValueError(f"{target!r} is outside the namespace ({roots[0]}): GC never deletes it")
        return target, None, None
    if client is None or not repository:
        raise ValueError(
            f"{target!r} is not an address in the namespace: give data/<slice>/<id> or a full URI, or a "
            f"logical path with --repository (and --ref)"
        )
    ref = ref or client.get_repository(repository).default_branch
    physical = client.stat_address(repository, ref, target)
    note, where = f"{repository}@{ref}:{target} reads {physical}", ref
    if physical is None:
        history = search(client, repository, ref, target, max_commits)
        if history.physical is None or history.commit is None:
            raise PathNeverOnRef(never_message(client, history, ref_flag, bound_flag))
        physical, note, where = history.physical, found_note(history, ref_flag), f"commit {history.commit.id[:12]}"
    address = relative_to(roots, physical)
    if address is None:
        raise ValueError(f"{target!r} on {where} reads {physical}, outside the namespace: GC never deletes it")
    return address, target, note
