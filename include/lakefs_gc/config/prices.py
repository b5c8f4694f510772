"""
The ``prices`` of an entry (and of ``defaults``): the price table a run's cost is figured with (issue 54).

Part of :mod:`lakefs_gc.config` (import from there). Per store kind (``s3``, ``azure``, ``gs``,
``local``), any of ``list``, ``head``, ``get``, ``put``, ``delete``, ``inventory`` (US dollars per
1,000 requests) and ``storage_gb_month`` (US dollars per GB-month); what a file leaves out keeps
the public list price (:mod:`lakefs_gc.contract.cost`). An entry's prices are merged over those of
``defaults``, store by store and price by price.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from lakefs_gc.config.sections import _Bad, _unknown
from lakefs_gc.contract.cost import STORES, Prices, StorePrices

__all__ = ["merge_prices", "parse_prices"]

_FIELDS = tuple(f.name for f in dataclasses.fields(StorePrices))


def merge_prices(*given: Any) -> Any:
    """Return the ``prices`` of ``defaults`` and of an entry merged (a later one wins, price by price); a non-mapping as it is."""
    out: dict[Any, Any] = {}
    for raw in given:
        if raw is None:
            continue
        if not isinstance(raw, Mapping):
            return raw
        for store, table in raw.items():
            if isinstance(table, Mapping) and isinstance(out.get(store), dict):
                out[store] = {**out[store], **table}
            else:
                out[store] = dict(table) if isinstance(table, Mapping) else table
    return out


def parse_prices(raw: Any, bad: _Bad) -> Prices:
    """
    Read ``prices``: the table, each bad entry recorded naming its field (``prices.s3.get``).

    A price must be a number >= 0; an unknown store or price is refused with the names it may be.
    """
    if raw is None or raw == {}:
        return Prices()
    if not isinstance(raw, Mapping):
        bad("prices", f"must be a mapping of store kinds ({', '.join(STORES)}) to prices, got {raw!r}")
        return Prices()
    defaults = Prices()
    tables: dict[str, StorePrices] = {}
    for store in sorted(raw, key=str):
        table = raw[store]
        if store not in STORES:
            bad("prices", _unknown("store kind", store, STORES), f"prices.{store}")
            continue
        if not isinstance(table, Mapping):
            bad(f"prices.{store}", f"must be a mapping of {', '.join(_FIELDS)} to prices, got {table!r}")
            continue
        values: dict[str, float] = {}
        for name in sorted(table, key=str):
            v = table[name]
            if name not in _FIELDS:
                bad(f"prices.{store}", _unknown("price", name, _FIELDS), f"prices.{store}.{name}")
            elif isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or v != v or v == float("inf"):
                unit = "per GB-month" if name == "storage_gb_month" else "per 1,000 requests"
                bad(f"prices.{store}.{name}", f"must be a number >= 0 (US dollars {unit}), got {v!r}")
            else:
                values[name] = float(v)
        tables[store] = dataclasses.replace(defaults.of(store), **values)
    return dataclasses.replace(defaults, **tables, as_of="config") if tables else defaults
