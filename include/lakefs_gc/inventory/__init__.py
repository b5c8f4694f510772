"""
The storage providers' inventory reports: their manifests, read and verified, failing closed.

Amazon S3 Inventory, Azure Blob Inventory and Google Cloud Storage inventory reports (Storage
Insights) each deliver, daily or weekly, every object's key, size and last-modified time in data
files described by a manifest. This package finds a destination's inventories
(:class:`InventorySource`), parses each provider's manifest into one record
(:class:`InventoryManifest`), checks that an inventory can list a namespace (:func:`verify`) and
picks the newest that can (:func:`newest_complete`). Whatever is wrong refuses with one line
(:class:`InventoryRefused`).

:mod:`~lakefs_gc.inventory.rows` reads the data files' rows (CSV and Parquet; S3's ORC too), and
:mod:`lakefs_gc.listing.inventory` turns them into ``list_slices``' listing when a run's
``listing_source`` is ``inventory`` (docs/inventory.md). Pure Python: no Airflow, no Spark
(``rows`` imports pyarrow when called).
"""

from __future__ import annotations

from lakefs_gc.inventory.manifest import (
    CHECKSUM,
    CSV,
    KEY,
    LAST_MODIFIED,
    ORC,
    PARQUET,
    REQUIRED_ROLES,
    SIZE,
    DataFile,
    InventoryManifest,
    InventoryRefused,
    ProviderSpec,
)
from lakefs_gc.inventory.verify import (
    DEFAULT_MAX_AGE,
    SPECS,
    ChosenInventory,
    InventorySource,
    VerifiedInventory,
    data_prefix,
    newest_complete,
    verify,
)

__all__ = [
    "CHECKSUM",
    "CSV",
    "DEFAULT_MAX_AGE",
    "KEY",
    "LAST_MODIFIED",
    "ORC",
    "PARQUET",
    "REQUIRED_ROLES",
    "SIZE",
    "SPECS",
    "ChosenInventory",
    "DataFile",
    "InventoryManifest",
    "InventoryRefused",
    "InventorySource",
    "ProviderSpec",
    "VerifiedInventory",
    "data_prefix",
    "newest_complete",
    "verify",
]
