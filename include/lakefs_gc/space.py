"""
``lakefs-gc space`` and ``lakefs-gc whatif``: where a namespace's bytes go now, and what a change would free.

Both read lakeFS (branches, commits, rules, tags, staged entries) and the namespace's ``data/``
listing in this one process, now, and delete nothing: :func:`lakefs_gc.listing.holders.attribute_here`
and :func:`lakefs_gc.listing.holders.whatif_here`. "Unreferenced, old enough" is what a GC run
started now would collect (before its staged check, which may hold a few back); "too young" is
what its cutoff (``--min-age-seconds``) spares.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

from lakefs_gc.gc.attribution import (
    CLASSES,
    DELETED,
    HELD_BACK,
    YOUNG,
    Attribution,
    Change,
    Space,
    StaleBranch,
    stale_branches,
)
from lakefs_gc.report.render import human_bytes
from lakefs_gc.words import noun, plural, verb

if TYPE_CHECKING:
    from lakefs_gc.contract.keep import KeepRules
    from lakefs_gc.lakefs.client import LakeFSClient
    from lakefs_gc.storage.base import Storage

LABELS = {
    "head": "read by a branch HEAD",
    "retention": "only in retention windows (kept commits, not HEAD)",
    "staged": "only staged (uncommitted)",
    DELETED: "unreferenced, old enough: collected",
    HELD_BACK: "unreferenced, held back (delayed confirmation, staged check)",
    YOUNG: "unreferenced, too young (newer than the cutoff)",
}


def _row(label: str, s: Space) -> str:
    objects = f"{s.objects:>10,} {noun(s.objects, 'object'):7}"
    return f"  {label:62} {objects} {human_bytes(s.bytes):>12}  ({plural(s.bytes, 'byte')})"


def space_lines(attribution: Attribution, stale: Iterable[StaleBranch], stale_days: float) -> list[str]:
    """Return the report ``lakefs-gc space`` prints."""
    lines = [
        "Where the bytes go (each object counted once, in its first class):",
        _row("all listed objects", attribution.total),
    ]
    lines += [_row(LABELS[c], s) for c, s in attribution.classes.items()]
    lines.append("")
    lines.append(
        "By branch (alone: no other branch holds it; shared: counted for every branch of its class holding it):"
    )
    for branch, held in sorted(attribution.branches.items()):
        parts = [
            f"{c} alone {human_bytes(held.alone[c].bytes)} / shared {human_bytes(held.shared[c].bytes)}"
            for c in CLASSES
            if held.alone[c].objects or held.shared[c].objects
        ]
        lines.append(f"  {branch}: " + "; ".join(parts))
    if attribution.tags:
        lines.append("")
        lines.append(
            "Read only by a tag's commit (lakeFS's GC keeps no commit for a tag: collected like any "
            "unreferenced object):"
        )
        lines += [_row(f"tag {t}", s) for t, s in sorted(attribution.tags.items())]
    lines.append("")
    stale = list(stale)
    lines.append(f"Stale branches (HEAD older than {stale_days:g} days), by what they alone hold:")
    lines += [_row(f"{s.branch} (HEAD {s.head_age_days:,.0f} days old)", s.alone) for s in stale] or ["  none"]
    return lines


def run_space_lines(doc: Mapping[str, Any]) -> list[str]:
    """Return ``lakefs-gc report --space``'s text: a run's ``space.json``, as ``lakefs-gc space`` prints it."""
    attribution = Attribution.from_dict(doc["attribution"])
    stale = [
        StaleBranch(s["branch"], float(s["head_age_days"]), Space(int(s["alone"]["objects"]), int(s["alone"]["bytes"])))
        for s in doc.get("stale", [])
    ]
    rules = doc.get("rules", {})
    by_branch = ", ".join(f"{b} {d} days" for b, d in rules.get("branches", {}).items())
    head = [
        f"Run {doc.get('mark_id', '?')} of {doc.get('repository', '?')}, as its mark found the namespace at "
        f"{doc.get('computed_at', '?')} (cutoff {doc.get('cutoff', '?')}); retention: default "
        f"{rules.get('default_days', '?')} days" + (f", {by_branch}" if by_branch else ""),
        "",
    ]
    return head + space_lines(attribution, stale, float(doc.get("stale_branch_days", 30)))


def parse_change(delete_branch: str | None, rule: str | None) -> Change:
    """
    Return the change ``lakefs-gc whatif`` was given.

    ``--delete-branch B``, or ``--rule DAYS`` (the default rule) / ``--rule BRANCH=DAYS``.
    """
    if rule is None or delete_branch is not None:
        if (delete_branch is None) == (rule is None):
            raise ValueError("give one change: --delete-branch BRANCH, or --rule [BRANCH=]DAYS")
        return Change(delete_branch=delete_branch)
    branch, _, days = rule.rpartition("=")
    try:
        n = int(days)
    except ValueError:
        raise ValueError(
            f"--rule {rule!r}: DAYS must be a whole number of days (e.g. --rule 7 or --rule main=30)"
        ) from None
    return Change(branch=branch or None, days=n)


def _listed(storage: Storage) -> list[tuple[str, int, int]]:
    return [(o.key, o.size, int(o.last_modified * 1000)) for o in storage.list("data/")]


def _rules(client: LakeFSClient, repo: str) -> tuple[int, dict[str, int]]:
    rules = client.require_gc_rules(repo)
    return rules.default_retention_days, {r.branch_id: r.retention_days for r in rules.branches or ()}


def space_now(
    client: LakeFSClient,
    repo: str,
    storage: Storage,
    roots: tuple[str, ...],
    local_root: str | None,
    min_age_seconds: int,
    stale_days: float,
) -> list[str]:
    """Return ``lakefs-gc space``'s report of ``repo`` now."""
    from lakefs_gc.listing.holders import attribute_here

    now = time.time()
    default_days, branch_days = _rules(client, repo)
    attribution, _ = attribute_here(
        client,
        repo,
        storage,
        roots,
        local_root,
        _listed(storage),
        None,
        int((now - min_age_seconds) * 1000),
        default_days,
        branch_days,
        now,
    )
    heads = {b: float(client.commit_node(repo, h).creation_date) for b, h in client.branches(repo) if h}
    return space_lines(attribution, stale_branches(attribution, heads, now, stale_days), stale_days)


def refuse_default_branch(client: LakeFSClient, repo: str, change: Change) -> None:
    """Raise ``ValueError`` when ``change`` deletes a branch lakeFS would not delete: a missing one, or the default."""
    branch = change.delete_branch
    if branch is None:
        return
    if branch not in dict(client.branches(repo, show_hidden=True)):
        raise ValueError(f"--delete-branch {branch!r}: no such branch in {repo!r}")
    if branch == client.get_repository(repo).default_branch:
        raise ValueError(
            f"--delete-branch {branch!r}: it is the default branch of {repo!r}, which lakeFS refuses to "
            f'delete ("cannot delete repository default branch"): price another branch, or a --rule'
        )


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def whatif_now(
    client: LakeFSClient,
    repo: str,
    storage: Storage,
    roots: tuple[str, ...],
    local_root: str | None,
    min_age_seconds: int,
    change: Change,
    keep: KeepRules | None = None,
) -> list[str]:
    """
    Return ``lakefs-gc whatif``'s answer for ``repo`` now (``keep``: the config's keep rules, named).

    What the change frees, old enough for the next run (modified before now - ``min_age_seconds``),
    and apart what it leaves unreferenced but too young yet, with the time from which a run can
    collect it. ``ValueError`` for a change lakeFS would refuse (:func:`refuse_default_branch`).
    """
    from lakefs_gc.listing.holders import whatif_here

    now = time.time()
    default_days, branch_days = _rules(client, repo)
    refuse_default_branch(client, repo, change)
    listed = _listed(storage)
    unreferenced: set[str] = set()
    w = whatif_here(
        client,
        repo,
        storage,
        roots,
        local_root,
        listed,
        sys.maxsize,  # every listed object, young ones too: split below by the cutoff
        default_days,
        branch_days,
        now,
        change,
        collect=unreferenced,
        keep=keep,
    )
    cutoff_ms = int((now - min_age_seconds) * 1000)
    freed, young, young_modified = Space(), Space(), []
    for key, size, modified in listed:
        if key in unreferenced:
            if modified < cutoff_ms:
                freed.add(1, size)
            else:
                young.add(1, size)
                young_modified.append(modified / 1000)
    lines = [
        f"If {change.describe()}, the next GC run would free {plural(freed.objects, 'object')}, "
        f"{human_bytes(freed.bytes)} ({plural(freed.bytes, 'byte')}), beyond today's garbage."
    ]
    if young.objects:
        first, last = min(young_modified) + min_age_seconds, max(young_modified) + min_age_seconds
        lines.append(
            f"  {plural(young.objects, 'object')}, {human_bytes(young.bytes)} ({plural(young.bytes, 'byte')}), "
            f"{verb(young.objects, 'becomes', 'become')} unreferenced but {verb(young.objects, 'is', 'are')} "
            f"too young to collect before {_when(first)} "
            f"(the minimum age is {plural(min_age_seconds, 'second')}"
            + (f"; all of them are old enough by {_when(last)}" if young.objects > 1 and last > first else "")
            + ")"
        )
    if w.held_by_rules is not None and keep is not None:  # the config's keep rules (issue 55)
        held = w.held_by_rules
        lines.append(
            f"  the keep rules ({keep_names(keep)}) hold {plural(held.objects, 'object')}, {human_bytes(held.bytes)} "
            f"({plural(held.bytes, 'byte')}) the change would otherwise free"
        )
    lines.append(
        f"  commits kept: {w.kept_before:,} now, {w.kept_after:,} after the change (nothing was changed or deleted)"
    )
    return lines


def add_parsers(sub: Any, storage_arguments: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add ``space`` and ``whatif`` to the ``lakefs-gc`` command's subparsers."""
    for name, text in (
        ("space", "where the namespace's bytes go now: HEADs, retention, staging, tags, stale branches"),
        (
            "whatif",
            "what the next run would free if a branch were deleted or a rule changed, and what it would "
            "leave unreferenced but too young to collect yet",
        ),
    ):
        sp = sub.add_parser(
            name,
            help=text,
            description=text[0].upper() + text[1:] + ". Read from lakeFS and the "
            "namespace now; nothing is changed or deleted.",
        )
        sp.add_argument("namespace", metavar="NAMESPACE", help="the repository's storage namespace")
        sp.add_argument("--repository", required=True, help="the lakeFS repository")
        sp.add_argument("--lakefs-endpoint", help="lakeFS's URL (default: $LAKEFS_GC_LAKEFS_ENDPOINT)")
        sp.add_argument(
            "--min-age-seconds",
            type=int,
            default=86400,
            help="the GC's minimum age: younger objects are not collected yet (default 86400)",
        )
        if name == "space":
            sp.add_argument(
                "--stale-days",
                type=float,
                default=30.0,
                help="a branch is stale when its HEAD is older than this (default 30)",
            )
        else:
            sp.add_argument(
                "--delete-branch",
                metavar="BRANCH",
                help="price deleting this branch (not the default branch: lakeFS refuses to delete it)",
            )
            sp.add_argument(
                "--rule", metavar="[BRANCH=]DAYS", help="price a retention rule: the default's, or a branch's"
            )
        storage_arguments(sp)


def keep_names(keep: KeepRules) -> str:
    """Return the names of the config's keep rules, ``; ``-separated."""
    from lakefs_gc.contract.keep import branch_label, paths_label

    names = [keep.tags_label()] if keep.tags_days is not None or keep.tags_forever else []
    names += [branch_label(b) for b in keep.branches] + ([paths_label(keep.paths)] if keep.paths else [])
    return "; ".join(names)


def config_keep(repository: str) -> KeepRules | None:
    """Return the keep rules the repositories file (``$LAKEFS_GC_CONFIG``) gives ``repository``; None: it does not list it."""
    from lakefs_gc.config import ConfigError, load_config

    try:
        config = load_config(strict=False)
    except ConfigError:  # no file, or one that does not read: the command prices lakeFS's rules alone
        return None
    return next((r.keep for r in config.repositories if r.repository == repository), None)


def run(args: argparse.Namespace, out: TextIO, storage: Storage, client: LakeFSClient) -> int:
    """Run ``lakefs-gc space`` or ``lakefs-gc whatif`` (``args.command``) on ``storage``, with ``client``."""
    import os

    from lakefs_gc.storage import parse_namespace

    local_root = args.local_root or os.environ.get("LAKEFS_GC_LOCAL_ROOT")
    roots = parse_namespace(args.namespace.rstrip("/"), local_root).roots()
    with client:
        if args.command == "whatif":
            change = parse_change(args.delete_branch, args.rule)
            keep = config_keep(args.repository)  # the entry's keep rules, when the repositories file lists it
            lines = whatif_now(client, args.repository, storage, roots, local_root, args.min_age_seconds, change, keep)
        else:
            lines = space_now(
                client, args.repository, storage, roots, local_root, args.min_age_seconds, args.stale_days
            )
    out.write("\n".join(lines) + "\n")
    return 0
