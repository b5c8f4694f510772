"""
The doctor's checks as the first thing a run does (``prepare_run``): a run that would fail half way fails closed.

``prepare_run`` has already read the repository, its GC rules, lakeFS's configuration and grace
period (those failures are its own). Here: each other read a run makes of lakeFS with the run's
key (:func:`lakefs_gc.doctor.lakefs_checks.check_reads`), each right of the storage credentials on a
scratch key under the namespace, removed after (:func:`lakefs_gc.doctor.storage_checks.check_storage`),
and the task's pyspark against pyspark-client. Any ``FAIL`` raises :class:`PreflightFailed` (a
refusal: no retry) with every failed line, before anything is marked or deleted; the ``WARN`` lines
are logged, and so are failed rights that only ``lakefs-gc restore`` uses
(:data:`~lakefs_gc.doctor.policy.UNDO_ONLY`: the run works without them, its undo does not). The
prepare calls are not made here: the run makes them itself right after.
"""

from __future__ import annotations

import io
import logging
from typing import TYPE_CHECKING

from lakefs_gc.doctor import FAIL, WARN, Line, Report
from lakefs_gc.doctor.policy import UNDO_ONLY
from lakefs_gc.errors import Refusal

if TYPE_CHECKING:
    from datetime import datetime

    from lakefs_gc.lakefs.client import LakeFSClient
    from lakefs_gc.storage.base import Storage

log = logging.getLogger(__name__)


class PreflightFailed(Refusal):
    """A check of ``lakefs-gc doctor`` failed at the start of a run; nothing was marked or deleted."""


def preflight(
    client: LakeFSClient, repository: str, branch: str, storage: Storage, now: datetime, quarantine_days: int
) -> list[Line]:
    """Run the checks; return their lines, or raise :class:`PreflightFailed` naming every failed one."""
    from lakefs_gc.doctor.lakefs_checks import check_reads
    from lakefs_gc.doctor.runtime_checks import check_pyspark
    from lakefs_gc.doctor.storage_checks import check_storage
    from lakefs_gc.words import plural

    report = Report(io.StringIO())
    check_reads(report, client, repository, branch)
    check_storage(report, storage, repository, now, quarantine_days, None)
    check_pyspark(report)
    for line in report.lines:
        if line.status == WARN:
            log.warning("lakefs-gc doctor: %s", line.text())
        elif line.status == FAIL and line.what in UNDO_ONLY:  # the run works; only its undo would not
            log.warning("lakefs-gc doctor: lakefs-gc restore cannot undo this run's sweep: %s", line.text())
    failed = [line.text() for line in report.lines if line.status == FAIL and line.what not in UNDO_ONLY]
    if failed:
        raise PreflightFailed(
            f"repository {repository!r}: {plural(len(failed), 'check')} of lakefs-gc doctor failed at the start of "
            f"the run, so nothing was marked or deleted: {' | '.join(failed)}"
        )
    log.info("lakefs-gc doctor: %s passed before the run", plural(len(report.lines), "check"))
    return report.lines
