"""
Step ``save_report``: write the run's ``summary.json`` last, from the typed results of every step.

The summary holds lakeFS's fields plus ours, ``success: true`` (:mod:`lakefs_gc.report.summary`);
the step returns where it is and what it says (:class:`~lakefs_gc.contract.ReportResult`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from lakefs_gc.contract import ReportResult, StepInputs
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
    uri = write_summary(storage, summary_location(inputs), summary)
    return ReportResult(
        summary_uri=uri,
        seconds=round(time.monotonic() - t0, 3),
        summary=summary_text(summary, uri),
        report_url=report_url(uri, ctx.storage),
        lakefs_url=lakefs_ui_url(ctx.lakefs_endpoint, ctx.repository),
    )
