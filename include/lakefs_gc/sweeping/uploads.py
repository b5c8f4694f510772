"""
The sweep's incomplete multipart uploads: those under the namespace initiated long ago are aborted.

An incomplete upload is no object: no commit and no staged entry can read it, so nothing lakeFS
keeps is lost by aborting it; what is lost is an upload a client is still completing. The guard
is its age: only an upload initiated longer ago than the run's ``abort_uploads_after_days``
(default 7, never below lakeFS's 24-hour expiry of upload addresses) before the run's start is
aborted. Its age is taken from the later of the store's ``Initiated`` and the time in its key's
name when that is a lakeFS address (``data/<partition>/<xid>``: lakeFS made the address when the
upload began), so a store that misreports ``Initiated`` cannot make a fresh lakeFS upload look old.

Each old upload is sized (its parts' sizes, ListParts) and aborted; a dry run sizes and counts
them and aborts none. Aborts are rate-limited and retried as the deleter's deletes are (its
policy: ``delete_rate``, ``delete_max_attempts``, backoff); "no such upload" (completed or aborted
since the listing) counts as ``already_gone``. On Azure the uploads are reported only
(:class:`lakefs_gc.storage.multipart.AzureUncommitted`: every blob of uncommitted blocks, whatever
its age, as ``old``); ``local://`` has none to abort.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TypeVar

from lakefs_gc.contract import DeleteResult, Uploads
from lakefs_gc.lakefs.xid import ascending_time, is_xid
from lakefs_gc.storage.multipart import (
    AzureUncommitted,
    MultipartUploads,
    PendingUpload,
    Unsupported,
    UploadGone,
    uploads_of,
)
from lakefs_gc.sweeping.deleter import RETRYABLE_CODES, DeletePolicy, TokenBucket, error_code
from lakefs_gc.timestamps import iso
from lakefs_gc.words import plural

log = logging.getLogger(__name__)
AZURE_DROPS_DAYS = 7  # Azure discards uncommitted blocks this long after they were staged
_T = TypeVar("_T")


def started(upload: PendingUpload) -> datetime:
    """
    Return when ``upload`` began: the later of the store's ``Initiated`` and its key's lakeFS address time.

    lakeFS names an object it is given to write ``data/<partition>/<xid>``, the xid made at that
    moment (its S3 gateway at CreateMultipartUpload, getPhysicalAddress and the presigned
    multipart uploads when the address is handed out).
    """
    name = upload.key.rpartition("/")[2]
    if is_xid(name):
        named = datetime.fromtimestamp(ascending_time(name), UTC)
        return max(upload.initiated, named)
    return upload.initiated


class _Retrying:
    """Calls to the store through the deleter's policy: its rate, its retries of throttling and 5xx, its backoff."""

    def __init__(self, policy: DeletePolicy, sleep: Callable[[float], None], rng: Callable[[], float]):
        self.policy, self.sleep, self.rng = policy, sleep, rng
        self.bucket = TokenBucket(policy.rate, sleep=sleep)

    def __call__(self, call: Callable[[], _T]) -> _T:
        attempt = 0
        while True:
            attempt += 1
            self.bucket.acquire(1)
            try:
                return call()
            except UploadGone:
                raise
            except Exception as exc:
                if error_code(exc) not in RETRYABLE_CODES or attempt >= self.policy.max_attempts:
                    raise
                p = self.policy
                self.sleep(self.rng() * min(p.backoff_max, p.backoff_base * (2**attempt)))


def sweep_uploads(
    storage: object,
    now: datetime,
    older_than_days: float,
    policy: DeletePolicy,
    *,
    sleep: Callable[[float], None] = time.sleep,
    rng: Callable[[], float] = random.random,
) -> Uploads:
    """
    Abort ``storage``'s incomplete uploads initiated more than ``older_than_days`` before ``now`` (the run's start).

    ``policy.dry_run``: size and count them, abort none. A listing that fails is the result's
    ``error`` (none aborted); an endpoint that does not model the calls is ``skipped``.
    """
    base = Uploads(older_than_days=older_than_days)
    if not older_than_days:
        return replace(base, skipped="abort_uploads_after_days is 0: incomplete uploads are never aborted")
    found = uploads_of(storage)
    if found is None:
        return replace(
            base,
            skipped="local:// has no multipart uploads to abort (lakeFS's local blockstore writes an "
            "upload's parts as ordinary files, listed like any other object)",
        )
    cutoff = now - timedelta(days=older_than_days)
    base = replace(base, how=found.how)
    try:
        if isinstance(found, AzureUncommitted):
            try:
                return _report_azure(found, base)
            except Exception as exc:  # a report only: it never fails the sweep
                log.warning("could not list the blobs of uncommitted blocks: %s", exc)
                return replace(base, skipped=f"could not be listed ({type(exc).__name__}: {str(exc)[:300]})")
        return _abort_old(found, cutoff, base, policy, _Retrying(policy, sleep, rng))
    except Unsupported as exc:
        return replace(base, skipped=f"the endpoint does not model multipart uploads: {exc}")


def _abort_old(
    found: MultipartUploads, cutoff: datetime, base: Uploads, policy: DeletePolicy, call: _Retrying
) -> Uploads:
    young = old = old_bytes = aborted = aborted_bytes = gone = failed = 0
    failures: list[str] = []
    try:
        for upload in found.list():
            if started(upload) > cutoff:
                young += 1
                continue
            old += 1
            try:
                size = call(partial(found.size, upload))
                old_bytes += size
                if policy.dry_run:
                    continue
                call(partial(found.abort, upload))
            except UploadGone:
                gone += 1
                continue
            except Unsupported:
                raise
            except Exception as exc:
                failed += 1
                if len(failures) < 3:
                    failures.append(f"{upload.key} ({error_code(exc)}: {str(exc)[:200]})")
                continue
            aborted += 1
            aborted_bytes += size
    except Unsupported:
        raise
    except Exception as exc:
        log.warning("could not list the incomplete multipart uploads: %s", exc)
        base = replace(base, error=f"{type(exc).__name__}: {str(exc)[:300]}")  # what was done before it stays counted
    result = replace(
        base,
        young=young,
        old=old,
        old_bytes=old_bytes,
        aborted=aborted,
        aborted_bytes=aborted_bytes,
        already_gone=gone,
        failed=failed,
        detail=f"could not abort, e.g. {'; '.join(failures)}" if failures else "",
    )
    if result.error:
        return result
    log.info(
        "incomplete multipart uploads initiated before %s: %s (%d bytes), %s; %s younger, untouched",
        iso(cutoff),
        plural(old, "upload"),
        old_bytes,
        "dry run: none aborted" if policy.dry_run else f"{aborted} aborted, {gone} already gone, {failed} failed",
        plural(young, "upload"),
    )
    return result


def _report_azure(found: AzureUncommitted, base: Uploads) -> Uploads:
    """Every blob of uncommitted blocks, whatever its age: billed until the service discards it."""
    count = nbytes = 0
    for blob in found.list():
        count += 1
        nbytes += blob.bytes
    return replace(
        base,
        old=count,
        old_bytes=nbytes,
        detail=f"reported, not deleted: Azure has no abort, and discards uncommitted blocks "
        f"{plural(AZURE_DROPS_DAYS, 'day')} after they were staged",
    )


def with_uploads(result: DeleteResult, uploads: Uploads) -> DeleteResult:
    """Return the sweep's ``result`` with its ``uploads``; uploads left failing make it ``incomplete`` (the task fails)."""
    problem = None
    if uploads.error:
        problem = (
            f"could not list the incomplete multipart uploads ({uploads.error}); {uploads.aborted} aborted "
            f"before that. Grant the storage credential the listing and abort of multipart uploads, or set "
            f"abort_uploads_after_days to 0"
        )
    elif uploads.failed:
        problem = (
            f"{plural(uploads.failed, 'incomplete multipart upload')} could not be aborted after retries "
            f"({uploads.detail}); a later sweep tries again"
        )
    incomplete = "; ".join(x for x in (result.incomplete, problem) if x) or None
    return replace(result, uploads=uploads, incomplete=incomplete)
