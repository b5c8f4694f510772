"""
An entry's ``listing`` section: LIST calls, or the store's inventory report (docs/inventory.md).

::

    listing:
      source: inventory            # list (default) | inventory
      inventory:
        location: s3://dest-bucket/prefix/source-bucket/config-id
        source_prefix: ""          # S3: the configuration's Filter Prefix ("" for none)
        name: null                 # Azure: the rule's name (required); GCS: the report configuration's id
        kind: null                 # s3 | azure | gs; null: the location's
        max_age_days: 8
        fallback: none             # none: refuse the run; list: list instead, saying why

``defaults`` and an entry's ``listing`` merge key by key, ``inventory`` too, so that ``defaults``
can name the inventory and an entry only turn it on. Every field is checked by its type and rule
(:func:`~lakefs_gc.config.sections.read_section`), then what the fields say together, each
problem at the line of the field it names.

Part of :mod:`lakefs_gc.config` (import from there).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lakefs_gc.config.model import InventorySettings, ListingSettings
from lakefs_gc.config.sections import read_section

if TYPE_CHECKING:
    from lakefs_gc.config.sections import _Bad

__all__ = ["merge_listing", "parse_listing"]

# the store that writes each kind of inventory, as its location names it (lakefs_gc.storage.namespace's kinds)
_TITLES = {"s3": "an S3 Inventory", "azure": "an Azure Blob Inventory", "gs": "a GCS inventory report"}


def merge_listing(*blocks: Any) -> Any:
    """
    Return the ``listing`` blocks (``defaults``' first) merged key by key, ``inventory`` too.

    A block that is not a mapping is returned as it is (the first such), for the parser to name.
    """
    given = [b for b in blocks if b is not None]
    if any(not isinstance(b, Mapping) for b in given):
        return next(b for b in given if not isinstance(b, Mapping))
    out: dict[str, Any] = {}
    for block in given:
        for key, value in block.items():
            if key == "inventory" and isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
                out[key] = {**out[key], **value}
            else:
                out[key] = value
    return out


def parse_listing(raw: Any, bad: _Bad) -> ListingSettings:
    """Parse a (merged) ``listing`` section; every problem recorded through ``bad``."""
    if raw is None:
        return ListingSettings()
    given = raw.get("inventory") if isinstance(raw, Mapping) else None
    inventory = read_section(InventorySettings, {} if given is None else given, "listing.inventory", bad)
    listing = read_section(ListingSettings, raw, "listing", bad, inventory=inventory)
    if listing.source == "inventory" or given:
        _check_inventory(inventory, listing.source == "inventory", bad)
    return listing


def _check_inventory(inv: InventorySettings, used: bool, bad: _Bad) -> None:
    """Check what the fields of ``listing.inventory`` say together: a store's location, and what its kind needs."""
    from lakefs_gc.storage.namespace import AZURE, LOCAL, S3, parse_namespace, scheme_of  # not at a DAG file's parse

    where = "listing.inventory"
    if inv.location is None:
        if used:
            bad(
                f"{where}.location",
                "missing: source inventory reads the reports delivered there (e.g. "
                "s3://dest-bucket/prefix/source-bucket/config-id)",
            )
        return
    if scheme_of(inv.location) == LOCAL:
        bad(
            f"{where}.location",
            f"must be on S3, Azure Blob or GCS (no store writes inventories of local://), got {inv.location!r}",
        )
        return
    try:
        kind = parse_namespace(inv.location).scheme
    except ValueError as e:
        bad(
            f"{where}.location",
            f"must be where an inventory is delivered (s3://, gs:// or an Azure container URL): {e}",
        )
        return
    if inv.kind is not None and inv.kind != kind:
        bad(
            f"{where}.kind",
            f"is {inv.kind!r}, but the location {inv.location!r} is on {kind} ({_TITLES[kind]} is delivered "
            f"there): set kind to {kind}, or leave it out",
        )
    if kind == S3 and inv.source_prefix is None:
        bad(
            f"{where}.source_prefix",
            "missing: an S3 Inventory's manifest does not say which prefix its configuration filters on; "
            'give the configuration\'s Filter Prefix ("" when it has none)',
        )
    if kind == AZURE and inv.name is None:
        bad(f"{where}.name", "missing: an Azure Blob Inventory is found by its rule's name")
