"""The GC decision: one pure function over DataFrames (architecture.md).

candidates = listed objects older than the cutoff - committed - uncommitted - protected paths.
Everything else in a run is I/O around this.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

LISTED_SCHEMA = "address string, size long, last_modified_ms long"
ADDRESS_SCHEMA = "address string"


def deletable(address: Column) -> Column:
    """Addresses GC may ever delete: objects under ``data/`` or legacy objects at the namespace root,
    never ``_lakefs/`` or the ``dummy`` marker, never anything that climbs out (``..``)."""
    root_level = ~address.contains("/") & (address != F.lit("dummy"))
    under_data = address.startswith("data/") & (F.length(address) > 5)
    return (under_data | root_level) & ~address.contains("..") & (address != F.lit("")) \
        & ~address.startswith("_lakefs/")


def is_deletable(address: str) -> bool:
    """The same rule in plain Python (the deleter checks every key again)."""
    if not address or ".." in address.split("/") or address.startswith("_lakefs/") or address.startswith("/"):
        return False
    if "/" not in address:
        return address != "dummy"
    return address.startswith("data/") and len(address) > 5


def compute_candidates(listed: DataFrame, committed: DataFrame, uncommitted: DataFrame, cutoff_ms: int) -> DataFrame:
    """Listed objects older than ``cutoff_ms``, minus committed and uncommitted addresses, minus
    protected paths. Returns (address, size)."""
    listed = listed.select("address", "size", "last_modified_ms")
    committed = committed.select("address")
    uncommitted = uncommitted.select("address")
    old = listed.where(F.col("last_modified_ms") < F.lit(cutoff_ms))
    out = (old.join(committed, on="address", how="left_anti")
              .join(uncommitted, on="address", how="left_anti")
              .where(deletable(F.col("address"))))
    return out.select("address", "size")
