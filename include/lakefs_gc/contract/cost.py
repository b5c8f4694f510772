"""
What a run's storage requests cost, and what the bytes it frees save (issue 54): the types.

Part of :mod:`lakefs_gc.contract` (import from there). The counting is
:mod:`lakefs_gc.storage.requests`; the figures of a run, :mod:`lakefs_gc.report.cost`.

The default prices are each provider's public list price of its standard tier, in US dollars,
read on :data:`PRICES_AS_OF` (the sources beside each); a repository's config may give its own
(``prices`` in the repositories file). A GB is 2**30 bytes, as the three providers bill it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# What the GC's storage requests are counted as. LIST: a page of a listing; HEAD: an object's
# metadata (and a store setting read); GET: an object read; PUT: an object written; DELETE: a
# delete call (a DeleteObjects batch is one); INVENTORY: a read of an inventory's manifest or data file.
REQUEST_KINDS = ("LIST", "HEAD", "GET", "PUT", "DELETE", "INVENTORY")
GB = 1 << 30
PRICES_AS_OF = "2026-11-29"  # the day the defaults below were read from their sources


@dataclass(frozen=True)
class RequestCount:
    """``count`` requests of ``kind`` (:data:`REQUEST_KINDS`) to the store of kind ``store`` (local, s3, azure, gs)."""

    store: str
    kind: str
    count: int


@dataclass(frozen=True)
class StorePrices:
    """One store's prices, in US dollars: per 1,000 requests of each kind, and per GB-month stored."""

    list: float = 0.0
    head: float = 0.0
    get: float = 0.0
    put: float = 0.0
    delete: float = 0.0
    inventory: float = 0.0
    storage_gb_month: float = 0.0

    def per_request(self, kind: str) -> float:
        """Return the price of one request of ``kind`` (:data:`REQUEST_KINDS`)."""
        return float(getattr(self, kind.lower())) / 1000


# Amazon S3 Standard, US East (N. Virginia), read 2026-11-29 from https://aws.amazon.com/s3/pricing/
# ("PUT, COPY, POST, LIST requests (per 1,000 requests) $0.005"; "GET, SELECT, and all other requests
# (per 1,000 requests) $0.0004", HEAD among them; "DELETE and CANCEL requests are free"; storage "First
# 50 TB / Month $0.023 per GB"). A DeleteObjects batch is counted as a DELETE (free) here: the pricing
# page names no price for it; give ``delete`` the POST price (0.005) to count it as one.
S3_STANDARD = StorePrices(
    list=0.005, head=0.0004, get=0.0004, put=0.005, delete=0.0, inventory=0.0004, storage_gb_month=0.023
)
# Azure Blob Storage, Hot tier, LRS, East US, read 2026-11-29 from
# https://azure.microsoft.com/en-us/pricing/details/storage/blobs/ (write and "List and Create Container"
# operations $0.055 per 10,000; read and "All other operations" $0.0044 per 10,000; capacity, first 50
# TB, $0.018 per GB-month); Delete Blob is free (https://learn.microsoft.com/en-us/azure/storage/blobs/
# map-rest-apis-transaction-categories: DeleteBlob "Free" on general purpose v2), Get Blob Properties "Other".
AZURE_HOT_LRS = StorePrices(
    list=0.0055, head=0.00044, get=0.00044, put=0.0055, delete=0.0, inventory=0.00044, storage_gb_month=0.018
)
# Google Cloud Storage, Standard storage in a region (us-east1), read 2026-11-29 from
# https://cloud.google.com/storage/pricing-examples ("Class A operations (object adds, bucket and object
# listings) ... $0.0050 per 1,000 operations"; "Class B operations (object gets, retrieving bucket and
# object metadata) ... $0.0004 per 1,000"; "Standard storage * $0.020 per GB"); deletes are free
# operations (https://cloud.google.com/storage/pricing).
GCS_STANDARD = StorePrices(
    list=0.005, head=0.0004, get=0.0004, put=0.005, delete=0.0, inventory=0.0004, storage_gb_month=0.020
)
LOCAL_FREE = StorePrices()  # local:// is the disk lakeFS runs on: no request is billed


@dataclass(frozen=True)
class Prices:
    """
    The price table a run's cost is figured with: one :class:`StorePrices` per store kind.

    ``as_of``: the date the defaults were read (:data:`PRICES_AS_OF`), or ``config`` when a
    repository's config gave any price.
    """

    s3: StorePrices = field(default_factory=lambda: S3_STANDARD)
    azure: StorePrices = field(default_factory=lambda: AZURE_HOT_LRS)
    gs: StorePrices = field(default_factory=lambda: GCS_STANDARD)
    local: StorePrices = field(default_factory=lambda: LOCAL_FREE)
    as_of: str = PRICES_AS_OF

    def of(self, store: str) -> StorePrices:
        """Return the prices of the store kind ``store`` (an unknown kind: nothing billed)."""
        prices = getattr(self, store, None) if store in STORES else None
        return prices if isinstance(prices, StorePrices) else LOCAL_FREE


STORES = ("s3", "azure", "gs", "local")  # the store kinds a price table names (lakefs_gc.storage.namespace)
