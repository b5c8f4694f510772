"""Every path the GC reads or writes under ``_lakefs/retention/gc/``, in lakeFS's layout.

::

    uncommitted/<run_id>/uncommitted/            lakeFS: the staged addresses (Parquet)
    commits/run_id=<id>/commits.csv              lakeFS: the commits to keep
    unified/<mark_id>/summary.json               the report (success true only once complete)
    unified/<mark_id>/candidates/part-N.parquet  every candidate of the mark (column address)
    unified/<mark_id>/deleted/part-N.parquet     the ones it decided to delete (lakeFS's list)
    unified/<mark_id>/staged/lakefs-omitted      live staged addresses lakeFS's mark lacked
                                                 (lakeFS's uncommitted Parquet format)
    unified/<mark_id>/sweeps/<sweep_id>/         one sweep of the mark: done/, dead_letters/,
                                                 and its summary.json for sweep_only runs
"""

from __future__ import annotations

import re

UNIFIED = "_lakefs/retention/gc/unified/"


def safe_name(s: str) -> str:
    """An id usable as one path component (``manual__2024-01-01T00:00:00+00:00`` ->
    ``manual__2024-01-01T00_00_00_00_00``)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", s) or "_"


def report_dir(mark_id: str) -> str:
    return f"{UNIFIED}{mark_id}/"


def summary_key(mark_id: str) -> str:
    return report_dir(mark_id) + "summary.json"


def candidates_dir(mark_id: str) -> str:
    return report_dir(mark_id) + "candidates/"


def deleted_dir(mark_id: str) -> str:
    return report_dir(mark_id) + "deleted/"


def staged_file(mark_id: str) -> str:
    return report_dir(mark_id) + "staged/lakefs-omitted"


def part_name(index: int) -> str:
    return f"part-{index:05d}.parquet"


def sweep_dir(mark_id: str, sweep_id: str) -> str:
    return f"{report_dir(mark_id)}sweeps/{safe_name(sweep_id or 'manual')}/"


def uncommitted_dir(run_id: str) -> str:
    return f"_lakefs/retention/gc/uncommitted/{run_id}/uncommitted/"
