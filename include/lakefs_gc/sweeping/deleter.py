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

Throttling (:data:`THROTTLE_CODES`) is not a failure of the keys: the deleter reports it to its
:class:`lakefs_gc.sweeping.shared_rate.Rate` (one rate shared by all of a run's delete tasks, which
halves), and puts the throttled keys back in its queue (after the next fresh batch), without
counting an attempt. They become dead letters only when no delete of this deleter has succeeded for
``throttle_patience`` seconds. ``DeletePolicy(adaptive=False)`` is the deleter as it was before the
shared rate (a fixed rate of its own, throttles counted as attempts): the bench's baseline.
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from lakefs_gc.sweeping.shared_rate import AdaptiveRate, Rate

# Codes treated as "the key is already gone" and as "try again later": S3 error codes, Azure's
# x-ms-error-code values, HTTP statuses (GCS, and any answer without a code).
MISSING_CODES = frozenset({"NoSuchKey", "NotFound", "404", "BlobNotFound", "ContainerNotFound"})
# The retryable codes that mean "slower, please": the shared rate halves on them
THROTTLE_CODES = frozenset(
    {
        "SlowDown",
        "ServiceUnavailable",
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
        "TooManyRequests",
        "ServerBusy",
        "503",
        "429",
    }
)
RETRYABLE_CODES = THROTTLE_CODES | frozenset(
    {
        "InternalError",
        "RequestTimeout",
        "500",
        "502",
        "504",
        "408",
        "ConnectionError",
        "OperationTimedOut",
        "BatchResponseUnmatched",
    }
)


@dataclass(frozen=True)
class DeletePolicy:
    """How a :class:`Deleter` deletes: its rate, batches, retries with backoff, and whether for real."""

    rate: float = 3000.0  # keys per second for this deleter (the ceiling of its own rate); 0 = unlimited
    batch_size: int = 1000  # keys per request (S3 allows at most 1,000)
    max_attempts: int = 8  # per key, including the first
    backoff_base: float = 0.2  # seconds; delay before retry n is uniform(0, min(max, base * 2**n))
    backoff_max: float = 20.0
    dry_run: bool = False  # follow the code path, delete nothing
    # throttled keys go back in the queue until no delete has succeeded for this many seconds
    throttle_patience: float = 3600.0
    adaptive: bool = True  # False: a fixed rate, throttles counted as attempts (the deleter before the shared rate)

    def __post_init__(self) -> None:
        if not 1 <= self.batch_size <= 1000:
            raise ValueError(f"delete batch size must be 1..1000, got {self.batch_size}")
        if self.rate < 0 or self.max_attempts < 1 or self.throttle_patience < 0:
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
    retried: int = 0  # key-attempts that were retried (throttled keys put back in the queue too)
    requests: int = 0
    throttled: int = 0  # requests throttled (whole, or some of their keys)
    dead: list[DeadLetter] = field(default_factory=list)


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


class FixedRate:
    """A deleter's own fixed rate (0: unlimited), deaf to throttles: the deleter before the shared rate."""

    def __init__(self, bucket: TokenBucket):
        self.bucket = bucket

    def acquire(self, n: int) -> None:
        self.bucket.acquire(n)

    def succeeded(self, n: int) -> None:
        return None

    def throttled(self) -> None:
        return None


@dataclass
class _Pending:
    """Keys of one batch still to delete, with their attempts (throttles not counted)."""

    keys: list[str]
    attempts: int = 0  # attempts that counted
    tries: int = 0  # requests, throttled ones included


class Deleter:
    """
    Deletes keys through ``storage.delete_batch`` as its :class:`DeletePolicy` says.

    ``rate``: the rate it draws from (a run's shared one); None: a rate of its own at ``policy.rate``
    (and always, when the policy is not ``adaptive``).
    """

    def __init__(
        self,
        storage: DeleteTarget,
        policy: DeletePolicy,
        *,
        rate: Rate | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: Callable[[], float] = random.random,
    ):
        self.storage, self.policy = storage, policy
        self.sleep, self.clock, self.rng = sleep, clock, rng
        if not policy.adaptive:  # the deleter before the shared rate: a fixed rate of its own
            rate = FixedRate(TokenBucket(policy.rate, clock=clock, sleep=sleep))
        elif rate is None:
            rate = AdaptiveRate(policy.rate, clock=clock, sleep=sleep)
        self.rate = rate
        self._progress = clock()  # when a delete last succeeded (or the deleter started)

    def _backoff(self, attempt: int) -> None:
        p = self.policy
        self.sleep(self.rng() * min(p.backoff_max, p.backoff_base * (2**attempt)))

    def delete(self, keys: Iterable[str]) -> DeleteStats:
        stats = DeleteStats()
        size = min(self.policy.batch_size, self.storage.max_delete_batch)
        queue: deque[_Pending] = deque()  # throttled keys, back in the queue
        for batch in _batches(keys, size):
            self._delete_batch(_Pending(batch), stats, queue)
            if queue:  # one batch of the queue after each fresh one: it stays small
                self._delete_batch(queue.popleft(), stats, queue)
        while queue:
            self._delete_batch(queue.popleft(), stats, queue)
        return stats

    def _throttle_waits(self, code: str) -> bool:
        """Whether keys throttled with ``code`` wait (go back in the queue) rather than count an attempt."""
        return self.policy.adaptive and code in THROTTLE_CODES

    def _impatient(self) -> bool:
        return self.clock() - self._progress > self.policy.throttle_patience

    def _throttle_letter(self, key: str, code: str, message: str, tries: int) -> DeadLetter:
        why = (
            f"throttled ({code}) with no delete succeeding for {self.policy.throttle_patience:g} s "
            f"(the sweep's throttle patience): {message}"
        )
        return DeadLetter(key, code, why[:500], tries)

    def _delete_batch(self, p: _Pending, st: DeleteStats, queue: deque[_Pending]) -> None:
        """Delete ``p``'s keys: retried here, or (throttled) put back in ``queue``."""
        while p.keys:
            p.tries += 1
            self.rate.acquire(len(p.keys))
            st.requests += 1
            if self.policy.dry_run:
                st.deleted += len(p.keys)
                return
            try:
                errors = self.storage.delete_batch(p.keys)
            except Exception as exc:
                code = error_code(exc)
                if self._throttle_waits(code):
                    st.throttled += 1
                    self.rate.throttled()
                    if self._impatient():
                        st.dead.extend(self._throttle_letter(k, code, str(exc), p.tries) for k in p.keys)
                    else:
                        st.retried += len(p.keys)
                        queue.append(p)
                    return
                p.attempts += 1
                if code in THROTTLE_CODES:
                    st.throttled += 1
                if code in RETRYABLE_CODES and p.attempts < self.policy.max_attempts:
                    st.retried += len(p.keys)
                    self._backoff(p.attempts)
                    continue
                st.dead.extend(DeadLetter(k, code, str(exc)[:500], p.tries) for k in p.keys)
                return
            p.attempts += 1
            self._sort(p, errors, st, queue)
            if p.keys:
                st.retried += len(p.keys)
                self._backoff(p.attempts)

    def _sort(self, p: _Pending, errors: list[tuple[str, str, str]], st: DeleteStats, queue: deque[_Pending]) -> None:
        """Count an answer's keys; leave in ``p`` those to retry now, put the throttled ones in ``queue``."""
        failed: dict[str, tuple[str, str]] = {k: (c, m) for k, c, m in errors}
        retry: list[str] = []
        waiting: list[str] = []
        done = sum(1 for k in p.keys if k not in failed or failed[k][0] in MISSING_CODES)
        if done:
            self._progress = self.clock()
            self.rate.succeeded(done)
        for k in p.keys:
            if k not in failed:
                st.deleted += 1
                continue
            code, message = failed[k]
            if code in MISSING_CODES:
                st.already_gone += 1
            elif self._throttle_waits(code):
                if self._impatient():
                    st.dead.append(self._throttle_letter(k, code, message, p.tries))
                else:
                    waiting.append(k)
            elif code in RETRYABLE_CODES and p.attempts < self.policy.max_attempts:
                retry.append(k)
            else:
                st.dead.append(DeadLetter(k, code, message[:500], p.tries))
        if any(c in THROTTLE_CODES for c, _ in failed.values()):
            st.throttled += 1
            self.rate.throttled()
        if waiting:
            st.retried += len(waiting)
            queue.append(_Pending(waiting, p.attempts, p.tries))
        p.keys = retry


def _batches(keys: Iterable[str], size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for k in keys:
        batch.append(k)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
