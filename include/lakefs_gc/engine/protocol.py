"""
:class:`Engine`: what a Spark step needs of where it runs, generic over its relations.

``R``: a relation of rows whose first column is the address (the listing's (address, size,
last_modified_ms, checksum), the candidates' (address, size, checksum)); ``A``: a relation of
addresses alone. Spark's engine: DataFrames for both; one process's: lists of tuples and
collections of strings.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from pyspark import Accumulator

    from lakefs_gc.contract import IncrementalBase, PartsDir, SlicesResult
    from lakefs_gc.gc.decision import Relations
    from lakefs_gc.listing.inventory import InventoryRead
    from lakefs_gc.listing.matching import Identities, Suspicious
    from lakefs_gc.placement import Placement
    from lakefs_gc.spark.runtime import StorageRef
    from lakefs_gc.sweeping.shared_rate import AdaptiveRate, RateSource

R = TypeVar("R")
A = TypeVar("A")
T = TypeVar("T")
U = TypeVar("U")
H = TypeVar("H")

# a listing task: (prefix, recursive, after, up_to), as lakefs_gc.listing.slices.listing_tasks makes them
ListingTask = tuple[str, bool, str | None, str | None]


class Engine(Protocol[R, A]):
    """
    What a Spark step needs of where it runs; where each piece of work runs is the engine's choice.

    ``sref``: the namespace's storage; ``n``: the run's parallelism; ``rel``: the decision's
    relational operations; ``placement``: the thresholds the engine decides by.
    """

    n: int
    placement: Placement

    @property
    def rel(self) -> Relations[R, A]: ...

    @property
    def sref(self) -> StorageRef: ...

    def admit(self, what: str, count: int) -> None:
        """Refuse (:class:`NeedsSpark`, nothing written yet) ``count`` ``what`` more than this engine takes."""

    def placed(self, what: str, size: int, fn: Callable[[Engine[Any, Any]], T]) -> T:
        """
        Return ``fn(engine)`` on the engine that suits an input of ``size`` listed objects.

        A Spark job's driver when ``size`` is small (``placement.driver_max_addresses``), its
        executors when it is not or the driver hands over (:class:`NeedsSpark`). ``fn`` is written
        for any engine (the driver's holds Python rows, the executors' DataFrames): the one place
        the seam's types are open.
        """

    def map(
        self,
        what: str,
        unit: str,
        items: Sequence[T],
        fn: Callable[[Iterable[T], Accumulator[int] | None], Iterator[U]],
        concurrency: int,
        total: int | None = None,
    ) -> list[U]:
        """Return ``fn(some items, progress)`` over every item, ``concurrency`` at a time, collected."""

    def at_once(self, tasks: int) -> int:
        """Return how many of ``tasks`` work items :meth:`map` runs at once."""

    def list_into(self, out_dir: str, tasks: Sequence[ListingTask], cutoff_s: float) -> tuple[int, int]:
        """List the namespace by ``tasks`` into the listing ``out_dir``; return (objects, bytes)."""

    def read_inventory_into(
        self, out_dir: str, inventory: InventoryRead, tasks: Sequence[ListingTask], cutoff_s: float
    ) -> tuple[int, int, int, int]:
        """
        Read ``inventory``'s data files, and list by ``tasks`` (the top-up), into the listing ``out_dir``.

        Return (objects, bytes, inventory rows read, rows left out as not older than the cutoff). The rows become the listing's by one body
        (:meth:`lakefs_gc.listing.inventory.InventoryRead.batches`); where it runs is the engine's choice.
        """

    def read_ranges(
        self, range_keys: Sequence[str], ranges: int, entries: int | None, state_dir: str, identities_dir: str
    ) -> tuple[int, PartsDir, int]:
        """
        Read the ranges at ``range_keys`` (``entries`` in all; None: a range does not say).

        Their addresses written as address parts under ``state_dir``, each once, and their entries'
        identities under ``identities_dir`` (both cleared first); return (addresses, the address
        folder, the number of identity parts).
        """

    def staged(self, files: Sequence[str]) -> A:
        """Return the staged addresses in mark_uncommitted's files."""

    def listed(self, slices: SlicesResult) -> R:
        """Return list_slices' listing: (address, size, last_modified_ms, checksum)."""

    def committed(self, dirs: Sequence[PartsDir], listed: R, carried: A | None) -> A:
        """Return the addresses the committed folders ``dirs`` hold (at least those ``listed`` or ``carried`` hold)."""

    def carried(self, base: IncrementalBase) -> A:
        """Return what an incremental run checks again: the base run's staged addresses and undeleted candidates."""

    def still_garbage(self, addresses: A, cutoff_s: float) -> R:
        """Return (address, size, checksum) of ``addresses`` still in storage and older than the cutoff."""

    def earlier_candidates(self, rows: R, mark_id: str | None) -> R:
        """Return which of ``rows`` the candidates of the mark ``mark_id`` hold (none when None)."""

    def union(self, a: R, b: R) -> R:
        """Return the rows of ``a`` and of ``b``."""

    def count(self, rows: R | A) -> int:
        """Return how many rows ``rows`` has."""

    def among(self, rows: R, addresses: Collection[str]) -> A:
        """Return the addresses of ``rows`` that ``addresses`` holds."""

    def without(self, rows: R, addresses: Collection[str]) -> R:
        """Return the rows whose address ``addresses`` does not hold."""

    def union_addresses(self, a: A, b: A) -> A:
        """Return the addresses in ``a`` or ``b``, each once."""

    def sample_undeletable(self, rows: R, k: int) -> list[str]:
        """Return at most ``k`` addresses of ``rows`` GC may never delete (none, by construction)."""

    def write(self, rows: R | A, part_dir: str, *more_dirs: str) -> tuple[int, int, PartsDir]:
        """Write ``rows`` as address parts under ``part_dir`` (and the same parts in ``more_dirs``)."""

    def hold(self, rows: H) -> AbstractContextManager[H]:
        """Keep ``rows`` computed while the block runs (Spark: cached); yields them."""

    def serve_rate(self, rate: AdaptiveRate, fallback: float) -> AbstractContextManager[RateSource]:
        """
        Share ``rate`` with the work items of :meth:`map` while the block runs; yields where they open it.

        In one process, ``rate`` itself; on Spark, a server in the driver the executors lease from
        (``fallback``: the keys/s of a work item that cannot reach it).
        """

    def identities(self, dirs: Sequence[PartsDir]) -> Identities:
        """Return the committed entries' identities in the folders ``dirs``, scanned where this engine scans."""

    def suspicious(self, rows: R, identities: Identities, link_flow: bool) -> Suspicious:
        """
        Return the staged check's matching of the candidates ``rows`` (address, size, checksum).

        ``link_flow``: also name the candidates whose key carries lakeFS's link signature.
        """

    def space_groups(
        self,
        ranges: Mapping[str, int],
        staged: Mapping[str, int],
        slices: SlicesResult,
        deleted_keys: Sequence[str],
        cutoff_ms: int,
        tag_bits: int,
    ) -> dict[tuple[int, str | None], tuple[int, int]]:
        """Return the listed objects summed by (holder set, what an unreferenced one is): attribute_space."""
