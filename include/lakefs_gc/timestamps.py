"""
The one timestamp format of the run's records.

The contract's times, the report's summaries, the incremental state: UTC, microseconds, ``Z``
(``2025-11-10T10:34:37.245361Z``). Below every room that reads or writes those records (gc, report,
steps, sweeping).
"""

from __future__ import annotations

from datetime import UTC, datetime

FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def iso(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime(FORMAT)


def parse_iso(s: str) -> datetime:
    return datetime.strptime(s, FORMAT).replace(tzinfo=UTC)
