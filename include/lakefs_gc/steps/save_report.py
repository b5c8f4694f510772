"""
Step ``save_report``: write the run's ``summary.json`` last, from the typed results of every step.

The summary holds lakeFS's fields plus ours, ``success: true`` (:mod:`lakefs_gc.report.summary`);
the step returns where it is and what it says (:class:`~lakefs_gc.contract.ReportResult`).

Before writing it, the step expires the GC's own leftovers (:mod:`lakefs_gc.report.leftovers`): it
runs last in every mode, after the sweep, knows this run's state (the next incremental run's
chain), and writes what went and what stayed into the same summary. A failed run never gets here,
so it removes nothing.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING

from lakefs_gc.contract import ReportResult, StepInputs
from lakefs_gc.report.leftovers import expire_for_run
from lakefs_gc.report.links import lakefs_ui_url, report_url
from lakefs_gc.report.render import summary_text
from lakefs_gc.report.summary import build_summary, summary_location, write_summary

if TYPE_CHECKING:
    from lakefs_gc.storage.base import Storage


def save_report(storage: Storage, inputs: StepInputs) -> ReportResult:
    """
    Write the run's summary to ``storage``, the repository's namespace, and return where it is.

    The result's ``summary`` is the run in a few ``label: value`` lines
    (:func:`lakefs_gc.report.render.summary_text`).
    """
    t0 = time.monotonic()
    ctx = inputs.context
    summary = build_summary(inputs, success=True)
    summary = dataclasses.replace(summary, **expire_for_run(storage, inputs, summary))
    uri = write_summary(storage, summary_location(inputs), summary)
    return ReportResult(
        summary_uri=uri,
        seconds=round(time.monotonic() - t0, 3),
        summary=summary_text(summary, uri),
        report_url=report_url(uri, ctx.storage),
        lakefs_url=lakefs_ui_url(ctx.lakefs_endpoint, ctx.repository),
    )
