"""
What a person is asked before a sweep (``sweep.confirm: approval`` / ``sweep.approval_above``), and whether at all.

:func:`sweep_size` is the one count of what a sweep would delete (the mark's ``deleted/`` list): the
delete step's guard and the question read it alike, so an approval covers exactly what is swept.
:func:`question` says whether the run's rule asks and, when it does, what the person reads: the
mark, its counts and bytes, the share of what was listed, the largest prefixes of what would go,
and the link to the GC page. The Airflow task is ``lakefs_gc_airflow.approval``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakefs_gc.contract import Approval, SpaceResult, StepInputs
from lakefs_gc.gc.guards import approval_reason
from lakefs_gc.report import formats, layout
from lakefs_gc.report.marks import parquet_parts
from lakefs_gc.report.render import human_bytes
from lakefs_gc.words import plural

if TYPE_CHECKING:
    from lakefs_gc.storage.base import Storage

PREFIX_SAMPLE = 100_000  # addresses read for the largest prefixes (the count itself is exact)
TOP_PREFIXES = 5


def sweep_size(storage: Storage, mark_id: str) -> tuple[list[str], int]:
    """Return the mark's ``deleted/`` parts and how many keys they list: what its sweep would delete."""
    files = parquet_parts(storage, layout.deleted_dir(mark_id))
    return files, sum(formats.count_rows(storage, k) for k in files)


@dataclass(frozen=True)
class Question:
    """A sweep's approval question: the answer when none is needed, else what the person reads."""

    mark_id: str
    to_delete: int
    listed: int
    reason: str | None  # why a person must answer; None: nobody needs to
    subject: str = ""
    body: str = ""

    def not_needed(self, why: str) -> Approval:
        return Approval("not_needed", self.mark_id, self.to_delete, self.listed, reason=why)


def question(inputs: StepInputs, storage: Storage, space: SpaceResult | None, page_url: str = "") -> Question:
    """Return whether this run's sweep waits for a person, and what they are asked."""
    ctx = inputs.context
    s = ctx.settings
    mark_id = inputs.mark_id()
    files, to_delete = sweep_size(storage, mark_id)
    listed = inputs.listed_objects()
    reason = approval_reason(ctx.approval, mark_id, to_delete, listed, s)
    if reason is None:
        return Question(mark_id, to_delete, listed, None)
    cand = inputs.get("compute_candidates", required=False)
    size = f" ({human_bytes(cand.to_delete_bytes)})" if cand is not None else ""
    share = to_delete / listed if listed > 0 else 1.0
    lines = [
        f"**{plural(to_delete, 'object')}{size}** would be deleted from `{ctx.storage.namespace}` "
        f"(repository `{ctx.repository}`), {share:.1%} of {plural(listed, 'listed object')}.",
        "",
        f"Why you are asked: {reason}.",
        "",
        f"- mark: `{mark_id}` (run `{ctx.airflow_run_id}`, flow {ctx.flow}), objects older than {ctx.cutoff_time}",
        f"- the blast-radius guard: max_delete_share={s.max_delete_share}, max_delete_count={s.max_delete_count:,}"
        " (an approval lifts it for this mark only)",
    ]
    if space is not None and not space.skipped:
        lines.append(
            f"- the namespace: {human_bytes(space.bytes)} in {plural(space.objects, 'object')}; "
            f"read by branch HEADs {human_bytes(space.head_bytes)}, only in retention windows "
            f"{human_bytes(space.retention_bytes)}, staged {human_bytes(space.staged_bytes)}"
        )
    top = largest_prefixes(storage, files)
    if top:
        lines += ["", "Largest prefixes of what would go:", ""]
        lines += [f"- `{p}`: {plural(n, 'object')}" for p, n in top]
    if page_url:
        lines += ["", f"[The space charts on the GC page]({page_url})"]
    lines += ["", "**Approve** sweeps exactly this mark; **Reject** deletes nothing (the run ends, the mark stays)."]
    subject = f"Sweep {plural(to_delete, 'object')}{size} from {ctx.repository}?"
    return Question(mark_id, to_delete, listed, reason, subject, "\n".join(lines))


def largest_prefixes(storage: Storage, files: list[str], depth: int = 2) -> list[tuple[str, int]]:
    """Return the most frequent first ``depth`` path segments of the mark's addresses (of at most PREFIX_SAMPLE)."""
    counts: Counter[str] = Counter()
    seen = 0
    for key in files:
        for address in formats.read_addresses(storage, key):
            if address is None:
                continue
            parts = address.split("/")
            counts["/".join(parts[:depth]) + ("/" if len(parts) > depth else "")] += 1
            seen += 1
        if seen >= PREFIX_SAMPLE:
            break
    return counts.most_common(TOP_PREFIXES)
