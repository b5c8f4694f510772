"""The staged addresses lakeFS wrote for this run (``prepare_uncommited``, reference 1.3)."""

from __future__ import annotations

import io
from collections.abc import Iterator

from lakefs_gc.errors import LakeFSGCError
from lakefs_gc.gc.committed import relative_key
from lakefs_gc.lakefs.graveler import BY_PREFIX_DEPRECATED, normalize_address
from lakefs_gc.report.layout import uncommitted_dir


def uncommitted_files(storage, roots: tuple[str, ...], run_id: str, locations: tuple[str, ...]) -> list[str]:
    """Every file of the uncommitted mark: the run's folder listed, plus every location lakeFS
    returned (hazard H2: never only the last page's location). Locations without files while
    lakeFS said it wrote some is an error: the staged addresses would be missing."""
    prefixes = {uncommitted_dir(run_id)}
    for loc in locations:
        key = relative_key(roots, loc)
        prefixes.add(key if key.endswith("/") else key + "/")
    keys: set[str] = set()
    for p in sorted(prefixes):
        keys.update(o.key for o in storage.list(p, recursive=True))
    if locations and not keys:
        raise LakeFSGCError(f"lakeFS reported uncommitted data at {list(locations)} but no file is there; "
                            f"refusing to run without the staged addresses")
    return sorted(keys)


def file_addresses(storage, key: str, roots: tuple[str, ...]) -> Iterator[str]:
    """Namespace-relative staged addresses of one Parquet file (column ``physical_address``)."""
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(storage.get(key)), columns=["physical_address"])
    for address in table.column("physical_address").to_pylist():
        if address is None:
            raise LakeFSGCError(f"{storage.full_uri(key)}: null physical_address in uncommitted parquet")
        rel = normalize_address(address, BY_PREFIX_DEPRECATED, roots)
        if rel is not None:
            yield rel
