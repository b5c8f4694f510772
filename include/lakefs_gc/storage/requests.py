"""
Every storage request the GC makes, counted by kind and store at one boundary: the ``Storage`` methods.

:func:`instrument` wraps each method of an adapter class that calls the store (once, for every
adapter: :mod:`lakefs_gc.storage.kinds`), and each call adds what it sent to a :class:`Requests`
counter: one request of its kind (:data:`METHOD_KINDS`; a ``delete_batch`` one, or one per key
on a store that deletes a key a request, :data:`DELETES_EACH`), a listing one LIST per page it read
(a page holds :data:`PAGE_SIZE` entries on that store: the pages the entries it yielded needed; a
listing with a delimiter yields objects or prefixes, and the pages the other filled are not seen).
A call made inside another counted call of the same thread (``exists`` calling ``stat``, the
native listing falling back to ``list``) is the outer call's, never counted twice. The helpers
that call a store through an adapter (the incomplete uploads') count as it does
(:func:`instrument_via`).

Where a call is counted: the counter a storage was given (:func:`attach`; a Spark job's
``StorageRef`` gives its accumulator, so that what executors send comes back with the step's
result), else this process's (:data:`PROCESS`, read by :func:`counting`). A storage opened to read
an inventory counts its reads as INVENTORY.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from lakefs_gc.contract.cost import REQUEST_KINDS, RequestCount

__all__ = ["METHOD_KINDS", "PROCESS", "Requests", "RequestsParam", "attach", "counting", "instrument", "instrument_via"]

# Storage method -> the kind of request it sends
METHOD_KINDS: dict[str, str] = {
    "put": "PUT",
    "get": "GET",
    "open_input": "GET",
    "exists": "HEAD",
    "stat": "HEAD",
    "content_md5": "HEAD",
    "list": "LIST",
    "list_prefixes": "LIST",
    "list_batches": "LIST",
    "delete": "DELETE",
    "delete_batch": "DELETE",
}
# Not counted: the reads of a store's settings (``soft_delete_days``, ``restorability``: S3 versioning
# and lifecycle, Azure's service properties, GCS's bucket), a few a sweep, whose number depends on the
# settings themselves (what they call of the methods above is counted); GCS's client library's read
# of the bucket before a storage's first upload.
LISTINGS = ("list", "list_prefixes", "list_batches")
# entries in a page of a listing, by store kind (S3 ListObjectsV2 and GCS objects.list: 1,000; Azure List Blobs: 5,000)
PAGE_SIZE = {"s3": 1000, "gs": 1000, "azure": 5000, "local": 1000}
READS = ("GET", "HEAD", "LIST")  # what an inventory's storage counts as INVENTORY
# stores whose delete_batch sends one request per key (GCS: parallel single deletes; local: a file each)
DELETES_EACH = ("gs", "local")


class Sink(Protocol):
    """Where counts go: a :class:`Requests`, or a Spark accumulator of one (``add``)."""

    def add(self, term: Any) -> None: ...


class Requests:
    """A thread-safe count of requests by (store, kind)."""

    def __init__(self, counts: Iterable[tuple[tuple[str, str], int]] = ()):
        self._counts: Counter[tuple[str, str]] = Counter(dict(counts))
        self._lock = threading.Lock()

    def add(self, term: Requests | tuple[str, str, int]) -> None:
        """Add a (store, kind, n) or another counter's counts."""
        items = term.items() if isinstance(term, Requests) else [((term[0], term[1]), term[2])]
        with self._lock:
            for key, n in items:
                self._counts[key] += n

    def items(self) -> list[tuple[tuple[str, str], int]]:
        with self._lock:
            return [(k, n) for k, n in self._counts.items() if n]

    def minus(self, other: Requests) -> Requests:
        """Return what this counter has more than ``other`` (a later snapshot minus an earlier)."""
        before = dict(other.items())
        return Requests((k, n - before.get(k, 0)) for k, n in self.items())

    def copy(self) -> Requests:
        return Requests(self.items())

    def counts(self) -> tuple[RequestCount, ...]:
        """Return the counts, by store then kind in :data:`REQUEST_KINDS`' order."""
        order = {k: i for i, k in enumerate(REQUEST_KINDS)}
        return tuple(
            RequestCount(store, kind, n)
            for (store, kind), n in sorted(self.items(), key=lambda x: (x[0][0], order.get(x[0][1], 99)))
            if n
        )

    def __reduce__(self) -> tuple[Any, ...]:  # pickled into Spark tasks without its lock
        return (Requests, (self.items(),))

    def __repr__(self) -> str:
        return f"Requests({dict(self.items())})"


class RequestsParam:
    """
    The Spark ``AccumulatorParam`` of :class:`Requests`: the executors' counts summed into the driver's.

    Duck-typed (``zero``, ``addInPlace``: what Spark calls), so that this module needs no pyspark.
    """

    def zero(self, value: Requests) -> Requests:
        return Requests()

    def addInPlace(self, value1: Requests, value2: Requests) -> Requests:
        value1.add(value2)
        return value1


_T = TypeVar("_T")
PROCESS = Requests()  # what storages without their own sink count, in this process
_inside = threading.local()  # depth of counted calls running in this thread


@contextmanager
def counting() -> Iterator[Requests]:
    """
    Yield a counter that holds, once the block ends, what this process's storages without a sink sent during it.

    Calls of other threads of the process count too (a step's own worker threads); run one step at
    a time per process.
    """
    before = PROCESS.copy()
    delta = Requests()
    try:
        yield delta
    finally:
        delta.add(PROCESS.copy().minus(before))


def attach(storage: _T, sink: Sink | None, inventory: bool = False) -> _T:
    """Make ``storage`` count into ``sink`` (None: :data:`PROCESS`), its reads as INVENTORY when ``inventory``; return it."""
    setattr(storage, "_requests_sink", sink)
    setattr(storage, "_requests_inventory", inventory)
    return storage


def _record(storage: Any, kind: str, n: int) -> None:
    if n <= 0:
        return
    if kind in READS and getattr(storage, "_requests_inventory", False):
        kind = "INVENTORY"
    sink: Sink = getattr(storage, "_requests_sink", None) or PROCESS
    sink.add(Requests([((getattr(storage, "_requests_store", "local"), kind), n)]))


def _pages(storage: Any, entries: int) -> int:
    size = PAGE_SIZE.get(getattr(storage, "_requests_store", "local"), 1000)
    return max(1, -(-entries // size))


def _entries(item: Any) -> int:
    rows = getattr(item, "num_rows", None)  # an Arrow batch of the native listing
    return int(rows) if rows is not None else 1


_F = TypeVar("_F", bound=Callable[..., Any])


@contextmanager
def _outermost() -> Iterator[bool]:
    depth = getattr(_inside, "depth", 0)
    _inside.depth = depth + 1
    try:
        yield depth == 0
    finally:
        _inside.depth = depth


def _counted(method: _F, kind: str, via: str | None = None) -> _F:
    """Wrap ``method`` to count as ``kind``; ``via``: the attribute holding the storage it calls through."""
    if inspect.isgeneratorfunction(method) or method.__name__ in LISTINGS:  # what it yields were listed

        @functools.wraps(method)
        def listing(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
            with _outermost() as outer:
                it = iter(method(self, *args, **kwargs))
            entries, started = 0, False
            try:
                while True:
                    with _outermost():
                        try:
                            item = next(it)
                        except StopIteration:
                            started = True
                            return
                    started = True
                    entries += _entries(item)
                    yield item
            finally:
                if outer and started:  # the first page read, or the listing ran dry
                    st = getattr(self, via) if via else self
                    _record(st, kind, _pages(st, entries))

        return listing  # type: ignore[return-value]

    each_key = method.__name__ == "delete_batch"

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        with _outermost() as outer:
            try:
                return method(self, *args, **kwargs)
            finally:
                if outer:
                    st = getattr(self, via) if via else self
                    keys = args[0] if args else kwargs.get("keys", ())
                    each = each_key and getattr(st, "_requests_store", "") in DELETES_EACH
                    _record(st, kind, len(keys) if each else 1)

    return call  # type: ignore[return-value]


def instrument_via(cls: type, via: str, kinds: dict[str, str]) -> None:
    """
    Count the requests of ``cls``, a helper calling the store through the storage in its attribute ``via``.

    ``kinds``: its methods and the kind each sends (a ``LIST`` one yields what it lists); they count
    into that storage's counter, as its own calls do. The incomplete multipart uploads'
    (:mod:`lakefs_gc.storage.multipart`).
    """
    if cls.__dict__.get("_requests_instrumented"):
        return
    for name, kind in kinds.items():
        method = cls.__dict__.get(name)
        if callable(method):
            setattr(cls, name, _counted(method, kind, via))
    cls._requests_instrumented = True  # type: ignore[attr-defined]


def instrument(cls: type, store: str) -> None:
    """Count the requests of the adapter class ``cls`` (the store kind ``store``): its methods of :data:`METHOD_KINDS`."""
    if cls.__dict__.get("_requests_instrumented"):
        return
    cls._requests_store = store  # type: ignore[attr-defined]
    for name, kind in METHOD_KINDS.items():
        method = getattr(cls, name, None)
        if callable(method) and not isinstance(inspect.getattr_static(cls, name), property):
            setattr(cls, name, _counted(method, kind))
    cls._requests_instrumented = True  # type: ignore[attr-defined]
