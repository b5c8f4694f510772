"""
``python -m bench inventory --step-rows N``: the real ``list_slices`` step from S3 Inventories of N rows, on moto.

What ``--objects`` cannot reach at 10,000,000 objects (docs/benchmarks.md says why: its namespace
is uploaded through lakeFS, about 235 objects a second, and moto's LIST slows as its bucket grows).
On moto, a real repository of the lakeFS emulator (S3 blockstore, its clock two days back): 400
objects in 4 slices, 300 uploaded and committed, 100 written straight into a slice of their own,
built as ``--objects`` builds it, and a warm-up GC run. Then, T_inv after every write, two S3
Inventories of the bucket in AWS's layout (``manifest.json`` with ``fileSchema`` and each data
file's MD5, ``manifest.checksum``, data files of 1,000,000 rows), one in CSV and one in Parquet,
each of N rows: the bucket's real objects as S3 scans them, and made-up rows to make up N, 9 in 10
under the namespace's ``data/<one of its real slices>/`` (object names of 20 characters, an xid's length), the
rest another repository's, all older than the cutoff. The made-up rows name objects that are not in
the bucket: ``list_slices`` reads the inventory and never the objects, so it cannot tell.

For each format, after a warm-up of the same on a small inventory (Spark's first jobs of the
format), ``prepare_run`` and then ``list_slices`` alone (it reads no earlier step's
result), from the inventory, placed as a run places it (on a local[2] SparkSession above
``spark.in_process_max_keys`` rows, else in this process): the manifest's verification, the
root's LIST, the top-up's, the read, the listing written. Prints the step's wall seconds, rows
read, objects kept, moto's CPU and the peak RSS, beside the 30 s target (judged at 10,000,000 rows
or more) and the figures of docs/benchmarks.md. Exit 1 unless every row was read, exactly the
namespace's rows were kept (the real objects among them) and no slice was topped up.
"""

from __future__ import annotations

import itertools
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.inventory_bench import (
    AT,
    LIST_BEFORE,
    LIST_TARGET,
    MIB,
    REPO,
    WARM_ROWS,
    listed_rows,
    log,
    synthetic_rows,
    write_inventory,
)
from bench.inventory_runs import BUCKET, DEST, Place, Run, build, warm_up

OBJECTS, SLICES, GARBAGE = 400, 4, 0.25  # the real repository
READ_ALONE = {"CSV": 12.9, "Parquet": 10.6}  # s, a 10,000,000-row inventory read alone (docs/benchmarks.md)
FORMATS = ("CSV", "Parquet")


def step_bench(n: int, work: Path) -> int:
    from bench.incremental_bench import tree_state, warm_session
    from lakefs_gc.config import SparkSettings
    from lakefs_gc.words import plural

    place = Place(work, OBJECTS // SLICES)
    spark, where = None, "in this process (no Spark)"
    try:
        live, dead, _ = build(place, OBJECTS, SLICES, GARBAGE)
        if n > SparkSettings.in_process_max_keys:
            spark, started = warm_session()
            where = f"on a local[2] SparkSession (up in {started:.1f}s)"
        warm = warm_up(place, spark)
        time.sleep(1.1)
        taken = datetime.now(UTC)  # T_inv: after every write
        real = list(listed_rows(place.bucket, BUCKET))
        n_real = sum(b.num_rows for b in real)
        ours = [k for b in real for k in b.column(1).to_pylist() if k.startswith(f"{REPO}/data/")]
        if n < 2 * n_real:
            raise SystemExit(f"--step-rows must be at least {2 * n_real:,}: the bucket holds {n_real:,} real objects")
        slices = sorted({k.split("/")[1] for k in live + dead})
        t = time.perf_counter()
        for fmt in FORMATS:  # list_slices' first jobs from each format (Python workers' imports): in no figure
            inventory(place, fmt, min(n, WARM_ROWS), taken, real, slices, "warm")
            one_run(place, spark, fmt, "warm")
        warm += time.perf_counter() - t
        invs = {fmt: inventory(place, fmt, n, taken, real, slices, "step") for fmt in FORMATS}
        runs = [one_run(place, spark, fmt, "step") for fmt in FORMATS]
        made_up = n - n_real
        kept = len(ours) + made_up - made_up // 10
        found = [real_listed(r, ours) for r in runs]
    finally:
        if spark is not None:
            spark.stop()
        place.stop()
    head = [
        f"list_slices from an S3 Inventory of {n:,} rows on moto, {where}, code at {tree_state()}",
        f"  warm-ups ({warm:.1f}s, in no figure below): a GC run, list_slices from a small inventory of each format",
        f"  the namespace: a real repository of {len(live) + len(dead):,} objects in {len(slices)} slices "
        f"(s3://{BUCKET}/{REPO}); the bucket holds {n_real:,} real objects",
        f"  each inventory: those {n_real:,} rows and {made_up:,} made up, 9 in 10 under {REPO}/data/<one of the "
        f"{len(slices)} real slices>/, older than the cutoff. The made-up rows name objects that are NOT in the "
        "bucket: list_slices reads the inventory, never the objects it names",
    ]
    for fmt, (rows, files, mib, secs) in invs.items():
        head.append(
            f"  S3 Inventory, {fmt}: {plural(rows, 'row')} in {plural(files, 'data file')}, {mib:.0f} MiB, "
            f"written in {secs:.1f}s"
        )
    print(report(n, kept, head, runs), flush=True)
    ok = all(
        r.get("list_slices", "inventory_rows") == n
        and r.get("list_slices", "listed_objects") == kept
        and r.get("list_slices", "slices_topped_up") == 0
        and got == len(ours)
        for r, got in zip(runs, found)
    )
    print(
        f"  check: {'every' if ok else 'NOT every'} run read all {n:,} rows and kept exactly the namespace's "
        f"{kept:,} (its {len(ours):,} real objects among them: {', '.join(f'{g:,}' for g in found)} found in the "
        "listings), no slice topped up",
        flush=True,
    )
    return 0 if ok else 1


def location(fmt: str, tag: str) -> str:
    return f"reports/{BUCKET}/{tag}-{fmt.lower()}"


def one_run(place: Place, spark, fmt: str, tag: str) -> Run:
    """``prepare_run``, then ``list_slices`` alone from the inventory ``tag`` in ``fmt``."""
    return place.gc_run(
        f"{tag} {fmt}",
        spark,
        only="list_slices",
        mode="mark_only",
        listing_source="inventory",
        inventory_location=f"s3://{DEST}/{location(fmt, tag)}",
        inventory_source_prefix="",
    )


def inventory(place: Place, fmt: str, n: int, taken: datetime, real: list[Any], slices: list[str], tag: str):
    """One S3 Inventory of ``n`` rows, the bucket's ``real`` ones first; (rows, data files, MiB, seconds)."""
    from lakefs_gc.words import plural

    tmp = place.work / "inv-tmp"
    tmp.mkdir(exist_ok=True)
    n_real = sum(b.num_rows for b in real)
    rows = itertools.chain(real, synthetic_rows(n - n_real, f"{REPO}/", slices, int(taken.timestamp() * 1000), BUCKET))
    t = time.perf_counter()
    count, files = write_inventory(
        fmt, lambda key, path: place.dest.put(key, path.read_bytes()), location(fmt, tag), BUCKET, taken, rows, tmp
    )
    secs = time.perf_counter() - t
    mib = sum(o.size for o in place.dest.list(f"{location(fmt, tag)}/data/", recursive=True)) / MIB
    log(f"{fmt} inventory: {plural(count, 'row')}, {plural(files, 'data file')}, {mib:.0f} MiB, {secs:.1f}s")
    return count, files, mib, secs


def real_listed(run: Run, ours: list[str]) -> int:
    """How many of the namespace's real objects the step's listing holds."""
    import pyarrow.dataset as ds

    listed = run.results["list_slices"].listed_dir
    want = [k.removeprefix(f"{REPO}/") for k in ours]
    table = ds.dataset(listed, format="parquet").to_table(columns=["address"], filter=ds.field("address").isin(want))
    return len(set(table.column("address").to_pylist()))


def report(n: int, kept: int, head: list[str], runs: list[Run]) -> str:
    lines = head + [
        "",
        f"  {'format':<9}{'list_slices s':>14}{'rows read':>13}{'kept':>13}{'deferred':>10}{'topped up':>11}"
        f"{'moto CPU s':>12}   peak RSS MiB: this process / JVM / workers",
    ]
    for fmt, r in zip(FORMATS, runs):
        pk = r.peak
        lines.append(
            f"  {fmt:<9}{r.walls['list_slices']:14.2f}{r.get('list_slices', 'inventory_rows'):13,}"
            f"{r.get('list_slices', 'listed_objects'):13,}{r.get('list_slices', 'inventory_deferred'):10,}"
            f"{r.get('list_slices', 'slices_topped_up'):11,}{r.server_cpu.get('list_slices', 0.0):12.2f}"
            f"   {pk['python'] / MIB:6.0f} / {pk['jvm'] / MIB:5.0f} / {pk['workers'] / MIB:5.0f}"
        )
    lines += ["", f"  target at {AT:,} rows on 2 cores               figure      target   verdict"]
    for fmt, r in zip(FORMATS, runs):
        secs = r.walls["list_slices"]
        lines.append(
            f"  list_slices from the {fmt + ' inventory':<18}   {secs:8.2f} s   <= {LIST_TARGET:.0f} s   "
            + verdict(secs, n)
        )
    lines += [
        f"  beside (docs/benchmarks.md): list_slices by LIST at {AT:,} objects on local disk {LIST_BEFORE} s; "
        f"a {AT:,}-row inventory read alone (--rows) {READ_ALONE['CSV']} s (CSV), {READ_ALONE['Parquet']} s (Parquet)",
        f"  (kept: the {kept:,} rows under the namespace's data/; the issue's target is for a namespace of {AT:,} "
        "objects)",
    ]
    return "\n".join(lines)


def verdict(figure: float, n: int) -> str:
    """PASS/FAIL at 10,000,000 rows or more; below, not judged (fixed costs do not scale with rows)."""
    if n >= AT:
        return "PASS" if figure <= LIST_TARGET else f"FAIL (by {figure - LIST_TARGET:.1f} s)"
    return f"n/a below {AT:,} rows"
