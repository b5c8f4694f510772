"""
A run's figures as metrics and Asset events name them, read from its :class:`~lakefs_gc.report.run_summary.RunSummary`.

The names are what operators chart and alert on (``lakefs_gc_airflow.observability``): each maps
to the summary field it is, so the metrics and the report never disagree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lakefs_gc.report.run_summary import RunSummary

# The run's figures as metrics and Asset events name them -> the RunSummary field they are
FIGURES: dict[str, str] = {
    "objects_listed": "listed_objects",
    "candidates": "candidates",
    "deleted": "deleted",
    "already_gone": "already_gone",
    "held_back": "held_back",
    "dead_letters": "delete_failed",
    "bytes_reclaimed": "reclaimed_bytes",
}
# where the bytes go (attribute_space, clean runs) -> the RunSummary field
SPACE_FIGURES: dict[str, str] = {
    "head": "space_head_bytes",
    "retention": "space_retention_bytes",
    "staged": "space_staged_bytes",
    "deleted": "space_deleted_bytes",
    "held_back": "space_held_back_bytes",
    "young": "space_young_bytes",
}

# incomplete multipart uploads (a sweep that looked at them) -> the field of RunSummary.uploads: kept apart
# from FIGURES, whose names are the run's objects (an upload is none), as SPACE_FIGURES are
UPLOAD_FIGURES: dict[str, str] = {
    "aborted": "aborted",
    "aborted_bytes": "aborted_bytes",
    "old": "old",  # a dry run: would be aborted; Azure: blobs of uncommitted blocks, reported
    "old_bytes": "old_bytes",
    "young": "young",
    "failed": "failed",
}
# the reclaimed bytes as the bill sees them (a sweep whose store said, and whose bytes are known)
BILL_FIGURES = ("bytes_freed_now", "bytes_freed_later", "bytes_still_billed")


def run_figures(summary: RunSummary) -> dict[str, float]:
    """
    Return the run's numbers by the names the metrics and the Asset events carry.

    ``FIGURES`` (0 when the run did not reach the step), ``seconds.<step>`` for each timed step that
    ran, ``space_bytes.<class>`` when the run attributed its namespace, ``uploads.<figure>`` when its
    sweep looked at the incomplete multipart uploads, :data:`BILL_FIGURES` when
    the run knows what its sweep freed (``bytes_freed_later``: every date's bytes together),
    ``leftovers_bytes_removed`` when the run expired the GC's own leftovers; ``requests.<kind>`` (every
    store's together), ``request_cost_usd`` and ``monthly_saving_usd`` when its steps counted their requests.
    """
    out: dict[str, float] = {name: getattr(summary, field) or 0 for name, field in FIGURES.items()}
    for step, seconds in summary.step_seconds().items():
        out[f"seconds.{step}"] = float(seconds)
    if summary.space_file:
        for name, field in SPACE_FIGURES.items():
            out[f"space_bytes.{name}"] = getattr(summary, field) or 0
    if summary.uploads is not None and summary.uploads.skipped is None:
        for name, field in UPLOAD_FIGURES.items():
            out[f"uploads.{name}"] = getattr(summary.uploads, field)
    if summary.freed_now_bytes is not None:
        later = sum(x.bytes for x in summary.freed_later or ())
        bill = (summary.freed_now_bytes, later, summary.still_billed_bytes or 0)
        out.update(dict(zip(BILL_FIGURES, bill, strict=True)))
    if summary.leftovers_removed_marks is not None:  # the GC's own leftovers removed (a dry run removes none)
        out["leftovers_bytes_removed"] = 0 if summary.dry_run else summary.leftovers_removed_bytes or 0
    if summary.requests:  # the run's cost (issue 54): requests by kind, their price, the monthly saving
        for c in summary.requests:
            out[f"requests.{c.kind.lower()}"] = out.get(f"requests.{c.kind.lower()}", 0) + c.count
        out["request_cost_usd"] = summary.request_cost_usd or 0
        out["monthly_saving_usd"] = summary.monthly_saving_usd or 0
    return out
