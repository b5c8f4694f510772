"""
Listing the namespace's objects.

The slices (``data/<slice>/``) to list and the ones to skip, the listing tasks (each slice, the
loose objects under ``data/``, the root's key ranges), and the objects one group of tasks finds
(the Spark step :mod:`lakefs_gc.steps.list_slices` runs them).

The listing is a Parquet folder of :data:`lakefs_gc.storage.native.LISTED_COLUMNS` in the work location,
written by Spark (the job) or, for a step run in its Airflow task's own process, by
:func:`write_listed_here`, and read by Spark or :func:`read_listed_here`; both keep Spark's
``_SUCCESS`` marker.
"""

from __future__ import annotations

import functools
import os
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from lakefs_gc.lakefs import xid

if TYPE_CHECKING:
    from lakefs_gc.storage.base import Storage
    from lakefs_gc.storage.info import ObjectInfo

SUCCESS = "_SUCCESS"  # Spark's marker of a finished folder

# Root keys are split into key ranges (lo, hi] at these boundaries, one listing task each: legacy
# lakeFS addresses are hex, so the ranges come out even.
ROOT_BOUNDARIES = tuple("123456789abcdef")

T = TypeVar("T")


class ListedCounter(Protocol):
    """What counts the keys a listing sees: a Spark accumulator, or anything that adds."""

    def add(self, n: int, /) -> None: ...


def created_after(slice_id: str, cutoff_s: float) -> bool:
    """
    Whether the slice's descending xid says it was created after the cutoff (reference 2.2).

    Then none of its objects is a candidate, and the listing skips it.
    """
    return xid.is_xid(slice_id) and xid.descending_time(slice_id) > cutoff_s


def in_slice_created_after(address: str, cutoff_s: float) -> bool:
    """``data/<slice>/...`` in a slice :func:`created_after` the cutoff."""
    parts = address.split("/", 2)
    return len(parts) == 3 and parts[0] == "data" and created_after(parts[1], cutoff_s)


def plan_slices(storage: Storage, cutoff_s: float, since: str | None = None) -> tuple[list[str], list[str], int]:
    """
    Slice prefixes (``data/<slice>/``) to list, slice ids skipped, and how many an incremental run leaves unlisted.

    Skipped: the slices whose id says they were created after the cutoff (descending xids; reference
    2.2). Non-xid children are listed by clean runs.

    ``since`` (incremental runs): the newest slice the base run listed ("" when it listed none).
    Only xid slices created since, and that slice itself (lakeFS may still have been writing to it),
    are listed: descending xids, so ``id <= since``.
    """
    to_list: list[str] = []
    skipped: list[str] = []
    before = 0
    for p in storage.list_prefixes("data/"):
        sid = p[len("data/") :].rstrip("/")
        if created_after(sid, cutoff_s):
            skipped.append(sid)
        elif since is not None and (not xid.is_xid(sid) or (since and sid > since)):
            before += 1
        else:
            to_list.append(p)
    return to_list, skipped, before


def listing_tasks(slices: list[str], root: bool = True) -> list[tuple[str, bool, str | None, str | None]]:
    """
    (prefix, recursive, after, up_to) of every listing task.

    Each slice and, with ``root``, the loose objects directly under ``data/`` and the root's key
    ranges.
    """
    tasks: list[tuple[str, bool, str | None, str | None]] = [(p, True, None, None) for p in slices]
    if not root:
        return tasks
    tasks.append(("data/", False, None, None))
    bounds: list[str | None] = [None, *ROOT_BOUNDARIES, None]
    tasks += [("", False, lo, hi) for lo, hi in zip(bounds, bounds[1:])]
    return tasks


def _ranged(st: Storage, prefix: str, recursive: bool, after: str | None, up_to: str | None) -> Iterator[ObjectInfo]:
    """
    Run a listing task through the store's SDK (:meth:`Storage.list`).

    The root's key ranges and the loose objects under ``data/`` (delimiter listings), the ``dummy``
    marker left out.
    """
    for o in st.list(prefix, recursive=recursive, start_after=after):
        if up_to is not None and o.key > up_to:
            break
        if prefix == "" and o.key == "dummy":
            continue
        yield o


# Listing tasks one listing runs at once (a Spark task, or the step in its Airflow task): each waits
# on the store's round trips, not on this process (the native client lists outside the GIL). One at a
# time, a Spark task listed ~26,000 keys/s from SeaweedFS with the server at half a core.
LISTING_THREADS = 4


def list_batches(
    st: Storage,
    cutoff_s: float,
    tasks: Iterable[tuple[str, bool, str | None, str | None]],
    listed: ListedCounter | None = None,
    threads: int = LISTING_THREADS,
) -> Iterator[Any]:
    """
    Arrow batches (address, size, last_modified_ms, checksum) of the objects ``tasks`` find older than ``cutoff_s``.

    The ``dummy`` marker left out, ``threads`` tasks at a time, batches in no particular order;
    ``listed`` (a counter) counts every key seen. A slice is
    listed whole (:meth:`Storage.list_batches`: the native client where it serves, without a Python
    object per key); the root's key ranges and the loose objects under ``data/`` through the store's
    SDK (few objects, delimiter listings).

    Older than the cutoff in whole milliseconds: ``last_modified_ms < floor(cutoff_s * 1000)``,
    which holds only for an object modified before ``cutoff_s`` (never one modified at or after
    it).
    """
    import math

    import pyarrow.compute as pc

    from lakefs_gc.storage.native import sdk_batches

    cutoff_ms = math.floor(cutoff_s * 1000)

    def one(task: tuple[str, bool, str | None, str | None]) -> Iterator[tuple[int, Any]]:
        prefix, recursive, after, up_to = task
        whole = recursive and after is None and up_to is None
        batches = st.list_batches(prefix) if whole else sdk_batches(_ranged(st, prefix, recursive, after, up_to))
        for b in batches:
            yield len(b), b.filter(pc.less(b.column(2), cutoff_ms))

    n = 0
    for seen, old in interleaved([functools.partial(one, t) for t in tasks], threads):
        n += seen
        if len(old):
            yield old
    if listed is not None:
        listed.add(n)


_DONE = object()


def interleaved(sources: list[Callable[[], Iterable[T]]], threads: int, depth: int = 16) -> Iterator[T]:
    """
    Yield the items of every ``sources()`` iterable, in no particular order.

    ``threads`` sources consumed at once on threads of their own (at most ``depth`` items waiting).
    The first error a source raises is raised here, after the other threads stopped; so is a
    consumer's leaving early (the generator closed): every thread stops at its next item, none is
    left running.
    """
    if threads <= 1 or len(sources) <= 1:
        for source in sources:
            yield from source()
        return
    pending = iter(sources)
    lock, stop = threading.Lock(), threading.Event()
    # (None, an item), (the error a source raised, None), or (_DONE, None) when a thread ends
    out: queue.Queue[tuple[Any, Any]] = queue.Queue(maxsize=depth)

    def put(item: tuple[Any, Any]) -> bool:
        while not stop.is_set():
            try:
                out.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            while not stop.is_set():
                with lock:
                    source = next(pending, None)
                if source is None:
                    break
                for item in source():
                    if not put((None, item)):
                        return
        except BaseException as e:  # raised in the consumer
            put((e, None))
        finally:
            put((_DONE, None))

    workers = [
        threading.Thread(target=work, name=f"listing-{i}", daemon=True) for i in range(min(threads, len(sources)))
    ]
    for w in workers:
        w.start()
    try:
        running = len(workers)
        while running:
            error, item = out.get()
            if error is _DONE:
                running -= 1
            elif error is not None:
                raise error
            else:
                yield item
    finally:
        stop.set()
        for w in workers:
            w.join(timeout=30)


def local_folder(location: str) -> str | None:
    """
    Return the local path of a work location folder (a path or ``file://``), or None.

    None: another file system, only Spark reads and writes it.
    """
    folder = location.removeprefix("file://")
    return None if "://" in folder else folder


def write_listed_here(folder: str, batches: Iterable[Any]) -> None:
    """
    Write the listing as Spark's ``write.mode("overwrite").parquet`` leaves it.

    The listing: Arrow batches of :func:`lakefs_gc.storage.native.listed_schema`; the folder is
    replaced by one part and ``_SUCCESS`` (written last).
    """
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    from lakefs_gc.storage.native import listed_schema

    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    pq.write_table(
        pa.Table.from_batches(list(batches), schema=listed_schema()), os.path.join(folder, "part-00000-here.parquet")
    )
    open(os.path.join(folder, SUCCESS), "wb").close()


def read_listed_here(folder: str) -> list[tuple[Any, ...]] | None:
    """Return the rows of a finished listing folder (``_SUCCESS``), or None when it is not one."""
    import pyarrow.parquet as pq

    if not os.path.isfile(os.path.join(folder, SUCCESS)):
        return None
    from lakefs_gc.storage.native import LISTED_COLUMNS

    table = pq.read_table(folder, columns=list(LISTED_COLUMNS))
    return list(zip(*(table.column(c).to_pylist() for c in LISTED_COLUMNS)))
