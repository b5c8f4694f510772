"""
``list_committed``'s wait for lakeFS's commits preparation, in Airflow's triggerer.

lakeFS prepares a repository's active commits (``commits.csv``) as an async task
(``prepareGarbageCollectionCommitsAsync``) that may run for many minutes on a large repository.
A deferrable ``list_committed`` (:class:`lakefs_gc_airflow.spark_submit.GCSparkSubmitOperator`)
starts the task and looks a few seconds for its end (:func:`prepare_commits_briefly`: a deferral
costs the scheduler round-trips, a small repository is done sooner); if lakeFS is not done it
defers to :class:`LakeFSPrepareCommitsTrigger`, holding no worker or pool slot, and resumes when
the trigger hands lakeFS's answer back (:func:`event_outcome`). The step then reads that
``commits.csv`` (``StepInputs.prepared_commits``) instead of asking lakeFS again.

Fail closed, as :meth:`lakefs_gc.lakefs.client.LakeFSClient.prepare_commits`, with its messages:
a task lakeFS failed (no GC rules: a refusal, never retried), one completed without a location,
one not found, or not done by the run's ``prepare_commits_timeout_seconds``, fails the task.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from lakefs_gc import contract
from lakefs_gc.lakefs.client import prepare_commits_timeout

if TYPE_CHECKING:
    from lakefs_gc.lakefs.client import LakeFSClient

POLL_INITIAL = 0.5  # seconds before the second look at lakeFS's task, doubling after each look
POLL_MAX = 15.0  # the longest wait between two looks (as LakeFSClient.prepare_commits)
QUICK_WAIT = 3.0  # seconds a task looks for lakeFS's answer itself before it defers (looks at 0, 0.5, 1.5 s)
LOST_TRIGGER_GRACE = 300.0  # the deferral's own timeout is the deadline plus this: a trigger never run fails the task


@dataclass(frozen=True)
class Pending:
    """lakeFS's commits preparation, still running after the task's short wait: what the trigger needs."""

    task_id: str  # lakeFS's task id (prepareGarbageCollectionCommitsAsync)
    deadline: float  # wall-clock seconds (time.time()) by which it must be done: the run's timeout
    next_delay: float  # the next wait between two looks (the backoff goes on in the triggerer)


def prepare_commits_briefly(
    client: LakeFSClient,
    repo: str,
    timeout_seconds: float,
    quick_wait: float = QUICK_WAIT,
    sleep: Callable[[float], None] = time.sleep,
) -> contract.PreparedCommits | Pending:
    """
    Start lakeFS's commits preparation for ``repo`` and look for its end for up to ``quick_wait`` seconds.

    Return lakeFS's answer, or what a trigger needs to wait for it (:class:`Pending`). Raises as
    ``LakeFSClient.prepare_commits`` does (no GC rules, a failed task...).
    """
    started = client.start_prepare_commits(repo)
    if isinstance(started, dict):  # the synchronous call answered (the async route is missing or failed)
        return contract.PreparedCommits(started["run_id"], started["gc_commits_location"])
    deadline = time.time() + timeout_seconds
    delay, waited = POLL_INITIAL, 0.0
    while True:
        done = client.prepare_commits_status(repo, started)
        if done is not None:
            return contract.PreparedCommits(done["run_id"], done["gc_commits_location"])
        if waited + delay > quick_wait or time.time() + delay > deadline:
            return Pending(started, deadline, delay)
        sleep(delay)
        waited += delay
        delay = min(POLL_MAX, delay * 2)


def default_deferrable() -> bool:
    """Return Airflow's ``[operators] default_deferrable``, as the official providers' operators default to it."""
    try:
        from airflow.sdk.configuration import conf
    except ImportError:  # an Airflow whose task SDK has no configuration module
        from airflow.configuration import conf
    return bool(conf.getboolean("operators", "default_deferrable", fallback=False))


def defer_args(lakefs_conn_id: str, repository: str, pending: Pending, timeout_seconds: float) -> dict[str, Any]:
    """
    Return ``BaseOperator.defer``'s trigger and timeout for waiting on ``pending``.

    The deferral's own timeout is a safety net past the trigger's deadline (a trigger that never runs).
    """
    trigger = LakeFSPrepareCommitsTrigger(
        lakefs_conn_id=lakefs_conn_id,
        repository=repository,
        lakefs_task_id=pending.task_id,
        deadline=pending.deadline,
        timeout_seconds=timeout_seconds,
        poll_initial=pending.next_delay,
    )
    left = max(0.0, pending.deadline - time.time())
    return {"trigger": trigger, "timeout": timedelta(seconds=left + LOST_TRIGGER_GRACE)}


SUCCESS, ERROR = "success", "error"


def event_outcome(event: Any) -> contract.PreparedCommits | contract.StepFailure:
    """
    Return the trigger's event as lakeFS's answer, or as the failure the task fails with.

    An event of another shape is a failure too (fail closed: never a step without its ``commits.csv``).
    """
    if not isinstance(event, dict):
        return contract.StepFailure(
            contract.FAILED, "LakeFSGCError", f"the trigger's event is not an object: {event!r}"
        )
    if event.get("status") == SUCCESS and event.get("gc_commits_location"):
        return contract.PreparedCommits(str(event.get("run_id") or ""), str(event["gc_commits_location"]))
    if event.get("status") == ERROR:
        kind = str(event.get("kind")) if event.get("kind") in contract.FAILURE_KINDS else contract.FAILED
        return contract.StepFailure(kind, str(event.get("type") or "LakeFSGCError"), str(event.get("message")))
    return contract.StepFailure(
        contract.FAILED, "LakeFSGCError", f"prepare_commits: the trigger's event has no commits location: {event!r}"
    )


class LakeFSPrepareCommitsTrigger(BaseTrigger):
    """
    Wait in Airflow's triggerer for lakeFS's commits preparation (task ``lakefs_task_id`` of ``repository``).

    Looks at the task's status (``prepareGarbageCollectionCommitsStatus``) with a backoff doubling
    from ``poll_initial`` up to ``poll_max`` seconds, each look a lakefs-sdk call in a worker thread
    (``asyncio.to_thread``: the event loop never blocks), through the lakeFS connection's client
    and its retries (:class:`lakefs_gc_airflow.hooks.LakeFSHook`): the keys are read from the
    connection here, in the triggerer, and masked; none is in the trigger's arguments. Yields one
    event: ``{"status": "success", "run_id", "gc_commits_location", "task_id"}``, or
    ``{"status": "error", "message", "kind", "type"}`` (``kind``: ``refused`` for a repository
    without GC rules, else ``failed``), also when ``deadline`` passes.

    :param lakefs_conn_id: the lakeFS connection.
    :param repository: the lakeFS repository.
    :param lakefs_task_id: lakeFS's task id (from ``prepareGarbageCollectionCommitsAsync``).
    :param deadline: wall-clock time (``time.time()``) by which lakeFS must be done.
    :param timeout_seconds: the run's ``prepare_commits_timeout_seconds`` (for the timeout's message).
    :param poll_initial: the first wait between two looks, seconds.
    :param poll_max: the longest wait between two looks, seconds.
    """

    def __init__(
        self,
        *,
        lakefs_conn_id: str,
        repository: str,
        lakefs_task_id: str,
        deadline: float,
        timeout_seconds: float,
        poll_initial: float = POLL_INITIAL,
        poll_max: float = POLL_MAX,
    ) -> None:
        super().__init__()
        self.lakefs_conn_id = lakefs_conn_id
        self.repository = repository
        # not ``task_id``: Airflow's triggerer sets a trigger's task_id to its task instance's (BaseTrigger)
        self.lakefs_task_id = lakefs_task_id
        self.deadline = float(deadline)
        self.timeout_seconds = float(timeout_seconds)
        self.poll_initial = float(poll_initial)
        self.poll_max = float(poll_max)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "lakefs_conn_id": self.lakefs_conn_id,
                "repository": self.repository,
                "lakefs_task_id": self.lakefs_task_id,
                "deadline": self.deadline,
                "timeout_seconds": self.timeout_seconds,
                "poll_initial": self.poll_initial,
                "poll_max": self.poll_max,
            },
        )

    def _client(self) -> LakeFSClient:
        from lakefs_gc_airflow.hooks import LakeFSHook

        return LakeFSHook(lakefs_conn_id=self.lakefs_conn_id).get_conn()

    async def run(self) -> AsyncIterator[TriggerEvent]:
        started = time.monotonic()
        try:
            client = await asyncio.to_thread(self._client)
        except Exception as exc:  # the connection cannot be read: the task fails with why
            yield _failed(exc)
            return
        try:
            delay = self.poll_initial
            while True:
                try:
                    done = await asyncio.to_thread(client.prepare_commits_status, self.repository, self.lakefs_task_id)
                except Exception as exc:  # lakeFS failed the task, or could not be asked: the task fails with why
                    yield _failed(exc)
                    return
                if done is not None:
                    self.log.info(
                        "lakeFS prepared the commits of %s (task %s) after %.1fs in the triggerer",
                        self.repository,
                        self.lakefs_task_id,
                        time.monotonic() - started,
                    )
                    yield TriggerEvent({"status": SUCCESS, "task_id": self.lakefs_task_id, **done})
                    return
                left = self.deadline - time.time()
                if left <= 0:
                    message = prepare_commits_timeout(self.lakefs_task_id, self.timeout_seconds)
                    yield TriggerEvent(
                        {"status": ERROR, "kind": contract.FAILED, "type": "LakeFSGCError", "message": message}
                    )
                    return
                await asyncio.sleep(min(delay, left))
                delay = min(self.poll_max, delay * 2)
        finally:
            client.close()


def _failed(exc: BaseException) -> TriggerEvent:
    failure = contract.failure_of(exc)
    return TriggerEvent({"status": ERROR, "kind": failure.kind, "type": failure.type, "message": failure.message})
