"""
One delete rate for all of a run's deleters: additive increase while deletes succeed, halved when throttled.

:class:`AdaptiveRate` is the state (AIMD). It starts at the run's ``delete_rate`` (the ceiling,
never exceeded) and hands out keys by reservation: :meth:`AdaptiveRate.lease` books ``n`` keys and
answers how long to wait before sending them, so every deleter drawing from it together stays at
the rate. A throttle (:meth:`AdaptiveRate.throttled`: S3 ``SlowDown``, 429, 503, Azure
``ServerBusy``, ...) halves the rate, at most once per ``window`` seconds, so the many requests one
burst throttles (across every task) halve it once; never below the floor (a hundredth of the
ceiling, at least 1 key/s). While deletes succeed (:meth:`AdaptiveRate.succeeded`) it climbs back by
a tenth of the ceiling per second, never more than doubling in one step.

``delete_rate`` 0 (unlimited): no ceiling and no waiting until the first throttle; that throttle
sets the rate to half what was leased over the last few seconds, and from then on AIMD applies
with the same steps (measured from that rate), still without a ceiling.

Where the deleters are threads of one process (the in-process engine) they share one object; on
Spark the driver serves it to the executors (:mod:`lakefs_gc.sweeping.rate_server`).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

WINDOW = 1.0  # seconds: at most one halving per window
INCREASE = 0.1  # share of the ceiling added per second of success
FLOOR = 0.01  # share of the ceiling the rate never goes below (and at least MIN_RATE)
MIN_RATE = 1.0  # keys per second
BURST = 1.0  # seconds of unused rate a deleter may spend at once
MEASURE = 5.0  # seconds of leases an unlimited rate measures itself over at its first throttle


class Rate(Protocol):
    """What a deleter draws its keys from and reports to."""

    def acquire(self, n: int) -> None:
        """Return once ``n`` keys may be sent."""

    def succeeded(self, n: int) -> None:
        """Report ``n`` keys deleted (or found gone)."""

    def throttled(self) -> None:
        """Report a request the store throttled."""


class RateSource(Protocol):
    """Where a delete task opens its :class:`Rate` (picklable when it crosses to Spark executors)."""

    def open(self) -> Rate: ...


@dataclass(frozen=True)
class RateFigures:
    """What the shared rate went through in a sweep."""

    throttles: int  # throttled requests reported
    cuts: int  # halvings (at most one per window)
    lowest: float | None  # keys/s; None: never limited (unlimited, never throttled)
    final: float | None


class AdaptiveRate:
    """The AIMD rate (see the module); thread-safe. ``ceiling`` 0: unlimited until throttled."""

    def __init__(
        self,
        ceiling: float,
        *,
        window: float = WINDOW,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if ceiling < 0:
            raise ValueError(f"a delete rate must be >= 0, got {ceiling}")
        self.ceiling = float(ceiling)
        self.window = window
        self.clock, self.sleep = clock, sleep
        self.rate = self.ceiling  # 0: unlimited
        self._scale = self.ceiling  # what the floor and the increase are shares of
        self._lock = threading.Lock()
        now = clock()
        self._next = now  # when the keys booked so far have all been earned: no free first burst
        self._last_cut = now - window
        self._last_step = now
        self._leased: deque[tuple[float, int]] = deque()  # unlimited: (time, keys) of the last MEASURE seconds
        self.throttles = self.cuts = 0
        self.lowest: float | None = self.rate or None
        self.trace: list[tuple[float, float]] = [(now, self.rate)]  # (time, rate) at each cut and return

    def open(self) -> AdaptiveRate:
        return self

    @property
    def floor(self) -> float:
        return max(MIN_RATE, self._scale * FLOOR)

    def lease(self, n: int) -> float:
        """Book ``n`` keys; return the seconds to wait before sending them."""
        with self._lock:
            now = self.clock()
            if self.rate <= 0:
                self._leased.append((now, n))
                while self._leased and self._leased[0][0] < now - MEASURE:
                    self._leased.popleft()
                return 0.0
            self._next = max(self._next, now - BURST) + n / self.rate
            return max(0.0, self._next - now)

    def acquire(self, n: int) -> None:
        wait = self.lease(n)
        if wait > 0:
            self.sleep(wait)

    def throttled(self) -> None:
        with self._lock:
            now = self.clock()
            self.throttles += 1
            self._last_step = now
            if now - self._last_cut < self.window:
                return  # the same burst: halved once already
            self._last_cut = now
            old = self.rate
            if old <= 0:  # unlimited until now: half what was leased lately
                span = max(1.0, now - self._leased[0][0]) if self._leased else 1.0
                self._scale = sum(k for _, k in self._leased) / span
                old = max(self.floor, self._scale)
                self._leased.clear()
            self.rate = max(self.floor, old / 2)
            if self._next > now:  # keys booked but not yet earned cost the new rate
                self._next = now + (self._next - now) * old / self.rate
            self.cuts += 1
            self.lowest = min(self.lowest or self.rate, self.rate)
            self.trace.append((now, self.rate))

    def succeeded(self, n: int) -> None:
        with self._lock:
            now = self.clock()
            step, self._last_step = now - self._last_step, now
            top = self.ceiling or float("inf")
            if self.rate <= 0 or self.rate >= top or now - self._last_cut < self.window:
                return
            self.rate = min(top, self.rate + min(self.rate, self._scale * INCREASE * step))
            if self.rate >= top or now - self.trace[-1][0] >= 0.5:
                self.trace.append((now, self.rate))

    def figures(self) -> RateFigures:
        with self._lock:
            return RateFigures(self.throttles, self.cuts, self.lowest, self.rate or None)
