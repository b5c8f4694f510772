"""
Which flow a run takes, clean or incremental (the design's Flow 2), and on which earlier run it builds.

One pure function over the earlier marks' summaries.

An incremental run is sound on any earlier successful run that saved its state, whatever happened
after it: it subtracts everything that run's committed listing found plus every commit it has not
read (by commit id, never by date), and it re-checks every address it may delete against this
run's own uncommitted mark, committed listing and storage (tests/gc/test_flow.py). So the base is
the newest usable one; a later failed run does not matter. ``auto`` runs clean when there is none,
or when the chain of incremental runs since the last clean run reached ``clean_run_every``: only a
clean run lists every slice and the namespace root, and reads every retained commit, so only it
collects objects in old slices whose commits expired.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from lakefs_gc.contract import FLOWS
from lakefs_gc.errors import Refusal
from lakefs_gc.report.run_summary import STATE_FORMAT, IncrementalState, RunSummary
from lakefs_gc.timestamps import iso, parse_iso
from lakefs_gc.words import noun


@dataclass(frozen=True)
class CleanRunEvery:
    """
    Config ``clean_run_every``: when an ``auto`` run is clean.

    Once the chain since the last clean run holds ``runs`` runs (the clean one included), or once
    that clean run started ``days`` ago.
    """

    runs: int | None = None
    days: float | None = None

    def due(self, runs_in_chain: int, clean_started: datetime, now: datetime) -> str | None:
        """
        Return why the next run should be clean, or None.

        ``runs_in_chain``: the last clean run and the incremental runs since it.
        """
        if self.runs is not None and runs_in_chain >= self.runs:
            return (
                f"clean_run_every: {self.runs} runs (the last clean run and {runs_in_chain - 1} incremental "
                f"run(s) since)"
            )
        if self.days is not None and now - clean_started >= timedelta(days=self.days):
            return f"clean_run_every: {self.days:g} {noun(self.days, 'day')} (the last clean run started at {iso(clean_started)})"
        return None


@dataclass(frozen=True)
class FlowChoice:
    """The flow a marking run takes, why, and (incremental) the earlier run it builds on."""

    flow: str  # clean | incremental
    reason: str  # why, in words (written into the report)
    base: str = ""  # incremental: the mark id whose saved state this run builds on
    base_summary: RunSummary | None = None


def rules_fingerprint(default_retention_days: int | None, branches: dict[str, int]) -> str:
    """Return the GC rules as one short string: a base saved under other rules is not used by ``auto``."""
    text = json.dumps(
        {"default_retention_days": default_retention_days, "branches": dict(sorted(branches.items()))}, sort_keys=True
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _unusable(summary: RunSummary, namespace: str, rules: str) -> str | None:
    state = summary.incremental_state
    if state is None:
        return "it saved no state for incremental runs (written before they existed, or a sweep-only run)"
    if state.format != STATE_FORMAT:
        return f"its state has format {state.format!r}, this version reads {STATE_FORMAT}"
    if state.namespace != namespace:
        return f"it ran on the storage namespace {state.namespace!r}, the repository's is now {namespace!r}"
    lacks = state.lacks()
    if lacks is not None:
        return f"its state lacks {lacks!r}"
    try:
        parse_iso(str(state.clean_start_time))
    except ValueError:
        return f"its state's clean_start_time {state.clean_start_time!r} is not a time"
    return None


def choose_flow(
    requested: str,
    marks: Iterable[tuple[str, RunSummary | None, str | None]],
    *,
    namespace: str,
    rules: str,
    now: datetime,
    every: CleanRunEvery,
) -> FlowChoice:
    """
    Choose the flow of a marking run.

    ``requested``: the ``flow`` Param; ``marks``: every earlier mark as
    :func:`lakefs_gc.report.marks.iter_marks` yields it (id, summary or None, problem).

    Refuses (fails the run, deleting nothing) when ``incremental`` is requested and no earlier run
    can serve as its base.
    """
    if requested not in FLOWS:
        raise Refusal(f"Param 'flow' must be one of {', '.join(FLOWS)}, got {requested!r}")
    if requested == "clean":
        return FlowChoice("clean", "requested (flow=clean)")
    newest: tuple[datetime, str, RunSummary] | None = None
    for mark_id, summary, _problem in marks:
        if summary is None or summary.success is not True or summary.mode == "sweep_only" or summary.start_time is None:
            continue
        try:
            started = parse_iso(summary.start_time)
        except ValueError:
            continue
        if started < now and (newest is None or started > newest[0]):
            newest = (started, mark_id, summary)
    why_not: str | None
    if newest is None:
        why_not = "no earlier successful run"
    else:
        problem = _unusable(newest[2], namespace, rules)
        why_not = f"the newest successful run {newest[1]} cannot serve as a base: {problem}" if problem else None
    if newest is None or why_not is not None:  # why_not is set whenever newest is None
        if requested == "incremental":
            raise Refusal(
                f"flow=incremental needs an earlier successful run that saved its state: {why_not}. "
                f"Run with flow=clean (or auto) first"
            )
        return FlowChoice("clean", f"auto: {why_not}")
    _, base, summary = newest
    state = summary.incremental_state or IncrementalState()  # _unusable checked it is there, with these fields
    due = every.due(state.runs_in_chain or 0, parse_iso(str(state.clean_start_time)), now)
    if state.gc_rules != rules:
        # still sound (commits newly retained are new to the chain and read), but commits no longer
        # retained keep their objects until a clean run: auto runs clean
        due = "the repository's GC rules changed since run " + base + (f"; {due}" if due else "")
    if due and requested == "auto":
        return FlowChoice("clean", f"auto: {due}")
    reason = "requested (flow=incremental)" if requested == "incremental" else "auto"
    return FlowChoice(
        "incremental",
        f"{reason}: builds on run {base} (started {summary.start_time})" + (f"; note: {due}" if due else ""),
        base,
        summary,
    )
