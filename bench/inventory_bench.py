"""``list_slices`` from an S3 Inventory beside ``list_slices`` by LIST, on the same namespace (issue 53).

    .venv/bin/python -m bench inventory [--objects N] [--slices S] [--garbage 0.1] [--keep]
    .venv/bin/python -m bench inventory --rows N [--keep]
    .venv/bin/python -m bench inventory --step-rows N [--keep]

``--objects`` (default 20,000; about 3 minutes, most of it uploads): on moto, a repository of the
lakeFS emulator (S3 blockstore, its clock two days back, so its slices are old) holds N objects in S
slices: the referenced ones uploaded through lakeFS and committed (about 200 a second: the build
is the limit on N), the ``--garbage`` share written straight into slices of their own (referenced
by nothing). Then, T_inv after every write, the bench writes two S3 Inventories of the bucket in
AWS's layout (``<prefix>/<bucket>/<config-ID>/YYYY-MM-DDTHH-MMZ/manifest.json`` +
``manifest.checksum``, data files under ``<config-ID>/data/``, at most 1,000,000 rows each): one in
CSV (gzip, no header, keys URL-encoded), one in Parquet, from a listing of the bucket, as S3 scans
it. Three GC runs on one SparkSession (every step in its task's own process when the namespace
has at most ``spark.in_process_max_keys`` objects, as a DAG run places them), after a warm-up run
on a tiny repository: by LIST (mark_only), from the CSV inventory (mark_only), from the Parquet
one (mark_and_sweep: the clean run). Prints ``list_slices`` of each side by side with moto's CPU
meanwhile (moto's LIST is far slower than S3's: the peer is LIST on this server), each run's
steps, and the targets (at 10,000,000 objects on 2 cores: ``list_slices`` from an inventory at
most 30 s, against 204.6 s by LIST in docs/benchmarks.md; the clean run at most 400 s) with
PASS/FAIL; below 10,000,000 objects they are not judged (fixed costs do not scale). Exit 1 if the
runs do not mark the same objects, or the clean run left garbage or lost a referenced object.

``--rows N``: no namespace. An inventory of N rows (90% under the namespace's ``data/``, in 1,000
old slices) written straight to a local folder, streamed (1,000,000-row data files), in CSV and in
Parquet, read at N/10 and N through ``Engine.read_inventory_into`` (in the task's own process when
small, else on Spark's executors, as ``list_slices`` places it), the listing written as the step
writes it. Prints rows/s and the peak RSS (sampled every 0.25 s) of this process, the driver's JVM
and the Python workers, so "linear in rows, bounded memory" can be read off.

``--step-rows N``: the real ``list_slices`` step, on moto, from S3 Inventories (CSV, Parquet) of N
rows of a real repository's bucket, most of them made up (they name objects that are not in the
bucket: the step never reads those): the step at 10,000,000 rows, which ``--objects`` cannot build
here (bench/inventory_step.py says how).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DAY = 86400
REPO, WARM = "bench-repo", "warm-up"
ROWS_PER_FILE = 1_000_000
BATCH = 100_000
MIB = 1 << 20
WARM_ROWS = 20_000  # the rows bench's warm-up read on Spark (Python workers, the first job)
AT, LIST_TARGET, RUN_TARGET, LIST_BEFORE = 10_000_000, 30.0, 400.0, 204.6
CSV_SCHEMA = "Bucket, Key, Size, LastModifiedDate, ETag, StorageClass"
PARQUET_SCHEMA = (
    "message s3.inventory { required binary bucket (UTF8); required binary key (UTF8); optional int64 size; "
    "optional int64 last_modified_date (TIMESTAMP_MILLIS); optional binary e_tag (UTF8); "
    "optional binary storage_class (UTF8); }"
)


def log(msg: str) -> None:
    print(f"[inventory-bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def rows_schema():
    import pyarrow as pa

    return pa.schema(
        [
            ("bucket", pa.string()),
            ("key", pa.string()),
            ("size", pa.int64()),
            ("last_modified_date", pa.timestamp("ms", tz="UTC")),
            ("e_tag", pa.string()),
            ("storage_class", pa.string()),
        ]
    )


def _csv_file(path: Path, batches: Iterable[Any]) -> None:
    """S3 Inventory's CSV: gzip, no header, every field quoted, keys URL-encoded, times as ISO text in ms."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    with gzip.open(path, "wb", compresslevel=1) as out:
        writer = None
        for b in batches:
            keys = b.column(1)
            if pc.any(pc.match_substring_regex(keys, r"[^A-Za-z0-9/._-]")).as_py():
                from urllib.parse import quote_plus

                keys = pa.array([quote_plus(k, safe="/") for k in keys.to_pylist()], pa.string())
            text = pc.strftime(b.column(3), format="%Y-%m-%dT%H:%M:%SZ")  # %S of ms: 12.345
            t = pa.table([b.column(0), keys, b.column(2).cast(pa.string()), text, b.column(4), b.column(5)], CSV_NAMES)
            if writer is None:
                opts = pacsv.WriteOptions(include_header=False, quoting_style="all_valid")
                writer = pacsv.CSVWriter(out, t.schema, write_options=opts)
            writer.write_table(t)
        if writer is not None:
            writer.close()


CSV_NAMES = [c.strip() for c in CSV_SCHEMA.split(",")]


def _parquet_file(path: Path, batches: Iterable[Any]) -> None:
    import pyarrow.parquet as pq

    with pq.ParquetWriter(path, rows_schema()) as w:
        for b in batches:
            w.write_batch(b)


def write_inventory(
    fmt: str,
    put: Callable[[str, Path], None],
    prefix: str,
    bucket: str,
    taken: datetime,
    rows: Iterator[Any],
    tmp: Path,
) -> tuple[int, int]:
    """
    An S3 Inventory of ``rows`` (batches of :func:`rows_schema`) under ``prefix`` in AWS's layout, streamed.

    Each data file is written to ``tmp`` then handed to ``put(key, path)``; the manifest and its
    checksum last, as S3 writes them. Returns (rows, data files).
    """
    entries, count, pending = [], 0, None
    ext = "csv.gz" if fmt == "CSV" else "parquet"

    def one_file() -> Iterator[Any]:
        nonlocal count, pending
        n = 0
        while n < ROWS_PER_FILE:
            b = pending if pending is not None else next(rows, None)
            pending = None
            if b is None:
                return
            if n + b.num_rows > ROWS_PER_FILE:
                b, pending = b.slice(0, ROWS_PER_FILE - n), b.slice(ROWS_PER_FILE - n)
            n += b.num_rows
            count += b.num_rows
            yield b

    while True:
        first = pending if pending is not None else next(rows, None)
        if first is None:
            break
        pending = first
        local = tmp / f"{uuid.uuid4()}.{ext}"
        (_csv_file if fmt == "CSV" else _parquet_file)(local, one_file())
        key = f"{prefix}/data/{local.name}"
        digest = hashlib.md5(usedforsecurity=False)
        with open(local, "rb") as f:
            for chunk in iter(lambda: f.read(8 << 20), b""):
                digest.update(chunk)
        entries.append({"key": key, "size": local.stat().st_size, "MD5checksum": digest.hexdigest()})
        put(key, local)
        local.unlink(missing_ok=True)
    manifest = {
        "sourceBucket": bucket,
        "destinationBucket": "arn:aws:s3:::inventories",
        "version": "2016-11-30",
        "creationTimestamp": str(int(taken.timestamp() * 1000)),
        "fileFormat": "CSV" if fmt == "CSV" else "Parquet",
        "fileSchema": CSV_SCHEMA if fmt == "CSV" else PARQUET_SCHEMA,
        "files": entries,
    }
    raw = json.dumps(manifest, indent=2).encode()
    run = f"{prefix}/{taken:%Y-%m-%dT%H-%MZ}"
    for key, data in (
        (f"{run}/manifest.json", raw),
        (f"{run}/manifest.checksum", hashlib.md5(raw).hexdigest().encode()),
    ):
        path = tmp / "manifest"
        path.write_bytes(data)
        put(key, path)
    return count, len(entries)


def listed_rows(storage, bucket: str) -> Iterator[Any]:
    """The bucket as S3 Inventory scans it: every object's key, size, last-modified time and ETag."""
    import pyarrow as pa

    for b in storage.list_batches(""):
        n = b.num_rows
        yield pa.RecordBatch.from_arrays(
            [
                pa.array([bucket] * n, pa.string()),
                b.column("address"),
                b.column("size"),
                b.column("last_modified_ms").cast(pa.timestamp("ms", tz="UTC")),
                b.column("checksum"),
                pa.array(["STANDARD"] * n, pa.string()),
            ],
            schema=rows_schema(),
        )


def synthetic_rows(n: int, prefix: str, slices: list[str], now_ms: int, bucket: str = "source-bucket") -> Iterator[Any]:
    """``n`` rows of ``bucket``, ``BATCH`` at a time: 9 in 10 under ``<prefix>data/<slice>/``, the rest another repository's."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = pa.array(slices, pa.string())
    for start in range(0, n, BATCH):
        i = np.arange(start, min(n, start + BATCH), dtype=np.int64)
        m = len(i)
        ours = pa.array(i % 10 != 9)
        head = pc.if_else(ours, pa.scalar(f"{prefix}data"), pa.scalar("other-repo/data"))
        name = pc.utf8_lpad(pa.array(i).cast(pa.string()), 20, "0")
        keys = pc.binary_join_element_wise(head, ids.take(pa.array(i % len(slices))), name, "/")
        yield pa.RecordBatch.from_arrays(
            [
                pa.array([bucket] * m, pa.string()),
                keys,
                pa.array(i % 4096 + 1),
                pa.array(now_ms - DAY * 1000 - i % (DAY * 1000)).cast(pa.timestamp("ms", tz="UTC")),
                pc.utf8_lpad(name, 32, "e"),
                pa.array(["STANDARD"] * m, pa.string()),
            ],
            schema=rows_schema(),
        )


def rows_bench(n: int, work: Path) -> int:
    """Inventories of N/10 and N rows, CSV and Parquet, each read by ``Engine.read_inventory_into`` where a run reads it."""
    from bench.incremental_bench import PeakRSS, tree_state
    from lakefs_gc.inventory import s3
    from lakefs_gc.listing.inventory import InventoryRead
    from lakefs_gc.placement import DEFAULT
    from lakefs_gc.spark.runtime import StorageRef
    from lakefs_sandbox.emulator.xid import new_descending_xid

    sref = StorageRef("local://inv", None, str(work))
    dest = sref.open()
    now = time.time()
    slices = [new_descending_xid(now - 2 * DAY - 60 * i) for i in range(1000)]
    spark: list[Any] = []  # started on first need
    lines = [
        f"Reading an S3 Inventory alone (no namespace): rows under bench-repo/data/ kept (9 in 10), local disk, "
        f"code at {tree_state()}",
        f"  {'format':<8}{'rows':>13}{'files':>7}{'MiB':>8}{'written s':>10}{'read s':>9}{'rows/s':>12}"
        f"{'kept':>13}   peak RSS MiB: this process / JVM / workers, where read",
    ]
    status = 0
    try:
        sizes = sorted({max(1, n // 10), n})
        warm = [(WARM_ROWS, "Parquet")] if n > DEFAULT.in_task_max_keys else []  # Spark's first job: not shown
        for size, fmt in warm + [(s, f) for s in sizes for f in ("CSV", "Parquet")]:
            prefix = f"reports/src/{fmt.lower()}-{size}"
            t = time.perf_counter()
            write_inventory(
                fmt,
                lambda key, path: _move(path, work / "inv" / key),
                prefix,
                "source-bucket",
                datetime.fromtimestamp(now, UTC),
                synthetic_rows(size, f"{REPO}/", slices, int(now * 1000)),
                work,
            )
            written = time.perf_counter() - t
            key = next(k for k in (o.key for o in dest.list(prefix, recursive=True)) if k.endswith("manifest.json"))
            m = s3.parse(dest.get(key), key, dest.full_uri(key))
            read = InventoryRead(sref, m, f"{REPO}/data/", cutoff_s=now, top_up_after_s=now)
            mib = sum(f.size or 0 for f in m.files) / MIB
            out = str(work / f"listed-{fmt}-{size}")
            t = time.perf_counter()
            with PeakRSS() as rss:
                got, where = _read(read, out, sref, spark, force=(size, fmt) in warm)
                count, rows = got[0], got[2]  # (objects, bytes, rows read[, deferred])
            secs = time.perf_counter() - t
            pk = rss.peak
            if (size, fmt) in warm:
                _remove(work / "inv" / prefix, work / f"listed-{fmt}-{size}")
                continue
            lines.append(
                f"  {fmt:<8}{rows:13,}{len(m.files):7}{mib:8.0f}{written:10.1f}{secs:9.1f}{rows / secs:12,.0f}"
                f"{count:13,}   {pk['python'] / MIB:6.0f} / {pk['jvm'] / MIB:5.0f} / {pk['workers'] / MIB:5.0f}   {where}"
            )
            log(lines[-1].strip())
            if rows != size or count != size - size // 10:
                lines.append(f"  WRONG: {rows:,} rows read of {size:,}, {count:,} kept")
                status = 1
            _remove(work / "inv" / prefix, work / f"listed-{fmt}-{size}")
    finally:
        if spark:
            spark[0].stop()
    print("\n".join(lines), flush=True)
    return status


def _read(read, out: str, sref, spark: list[Any], force: bool = False) -> tuple[tuple[int, ...], str]:
    """``list_slices``' placement: in this process when small enough, else on Spark's executors."""
    from bench.incremental_bench import warm_session
    from lakefs_gc.engine import NeedsSpark
    from lakefs_gc.engine.local import LocalEngine
    from lakefs_gc.engine.spark import SparkEngine
    from lakefs_gc.placement import DEFAULT

    try:
        if force:
            raise NeedsSpark("the warm-up")
        local = LocalEngine(sref, 2, DEFAULT, DEFAULT.in_task_max_keys)
        return local.read_inventory_into(out, read, [], read.cutoff_s), "in the task"
    except NeedsSpark:
        pass
    if not spark:
        spark.append(warm_session()[0])
    return SparkEngine(spark[0], sref, 2, DEFAULT).read_inventory_into(out, read, [], read.cutoff_s), "on executors"


def _move(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    src.replace(dst)


def _remove(*paths: Path) -> None:
    import shutil

    for p in paths:
        shutil.rmtree(p, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench inventory", description=__doc__.split("\n\n")[0])
    p.add_argument("--objects", type=int, default=20_000, help="objects in the namespace (default 20,000)")
    p.add_argument("--slices", type=int, default=20, help="data/ slices (objects spread evenly)")
    p.add_argument("--garbage", type=float, default=0.1, help="share of the objects nothing references")
    p.add_argument("--rows", type=int, help="read an inventory of this many rows alone (no namespace)")
    p.add_argument("--step-rows", type=int, help="run list_slices alone from inventories of this many rows, on moto")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory")
    a = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("AWS_REQUEST_CHECKSUM_CALCULATION", "when_required")
    os.environ.setdefault("AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required")
    work = Path(tempfile.mkdtemp(prefix="lakefs-gc-inventory-bench-", dir=os.environ.get("LAKEFS_GC_BENCH_DIR")))
    try:
        if a.rows is not None:
            return rows_bench(a.rows, work)
        if a.step_rows is not None:
            from bench import inventory_step

            return inventory_step.step_bench(a.step_rows, work)
        from bench import inventory_runs

        if a.slices < 2 or not 0 < a.garbage < 1 or a.objects < 2 * a.slices:
            sys.exit("need --slices >= 2, 0 < --garbage < 1, --objects >= 2 x --slices")
        return inventory_runs.objects_bench(a.objects, a.slices, a.garbage, work)
    finally:
        if a.keep:
            log(f"scratch kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
