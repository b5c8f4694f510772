"""
The sweep: delete a mark's ``deleted/`` list, one report part at a time, resumably.

Layout, beside lakeFS's report (``_lakefs/retention/gc/unified/<mark_id>/``)::

    deleted/part-NNNNN.parquet                    the mark's list (column ``address``)
    sweeps/<sweep_id>/done/part-NNNNN.json        counts of a finished part (written last)
    sweeps/<sweep_id>/dead_letters/part-NNNNN.parquet   keys that still failed: key, error_code,
                                                  message, attempts

With ``quarantine`` (``local://`` only: the run's ``quarantine_days``) the keys are moved to
``sweeps/<sweep_id>/quarantine/<key>`` instead of deleted, by the same deleter (batches, rate,
retries, dead letters); :mod:`lakefs_gc.sweeping.restore` brings them back or purges them.

``sweep_id`` is the Airflow run that sweeps. A retry or a manual clear of the same run skips the
parts with a ``done`` marker (and counts them from it) and redoes the others from the start:
keys deleted before a crash are then "not found", counted as ``already_gone``. A later run (a new
``sweep_id``) sweeps the whole list again, so it retries earlier dead letters.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

from lakefs_gc.contract import DeleteCounts
from lakefs_gc.errors import LakeFSGCError
from lakefs_gc.gc.decision import is_deletable
from lakefs_gc.report import formats, layout
from lakefs_gc.sweeping.deleter import DeletePolicy, Deleter

if TYPE_CHECKING:
    from lakefs_gc.storage.base import Storage
    from lakefs_gc.storage.local import LocalStorage

# what a done marker records (a marker written before "throttled" was counted reads as 0)
PART_COUNTS = ("keys", "deleted", "already_gone", "retried", "requests", "failed", "throttled")


def read_addresses(storage: Storage, key: str) -> list[str]:
    """Return a part's addresses, refused whole when one of them is not deletable."""
    addresses = formats.read_addresses(storage, key)
    refused = [a for a in addresses if a is None or not is_deletable(a)]
    if refused:
        raise LakeFSGCError(
            f"{storage.full_uri(key)} lists addresses GC must never delete: {refused[:5]}; "
            f"nothing in this part was deleted"
        )
    return cast("list[str]", addresses)  # no None left: refused above


class _Quarantine:
    """A local storage whose ``delete_batch`` moves the keys into a sweep's quarantine folder."""

    def __init__(self, storage: LocalStorage, to_prefix: str):
        self.storage, self.to_prefix = storage, to_prefix
        self.max_delete_batch = storage.max_delete_batch

    def delete_batch(self, keys: list[str]) -> list[tuple[str, str, str]]:
        return self.storage.move_batch(keys, self.to_prefix)


def sweep_part(
    storage: Storage, part_key: str, sdir: str, policy: DeletePolicy, quarantine: bool = False, **deleter_kw: Any
) -> DeleteCounts:
    """
    Delete the addresses of one report part (or return its recorded counts if already done).

    ``quarantine``: move them into the sweep's quarantine folder instead; ``deleter_kw``: the
    :class:`lakefs_gc.sweeping.deleter.Deleter`'s (``rate``: the run's shared rate).
    """
    marker = layout.done_marker(sdir, part_key)
    recorded = formats.read_done_marker(storage, marker)
    if recorded is not None:
        return DeleteCounts(**{k: int(recorded.get(k, 0)) for k in PART_COUNTS}, parts=1, resumed_parts=1)
    addresses = read_addresses(storage, part_key)
    # quarantine: on local:// only (the module's doc), so the storage is a LocalStorage
    target = _Quarantine(cast("LocalStorage", storage), layout.quarantine_dir(sdir)) if quarantine else storage
    stats = Deleter(target, policy, **deleter_kw).delete(addresses)
    if stats.dead:
        formats.write_dead_letters(storage, layout.dead_letters_file(sdir, part_key), stats.dead)
    counts = DeleteCounts(
        keys=len(addresses),
        deleted=stats.deleted,
        already_gone=stats.already_gone,
        retried=stats.retried,
        requests=stats.requests,
        failed=len(stats.dead),
        throttled=stats.throttled,
        parts=1,
    )
    if not policy.dry_run:
        formats.write_done_marker(storage, marker, {k: getattr(counts, k) for k in PART_COUNTS})
    return counts


def add_counts(results: Iterable[DeleteCounts]) -> DeleteCounts:
    return sum(results, DeleteCounts())
