"""
A run's cost (issue 54): its storage requests priced, and what the bytes it freed save a month.

The requests are those every step counted (``requests`` of each result:
:mod:`lakefs_gc.storage.requests`), summed by store and kind; the prices are the run's
(``RunContext.prices``: the config's table, else the public list prices of
:mod:`lakefs_gc.contract.cost`). The saving is the bytes the sweep freed now (the delete step's
``freed_now_bytes`` where it says; else the run's reclaimed bytes) times the namespace's store's
price per GB-month.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from lakefs_gc.contract.cost import GB, REQUEST_KINDS, RequestCount
from lakefs_gc.storage.namespace import scheme_of

if TYPE_CHECKING:
    from lakefs_gc.contract import Prices, StepInputs
    from lakefs_gc.report.run_summary import RunSummary

__all__ = ["cost_text", "request_cost", "sum_requests", "usd", "with_cost"]


def sum_requests(counts: Iterable[RequestCount]) -> tuple[RequestCount, ...]:
    """Return ``counts`` summed by (store, kind), by store then kind in :data:`REQUEST_KINDS`' order."""
    total: Counter[tuple[str, str]] = Counter()
    for c in counts:
        total[(c.store, c.kind)] += c.count
    order = {k: i for i, k in enumerate(REQUEST_KINDS)}
    keys = sorted(total, key=lambda k: (k[0], order.get(k[1], len(order)), k[1]))
    return tuple(RequestCount(store, kind, total[(store, kind)]) for store, kind in keys if total[(store, kind)])


def request_cost(counts: Iterable[RequestCount], prices: Prices) -> float:
    """Return the sum of each count times its store's price of one request of its kind (US dollars)."""
    return sum(c.count * prices.of(c.store).per_request(c.kind) for c in counts)


def with_cost(inputs: StepInputs, summary: RunSummary) -> RunSummary:
    """
    Return ``summary`` with the run's requests, their cost and the monthly saving of the bytes freed now.

    Nothing when no step counted a request (a summary of a mark in progress, or of a run of an
    earlier version).
    """
    counts = sum_requests(c for r in inputs.results.values() for c in getattr(r, "requests", None) or ())
    if not counts:
        return summary
    ctx = inputs.context
    prices = ctx.prices
    dele: Any = inputs.results.get("delete")
    freed_now = getattr(dele, "freed_now_bytes", None)
    saving_bytes = int(freed_now if freed_now is not None else (summary.reclaimed_bytes or 0))
    store = scheme_of(ctx.storage.namespace) or "local"
    return dataclasses.replace(
        summary,
        requests=counts,
        request_cost_usd=request_cost(counts, prices),
        saving_bytes=saving_bytes,
        monthly_saving_usd=saving_bytes / GB * prices.of(store).storage_gb_month,
        prices_as_of=prices.as_of,
    )


def usd(value: float) -> str:
    """Return an amount of US dollars as a person reads it: to the cent from a dollar, else its first two figures."""
    if value == 0:
        return "$0"
    if value >= 1:
        return f"${value:,.2f}"
    return f"${float(f'{value:.2g}'):.8f}".rstrip("0") if value >= 1e-6 else "less than $0.000001"


def cost_text(summary: RunSummary) -> str | None:
    """
    Return the report's ``cost`` row, e.g. ``1,204 storage requests (LIST 12, GET 3, ...): $0.01 at ...; ...``.

    None when the summary has no requests counted.
    """
    from lakefs_gc.report.render import human_bytes  # render shows this line: imported when it does
    from lakefs_gc.words import plural

    if not summary.requests:
        return None
    by_kind: Counter[str] = Counter()
    for c in summary.requests:
        by_kind[c.kind] += c.count
    kinds = ", ".join(f"{k} {by_kind[k]:,}" for k in REQUEST_KINDS if by_kind[k])
    total = sum(by_kind.values())
    as_of = summary.prices_as_of
    prices = "the config's prices" if as_of == "config" else f"list prices of {as_of or '?'}"
    line = f"{plural(total, 'storage request')} ({kinds}): {usd(summary.request_cost_usd or 0)} at {prices}"
    if summary.saving_bytes:
        line += (
            f"; the {human_bytes(summary.saving_bytes)} freed now save {usd(summary.monthly_saving_usd or 0)} a month"
        )
    return line
