"""
The run clock: start time and cutoff, fixed once per run (reference 4.3 step 1, hazard H3).

cutoff = start - max(min age, lakeFS grace period). A minimum age below the grace period would
let GC delete an object uploaded to an address that lakeFS may still link; it is refused unless
the run explicitly sets the unsafe override, which the report records.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from lakefs_gc.errors import SettingsError
from lakefs_gc.timestamps import iso

OVERRIDE_PARAM = "unsafe_min_age_override"


class PlanError(SettingsError):
    """A run setting that is unsafe or invalid; the message names the Param to change."""


@dataclass(frozen=True)
class RunClock:
    """The run's start time and cutoff, fixed once per run, and the minimum age between them."""

    start_time: str  # ISO 8601 UTC
    cutoff_time: str  # start - effective min age
    effective_min_age_seconds: int


def make_run_clock(
    now: datetime, min_age_seconds: int, grace_period_seconds: int, unsafe_override: bool = False
) -> RunClock:
    if now.tzinfo is None:
        raise PlanError("the run clock must be timezone-aware (UTC)")
    if not isinstance(min_age_seconds, int) or isinstance(min_age_seconds, bool) or min_age_seconds < 0:
        raise PlanError(f"min_age_seconds must be a whole number of seconds >= 0, got {min_age_seconds!r}")
    if grace_period_seconds < 0:
        raise PlanError(f"lakeFS reported a negative grace period ({grace_period_seconds})")
    if min_age_seconds < grace_period_seconds and not unsafe_override:
        raise PlanError(
            f"min_age_seconds={min_age_seconds} is below lakeFS's grace period of {grace_period_seconds}s: objects "
            f"uploaded but not yet linked could be deleted. Use min_age_seconds >= {grace_period_seconds}, or set the "
            f"Param {OVERRIDE_PARAM}=true (tests and emergencies only; it is written into the report)"
        )
    age = min_age_seconds if unsafe_override else max(min_age_seconds, grace_period_seconds)
    start = now.astimezone(UTC)
    cutoff = start - timedelta(seconds=age)
    return RunClock(start_time=iso(start), cutoff_time=iso(cutoff), effective_min_age_seconds=age)
