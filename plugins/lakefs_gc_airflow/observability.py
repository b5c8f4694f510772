"""
A GC run where operators look: metrics through Airflow's ``Stats``, and Asset events.

**Metrics.** ``save_report`` emits the run's figures (``lakefs_gc.report.figures.run_figures``) as
gauges through Airflow's own ``Stats``, so they go wherever the user's Airflow sends its metrics
(StatsD, Datadog or OpenTelemetry, as ``[metrics]`` configures it; nothing when metrics are off).
Each is ``lakefs_gc.<repository>.<figure>`` (StatsD has no tags) with the tag ``repository``
(for the backends that have tags):

- ``objects_listed``, ``candidates``, ``deleted``, ``already_gone``, ``held_back``,
  ``dead_letters``, ``bytes_reclaimed``;
- ``seconds.<step>`` for every step the report times;
- ``space_bytes.<class>`` (``head``, ``retention``, ``staged``, ``deleted``, ``held_back``,
  ``young``) when the run attributed its namespace (a clean run);
- ``bytes_freed_now``, ``bytes_freed_later`` (every date's together) and ``bytes_still_billed``
  when the run knows what its sweep's deletes freed on the bill (``bytes_reclaimed`` split).
- ``leftovers_bytes_removed``: what the run's expiry of the GC's own leftovers removed
  (``lakefs_gc.report.leftovers``; 0 in a dry run).

**Assets.** Each run that marked emits an event of :func:`marked_asset`, each run that swept one
of :func:`swept_asset`, with the figures in the event's ``extra``. Schedule your own DAG on them::

    from lakefs_gc_airflow.observability import swept_asset
    with DAG("after_gc", schedule=swept_asset("my-repo")): ...

They are emitted through an ``AssetAlias`` of the repository (:func:`events_alias`), so a run that
did not sweep (``mark_only``, a dry run, a refused or failed sweep) emits no sweep event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset, AssetAlias

if TYPE_CHECKING:
    from airflow.sdk import Context

    from lakefs_gc.report.run_summary import RunSummary

PREFIX = "lakefs_gc"


def _stats() -> Any:
    try:
        from airflow.sdk.observability.stats import Stats
    except ImportError:  # Airflow before the Task SDK had its own (3.2)
        from airflow.stats import Stats  # type: ignore[no-redef, attr-defined, unused-ignore]
    return Stats


def metric_name(repository: str, figure: str) -> str:
    """``lakefs_gc.<repository>.<figure>``: a repository id is already a valid StatsD name part."""
    return f"{PREFIX}.{repository}.{figure}"


def emit_metrics(repository: str, figures: dict[str, float]) -> list[str]:
    """Send every figure as a gauge; return the names sent."""
    stats = _stats()
    names = []
    for figure, value in figures.items():
        name = metric_name(repository, figure)
        stats.gauge(name, float(value), tags={"repository": repository})
        names.append(name)
    return names


def marked_asset(repository: str) -> Asset:
    """Return the Asset a run of ``repository`` updates when it marked (its candidates are listed)."""
    return Asset(
        name=f"lakefs_gc/{repository}/marked",
        uri=f"lakefs://{repository}/_lakefs/retention/gc/marked",
        group="lakefs-gc",
    )


def swept_asset(repository: str) -> Asset:
    """Return the Asset a run of ``repository`` updates when it swept (deleted its candidates)."""
    return Asset(
        name=f"lakefs_gc/{repository}/swept", uri=f"lakefs://{repository}/_lakefs/retention/gc/swept", group="lakefs-gc"
    )


def events_alias(repository: str) -> AssetAlias:
    """Return the alias ``save_report`` emits the repository's events through (only the events that happened)."""
    return AssetAlias(name=f"lakefs_gc/{repository}/events", group="lakefs-gc")


def emit_asset_events(context: Context, repository: str, summary: RunSummary, figures: dict[str, float]) -> list[str]:
    """Add this run's events (marked, swept) to the alias; return the assets' names."""
    events = context["outlet_events"][events_alias(repository)]
    extra: dict[str, Any] = {
        "repository": repository,
        "run_id": summary.run_id,
        "mode": summary.mode,
        "dry_run": bool(summary.dry_run),
        "storage_namespace": summary.storage_namespace,
        **{k: v for k, v in figures.items() if not k.startswith(("seconds.", "space_bytes."))},
    }
    out = []
    if summary.mode != "sweep_only":
        events.add(marked_asset(repository), extra=extra)
        out.append(marked_asset(repository).name)
    swept = (
        summary.mode != "mark_only"
        and not summary.dry_run
        and summary.deleted is not None
        and not summary.delete_skipped
    )
    if swept:
        events.add(swept_asset(repository), extra=extra)
        out.append(swept_asset(repository).name)
    return out
