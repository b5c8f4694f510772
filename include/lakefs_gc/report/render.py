"""
The run report as a person reads it: ``summary.json`` as rows, and each step's result as a line.

:func:`summary_rows` reads a :class:`~lakefs_gc.report.run_summary.RunSummary` of this version or
an earlier one, so the DAG-run summary, the GC page and ``lakefs-gc report`` say the same thing;
:func:`step_line` reads a typed step result (:mod:`lakefs_gc.contract`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from lakefs_gc.contract import (
    FREED_LATER,
    FREED_NOW,
    CandidatesResult,
    CommittedResult,
    DeleteResult,
    SlicesResult,
    SpaceResult,
)
from lakefs_gc.report.cost import cost_text
from lakefs_gc.words import noun, plural

if TYPE_CHECKING:
    from lakefs_gc.contract import Approval, FreedOn, Freeing, Restorability, Uploads
    from lakefs_gc.report.run_summary import RunSummary

T = TypeVar("T")
D = TypeVar("D")


def _n(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def human_bytes(n: int) -> str:
    """``1536`` -> ``1.5 KiB``; exact below 1 KiB."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def _t(iso: Any) -> str:
    """Return an ISO time of the report, to the second (``2026-11-23T17:00:00Z``)."""
    return str(iso)[:19] + "Z" if isinstance(iso, str) and len(iso) >= 19 else str(iso)


def _or(value: T | None, default: D) -> T | D:
    return default if value is None else value


def summary_rows(summary: RunSummary, uri: str | None = None) -> list[tuple[str, str]]:
    """
    Return a run's report as (label, value) rows a person reads.

    What it listed, found, deleted, held back (and until when), left as dead letters, reclaimed; the
    flow and the cutoff. Built from a summary of this version or an earlier one, so the DAG-run
    summary and ``lakefs-gc report`` say the same thing. Counts a run did not reach are left out.
    """
    s = summary
    mode = _or(s.mode, "?")
    shown_mode = mode + (" (dry run)" if s.dry_run else "")
    if mode == "sweep_only" and s.mark_id:
        shown_mode += f" of mark {s.mark_id}"
    rows = [
        ("repository", f"{_or(s.repository, '?')}  ({_or(s.storage_namespace, '?')})"),
        ("run", f"{_or(s.airflow_run_id, '?')}  mark {_or(s.run_id, '?')}"),
        ("mode", shown_mode),
    ]
    if s.freeing is not None and s.freeing.when not in (FREED_NOW, FREED_LATER):
        unread = s.freeing.how == "unknown"  # the store's settings could not be read: counted as still billed
        what = (
            "what deletes free on this store is not known"
            if unread
            else "deletes on this store free nothing until someone acts"
        )
        rows.append(("bill", f"{what} ({s.freeing.detail})"))
    if s.flow:
        rows.append(("flow", s.flow + (f"  ({s.flow_reason})" if s.flow_reason else "")))
    rows += [
        ("result", "success" if s.success is True else "NOT COMPLETE (success: false)"),
        ("started", _t(s.start_time)),
        (
            "cutoff",
            f"{_t(s.mark_cutoff_time or s.cutoff_time)}  (objects written at or after it are kept)"
            + (
                f"; minimum age {_n(_or(s.effective_min_age_seconds, 0))}s, below lakeFS's grace period "
                f"({_n(_or(s.grace_period_seconds, 0))}s), by the Param unsafe_min_age_override"
                if s.unsafe_min_age_override
                else ""
            ),
        ),
    ]
    if s.listed_objects is not None:
        listed = _n(s.listed_objects)
        if s.listed_bytes is not None:
            listed = f"{plural(s.listed_objects, 'object')}, {human_bytes(s.listed_bytes)}"
        if s.flow == "incremental":
            listed += (
                f" in {plural(_or(s.slices_listed, 0), 'new slice')}; {plural(_or(s.carried_checked, 0), 'earlier staged or held-back object')} "
                f"checked again"
            )
        if s.slices_skipped:
            listed += f"; {plural(s.slices_skipped, 'slice')} created after the cutoff skipped, not listed (too young)"
        rows.append(("listed", listed))
    listing = _listing_row(s)
    if listing:
        rows.append(("listing", listing))
    if s.flow == "incremental":
        rows.append(
            (
                "committed",
                f"{plural(_or(s.new_commits, 0), 'new commit')}, {plural(_or(s.ranges, 0), 'new range')} read",
            )
        )
        rows.append(("not covered", _or(s.not_covered, "")))
    for kept in s.kept_by_rules or ():  # the config's keep rules (issue 55)
        rows.append(("kept by the rule", kept.text()))
    if s.candidates is not None:
        rows.append(
            ("candidates", f"{_n(s.candidates)}  (older than the cutoff, referenced by no kept commit and not staged)")
        )
    rows.append(("marked", f"{_n(_or(s.num_deleted_objects, 0))}  (the mark's deleted/ list)"))
    if s.held_back:
        until = s.held_back_until
        when = f"deletable by the first run that starts after {_t(until)} if still unreferenced" if until else ""
        rows.append(("held back", "; ".join(x for x in (_n(s.held_back), when, s.held_back_reason or "") if x)))
    elif s.held_back == 0:
        rows.append(("held back", "0"))
    if s.approval is not None:
        rows.append(("approval", approval_text(s.approval)))
    if s.delete_skipped == "rejected":
        rows.append(("deleted", "0  (the sweep was rejected)"))
    elif s.delete_skipped:
        rows.append(("deleted", f"0  (no sweep in {s.delete_skipped})"))
    elif s.dry_run and s.would_delete is not None:
        rows.append(("deleted", f"0  (dry run: would delete {_n(s.would_delete)})"))
    elif s.deleted is not None:
        rows.append(("deleted", _n(s.deleted)))
        if s.already_gone is not None or s.delete_missing is not None:
            rows.append(("already gone", _n(_or(s.already_gone, _or(s.delete_missing, 0)))))
        failed = _or(s.delete_failed, 0)
        rows.append(("dead letters", f"{_n(failed)}  ({s.dead_letters})" if failed and s.dead_letters else _n(failed)))
    if s.reclaimed_bytes is not None:
        held = s.soft_delete_days
        rows.append(
            (
                "reclaimed",
                human_bytes(s.reclaimed_bytes)
                + (
                    f"  (the storage account's soft delete keeps deleted blobs {plural(held, 'day')}: not freed until then)"
                    if held
                    else ""
                ),
            )
        )
    if s.freeing is not None:
        rows.append(("freed", _freed(s, s.freeing)))
    if s.uploads is not None:
        rows.append(("incomplete uploads", uploads_text(s.uploads, bool(s.dry_run))))
    if s.space_bytes is not None:
        rows.append(
            (
                "space",
                f"{human_bytes(_or(s.space_head_bytes, 0))} read by branch HEADs, "
                f"{human_bytes(_or(s.space_retention_bytes, 0))} only in retention windows, "
                f"{human_bytes(_or(s.space_staged_bytes, 0))} only staged, "
                f"{human_bytes(_or(s.space_young_bytes, 0))} unreferenced but too young, "
                f"{human_bytes(_or(s.space_held_back_bytes, 0))} held back; "
                f"{plural(_or(s.stale_branches, 0), 'stale branch', 'stale branches')} alone hold "
                f"{human_bytes(_or(s.stale_alone_bytes, 0))}  (lakefs-gc report --space)",
            )
        )
    elif s.space_skipped:
        rows.append(("space", f"not attributed: {s.space_skipped}"))
    if s.restorable is not None and s.deleted is not None and not s.dry_run:
        rows.append(("restorable", _restorable(s.restorable)))
    rows += _leftovers_rows(s)
    if (cost := cost_text(s)) is not None:  # the run's requests and their price (issue 54)
        rows.append(("cost", cost))
    if uri:
        rows.append(("report", uri))
    return rows


def _leftovers_rows(s: RunSummary) -> list[tuple[str, str]]:
    """Return the rows of the GC's own leftovers this run expired (dry run: would have), what stayed and why."""
    rows = []
    if s.leftovers_removed_marks is not None:
        gone = (
            f"{plural(s.leftovers_removed_marks, 'mark')} and {plural(_or(s.leftovers_removed_work, 0), 'run work folder')}, "
            f"{plural(_or(s.leftovers_removed_objects, 0), 'object')}, {human_bytes(_or(s.leftovers_removed_bytes, 0))}"
        )
        rows.append(("leftovers", f"{'would remove' if s.dry_run else 'removed'} {gone}"))
        rows.append(("leftovers kept", "; ".join(s.leftovers_kept or ()) or "nothing"))
    if s.leftovers_note:
        rows.append(("leftovers" if s.leftovers_removed_marks is None else "leftovers note", s.leftovers_note))
    if s.quarantine_purged:
        rows.append(
            ("quarantine", f"{plural(s.quarantine_purged, 'file')} of earlier sweeps purged (their days had passed)")
        )
    return rows


def uploads_text(u: Uploads, dry_run: bool) -> str:
    """Say in one line what the sweep did with the incomplete multipart uploads (lakefs_gc.sweeping.uploads)."""
    if u.skipped:
        return f"not looked at: {u.skipped}"
    if u.error:
        return f"could not be listed ({u.error}): {_n(u.aborted)} aborted before that"
    if u.how == "azure uncommitted blocks":
        return f"{plural(u.old, 'blob')} of uncommitted blocks only, {human_bytes(u.old_bytes)}: {u.detail}"
    older = f"initiated more than {u.older_than_days:g} {noun(u.older_than_days, 'day')} before the run"
    young = f"{plural(u.young, 'younger upload')} untouched"
    if dry_run:
        return f"would abort {plural(u.old, 'upload')} ({human_bytes(u.old_bytes)}) {older}; {young}"
    return (
        f"aborted {plural(u.aborted, 'upload')} ({human_bytes(u.aborted_bytes)}) of {_n(u.old)} {older}, "
        f"{_n(u.already_gone)} already gone, {_n(u.failed)} failed; {young}" + (f" ({u.detail})" if u.detail else "")
    )


def age_words(seconds: float) -> str:
    """``90000`` -> ``1.0 day``; below a day in hours, below an hour in minutes."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size or unit == "minute":
            n = seconds / size
            return f"{n:.1f} {unit}" + ("" if f"{n:.1f}" == "1.0" else "s")
    raise AssertionError("unreachable")


def _listing_row(s: RunSummary) -> str | None:
    """Return what the listing was read from, when an inventory was asked for (None otherwise)."""
    if s.listing_source == "inventory":
        return (
            f"from the inventory {s.inventory_id}, taken {_t(s.inventory_time)} "
            f"({age_words(_or(s.inventory_age_seconds, 0))} before the run): "
            f"{plural(_or(s.inventory_rows, 0), 'row')} read in {plural(_or(s.inventory_files, 0), 'data file')}; "
            f"{plural(_or(s.slices_topped_up, 0), 'slice')} created after it listed by LIST; "
            + _deferred(s.inventory_deferred)
        )
    if s.listing_fallback:
        return f"by LIST (the inventory was not used: {s.listing_fallback})"
    return None


def _deferred(deferred: int | None) -> str:
    """Return what an inventory run leaves to a later run: its rows not older than the cutoff (when counted), and later writes."""
    if deferred is None:  # a summary written before the count
        return "objects written after it are left for a later run"
    return (
        f"{plural(deferred, 'object')} in it not older than the cutoff, and objects written after it, are left "
        "for a later run"
    )


def _fate(f: Freeing) -> str:
    """Say what a delete does on the store: ``frees its bytes now`` / ``on …`` / ``frees nothing until someone acts``."""
    if f.when == FREED_NOW:
        return "frees its bytes now"
    if f.when == FREED_LATER:
        return f"frees its bytes on {_t(f.on)}"
    return "frees nothing until someone acts"


def bill_figures(freed_now: int, freed_later: tuple[FreedOn, ...], still_billed: int) -> str:
    """``freed now 1.0 KiB, freed later 2.0 KiB on 2026-12-08T00:00:00Z, still billed 0 B``."""
    later = ", ".join(f"{human_bytes(x.bytes)} on {_t(x.on)}" for x in freed_later) or "0 B"
    return f"freed now {human_bytes(freed_now)}, freed later {later}, still billed {human_bytes(still_billed)}"


def _freed(s: RunSummary, f: Freeing) -> str:
    """Return the reclaimed bytes as the bill sees them: ``f``, the sweep's ``freeing``, and its figures."""
    why = f"  ({f.how}: {f.detail})"
    if s.dry_run:
        return f"nothing (dry run); a delete here {_fate(f)}" + why
    if s.freed_now_bytes is None:
        return f"not known by size (dead letters, or a sweep-only run); a delete here {_fate(f)}" + why
    return bill_figures(s.freed_now_bytes, s.freed_later or (), _or(s.still_billed_bytes, 0)) + why


def _restorable(r: Restorability) -> str:
    """``yes until …`` / ``no`` / ``unknown``, with how (the sweep's ``restorable`` field)."""
    if r.restorable is True:
        when = f" until {r.until}" if r.until else ""
        return f"yes{when}  ({r.how}: lakefs-gc restore NAMESPACE --run RUN_ID)"
    if r.restorable is False:
        return f"no  ({r.detail})"
    return f"unknown  ({r.detail})"


def summary_text(summary: RunSummary, uri: str | None = None) -> str:
    """:func:`summary_rows` as ``label: value`` lines (the DAG-run summary, the task log)."""
    return "\n".join(f"{label}: {value}" for label, value in summary_rows(summary, uri))


def step_line(step: str, result: Any) -> str:
    """
    One readable line for a step's result (the job's last line, the task log).

    E.g. ``list_slices: 1,200 objects (3.0 MiB) in 2 slice(s), 0 skipped; 4.1 s``.
    """
    r = result
    if r is None:
        return f"{step}: did not run in this mode"
    if isinstance(r, CommittedResult):
        text = (
            f"{plural(r.committed_addresses, 'committed address', 'committed addresses')} from {plural(r.active_commits, 'commit')} to keep "
            f"({_n(r.commits_lakefs_lacked)} lakeFS's list lacked), {plural(r.metaranges, 'metarange')}, "
            f"{plural(r.ranges, 'range')}"
        )
        if r.kept_by_rules:  # the config's keep rules (issue 55)
            text += "; kept by the rules: " + "; ".join(k.text() for k in r.kept_by_rules)
    elif isinstance(r, SlicesResult):
        text = (
            f"{plural(r.listed_objects, 'object')} ({human_bytes(r.listed_bytes)}) in {plural(r.slices_listed, 'slice')}, "
            f"{_n(r.slices_skipped)} skipped"
        )
        if r.listing_source == "inventory":
            text += (
                f", from the inventory taken {_t(r.inventory_time)} ({plural(_or(r.inventory_rows, 0), 'row')} read, "
                f"{plural(_or(r.slices_topped_up, 0), 'slice')} topped up by LIST"
                + (
                    f", {_n(r.inventory_deferred)} not older than the cutoff"
                    if r.inventory_deferred is not None
                    else ""
                )
                + ")"
            )
        elif r.listing_fallback:
            text += f", by LIST (the inventory was not used: {r.listing_fallback})"
    elif isinstance(r, CandidatesResult):
        text = (
            f"{plural(r.candidates, 'candidate')} ({human_bytes(r.candidate_bytes)}), {_n(r.to_delete)} marked for "
            f"deletion ({human_bytes(r.to_delete_bytes)}), {_n(r.held_back)} held back"
        )
        if r.held_back and r.held_back_reason:
            text += f" ({r.held_back_reason})"
    elif isinstance(r, SpaceResult):
        text = (
            f"not attributed: {r.skipped}"
            if r.skipped
            else f"{plural(r.objects, 'object')} ({human_bytes(r.bytes)}) attributed: {human_bytes(r.head_bytes)} read by "
            f"HEADs, {human_bytes(r.retention_bytes)} only in retention windows, {human_bytes(r.staged_bytes)} only "
            f"staged; {plural(r.stale_branches, 'stale branch', 'stale branches')}"
        )
    elif isinstance(r, DeleteResult):
        c = r.counts
        if r.skipped == "rejected" and r.approval is not None:
            text = f"no sweep: {approval_text(r.approval)}"
        elif r.skipped:
            text = f"no sweep in {r.skipped}"
        else:
            text = (
                f"{'would delete' if r.dry_run else 'deleted'} {_n(c.deleted)}, already gone {_n(c.already_gone)}, "
                f"dead letters {_n(c.failed)} of {plural(c.keys, 'key')} in {plural(c.parts, 'part')} "
                f"({_n(c.resumed_parts)} resumed), {plural(c.requests, 'request')}, {_n(c.retried)} retried"
            )
            if c.throttled or r.rate_cuts:
                text += "; " + throttle_text(c.throttled, r.rate_cuts, r.rate_lowest, r.rate_final)
            if r.freed_now_bytes is not None and r.still_billed_bytes is not None and not r.dry_run:
                text += "; " + bill_figures(r.freed_now_bytes, r.freed_later, r.still_billed_bytes)
            if r.uploads is not None:
                text += "; incomplete uploads: " + uploads_text(r.uploads, r.dry_run)
    else:
        return f"{step}: {r}"
    seconds = getattr(r, "seconds", 0.0)
    return f"{step}: {text}" + (f"; {seconds:.1f} s" if seconds else "")


def approval_text(a: Approval) -> str:
    """Return a person's answer to a sweep as the report says it: ``approved by admin at <time> (why asked)``."""
    if a.decision == "not_needed":
        return f"not needed: {a.reason}" if a.reason else "not needed"
    who = f" by {a.by}" if a.by else ""
    when = f" at {_t(a.at)}" if a.at else ""
    why = f" ({a.reason})" if a.reason else ""
    return f"{a.decision.replace('_', ' ')}{who}{when}{why}"


def throttle_text(throttled: int, cuts: int, lowest: float | None, final: float | None) -> str:
    """Return what throttling did to a sweep: ``3 throttled requests, the shared rate halved 2 times (...)``."""
    text = f"{plural(throttled, 'throttled request')}, the shared rate halved {plural(cuts, 'time')}"
    if lowest is not None and final is not None:
        text += f" (lowest {lowest:,.0f} keys/s, last {final:,.0f})"
    return text
