"""
Progress of the long steps (listing, reading the committed ranges, the sweep), logged at a steady pace without flooding.

:class:`Progress` turns counts into at most one line every ``every`` seconds (the pace halves
after each 10 lines, so a step of a day logs fewer than 100 lines), plus one last line:
what so far, the rate, the share done and the time left where the total is known.
:func:`watch` feeds it from a running Spark job: the tasks done (Spark's status tracker) and the
items counted by the tasks (an accumulator, added when each task ends).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from pyspark import Accumulator
    from pyspark.sql import SparkSession

log = logging.getLogger("lakefs_gc.progress")

EVERY_SECONDS = 10.0
SLOWER_AFTER_LINES = 10

T = TypeVar("T")


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s" if m else f"{s}s"


class Progress:
    """
    Throttled progress lines for one step.

    ``what``: the step (``list_slices``); ``unit``: what is counted (``objects``); ``total``: the
    count when known (the share and the time left then come from it), else ``share`` given to
    :meth:`update` (e.g. the share of Spark tasks done).
    """

    def __init__(
        self,
        what: str,
        unit: str,
        *,
        total: int | None = None,
        every: float = EVERY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        logger: logging.Logger | None = None,
    ):
        self.what, self.unit, self.total = what, unit, total
        self.every, self.clock, self.log = every, clock, logger or log
        self.started = clock()
        self.count = 0
        self.share: float | None = None
        self.lines = 0
        self._next = self.started + every
        self._lock = threading.Lock()

    def add(self, n: int = 1) -> None:
        """Count ``n`` more (thread-safe: listings in parallel add to one progress)."""
        with self._lock:
            self._update(self.count + n, None)

    def update(self, count: int, share: float | None = None) -> None:
        with self._lock:
            self._update(count, share)

    def _update(self, count: int, share: float | None) -> None:
        self.count = count
        if share is not None:
            self.share = share
        now = self.clock()
        if now >= self._next:
            self.log.info("%s", self.line(now))
            self.lines += 1
            self._next = now + self.every * (2 ** (self.lines // SLOWER_AFTER_LINES))

    def done_share(self) -> float | None:
        if self.total:
            return min(1.0, self.count / self.total)
        return self.share

    def line(self, now: float | None = None) -> str:
        now = self.clock() if now is None else now
        elapsed = max(1e-9, now - self.started)
        text = f"{self.what}: {self.count:,} {self.unit} so far, {self.count / elapsed:,.0f}/s"
        share = self.done_share()
        if share is not None:
            text += f", {share:.0%} done"
            if 0 < share < 1:
                text += f", about {_duration(elapsed * (1 - share) / share)} left"
        return text + f" ({_duration(elapsed)})"

    def finish(self) -> None:
        elapsed = max(1e-9, self.clock() - self.started)
        self.log.info(
            "%s: %s %s in %s (%s/s)",
            self.what,
            f"{self.count:,}",
            self.unit,
            _duration(elapsed),
            f"{self.count / elapsed:,.0f}",
        )
        self.lines += 1


def counted(items: Iterable[T], progress: Progress) -> Iterator[T]:
    """``items``, counted into ``progress`` as they pass (for loops in the driver)."""
    for item in items:
        yield item
        progress.add()
    progress.finish()


@contextmanager
def watch(
    spark: SparkSession,
    what: str,
    unit: str,
    *,
    total: int | None = None,
    every: float = EVERY_SECONDS,
    poll: float = 1.0,
) -> Iterator[Accumulator[int]]:
    """
    Log the progress of the Spark jobs started inside the block.

    Yields an accumulator the tasks add their counts to (``acc.add(n)``, once per task or per batch:
    Spark sends it when the task ends). The share done is the share of the jobs' tasks finished, or
    ``count / total``.
    """
    sc = spark.sparkContext
    acc = sc.accumulator(0)
    group = f"lakefs-gc-{what}-{time.monotonic_ns()}"
    sc.setJobGroup(group, what, interruptOnCancel=False)
    progress = Progress(what, unit, total=total, every=every)
    stop = threading.Event()

    def tasks_share() -> float | None:
        tracker = sc.statusTracker()
        done = tasks = 0
        for job_id in tracker.getJobIdsForGroup(group):
            job = tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job else ():
                stage = tracker.getStageInfo(stage_id)
                if stage:
                    done, tasks = done + stage.numCompletedTasks, tasks + stage.numTasks
        return done / tasks if tasks else None

    def loop() -> None:
        while not stop.wait(poll):
            try:
                progress.update(int(acc.value), None if total else tasks_share())
            except Exception:
                log.debug("progress of %s unavailable", what, exc_info=True)

    thread = threading.Thread(target=loop, name=f"progress-{what}", daemon=True)
    thread.start()
    try:
        yield acc
    finally:
        stop.set()
        thread.join(poll + 5)
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]  # pyspark: None unsets it (its doc)
        progress.count = int(acc.value)
        progress.finish()
