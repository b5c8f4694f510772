"""What both engines share: the namespace's storage made when first asked, the helpers their work items run."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, TypeVar

from lakefs_gc.listing import committed, uncommitted
from lakefs_gc.listing.slices import in_slice_created_after
from lakefs_gc.report import formats, layout
from lakefs_gc.spark.runtime import StorageRef
from lakefs_gc.storage.requests import Requests

if TYPE_CHECKING:
    from pyspark import Accumulator

    from lakefs_gc.placement import Placement
    from lakefs_gc.storage.base import Storage
    from lakefs_gc.sweeping.shared_rate import AdaptiveRate, RateSource

H = TypeVar("H")


class EngineBase:
    """The storage, parallelism and placement of an engine."""

    def __init__(self, sref: StorageRef | Callable[[], StorageRef], n: int, placement: Placement):
        self._sref = sref
        self.n = n
        self.placement = placement

    @property
    def sref(self) -> StorageRef:
        """Return the namespace's storage (made when first asked: a step's own error when it cannot be)."""
        if not isinstance(self._sref, StorageRef):
            self._sref = self._sref()
        return self._sref

    def at_once(self, tasks: int) -> int:
        return tasks

    def requests_sent(self) -> Requests:
        """Return the requests the storages of :attr:`sref` counted away from this process's counter (Spark: on executors)."""
        return Requests()

    def hold(self, rows: H) -> AbstractContextManager[H]:
        return nullcontext(rows)

    def serve_rate(self, rate: AdaptiveRate, fallback: float) -> AbstractContextManager[RateSource]:
        """Share ``rate`` itself: the work items of :meth:`map` run in this process."""
        return nullcontext(rate)


def staged_addresses(sref: StorageRef, keys: Iterable[str]) -> Iterator[tuple[str]]:
    """Yield the staged addresses of mark_uncommitted's files ``keys``, as rows."""
    st, roots = sref.open(), sref.roots
    for key in keys:
        for address in uncommitted.file_addresses(st, key, roots):
            yield (address,)


def still_garbage(st: Storage, cutoff_s: float, addresses: Iterable[str]) -> Iterator[tuple[str, int, str | None]]:
    """
    Return (address, size, checksum) of each address still in storage and older than the cutoff.

    Addresses in a slice created after the cutoff are left out, as the listing skips those;
    ``st``: the namespace's storage.
    """
    for address in addresses:
        if in_slice_created_after(address, cutoff_s):
            continue
        info = st.stat(address)
        if info is not None and info.last_modified < cutoff_s:
            yield (address, info.size, info.checksum)


def range_addresses(
    sref: StorageRef, identities_dir: str, index: int, keys: Iterable[str], ranges_read: Accumulator[int] | None = None
) -> Iterator[str]:
    """
    Yield the addresses of the ranges at ``keys`` (executors: storage only, no lakeFS client).

    The identities of their entries are written as identity part ``index`` under ``identities_dir``.
    """
    st = sref.open()
    roots = sref.roots
    identities: list[tuple[int, str, str]] = []
    n = 0
    for key in keys:
        for address, path, size, checksum in committed.range_entries(st, key, roots):
            identities.append((size, checksum, path))
            if address is not None:
                yield address
        n += 1
    formats.write_identities(st, identities_dir + layout.part_name(index), identities)
    if ranges_read is not None:
        ranges_read.add(n)
