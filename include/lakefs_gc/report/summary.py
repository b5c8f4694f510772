"""
The run report, ``summary.json``, built from the typed step results (:mod:`lakefs_gc.contract`).

lakeFS's fields (reference 3.5) come first and keep their meaning; ours are added beside them.
``success`` is true only when the whole run (mark, and sweep unless mark-only) completed: the
mark's in-progress summary (:func:`mark_started`) says ``false`` until ``save_report`` rewrites it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from lakefs_gc.contract import (
    TIMED_STEPS,
    CandidatesResult,
    CommittedResult,
    DeleteResult,
    IncrementalBase,
    RunContext,
    SlicesResult,
    SpaceResult,
    StepInputs,
    StorageLocation,
    UncommittedResult,
    from_wire,
    to_wire,
)
from lakefs_gc.report.layout import summary_key, sweep_summary_key

if TYPE_CHECKING:
    from lakefs_gc.storage.base import Storage

STATE_FORMAT = 2  # the format of ``incremental_state`` in summary.json (read by lakefs_gc.gc.flow)


def mark_started(ctx: RunContext, mark_id: str, first_slice: str) -> dict[str, Any]:
    """
    Return the summary a mark writes before its first part.

    lakeFS tooling sees a failed mark until the run completes.
    """
    return {"run_id": mark_id, "success": False, "first_slice": first_slice, "start_time": ctx.start_time,
            "cutoff_time": ctx.cutoff_time, "num_deleted_objects": 0, "note": "mark in progress or failed"}


def build_summary(inputs: StepInputs, success: bool = True) -> dict[str, Any]:
    ctx = inputs.context
    s = ctx.settings
    unc: UncommittedResult | None = inputs.results.get("mark_uncommitted")
    com: CommittedResult | None = inputs.results.get("list_committed")
    sl: SlicesResult | None = inputs.results.get("list_slices")
    cand: CandidatesResult | None = inputs.results.get("compute_candidates")
    dele: DeleteResult | None = inputs.results.get("delete")
    space: SpaceResult | None = inputs.results.get("attribute_space")
    mark = ctx.sweep_mark
    counts = dele.counts if dele else None
    swept = bool(dele and not dele.skipped and not dele.dry_run)
    deleted = counts.deleted if swept and counts is not None else 0
    marked = cand.to_delete if cand else (mark.to_delete if mark else 0)
    out: dict[str, Any] = {
        # lakeFS's fields, with lakeFS's meaning: num_deleted_objects counts the addresses the mark
        # listed for deletion (its deleted/ list), in every mode; what a sweep removed is "deleted".
        "run_id": inputs.mark_id(),
        "success": bool(success),
        "first_slice": sl.first_slice if sl else "",
        "start_time": ctx.start_time,
        "cutoff_time": ctx.cutoff_time,
        "num_deleted_objects": marked,
        # ours
        "repository": ctx.repository,
        "storage_namespace": ctx.storage.namespace,
        "mode": ctx.mode,
        "airflow_run_id": ctx.airflow_run_id,
        "min_age_seconds": s.min_age_seconds,
        "grace_period_seconds": ctx.grace_period_seconds,
        "effective_min_age_seconds": ctx.effective_min_age_seconds,
        "unsafe_min_age_override": s.unsafe_min_age_override,
        "dry_run": s.dry_run,
        "max_delete_share": s.max_delete_share,
        "max_delete_count": s.max_delete_count,
        "delete_batch_size": s.delete_batch_size,
    }
    if mark:
        out.update({"mark_id": mark.mark_id, "mark_start_time": mark.start_time, "mark_cutoff_time": mark.cutoff_time,
                    "listed_objects": mark.listed_objects, "to_delete": mark.to_delete})
    if unc:
        out.update({"uncommitted_pages": unc.pages, "mark_uncommitted_seconds": unc.seconds,
                    "staged_branches": unc.staged_branches, "staged_entries_checked": unc.staged_entries_checked,
                    "staged_addresses_lakefs_omitted": unc.staged_addresses_lakefs_omitted,
                    "staged_objects_listed": unc.staged_objects_listed, "staged_check": unc.staged_check,
                    "branches_moved": unc.branches_moved, "lakefs_mark_seconds": unc.lakefs_seconds})
        if unc.staged_file:
            out["staged_file"] = unc.staged_file
        if unc.staged_branches_gone:
            out["staged_branches_gone"] = list(unc.staged_branches_gone)
    if com:
        out.update({"active_commits": com.active_commits, "metaranges": com.metaranges, "ranges": com.ranges,
                    "committed_addresses": com.committed_addresses, "documented_commits": com.documented_commits,
                    "commits_lakefs_lacked": com.commits_lakefs_lacked, "list_committed_seconds": com.seconds,
                    "commits_csv": com.commits_csv})
    if sl:
        out.update({"slices_listed": sl.slices_listed, "slices_skipped": sl.slices_skipped,
                    "listed_objects": sl.listed_objects, "listed_bytes": sl.listed_bytes,
                    "list_slices_seconds": sl.seconds})
    if cand:
        out.update({"uncommitted_files": cand.uncommitted_files, "candidates": cand.candidates,
                    "candidate_bytes": cand.candidate_bytes, "confirm_after_seconds": cand.confirm_after_seconds,
                    "to_delete": cand.to_delete, "to_delete_bytes": cand.to_delete_bytes,
                    "held_back": cand.held_back, "compute_candidates_seconds": cand.seconds})
        if cand.staged_check == "candidates":
            out.update({"staged_suspicious": cand.staged_suspicious, "staged_stats": cand.staged_stats,
                        "staged_kept": cand.staged_kept, "commits_since": cand.commits_since,
                        "committed_since_kept": cand.committed_since_kept,
                        "staged_check_seconds": cand.staged_check_seconds})
        for k in ("held_back_reason", "confirmed_by_mark"):
            if getattr(cand, k) is not None:
                out[k] = getattr(cand, k)
        if cand.held_back:
            out["held_back_until"] = held_back_until(ctx.start_time, cand.confirm_after_seconds)
        if cand.unreadable_marks:
            out["unreadable_marks"] = list(cand.unreadable_marks)
    if dele:
        c = dele.counts
        out.update({"deleted": deleted, "already_gone": c.already_gone if swept else 0, "delete_failed": c.failed,
                    "delete_keys": c.keys, "delete_retried": c.retried, "delete_requests": c.requests,
                    "delete_parts": c.parts, "delete_resumed_parts": c.resumed_parts,
                    "delete_concurrency": dele.concurrency, "delete_rate": dele.rate, "delete_seconds": dele.seconds})
        if dele.dry_run:
            out["would_delete"] = c.deleted
        for k in ("sweep_dir", "dead_letters", "soft_delete_days"):
            if getattr(dele, k) is not None:
                out[k] = getattr(dele, k)
        if dele.restorable is not None and not dele.skipped:
            out["restorable"] = to_wire(dele.restorable)
        if dele.quarantine_purged:
            out["quarantine_purged"] = dele.quarantine_purged
        if dele.skipped:
            out["delete_skipped"] = dele.skipped
    if space:
        out.update(space_fields(space))
    reclaimable = cand.to_delete_bytes if cand else 0
    out["reclaimed_bytes"] = reclaimable if swept and counts is not None and not counts.failed else 0
    if ctx.mode != "sweep_only":
        out.update(_flow_fields(ctx, inputs.mark_id(), com, sl, cand))
    return out


def space_fields(space: SpaceResult) -> dict[str, Any]:
    """Return the attribution's totals for the summary (``space_*``; the whole of it in ``space.json``)."""
    if space.skipped:
        return {"space_skipped": space.skipped}
    return {"space_file": space.space_key, "space_objects": space.objects, "space_bytes": space.bytes,
            "space_head_bytes": space.head_bytes, "space_retention_bytes": space.retention_bytes,
            "space_staged_bytes": space.staged_bytes, "space_deleted_bytes": space.deleted_bytes,
            "space_held_back_bytes": space.held_back_bytes, "space_young_bytes": space.young_bytes,
            "space_branches": space.branches, "stale_branches": space.stale_branches,
            "stale_alone_bytes": space.stale_alone_bytes, "attribute_space_seconds": space.seconds}


# What an incremental run leaves to clean runs (written into its report).
NOT_COVERED = ("objects at the namespace root and directly under data/ (legacy layouts), objects written late "
               "into slices older than the base run's newest slice, and objects only commits that expired "
               "since the chain's clean run referenced: the next clean run collects them")


def _flow_fields(ctx: RunContext, mark_id: str, com: CommittedResult | None, sl: SlicesResult | None,
                 cand: CandidatesResult | None) -> dict[str, Any]:
    """
    Which flow ran, what it read and why; and the state later incremental runs build on.

    That state is ``incremental_state``, read back by :func:`incremental_base`.
    """
    base = ctx.base if ctx.flow == "incremental" else None
    out: dict[str, Any] = {"flow": ctx.flow, "flow_reason": ctx.flow_reason}
    if sl:  # the blast-radius guard's denominator (a sweep-only run of this mark reads it back)
        out["guard_objects"] = sl.listed_objects + (base.clean_listed_objects if base else 0)
    if com:
        out.update({"new_commits": com.new_commits, "ranges_known": com.ranges_known})
    if sl:
        out["slices_before_base"] = sl.slices_before_base
    if base is not None:
        out.update({"base_run": base.mark_id, "clean_run": base.clean_run_id, "not_covered": NOT_COVERED})
        if cand:
            out.update({"carried_checked": cand.carried_checked, "carried_candidates": cand.carried_candidates})
    if not (com and com.read_file and com.identity_dir and sl and cand and cand.uncommitted_dir):
        return out  # a step kept nothing (a step run by hand without its mark): no base for later runs
    committed = [*(to_wire(d) for d in base.committed_dirs), to_wire(com.committed_dir)] if base else [to_wire(com.committed_dir)]
    identities = [*(to_wire(d) for d in base.identity_dirs), to_wire(com.identity_dir)] if base else [to_wire(com.identity_dir)]
    out["incremental_state"] = {
        "format": STATE_FORMAT, "namespace": ctx.storage.namespace, "gc_rules": ctx.gc_rules,
        "clean_run_id": base.clean_run_id if base else mark_id,
        "clean_start_time": base.clean_start_time if base else ctx.start_time,
        "clean_listed_objects": base.clean_listed_objects if base else sl.listed_objects,
        "runs_in_chain": base.runs_in_chain + 1 if base else 1,
        "last_slice": sl.first_slice, "uncommitted_dir": to_wire(cand.uncommitted_dir),
        "committed_dirs": committed, "identity_dirs": identities, "read_file": com.read_file,
    }
    return out


def incremental_base(mark_id: str, summary: dict[str, Any]) -> IncrementalBase:
    """
    Return the base of an incremental run: the ``incremental_state`` of run ``mark_id``'s summary.

    :func:`lakefs_gc.gc.flow.choose_flow` checked it is there and of this format.
    """
    st = summary["incremental_state"]
    return from_wire(IncrementalBase, {
        "mark_id": mark_id, "start_time": summary["start_time"], "mode": summary.get("mode", ""),
        "dry_run": bool(summary.get("dry_run", False)), "last_slice": st["last_slice"],
        "uncommitted_dir": st["uncommitted_dir"], "committed_dirs": st["committed_dirs"],
        "identity_dirs": st["identity_dirs"], "read_file": st["read_file"],
        "clean_run_id": st["clean_run_id"], "clean_start_time": st["clean_start_time"],
        "clean_listed_objects": st.get("clean_listed_objects", 0), "runs_in_chain": st["runs_in_chain"],
    }, f"the incremental_state of run {mark_id}")


def held_back_until(start_time: str, confirm_after_seconds: int) -> str:
    """
    When this mark's held-back candidates can go.

    A run that starts at or after this time may use this mark (once successful) to confirm them, if
    they are still unreferenced then.
    """
    start = datetime.strptime(start_time, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    return (start + timedelta(seconds=confirm_after_seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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


def summary_rows(summary: dict[str, Any], uri: str | None = None) -> list[tuple[str, str]]:
    """
    Return a run's report as (label, value) rows a person reads.

    What it listed, found, deleted, held back (and until when), left as dead letters, reclaimed; the
    flow and the cutoff. Built from a ``summary.json`` (this version's or an earlier one's) so the
    DAG-run summary and ``lakefs-gc report`` say the same thing. Counts a run did not reach are left
    out.
    """
    g = summary.get
    mode = g("mode", "?")
    shown_mode = mode + (" (dry run)" if g("dry_run") else "")
    if mode == "sweep_only" and g("mark_id"):
        shown_mode += f" of mark {g('mark_id')}"
    rows = [("repository", f"{g('repository', '?')}  ({g('storage_namespace', '?')})"),
            ("run", f"{g('airflow_run_id', '?')}  mark {g('run_id', '?')}"),
            ("mode", shown_mode)]
    if g("flow"):
        rows.append(("flow", summary["flow"] + (f"  ({g('flow_reason')})" if g("flow_reason") else "")))
    rows += [
            ("result", "success" if g("success") is True else "NOT COMPLETE (success: false)"),
            ("started", _t(g("start_time"))),
            ("cutoff", f"{_t(g('mark_cutoff_time') or g('cutoff_time'))}  (objects written at or after it are kept)"
                       + (f"; minimum age {_n(g('effective_min_age_seconds', 0))}s, below lakeFS's grace period "
                          f"({_n(g('grace_period_seconds', 0))}s), by the Param unsafe_min_age_override"
                          if g("unsafe_min_age_override") else ""))]
    if g("listed_objects") is not None:
        listed = _n(g("listed_objects"))
        if g("listed_bytes") is not None:
            listed += f" objects, {human_bytes(summary['listed_bytes'])}"
        if g("flow") == "incremental":
            listed += (f" in {_n(g('slices_listed', 0))} new slice(s); {_n(g('carried_checked', 0))} earlier staged or "
                       f"held-back object(s) checked again")
        if g("slices_skipped"):
            listed += f"; {_n(g('slices_skipped'))} slice(s) created after the cutoff skipped, not listed (too young)"
        rows.append(("listed", listed))
    if g("flow") == "incremental":
        rows.append(("committed", f"{_n(g('new_commits', 0))} new commit(s), {_n(g('ranges', 0))} new range(s) read"))
        rows.append(("not covered", g("not_covered", "")))
    if g("candidates") is not None:
        rows.append(("candidates", f"{_n(g('candidates'))}  (older than the cutoff, referenced by no kept commit "
                                   f"and not staged)"))
    rows.append(("marked", f"{_n(g('num_deleted_objects', 0))}  (the mark's deleted/ list)"))
    if g("held_back"):
        until = g("held_back_until")
        when = f"deletable by the first run that starts after {_t(until)} if still unreferenced" if until else ""
        rows.append(("held back", "; ".join(x for x in (_n(g("held_back")), when, g("held_back_reason") or "") if x)))
    elif g("held_back") == 0:
        rows.append(("held back", "0"))
    if g("delete_skipped"):
        rows.append(("deleted", f"0  (no sweep in {g('delete_skipped')})"))
    elif g("dry_run") and g("would_delete") is not None:
        rows.append(("deleted", f"0  (dry run: would delete {_n(g('would_delete'))})"))
    elif "deleted" in summary:
        rows.append(("deleted", _n(g("deleted"))))
        if "already_gone" in summary or "delete_missing" in summary:
            rows.append(("already gone", _n(g("already_gone", g("delete_missing", 0)))))
        failed = g("delete_failed", 0)
        rows.append(("dead letters", f"{_n(failed)}  ({g('dead_letters')})" if failed and g("dead_letters")
                     else _n(failed)))
    if "reclaimed_bytes" in summary:
        held = g("soft_delete_days")
        rows.append(("reclaimed", human_bytes(int(g("reclaimed_bytes") or 0)) + (
            f"  (the storage account's soft delete keeps deleted blobs {held} days: not freed until then)"
            if held else "")))
    if g("space_bytes") is not None:
        rows.append(("space", f"{human_bytes(int(g('space_head_bytes', 0)))} read by branch HEADs, "
                              f"{human_bytes(int(g('space_retention_bytes', 0)))} only in retention windows, "
                              f"{human_bytes(int(g('space_staged_bytes', 0)))} only staged, "
                              f"{human_bytes(int(g('space_young_bytes', 0)))} unreferenced but too young, "
                              f"{human_bytes(int(g('space_held_back_bytes', 0)))} held back; "
                              f"{_n(g('stale_branches', 0))} stale branch(es) alone hold "
                              f"{human_bytes(int(g('stale_alone_bytes', 0)))}  (lakefs-gc report --space)"))
    elif g("space_skipped"):
        rows.append(("space", f"not attributed: {g('space_skipped')}"))
    restorable = g("restorable")
    if isinstance(restorable, dict) and "deleted" in summary and not g("dry_run"):
        rows.append(("restorable", _restorable(restorable)))
    if uri:
        rows.append(("report", uri))
    return rows


def _restorable(r: dict[str, Any]) -> str:
    """``yes until …`` / ``no`` / ``unknown``, with how (the sweep's ``restorable`` field)."""
    ok = r.get("restorable")
    if ok is True:
        when = f" until {r['until']}" if r.get("until") else ""
        return f"yes{when}  ({r.get('how')}: lakefs-gc restore NAMESPACE --run RUN_ID)"
    if ok is False:
        return f"no  ({r.get('detail')})"
    return f"unknown  ({r.get('detail')})"


def summary_text(summary: dict[str, Any], uri: str | None = None) -> str:
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
        text = (f"{_n(r.committed_addresses)} committed address(es) from {_n(r.active_commits)} commit(s) to keep "
                f"({_n(r.commits_lakefs_lacked)} lakeFS's list lacked), {_n(r.metaranges)} metarange(s), "
                f"{_n(r.ranges)} range(s)")
    elif isinstance(r, SlicesResult):
        text = (f"{_n(r.listed_objects)} object(s) ({human_bytes(r.listed_bytes)}) in {_n(r.slices_listed)} slice(s), "
                f"{_n(r.slices_skipped)} skipped")
    elif isinstance(r, CandidatesResult):
        text = (f"{_n(r.candidates)} candidate(s) ({human_bytes(r.candidate_bytes)}), {_n(r.to_delete)} marked for "
                f"deletion ({human_bytes(r.to_delete_bytes)}), {_n(r.held_back)} held back")
        if r.held_back and r.held_back_reason:
            text += f" ({r.held_back_reason})"
    elif isinstance(r, SpaceResult):
        text = (f"not attributed: {r.skipped}" if r.skipped else
                f"{_n(r.objects)} object(s) ({human_bytes(r.bytes)}) attributed: {human_bytes(r.head_bytes)} read by "
                f"HEADs, {human_bytes(r.retention_bytes)} only in retention windows, {human_bytes(r.staged_bytes)} only "
                f"staged; {_n(r.stale_branches)} stale branch(es)")
    elif isinstance(r, DeleteResult):
        c = r.counts
        if r.skipped:
            text = f"no sweep in {r.skipped}"
        else:
            text = (f"{'would delete' if r.dry_run else 'deleted'} {_n(c.deleted)}, already gone {_n(c.already_gone)}, "
                    f"dead letters {_n(c.failed)} of {_n(c.keys)} key(s) in {_n(c.parts)} part(s) "
                    f"({_n(c.resumed_parts)} resumed), {_n(c.requests)} request(s), {_n(c.retried)} retried")
    else:
        return f"{step}: {r}"
    seconds = getattr(r, "seconds", 0.0)
    return f"{step}: {text}" + (f"; {seconds:.1f} s" if seconds else "")


def summary_location(inputs: StepInputs) -> str:
    """
    Where the run's summary goes: the mark's ``summary.json``.

    A sweep-only run writes its own in its sweep folder and leaves the mark's untouched.
    """
    ctx = inputs.context
    if ctx.sweep_mark is not None:
        return sweep_summary_key(ctx.sweep_mark.mark_id, ctx.airflow_run_id)
    return summary_key(inputs.mark_id())


def write_summary(storage: Storage, key: str, summary: dict[str, Any]) -> str:
    """Write a summary.json file (the only writer of them); return the URI written."""
    storage.put(key, json.dumps(summary, sort_keys=False).encode())
    return storage.full_uri(key)


def lakefs_ui_url(endpoint: str, repository: str) -> str | None:
    """
    Return the repository's page in lakeFS's UI.

    The API endpoint without ``/api/v1``, then ``/repositories/<repo>``; None when the endpoint is
    not an http(s) URL.
    """
    if not endpoint.startswith(("http://", "https://")):
        return None
    base = endpoint.rstrip("/").removesuffix("/api/v1").rstrip("/")
    return f"{base}/repositories/{quote(repository, safe='')}"


def report_url(uri: str, storage: StorageLocation) -> str | None:
    """
    Return a URL a browser can open for a report written at ``uri``, or None when there is none.

    ``s3://`` on AWS (no endpoint): the S3 console's object page. ``s3://`` on an S3-compatible
    endpoint: the object's path-style URL on that endpoint (it opens where the bucket can be read
    without signing, e.g. moto or a public bucket; MinIO's console is on another port we do not
    know). ``local://``: None, a browser does not open the server's files from a web page (the
    DAG-run summary and ``lakefs-gc report`` show the path). No credential is ever part of it.
    """
    parts = urlsplit(uri)
    if parts.scheme not in ("s3", "s3a") or not parts.netloc:
        return None
    bucket, key = parts.netloc, parts.path.lstrip("/")
    if not storage.endpoint_url:
        region = storage.s3_region or "us-east-1"
        return (f"https://s3.console.aws.amazon.com/s3/object/{quote(bucket, safe='')}"
                f"?region={quote(region, safe='')}&prefix={quote(key, safe='')}")
    endpoint = urlsplit(storage.endpoint_url)
    if endpoint.scheme not in ("http", "https"):
        return None
    base = f"{endpoint.scheme}://{endpoint.hostname}" + (f":{endpoint.port}" if endpoint.port else "")
    return f"{base}/{quote(bucket, safe='')}/{quote(key)}"


# The run's figures as metrics and Asset events name them -> the summary.json field they are.
FIGURES: dict[str, str] = {
    "objects_listed": "listed_objects", "candidates": "candidates", "deleted": "deleted",
    "already_gone": "already_gone", "held_back": "held_back", "dead_letters": "delete_failed",
    "bytes_reclaimed": "reclaimed_bytes",
}
# where the bytes go (attribute_space, clean runs) -> the summary.json field
SPACE_FIGURES: dict[str, str] = {
    "head": "space_head_bytes", "retention": "space_retention_bytes", "staged": "space_staged_bytes",
    "deleted": "space_deleted_bytes", "held_back": "space_held_back_bytes", "young": "space_young_bytes",
}


def run_figures(summary: dict[str, Any]) -> dict[str, float]:
    """
    Return the run's numbers by the names the metrics and the Asset events carry, from its summary.

    ``FIGURES`` (0 when the run did not reach the step), ``seconds.<step>`` for each timed step that
    ran, ``space_bytes.<class>`` when the run attributed its namespace.
    """
    out: dict[str, float] = {name: summary.get(key) or 0 for name, key in FIGURES.items()}
    for step in TIMED_STEPS:
        if summary.get(f"{step}_seconds") is not None:
            out[f"seconds.{step}"] = float(summary[f"{step}_seconds"])
    if summary.get("space_file"):
        for name, key in SPACE_FIGURES.items():
            out[f"space_bytes.{name}"] = summary.get(key) or 0
    return out
