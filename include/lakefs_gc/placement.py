"""
Where a Spark step's work runs: one record, read by the engines alone (:mod:`lakefs_gc.engine`).

A step runs in one of three places: the Airflow task's own process (no Spark at all), a Spark
job's driver (one process, no Spark tasks), or Spark's executors. A small input is faster in one
process: a Spark job's fixed cost (tasks, cold Python workers, a shuffle) is seconds. Every
threshold that picks the place is a field of :class:`Placement`; no step reads one. The figures
behind the defaults: docs/benchmarks.md ("Where work runs").

Set in the repositories file: ``spark.in_process_max_keys`` (the task's own process), and the
others as Spark properties, ``spark.conf: {spark.lakefs_gc.<property>: <n>}`` (or the Spark
connection's conf): the Spark job reads them (:meth:`Placement.from_conf`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from lakefs_gc.errors import SettingsError

__all__ = ["DEFAULT", "PROPERTIES", "Placement"]


@dataclass(frozen=True)
class Placement:
    """
    The thresholds that pick where a step's work runs (all counts are whole numbers >= 0).

    ``in_task_max_keys``: a step with at most this many keys to handle runs in its Airflow task's own
    process (``spark.in_process_max_keys``; 0: never). ``driver_max_addresses``: a Spark job decides
    (``compute_candidates``, ``attribute_space``) on its driver when the listed objects are at most
    this many (0: always on executors). ``driver_check_max``: the staged check takes a DataFrame's
    candidates to the driver when they are at most this many. ``driver_read_max_entries``: a Spark
    job reads the ranges to read on its driver when they hold at most this many entries.
    ``driver_scan_bytes``/``driver_scan_parts``: a filtered scan of address or identity parts runs
    in the calling process, no Spark job, when they are at most this many bytes in at most this many
    parts.
    """

    in_task_max_keys: int = 10_000
    driver_max_addresses: int = 100_000
    driver_check_max: int = 20_000
    driver_read_max_entries: int = 200_000
    driver_scan_bytes: int = 64 << 20
    driver_scan_parts: int = 256

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise SettingsError(f"placement {f.name}={value!r} is not a whole number >= 0")

    @classmethod
    def from_conf(cls, get: Callable[[str, str | None], str | None], base: Placement | None = None) -> Placement:
        """
        Return ``base`` (:data:`DEFAULT`) with what the Spark properties :data:`PROPERTIES` say.

        ``get(name, default)``: a Spark session's ``conf.get``. A value that is not a whole number
        >= 0 is a :class:`SettingsError` naming the property and how to fix it.
        """
        base = DEFAULT if base is None else base
        changes: dict[str, int] = {}
        for name, prop in PROPERTIES.items():
            raw = get(prop, None)
            if raw is None:
                continue
            try:
                value = int(raw)
            except ValueError:
                value = -1
            if value < 0:
                raise SettingsError(
                    f"Spark property {prop}={raw!r} is not a whole number >= 0 ({_MEANING[name]}). "
                    f"Fix it in the Spark connection's or the task's conf, or remove it "
                    f"(default {getattr(base, name):,})"
                )
            changes[name] = value
        return dataclasses.replace(base, **changes) if changes else base


DEFAULT = Placement()

# The Spark properties a job reads (in the task's own process: spark.in_process_max_keys instead).
PROPERTIES = {
    "driver_max_addresses": "spark.lakefs_gc.driverMaxAddresses",
    "driver_check_max": "spark.lakefs_gc.driverCheckMax",
    "driver_read_max_entries": "spark.lakefs_gc.driverReadMaxEntries",
    "driver_scan_bytes": "spark.lakefs_gc.driverScanBytes",
    "driver_scan_parts": "spark.lakefs_gc.driverScanParts",
}

_MEANING = {
    "driver_max_addresses": "the most listed objects a Spark job decides on its driver; 0: always on executors",
    "driver_check_max": "the most candidates the staged check takes to the driver",
    "driver_read_max_entries": "the most range entries a Spark job reads on its driver",
    "driver_scan_bytes": "the most bytes of parts scanned without a Spark job",
    "driver_scan_parts": "the most part files scanned without a Spark job",
}
