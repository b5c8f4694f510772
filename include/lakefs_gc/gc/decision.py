"""
The GC decision, stated once for every engine (architecture.md).

candidates = listed objects older than the cutoff - committed - uncommitted - protected paths.
Everything else in a run is I/O around this. An engine (:mod:`lakefs_gc.engine`) supplies the
few relational operations the decision is written in (:class:`Relations`): Spark DataFrames on
executors (:class:`DataFrames`), or Python rows on the driver or in a task's own process
(:class:`Rows`). Both run :func:`compute_candidates` and :func:`carried_candidates` as written here.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

ADDRESS_SCHEMA = "address string"


# The one definition of what GC may ever delete, used by Spark (``rlike``, Java regex) and by
# Python (``re.search``) alike: an object under ``data/`` or a legacy object at the namespace root;
# never ``_lakefs/``, never the ``dummy`` marker, never a key with an empty, ``.`` or ``..``
# segment (on the local blockstore those name another file). Both engines read the pattern the
# same way: found from ``^``, DOTALL so every character is ordinary, and the end of the key written
# ``(?!.)`` rather than ``$`` (Java's ``$`` also matches before a final U+2028 or ``\r``, Python's
# only before a final newline):
# tests/contract/test_contract.py checks them against each other on adversarial keys.
DELETABLE_PATTERN = r"(?s)^(?!_lakefs/)(?!dummy(?!.))(?!.*(?:^|/)\.{0,2}(?:/|(?!.)))(?:data/.+|[^/]+)(?!.)"
_DELETABLE = re.compile(DELETABLE_PATTERN)


def deletable(address: Column) -> Column:
    """Return :data:`DELETABLE_PATTERN` as a Spark column predicate."""
    return address.rlike(DELETABLE_PATTERN)


def is_deletable(address: str | None) -> bool:
    """Tell whether :data:`DELETABLE_PATTERN` matches, in plain Python (the deleter checks every key again)."""
    return address is not None and _DELETABLE.search(address) is not None


R = TypeVar("R")  # a relation of rows whose first column is the address
A = TypeVar("A")  # a relation of addresses alone


class Relations(Protocol[R, A]):
    """
    The relational operations the decision is written in.

    ``listed``: (address, size, last_modified_ms, checksum) rows; ``rows``: rows whose first
    column is the address; ``addresses``: a relation of addresses alone.
    """

    def older_than(self, listed: R, cutoff_ms: int) -> R:
        """Return (address, size, checksum) of the listed objects last modified before ``cutoff_ms``."""

    def minus(self, rows: R, addresses: A) -> R:
        """Return the rows whose address is not in ``addresses``."""

    def addresses(self, rows: R) -> A:
        """Return the addresses of ``rows``."""

    def deletable(self, rows: R) -> R:
        """Return the rows whose address GC may delete (:data:`DELETABLE_PATTERN`)."""

    def minus_addresses(self, addresses: A, others: A) -> A:
        """Return the addresses not in ``others``."""

    def deletable_addresses(self, addresses: A) -> A:
        """Return the addresses GC may delete (:data:`DELETABLE_PATTERN`)."""


def compute_candidates(rel: Relations[R, A], listed: R, committed: A, uncommitted: A, cutoff_ms: int) -> R:
    """
    Return the candidates: listed objects older than ``cutoff_ms``, minus committed, minus uncommitted.

    Protected paths are never candidates. The rows are (address, size, checksum).
    """
    old = rel.older_than(listed, cutoff_ms)
    return rel.deletable(rel.minus(rel.minus(old, committed), uncommitted))


def carried_candidates(rel: Relations[R, A], carried: A, listed: R, committed: A, uncommitted: A) -> A:
    """
    Return which addresses an incremental run carried from its base run may still be garbage.

    Those the slices listed now are decided with the listing; the rest, minus committed and
    uncommitted, outside protected paths, are checked in storage by the step (still there, older
    than the cutoff).
    """
    rest = rel.minus_addresses(
        rel.minus_addresses(rel.minus_addresses(carried, rel.addresses(listed)), committed), uncommitted
    )
    return rel.deletable_addresses(rest)


class DataFrames:
    """:class:`Relations` on Spark DataFrames (executors; anti-joins on the address)."""

    def older_than(self, listed: DataFrame, cutoff_ms: int) -> DataFrame:
        from pyspark.sql import functions as F

        listed = listed.select("address", "size", "last_modified_ms", "checksum")
        return listed.where(F.col("last_modified_ms") < F.lit(cutoff_ms)).select("address", "size", "checksum")

    def minus(self, rows: DataFrame, addresses: DataFrame) -> DataFrame:
        return rows.join(addresses.select("address"), on="address", how="left_anti")

    def addresses(self, rows: DataFrame) -> DataFrame:
        return rows.select("address")

    def deletable(self, rows: DataFrame) -> DataFrame:
        from pyspark.sql import functions as F

        return rows.where(deletable(F.col("address")))

    def minus_addresses(self, addresses: DataFrame, others: DataFrame) -> DataFrame:
        return self.minus(addresses, others)

    def deletable_addresses(self, addresses: DataFrame) -> DataFrame:
        return self.deletable(addresses)


def row_address(row: str | tuple[Any, ...]) -> str:
    """Return the address of a Python row: the row itself, or its first column."""
    return row if isinstance(row, str) else row[0]


class Rows:
    """:class:`Relations` on Python rows: lists of tuples or of addresses, sets of addresses."""

    def older_than(self, listed: Iterable[tuple[Any, ...]], cutoff_ms: int) -> list[tuple[Any, ...]]:
        return [
            (a, size, checksum)
            for a, size, modified_ms, checksum in listed
            if modified_ms is not None and modified_ms < cutoff_ms
        ]

    def minus(self, rows: Iterable[Any], addresses: Collection[str]) -> list[Any]:
        return [r for r in rows if row_address(r) not in addresses]

    def addresses(self, rows: Iterable[Any]) -> set[str]:
        return {row_address(r) for r in rows}

    def deletable(self, rows: Iterable[Any]) -> list[Any]:
        return [r for r in rows if is_deletable(row_address(r))]

    def minus_addresses(self, addresses: Iterable[str], others: Collection[str]) -> list[str]:
        return [a for a in addresses if a not in others]

    def deletable_addresses(self, addresses: Iterable[str]) -> list[str]:
        return [a for a in addresses if is_deletable(a)]
