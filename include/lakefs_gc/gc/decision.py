"""
The GC decision: one pure function over DataFrames (architecture.md).

candidates = listed objects older than the cutoff - committed - uncommitted - protected paths.
Everything else in a run is I/O around this.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

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
# tests/test_contract.py checks them against each other on adversarial keys.
DELETABLE_PATTERN = r"(?s)^(?!_lakefs/)(?!dummy(?!.))(?!.*(?:^|/)\.{0,2}(?:/|(?!.)))(?:data/.+|[^/]+)(?!.)"
_DELETABLE = re.compile(DELETABLE_PATTERN)


def deletable(address: Column) -> Column:
    """:data:`DELETABLE_PATTERN` as a Spark column predicate."""
    return address.rlike(DELETABLE_PATTERN)


def is_deletable(address: str | None) -> bool:
    """:data:`DELETABLE_PATTERN` in plain Python (the deleter checks every key again)."""
    return address is not None and _DELETABLE.search(address) is not None


def compute_candidates(listed: DataFrame, committed: DataFrame, uncommitted: DataFrame, cutoff_ms: int) -> DataFrame:
    """
    Listed objects older than ``cutoff_ms``, minus committed and uncommitted addresses, minus
    protected paths. Returns (address, size, checksum).
    """
    from pyspark.sql import functions as F

    listed = listed.select("address", "size", "last_modified_ms", "checksum")
    committed = committed.select("address")
    uncommitted = uncommitted.select("address")
    old = listed.where(F.col("last_modified_ms") < F.lit(cutoff_ms))
    out = (old.join(committed, on="address", how="left_anti")
              .join(uncommitted, on="address", how="left_anti")
              .where(deletable(F.col("address"))))
    return out.select("address", "size", "checksum")
