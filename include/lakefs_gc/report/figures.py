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


def run_figures(summary: RunSummary) -> dict[str, float]:
    """
    Return the run's numbers by the names the metrics and the Asset events carry.

    ``FIGURES`` (0 when the run did not reach the step), ``seconds.<step>`` for each timed step that
    ran, ``space_bytes.<class>`` when the run attributed its namespace.
    """
    out: dict[str, float] = {name: getattr(summary, field) or 0 for name, field in FIGURES.items()}
    for step, seconds in summary.step_seconds().items():
        out[f"seconds.{step}"] = float(seconds)
    if summary.space_file:
        for name, field in SPACE_FIGURES.items():
            out[f"space_bytes.{name}"] = getattr(summary, field) or 0
    return out
