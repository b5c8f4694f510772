"""
What the GC page shows, read from the reports in a repository's namespace.

One record per GC run (a mark, or a sweep-only run of one), merged with the repository DAG's runs
in Airflow.

Pure: a storage object in (``lakefs_gc.storage``), plain dicts out; the FastAPI app
(:mod:`lakefs_gc_airflow.gc_page.app`) reads Airflow's side and the connections. Nothing is written
anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from lakefs_gc.contract import TIMED_STEPS, to_wire
from lakefs_gc.report import layout
from lakefs_gc.report.marks import iter_marks, iter_sweeps
from lakefs_gc.report.render import summary_rows

if TYPE_CHECKING:
    from lakefs_gc.report.run_summary import RunSummary

STEPS = TIMED_STEPS  # the steps whose seconds a report records
MAX_RUNS = 500  # newest first; older reports stay in the namespace (lakefs-gc report lists them all)


def run_record(
    mark_id: str, summary: RunSummary | None, problem: str | None, uri: str, sweep: str | None = None
) -> dict[str, Any]:
    """One GC run as the page shows it. ``summary`` None: the report does not read (``problem``)."""
    if summary is None:
        return {
            "mark_id": mark_id,
            "sweep": sweep,
            "report": uri,
            "problem": problem or "no summary.json",
            "rows": [],
            "seconds": {},
        }
    s = summary
    rec: dict[str, Any] = {
        "mark_id": mark_id,
        "sweep": sweep,
        "airflow_run_id": s.airflow_run_id,
        "start_time": s.start_time,
        "cutoff_time": s.mark_cutoff_time or s.cutoff_time,
        "mode": s.mode,
        "flow": s.flow,
        "dry_run": bool(s.dry_run),
        "success": s.success is True,
        "unsafe_min_age_override": bool(s.unsafe_min_age_override),
        "held_back_until": s.held_back_until,
        "held_back_reason": s.held_back_reason,
        "dead_letters": s.dead_letters,
        "delete_skipped": s.delete_skipped,
        "guard": {"max_delete_share": s.max_delete_share, "max_delete_count": s.max_delete_count},
        "rules": {
            "min_age_seconds": s.min_age_seconds,
            "effective_min_age_seconds": s.effective_min_age_seconds,
            "grace_period_seconds": s.grace_period_seconds,
            "confirm_after_seconds": s.confirm_after_seconds,
            "active_commits": s.active_commits,
            "staged_check": s.staged_check,
        },
        "report": uri,
        "problem": None,
        "rows": [list(r) for r in summary_rows(s, uri)],
        "seconds": s.step_seconds(),
        # the counts plotted over time, as the report names them
        "listed_objects": s.listed_objects,
        "candidates": s.candidates,
        "to_delete": s.to_delete,
        "deleted": s.deleted,
        "already_gone": s.already_gone,
        "held_back": s.held_back,
        "delete_failed": s.delete_failed,
        "reclaimed_bytes": s.reclaimed_bytes,
        "freeing": to_wire(s.freeing),
        "freed_now_bytes": s.freed_now_bytes,
        "freed_later": to_wire(s.freed_later),
        "still_billed_bytes": s.still_billed_bytes,
        "candidate_bytes": s.candidate_bytes,
        "space_file": s.space_file,
        "listing": listing(s),
        "cost": run_cost(s),
    }
    if s.dry_run and s.would_delete is not None:
        rec["would_delete"] = s.would_delete
    return rec


def run_cost(s: RunSummary) -> dict[str, Any] | None:
    """Return the run's requests by kind, their cost and the monthly saving of the bytes freed now; None: not counted."""
    if not s.requests:
        return None
    by_kind: dict[str, int] = {}
    for c in s.requests:
        by_kind[c.kind] = by_kind.get(c.kind, 0) + c.count
    return {
        "requests": by_kind,
        "request_cost_usd": s.request_cost_usd or 0.0,
        "saving_bytes": s.saving_bytes or 0,
        "monthly_saving_usd": s.monthly_saving_usd or 0.0,
        "prices_as_of": s.prices_as_of or "",
    }


def listing(s: RunSummary) -> dict[str, Any] | None:
    """
    Return what the run listed the namespace from, when it was asked to use an inventory; None: by LIST as always.

    ``source`` ``inventory``: which one (its manifest's URI), its T_inv, how old it was at the run's
    start, the rows read, its data files, the slices created after it listed by LIST, and its rows
    left for a later run as not older than the cutoff (null in a report written before that count);
    ``source`` ``list``: ``fallback``, why the inventory was not used.
    """
    if s.listing_source is None and s.listing_fallback is None:
        return None
    return {
        "source": s.listing_source or "list",
        "inventory_id": s.inventory_id,
        "inventory_time": s.inventory_time,
        "inventory_age_seconds": s.inventory_age_seconds,
        "inventory_rows": s.inventory_rows,
        "inventory_files": s.inventory_files,
        "slices_topped_up": s.slices_topped_up,
        "inventory_deferred": s.inventory_deferred,
        "fallback": s.listing_fallback,
    }


def newest_space(storage, records: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """
    Where the bytes go at the newest run that attributed them (its ``space.json``), with the run's ids.

    None when no run did; a file that does not read, or not as the page's answer types it
    (:class:`~lakefs_gc_airflow.gc_page.models.SpaceDoc`), is ``{"problem": ...}``, never hidden.
    """
    from pydantic import ValidationError

    from lakefs_gc.errors import LakeFSGCError
    from lakefs_gc.report.formats import read_space
    from lakefs_gc_airflow.gc_page.models import SpaceDoc

    for r in records:  # newest first
        if r.get("space_file") and not r.get("sweep"):
            ids = {"mark_id": r["mark_id"], "airflow_run_id": r.get("airflow_run_id")}
            try:
                doc = {**ids, "problem": None, **read_space(storage, r["space_file"])}
                SpaceDoc.model_validate(doc)
            except (LakeFSGCError, OSError) as e:
                return {**ids, "problem": str(e)}
            except ValidationError as e:
                first = e.errors()[0]
                where = ".".join(str(part) for part in first["loc"])
                return {
                    **ids,
                    "problem": f"{storage.full_uri(r['space_file'])}: not the space.json attribute_space "
                    f"writes ({where}: {first['msg']})",
                }
            return doc
    return None


def repository_runs(storage, limit: int = MAX_RUNS) -> list[dict[str, Any]]:
    """
    Every GC run whose report is in the namespace (marks, and sweep-only runs of them), newest first.

    A report that does not read is a record with its ``problem``, never left out.
    """
    out: list[dict[str, Any]] = []
    for mark_id, summary, problem in iter_marks(storage):
        out.append(run_record(mark_id, summary, problem, storage.full_uri(layout.summary_key(mark_id))))
        for sweep, ss, sp in iter_sweeps(storage, mark_id):
            out.append(
                run_record(mark_id, ss, sp, storage.full_uri(layout.sweep_summary_key(mark_id, sweep)), sweep=sweep)
            )
    out.sort(key=lambda r: str(r.get("start_time") or ""), reverse=True)
    return out[:limit]


def recorded_grace_period(records: Iterable[Mapping[str, Any]]) -> tuple[int | None, str | None]:
    """Return lakeFS's grace period as the newest report recording it found it, and that run; (None, None) if none does."""
    for r in records:  # newest first
        seconds = (r.get("rules") or {}).get("grace_period_seconds")
        if seconds is not None:
            return int(seconds), f"the report of run {r.get('airflow_run_id') or r['mark_id']}"
    return None, None


def merge(records: Iterable[dict[str, Any]], dag_runs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """
    Merge the reports and the DAG's runs into one list, newest first.

    A report gets its DAG run's state, dates and failed tasks (by ``airflow_run_id``); a DAG run
    with no report (refused before it marked, failed, still running) is a record of its own:
    ``report`` None.
    """
    by_run = {d["run_id"]: d for d in dag_runs}
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for r in records:
        d = by_run.get(r.get("airflow_run_id") or "")
        if d is not None:
            seen.add(d["run_id"])
        out.append({**r, "dag_run": dict(d) if d else None})
    for run_id, d in by_run.items():
        if run_id not in seen:
            out.append(
                {
                    "mark_id": None,
                    "sweep": None,
                    "airflow_run_id": run_id,
                    "start_time": d.get("start_date") or d.get("logical_date"),
                    "report": None,
                    "problem": None,
                    "rows": [],
                    "seconds": {},
                    "dag_run": dict(d),
                }
            )
    out.sort(key=lambda r: str(r.get("start_time") or ""), reverse=True)
    return out
