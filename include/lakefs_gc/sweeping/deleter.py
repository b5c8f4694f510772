"""
The sweep's deleter: batches, a rate limit, retries with full-jitter backoff, dead letters.

Runs inside one Spark task (or anywhere): :class:`Deleter` deletes an iterable of namespace-relative
keys through a storage's ``delete_batch`` (S3 DeleteObjects in quiet mode, up to 1,000 keys; Azure
Blob Batch, up to 256; parallel single deletes on GCS, 100 per call; a loop of ``unlink`` on local:
each storage's ``max_delete_batch``), never more than ``rate`` keys per second, retrying throttling
(S3 SlowDown, Azure ServerBusy, 429), 5xx and connection errors, per request and per key
(DeleteObjects and Blob Batch can answer 200 and fail some keys inside). "Not found" is success, counted apart as ``already_gone``: a re-run after a crash finds the
keys it already deleted gone. (S3's DeleteObjects answers success for a key that was not there, so
on ``s3://`` such keys count as ``deleted``; the local blockstore tells them apart.)
Keys that still fail after ``max_attempts`` come back as :class:`DeadLetter` records.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

# Codes treated as "the key is already gone" and as "try again later" (S3 error codes and statuses).
# Codes treated as "the key is already gone" and as "try again later": S3 error codes, Azure's
# x-ms-error-code values, HTTP statuses (GCS, and any answer without a code).
MISSING_CODES = frozenset({"NoSuchKey", "NotFound", "404", "BlobNotFound", "ContainerNotFound"})
RETRYABLE_CODES = frozenset(
    {
        "SlowDown",
        "InternalError",
        "ServiceUnavailable",
        "RequestTimeout",
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
        "TooManyRequests",
        "500",
        "502",
        "503",
        "504",
        "429",
        "408",
        "ConnectionError",
        "ServerBusy",
        "OperationTimedOut",
        "BatchResponseUnmatched",
    }
)


@dataclass(frozen=True)
class DeletePolicy:
    """How a :class:`Deleter` deletes: its rate, batches, retries with backoff, and whether for real."""

    rate: float = 3000.0  # keys per second for this deleter; 0 = unlimited
    batch_size: int = 1000  # keys per request (S3 allows at most 1,000)
    max_attempts: int = 8  # per key, including the first
    backoff_base: float = 0.2  # seconds; delay before retry n is uniform(0, min(max, base * 2**n))
    backoff_max: float = 20.0
    dry_run: bool = False  # follow the code path, delete nothing

    def __post_init__(self) -> None:
        if not 1 <= self.batch_size <= 1000:
            raise ValueError(f"delete batch size must be 1..1000, got {self.batch_size}")
        if self.rate < 0 or self.max_attempts < 1:
            raise ValueError(f"invalid delete policy {self}")


@dataclass(frozen=True)
class DeadLetter:
    """A key that still failed after the policy's attempts: its last error code and message."""

    key: str
    error_code: str
    message: str
    attempts: int


@dataclass
class DeleteStats:
    """What a :class:`Deleter` did with its keys, and the keys it could not delete."""

    deleted: int = 0  # keys this deleter removed (dry run: would remove)
    already_gone: int = 0  # keys the storage said were not there ("not found")
    retried: int = 0  # key-attempts that were retried
    requests: int = 0
    dead: list[DeadLetter] = field(default_factory=list)

    def add(self, other: DeleteStats) -> None:
        self.deleted += other.deleted
        self.already_gone += other.already_gone
        self.retried += other.retried
        self.requests += other.requests
        self.dead.extend(other.dead)


class TokenBucket:
    """At most ``rate`` tokens per second on average, bursts of at most one second's worth."""

    def __init__(
        self, rate: float, clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep
    ):
        self.rate = float(rate)
        self.capacity = max(1.0, self.rate)
        self.tokens = 0.0  # start empty: the first second is not a free burst
        self.clock, self.sleep = clock, sleep
        self.last = clock()

    def acquire(self, n: int) -> None:
        if self.rate <= 0:
            return
        need = float(n)
        while True:
            now = self.clock()
            self.tokens = min(self.capacity, self.tokens + (now - self.last) * self.rate)
            self.last = now
            take = min(need, self.tokens)
            self.tokens -= take
            need -= take
            if need <= 1e-6:  # float dust: never spin on a sleep too short to move the clock
                return
            self.sleep(max(0.001, min(need, self.capacity) / self.rate))


def error_code(exc: BaseException) -> str:
    """
    Return a code for a request-level failure.

    botocore's error code or HTTP status, Azure's ``error_code`` or status, Google's HTTP status, or
    ``ConnectionError`` for transport failures.
    """
    resp = getattr(exc, "response", None)
    if isinstance(resp, dict):
        code = resp.get("Error", {}).get("Code") or ""
        status = resp.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code:
            return str(code)
        if status:
            return str(status)
    name = type(exc).__name__
    if name in (
        "ServiceRequestError",
        "ServiceResponseError",
        "ServiceRequestTimeoutError",
        "ServiceResponseTimeoutError",
    ):  # azure-core: the request did not get an answer
        return "ConnectionError"
    azure_code = getattr(exc, "error_code", None) or getattr(exc, "status_code", None)
    if azure_code:
        return str(getattr(azure_code, "value", azure_code))  # StorageErrorCode is an enum of the codes
    google_status = getattr(exc, "code", None)
    if isinstance(google_status, int):
        return str(google_status)
    if "Connection" in name or "Timeout" in name or isinstance(exc, (ConnectionError, TimeoutError)):
        return "ConnectionError"
    return name


class DeleteTarget(Protocol):
    """What a :class:`Deleter` deletes through: a storage, or anything with its batch delete."""

    max_delete_batch: int  # most keys one delete_batch call takes

    def delete_batch(self, keys: list[str]) -> list[tuple[str, str, str]]: ...


class Deleter:
    """Deletes keys through ``storage.delete_batch`` as its :class:`DeletePolicy` says."""

    def __init__(
        self,
        storage: DeleteTarget,
        policy: DeletePolicy,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: Callable[[], float] = random.random,
    ):
        self.storage, self.policy = storage, policy
        self.sleep, self.rng = sleep, rng
        self.bucket = TokenBucket(policy.rate, clock=clock, sleep=sleep)

    def _backoff(self, attempt: int) -> None:
        p = self.policy
        self.sleep(self.rng() * min(p.backoff_max, p.backoff_base * (2**attempt)))

    def delete(self, keys: Iterable[str]) -> DeleteStats:
        stats = DeleteStats()
        size = min(self.policy.batch_size, self.storage.max_delete_batch)
        for batch in _batches(keys, size):
            stats.add(self._delete_batch(batch))
        return stats

    def _delete_batch(self, batch: list[str]) -> DeleteStats:
        st = DeleteStats()
        pending = list(batch)
        attempt = 0
        while pending:
            attempt += 1
            self.bucket.acquire(len(pending))
            st.requests += 1
            if self.policy.dry_run:
                st.deleted += len(pending)
                return st
            try:
                errors = self.storage.delete_batch(pending)
            except Exception as exc:
                code = error_code(exc)
                if code in RETRYABLE_CODES and attempt < self.policy.max_attempts:
                    st.retried += len(pending)
                    self._backoff(attempt)
                    continue
                st.dead.extend(DeadLetter(k, code, str(exc)[:500], attempt) for k in pending)
                return st
            failed: dict[str, tuple[str, str]] = {k: (c, m) for k, c, m in errors}
            retry: list[str] = []
            for k in pending:
                if k not in failed:
                    st.deleted += 1
                    continue
                code, message = failed[k]
                if code in MISSING_CODES:
                    st.already_gone += 1
                elif code in RETRYABLE_CODES and attempt < self.policy.max_attempts:
                    retry.append(k)
                else:
                    st.dead.append(DeadLetter(k, code, message[:500], attempt))
            if retry:
                st.retried += len(retry)
                self._backoff(attempt)
            pending = retry
        return st


def _batches(keys: Iterable[str], size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for k in keys:
        batch.append(k)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
