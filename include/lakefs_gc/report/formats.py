"""
Every file of the report besides ``summary.json``, in both directions.

One writer and one reader per format (where they go: :mod:`lakefs_gc.report.layout`).

- address parts (``candidates/``, ``deleted/``): Parquet, one string column ``address``;
- staged addresses in lakeFS's uncommitted format (lakeFS's own mark, and the addresses it lacked
  that ``mark_uncommitted`` writes beside it): Parquet, ``physical_address`` (string) and
  ``creation_date`` (int64, Unix seconds);
- dead letters of a sweep part: Parquet, ``key``, ``error_code``, ``message`` (strings) and
  ``attempts`` (int32);
- a swept part's done marker: a JSON object of its counts;
- a sweep's quarantine record (``local://``): a JSON object, ``days``, ``since`` and ``until``
  (ISO 8601, UTC);
- a restore's outcomes: Parquet, ``key``, ``outcome`` and ``detail`` (strings), one row per key;
- the ids a run read (its ``state/read.parquet``): Parquet, ``kind`` (``commit`` | ``range``) and
  ``id`` (strings);
- identity parts (``state/identities/``): Parquet, ``size`` (int64), ``checksum`` and ``path``
  (strings), one row per committed entry read;
- the branch HEADs around lakeFS's uncommitted mark (``state/heads.json``): a JSON object,
  ``before`` and ``after``, each branch id -> commit id.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lakefs_gc.storage.base import Storage

ADDRESS = "address"
IDENTITY_COLUMNS = ("size", "checksum", "path")
IDENTITY_SCHEMA = "size long, checksum string, path string"  # the same, for Spark
PHYSICAL_ADDRESS = "physical_address"
STAGED_COLUMNS = (PHYSICAL_ADDRESS, "creation_date")  # lakeFS's uncommitted Parquet


def _put_table(storage: Storage, key: str, columns: Mapping[str, Any]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.table(dict(columns)), buf)
    storage.put(key, buf.getvalue())


def _parquet_file(storage: Storage, key: str) -> Any:
    """
    Return a Parquet file of this module's, read from its bytes with ``ParquetFile``.

    It reads synchronously, by the Parquet reader itself. Never ``pq.read_table`` on a Python file:
    that goes through Arrow's dataset scanner, whose threads may drop the last reference to the Python
    file after the interpreter has begun to exit; Arrow then aborts the process ("terminate called
    without an active exception"), which a CLI that printed its answer reported as exit code -6
    (``lakefs-gc explain``, now and then).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    return pq.ParquetFile(pa.BufferReader(storage.get(key)))


def _read(storage: Storage, key: str, columns: Iterable[str]) -> Any:
    return _parquet_file(storage, key).read(columns=list(columns))


def _column(storage: Storage, key: str, column: str) -> list[Any]:
    values: list[Any] = _read(storage, key, [column]).column(column).to_pylist()
    return values


def write_addresses(storage: Storage, key: str, addresses: Sequence[str] | Any) -> None:
    """Write an address part (column ``address``) of a list of strings or an Arrow string array."""
    import pyarrow as pa

    arrow = isinstance(addresses, (pa.Array, pa.ChunkedArray))
    _put_table(storage, key, {ADDRESS: addresses if arrow else pa.array(addresses, pa.string())})


def read_addresses(storage: Storage, key: str) -> list[str | None]:
    """Return the ``address`` column of an address part, as written (nulls included)."""
    addresses: list[str | None] = read_address_table(storage, key).column(ADDRESS).to_pylist()
    return addresses


def part_lists(storage: Storage, key: str, value: str, column: str = ADDRESS) -> bool:
    """
    Whether a Parquet part of this module's holds ``value`` in ``column``: lakefs-gc explain's question.

    The part: addresses, staged addresses or dead letters; its row groups pruned by their statistics.
    """
    import pyarrow.compute as pc

    f = _parquet_file(storage, key)
    leaf = f.schema_arrow.get_field_index(column)
    for group in range(f.num_row_groups):
        stats = f.metadata.row_group(group).column(leaf).statistics if leaf >= 0 else None
        if (
            stats is not None
            and stats.has_min_max
            and isinstance(stats.min, type(value))
            and not stats.min <= value <= stats.max
        ):
            continue  # this row group cannot hold it
        if pc.any(pc.equal(f.read_row_group(group, columns=[column]).column(0), value)).as_py():
            return True
    return False


def read_address_table(storage: Storage, key: str) -> Any:
    """Return an address part as an Arrow table of its ``address`` column (for Spark's Arrow path)."""
    return _read(storage, key, [ADDRESS])


def count_rows(storage: Storage, key: str) -> int:
    """Count the rows of a Parquet file, from its footer."""
    rows: int = _parquet_file(storage, key).metadata.num_rows
    return rows


def write_staged(storage: Storage, key: str, addresses: list[str], creation_date: int) -> None:
    """
    Write staged addresses in lakeFS's uncommitted Parquet format.

    ``physical_address`` relative, ``creation_date`` Unix seconds, so :func:`read_staged` reads them
    like lakeFS's own.
    """
    import pyarrow as pa

    address, created = STAGED_COLUMNS
    _put_table(
        storage,
        key,
        {address: pa.array(addresses, pa.string()), created: pa.array([creation_date] * len(addresses), pa.int64())},
    )


def read_staged(storage: Storage, key: str) -> list[str | None]:
    """Return the ``physical_address`` column of an uncommitted Parquet file (lakeFS's or ours)."""
    return _column(storage, key, PHYSICAL_ADDRESS)


def write_dead_letters(storage: Storage, key: str, dead: Iterable[Any]) -> None:
    """Dead letters (objects with ``key``, ``error_code``, ``message``, ``attempts``)."""
    import pyarrow as pa

    d = list(dead)
    _put_table(
        storage,
        key,
        {
            "key": pa.array([x.key for x in d], pa.string()),
            "error_code": pa.array([x.error_code for x in d], pa.string()),
            "message": pa.array([x.message for x in d], pa.string()),
            "attempts": pa.array([x.attempts for x in d], pa.int32()),
        },
    )


def read_dead_letter_keys(storage: Storage, key: str) -> list[str]:
    """Return the ``key`` column of a dead-letter part."""
    return _column(storage, key, "key")


def write_done_marker(storage: Storage, key: str, counts: Mapping[str, int]) -> None:
    storage.put(key, json.dumps(dict(counts)).encode())


def read_done_marker(storage: Storage, key: str) -> dict[str, Any] | None:
    """
    Return a swept part's recorded counts, None when the part has no marker.

    A marker of version 0.1 counted the keys already gone in ``deleted`` and in ``missing``: read as
    ``already_gone``.
    """
    if not storage.exists(key):
        return None
    recorded: dict[str, Any] = json.loads(storage.get(key))
    if "missing" in recorded and "already_gone" not in recorded:
        recorded["already_gone"] = recorded["missing"]
        recorded["deleted"] = int(recorded.get("deleted", 0)) - int(recorded["missing"])
    return recorded


def write_read_ids(storage: Storage, key: str, commits: Iterable[str], ranges: Iterable[str]) -> None:
    """Write the commit and range ids a run (and its chain since the last clean run) read."""
    import pyarrow as pa

    c, r = sorted(set(commits)), sorted(set(ranges))
    _put_table(
        storage,
        key,
        {"kind": pa.array(["commit"] * len(c) + ["range"] * len(r), pa.string()), "id": pa.array(c + r, pa.string())},
    )


def read_read_ids(storage: Storage, key: str) -> tuple[set[str], set[str]]:
    """(commit ids, range ids) of :func:`write_read_ids`."""
    t = _read(storage, key, ["kind", "id"])
    commits: set[str] = set()
    ranges: set[str] = set()
    for kind, id_ in zip(t.column("kind").to_pylist(), t.column("id").to_pylist()):
        if kind == "commit":
            commits.add(id_)
        elif kind == "range":
            ranges.add(id_)
        else:
            raise ValueError(f"{storage.full_uri(key)}: unknown kind {kind!r}")
    return commits, ranges


def write_identities(storage: Storage, key: str, rows: list[tuple[int, str, str]]) -> None:
    """Write an identity part: (size, checksum, path) of committed entries."""
    import pyarrow as pa

    sizes, checksums, paths = zip(*rows) if rows else ((), (), ())
    _put_table(
        storage,
        key,
        {
            "size": pa.array(sizes, pa.int64()),
            "checksum": pa.array(checksums, pa.string()),
            "path": pa.array(paths, pa.string()),
        },
    )


def read_identity_table(storage: Storage, key: str) -> Any:
    """Return an identity part as an Arrow table (for Spark's Arrow path)."""
    return _read(storage, key, IDENTITY_COLUMNS)


def write_heads(storage: Storage, key: str, before: Mapping[str, str], after: Mapping[str, str]) -> None:
    storage.put(key, json.dumps({"before": dict(before), "after": dict(after)}, sort_keys=True).encode())


def read_heads(storage: Storage, key: str) -> tuple[dict[str, str], dict[str, str]]:
    """(before, after) as written; a file that is not that shape is an error, never an empty map."""
    from lakefs_gc.errors import LakeFSGCError

    try:
        doc = json.loads(storage.get(key))
        before, after = doc["before"], doc["after"]
        if not (isinstance(before, dict) and isinstance(after, dict)):
            raise TypeError("not objects")
        return {str(k): str(v) for k, v in before.items()}, {str(k): str(v) for k, v in after.items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise LakeFSGCError(
            f"{storage.full_uri(key)}: not the branch HEADs mark_uncommitted wrote ({exc}); re-run the whole DAG run"
        ) from None


def write_branch_reads(storage: Storage, key: str, by_branch: Mapping[str, Iterable[str]]) -> None:
    """Write {branch: addresses it reads} (lakefs_gc.report.layout.state_branch_reads_file)."""
    storage.put(key, json.dumps({b: sorted(a) for b, a in sorted(by_branch.items())}).encode())


def read_branch_reads(storage: Storage, key: str) -> dict[str, set[str]]:
    """Read :func:`write_branch_reads`'s file; a file not of that shape is an error naming it."""
    from lakefs_gc.errors import LakeFSGCError

    try:
        doc = json.loads(storage.get(key))
        if not isinstance(doc, dict) or not all(isinstance(v, list) for v in doc.values()):
            raise ValueError("not an object of lists")
        return {str(b): {str(a) for a in v} for b, v in doc.items()}
    except ValueError as exc:
        raise LakeFSGCError(f"{storage.full_uri(key)}: not the branch reads a GC step writes ({exc})") from None


def write_space(storage: Storage, key: str, doc: Mapping[str, Any]) -> None:
    """Write a run's ``space.json`` (attribute_space): where the namespace's bytes go, as of the run."""
    storage.put(key, json.dumps({"version": 1, **doc}, sort_keys=True, indent=1).encode())


def read_space(storage: Storage, key: str) -> dict[str, Any]:
    """``space.json`` as written; a file that is not that shape is an error naming it."""
    from lakefs_gc.errors import LakeFSGCError

    try:
        doc = json.loads(storage.get(key))
        if not isinstance(doc, dict) or doc.get("version") != 1 or not isinstance(doc.get("attribution"), dict):
            raise ValueError("not version 1 with an attribution")
        return doc
    except ValueError as exc:
        raise LakeFSGCError(f"{storage.full_uri(key)}: not the space.json attribute_space writes ({exc})") from None


def write_quarantine(storage: Storage, key: str, days: int, since: str, until: str) -> None:
    storage.put(key, json.dumps({"days": days, "since": since, "until": until}).encode())


def read_quarantine(storage: Storage, key: str) -> dict[str, Any] | None:
    """
    Return a sweep's quarantine record, None when the sweep quarantined nothing.

    None too when it is unreadable: then nothing is purged.
    """
    if not storage.exists(key):
        return None
    try:
        doc = json.loads(storage.get(key))
    except ValueError:
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("until"), str) else None


RESTORE_COLUMNS = ("key", "outcome", "detail")


def write_restore_outcomes(storage: Storage, key: str, rows: Iterable[tuple[str, str, str]]) -> None:
    import pyarrow as pa

    cols = list(zip(*rows)) or [(), (), ()]
    _put_table(storage, key, {name: pa.array(list(c), pa.string()) for name, c in zip(RESTORE_COLUMNS, cols)})


def read_restore_outcomes(storage: Storage, key: str) -> list[tuple[str, str, str]]:
    t = _read(storage, key, RESTORE_COLUMNS)
    return list(zip(*(t.column(c).to_pylist() for c in RESTORE_COLUMNS)))
