"""
Every path the GC reads or writes under ``_lakefs/retention/gc/``, in lakeFS's layout.

::

    uncommitted/<run_id>/uncommitted/            lakeFS: the staged addresses (Parquet)
    commits/run_id=<id>/commits.csv              lakeFS: the commits to keep
    unified/<mark_id>/summary.json               the report (success true only once complete)
    unified/<mark_id>/candidates/part-N.parquet  every candidate of the mark (column address)
    unified/<mark_id>/deleted/part-N.parquet     the ones it decided to delete (lakeFS's list)
    unified/<mark_id>/staged/lakefs-omitted      live staged addresses lakeFS's mark lacked
                                                 (lakeFS's uncommitted Parquet format)
    unified/<mark_id>/sweeps/<sweep_id>/         one sweep of the mark: done/, dead_letters/,
                                                 and its summary.json for sweep_only runs;
                                                 on local:// with quarantine days, quarantine/<key>
                                                 (the swept files) and quarantine.json (until when)
    unified/<mark_id>/restores/<restore_id>/     one restore of the mark's sweeps (lakefs-gc restore):
                                                 summary.json and outcomes.parquet
    unified/<mark_id>/state/committed/           what the next incremental run reads: the committed
    unified/<mark_id>/state/uncommitted/         addresses it found (incremental: the new ones only),
    unified/<mark_id>/state/read.parquet         its staged addresses, the commit and range ids read

and under a run's work location (``<work_dir>/<repository>/<airflow run>/``)::

    committed/    list_committed's addresses (Parquet)
    listed/       list_slices' objects (Parquet)
    _control/     the Spark steps' input and result files (on the Airflow worker)

(the formats of the files: :mod:`lakefs_gc.report.formats`)
"""

from __future__ import annotations

import posixpath
import re

UNIFIED = "_lakefs/retention/gc/unified/"


def safe_name(s: str) -> str:
    """
    Return an id usable as one path component.

    ``manual__2024-01-01T00:00:00+00:00`` -> ``manual__2024-01-01T00_00_00_00_00``.
    """
    return re.sub(r"[^A-Za-z0-9._-]", "_", s) or "_"


def report_dir(mark_id: str) -> str:
    return f"{UNIFIED}{mark_id}/"


def summary_key(mark_id: str) -> str:
    return report_dir(mark_id) + "summary.json"


def space_key(mark_id: str) -> str:
    """Where the run's bytes go (attribute_space; lakefs_gc.report.formats.write_space)."""
    return report_dir(mark_id) + "space.json"


def candidates_dir(mark_id: str) -> str:
    return report_dir(mark_id) + "candidates/"


def deleted_dir(mark_id: str) -> str:
    return report_dir(mark_id) + "deleted/"


def staged_file(mark_id: str) -> str:
    return report_dir(mark_id) + "staged/lakefs-omitted"


def part_name(index: int) -> str:
    return f"part-{index:05d}.parquet"


def sweeps_dir(mark_id: str) -> str:
    return report_dir(mark_id) + "sweeps/"


def sweep_dir(mark_id: str, sweep_id: str) -> str:
    return f"{sweeps_dir(mark_id)}{safe_name(sweep_id or 'manual')}/"


def sweep_summary_key(mark_id: str, sweep_id: str) -> str:
    """Return the summary.json of a sweep-only run (``sweep_id``: its Airflow run, or its folder name)."""
    return sweep_dir(mark_id, sweep_id) + "summary.json"


def part_id(part_key: str) -> str:
    """``.../deleted/part-00003.parquet`` -> ``part-00003``."""
    return posixpath.basename(part_key).removesuffix(".parquet")


def done_marker(sdir: str, part_key: str) -> str:
    """Return a swept part's done marker in the sweep folder ``sdir``."""
    return f"{sdir}done/{part_id(part_key)}.json"


def dead_letters_dir(sdir: str) -> str:
    return sdir + "dead_letters/"


def dead_letters_file(sdir: str, part_key: str) -> str:
    """Return the file of the keys of one part that still failed after retries."""
    return f"{dead_letters_dir(sdir)}{part_id(part_key)}.parquet"


def quarantine_dir(sdir: str) -> str:
    """Where a sweep on ``local://`` with quarantine days moves its files (``<key>`` under it)."""
    return sdir + "quarantine/"


def quarantine_file(sdir: str) -> str:
    """Return the sweep's quarantine record: until when its files are kept (JSON)."""
    return sdir + "quarantine.json"


def restores_dir(mark_id: str) -> str:
    return report_dir(mark_id) + "restores/"


def restore_dir(mark_id: str, restore_id: str) -> str:
    """One restore of a mark's sweeps: ``summary.json`` and ``outcomes.parquet``."""
    return f"{restores_dir(mark_id)}{safe_name(restore_id)}/"


def state_dir(mark_id: str) -> str:
    """Return the folder of what a mark keeps for the incremental runs after it (lakefs_gc.gc.flow)."""
    return report_dir(mark_id) + "state/"


def state_committed_dir(mark_id: str) -> str:
    return state_dir(mark_id) + "committed/"


def state_identities_dir(mark_id: str) -> str:
    """(size, checksum, path) of every entry of the ranges the mark read (lakefs_gc.listing.staged)."""
    return state_dir(mark_id) + "identities/"


def state_heads_file(mark_id: str) -> str:
    """Every branch's HEAD commit before and after lakeFS's uncommitted mark (lakefs_gc.listing.staged)."""
    return state_dir(mark_id) + "heads.json"


def state_branch_reads_file(mark_id: str, step: str) -> str:
    """Return where a step (mark_uncommitted, compute_candidates) writes what each branch read where it asked."""
    return state_dir(mark_id) + f"branch_reads_{step}.json"


def state_uncommitted_dir(mark_id: str) -> str:
    return state_dir(mark_id) + "uncommitted/"


def state_read_file(mark_id: str) -> str:
    return state_dir(mark_id) + "read.parquet"


def uncommitted_dir(run_id: str) -> str:
    return f"_lakefs/retention/gc/uncommitted/{run_id}/uncommitted/"


# ---------------------------------------------------------------------------------------------
# A run's work location
# ---------------------------------------------------------------------------------------------

CONTROL = "_control"


def run_work_dir(work_dir: str, repository: str, airflow_run_id: str) -> str:
    """Return the work location of one run: ``<work_dir>/<repository>/<airflow run, safe>``."""
    return f"{work_dir.rstrip('/')}/{repository}/{safe_name(airflow_run_id)}"


def listed_dir(run_work_dir: str) -> str:
    return posixpath.join(run_work_dir, "listed")
