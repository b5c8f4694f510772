"""The two halves of ``python -m bench inventory`` (bench/inventory_bench.py says what each measures)."""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.gc_bench import ACCESS, SECRET
from bench.incremental_bench import PeakRSS, flow_available, tree_state, warm_session
from bench.inventory_bench import AT, DAY, LIST_BEFORE, LIST_TARGET, REPO, RUN_TARGET, WARM, log
from bench.reference import cpu_seconds

BUCKET, DEST = "lakefs-data", "inventories"
MIB = 1 << 20


@dataclass
class Run:
    name: str
    walls: dict[str, float] = field(default_factory=dict)
    server_cpu: dict[str, float] = field(default_factory=dict)  # moto's CPU seconds during each step
    results: dict[str, Any] = field(default_factory=dict)
    peak: dict[str, int] = field(default_factory=dict)

    def get(self, step: str, attr: str) -> Any:
        return getattr(self.results.get(step), attr, None)


@contextmanager
def timed(run: Run, server_pid: int):
    """Each step's wall time, and moto's CPU meanwhile (the step tables wrapped for the duration)."""
    from lakefs_gc.steps import STEP_FUNCTIONS
    from lakefs_sandbox import inprocess

    tables = (STEP_FUNCTIONS, inprocess.SPARK_STEPS)
    saved = [dict(t) for t in tables]

    def wrap(step: str, fn: Callable) -> Callable:
        def inner(*args, **kwargs):
            t, c = time.perf_counter(), cpu_seconds(server_pid)
            try:
                return fn(*args, **kwargs)
            finally:
                run.walls[step] = time.perf_counter() - t
                run.server_cpu[step] = cpu_seconds(server_pid) - c

        return inner

    for t in tables:
        for step, fn in list(t.items()):
            t[step] = wrap(step, fn)
    try:
        yield
    finally:
        for t, s in zip(tables, saved):
            t.clear()
            t.update(s)


class Place:
    """Moto, the emulator on it, and GC runs of its repositories."""

    def __init__(self, work: Path, per_slice: int):
        from lakefs_gc.storage import S3Options, make_s3_client, open_storage
        from lakefs_sandbox import seed
        from lakefs_sandbox.emulator import launcher

        self.work = work
        port = launcher.free_port()
        self.moto = launcher.start_server(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            work / "moto.log",
            f"http://127.0.0.1:{port}/moto-api/",
        )
        self.opts = S3Options(endpoint_url=f"http://127.0.0.1:{port}", access_key_id="bench", secret_access_key="bench")
        for b in (BUCKET, DEST):
            make_s3_client(self.opts).create_bucket(Bucket=b)
        self.bucket = open_storage(f"s3://{BUCKET}", self.opts)
        self.dest = open_storage(f"s3://{DEST}", self.opts)
        s3 = ["--s3-endpoint", self.opts.endpoint_url or "", "--s3-access-key", "bench", "--s3-secret-key", "bench"]
        self.emu = launcher.start(
            work / "emulator.log",
            *("--grace-period", "0", "--local-path", str(work / "emu"), "--slice-size", str(per_slice)),
            *("--clock-offset", str(-2 * DAY), *s3, "--s3-region", self.opts.region),
            access_key=ACCESS,
            secret_key=SECRET,
        )
        self.client = seed.sdk_client(self.emu.url, ACCESS, SECRET)

    def repository(self, name: str) -> None:
        import lakefs_sdk

        ns = f"s3://{BUCKET}/{name}"
        self.client.repositories_api.create_repository(
            lakefs_sdk.RepositoryCreation(name=name, storage_namespace=ns, default_branch="main")
        )
        self.client.repositories_api.set_gc_rules(
            name, lakefs_sdk.GarbageCollectionRules(default_retention_days=30, branches=[])
        )

    def upload(self, repo: str, paths: list[str], threads: int = 8) -> list[str]:
        """Upload ``paths`` (each its own bytes) to ``main``; their keys in the namespace."""
        root = f"s3://{BUCKET}/{repo}/"

        def one(path: str) -> str:
            st = self.client.objects_api.upload_object(repo, "main", path, content=path.encode())
            return st.physical_address.removeprefix(root)

        with ThreadPoolExecutor(threads) as pool:
            return list(pool.map(one, paths))

    def commit(self, repo: str) -> None:
        import lakefs_sdk

        self.client.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message="bench"))

    def gc_run(self, name: str, spark, repo: str = REPO, only: str | None = None, **settings: Any) -> Run:
        """A GC run of ``repo``: every step after ``prepare_run``, or ``only`` that step (:func:`one_step`)."""
        from lakefs_gc.contract import RunSettings
        from lakefs_gc.lakefs.client import LakeFSClient
        from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY
        from lakefs_gc.steps.prepare_run import prepare_run
        from lakefs_sandbox.inprocess import run_steps

        kw: dict[str, Any] = dict(
            min_age_seconds=0,
            unsafe_min_age_override=True,
            confirm_after_seconds=0,
            max_delete_share=1.0,
            delete_rate=0,
        )
        if flow_available():
            kw["flow"] = "clean"
        run = Run(name)
        time.sleep(1.1)  # every write strictly older than the cutoff
        env = {ENV_LAKEFS_ACCESS_KEY: ACCESS, ENV_LAKEFS_SECRET_KEY: SECRET, **self.opts.to_env()}
        with LakeFSClient(self.emu.url, ACCESS, SECRET) as client:
            t = time.perf_counter()
            ctx = prepare_run(
                client,
                repo,
                RunSettings(**kw, **settings),
                now=datetime.now(UTC),
                airflow_run_id=f"bench-{name}",
                work_dir=str(self.work / "gcwork"),
                storage_options=self.opts,
                parallelism=2,
            )
            run.walls["prepare_run"] = time.perf_counter() - t
            with timed(run, self.moto.pid), PeakRSS() as rss:
                run.results = run_steps(spark, ctx, client, env) if only is None else one_step(spark, only, ctx, env)
        run.peak = rss.peak
        log(f"run {name}: {sum(run.walls.values()):.1f}s")
        return run

    def marked(self, run: Run) -> set[str]:
        import io

        import pyarrow.parquet as pq

        from lakefs_gc.report import layout
        from lakefs_gc.report.marks import parquet_parts
        from lakefs_gc.storage import open_storage

        st = open_storage(f"s3://{BUCKET}/{REPO}", self.opts)
        mark = run.results["mark_uncommitted"].run_id
        return {
            a
            for key in parquet_parts(st, layout.deleted_dir(mark))
            for a in pq.read_table(io.BytesIO(st.get(key))).column("address").to_pylist()
        }

    def stop(self) -> None:
        from lakefs_sandbox.emulator.launcher import stop_group

        self.emu.stop()
        stop_group(self.moto)


def one_step(spark, step: str, ctx, env: dict[str, str]) -> dict[str, Any]:
    """
    Spark step ``step`` alone after ``prepare_run`` (one that reads no earlier step's result: ``list_slices``).

    Placed as ``run_steps`` places it: on ``spark``'s executors, or, ``spark`` None, in this process.
    """
    from lakefs_gc.config import SparkSettings
    from lakefs_gc.contract import STEP_INPUTS, StepInputs
    from lakefs_gc.spark import shell
    from lakefs_gc.steps import run_in_task
    from lakefs_sandbox import inprocess

    if STEP_INPUTS[step]:
        raise ValueError(f"{step} reads {', '.join(STEP_INPUTS[step])}: it cannot run alone")
    inputs = StepInputs(ctx, {})
    if spark is None:
        result = run_in_task(step, inputs, env, SparkSettings.in_process_max_keys)
        if result is None:
            raise RuntimeError(f"{step}: its input is larger than spark.in_process_max_keys; give a SparkSession")
    else:
        result = inprocess.SPARK_STEPS[step](spark, inputs, env)  # looked up now: timed() wraps the table
    shell.check(step, result)
    return {step: result}


def build(place: Place, n: int, n_slices: int, garbage: float) -> tuple[list[str], list[str], dict[str, float]]:
    """The repository: referenced objects uploaded and committed, a slice at a time; garbage written straight."""
    from bench.list_bench import _seed
    from lakefs_sandbox.emulator.xid import new_descending_xid

    took: dict[str, float] = {}
    per_slice = n // n_slices
    g_slices = max(1, round(n_slices * garbage))
    t = time.perf_counter()
    place.repository(REPO)
    live: list[str] = []
    for s in range(n_slices - g_slices):
        live += place.upload(REPO, [f"t/{s:04d}/{j:08d}" for j in range(per_slice)])
        place.commit(REPO)
    took["uploads"] = time.perf_counter() - t
    t = time.perf_counter()
    old = time.time() - 2 * DAY - 3600
    ids = [new_descending_xid(old - 60 * i) for i in range(g_slices)]  # one id per slice (each call is a new id)
    dead = [f"data/{s}/{uuid.uuid4().hex}" for s in ids for _ in range(per_slice)]
    _seed(open_ns(place).native_store(), dead)
    took["garbage"] = time.perf_counter() - t
    log(f"{len(live):,} objects uploaded and committed in {took['uploads']:.0f}s, {len(dead):,} garbage written")
    return live, dead, took


def open_ns(place: Place):
    from lakefs_gc.storage import open_storage

    return open_storage(f"s3://{BUCKET}/{REPO}", place.opts)


def warm_up(place: Place, spark) -> float:
    """A whole GC run on a tiny repository (imports, first jobs): in no figure below."""
    t = time.perf_counter()
    place.repository(WARM)
    place.upload(WARM, ["w/0", "w/1"])
    place.commit(WARM)
    place.upload(WARM, ["w/1"])
    place.gc_run("warm-up", spark, WARM)
    return time.perf_counter() - t


def inventories(place: Place, taken: datetime) -> dict[str, tuple[int, int, float]]:
    """Both S3 Inventories of the bucket as it is, T_inv ``taken``: format -> (rows, files, seconds)."""
    from bench.inventory_bench import listed_rows, write_inventory

    out = {}
    tmp = place.work / "inv-tmp"
    tmp.mkdir(exist_ok=True)
    for fmt in ("CSV", "Parquet"):
        t = time.perf_counter()
        rows, files = write_inventory(
            fmt,
            lambda key, path: place.dest.put(key, path.read_bytes()),
            f"reports/{BUCKET}/gc-{fmt.lower()}",
            BUCKET,
            taken,
            listed_rows(place.bucket, BUCKET),
            tmp,
        )
        out[fmt] = (rows, files, time.perf_counter() - t)
    return out


def verdict(figure: float, target: float, n: int) -> str:
    """PASS/FAIL at 10,000,000 objects or more; below, not judged (fixed costs do not scale with objects)."""
    if n >= AT:
        return "PASS" if figure <= target else f"FAIL (by {figure - target:.1f} s)"
    return f"n/a below {AT:,} objects"


def objects_bench(n: int, n_slices: int, garbage: float, work: Path) -> int:
    from lakefs_gc.config import SparkSettings

    place = Place(work, n // n_slices)
    spark = None
    try:
        live, dead, took = build(place, n, n_slices, garbage)
        where = "each step in its task's own process"
        if n > SparkSettings.in_process_max_keys:
            spark, started = warm_session()
            where = f"local[2] SparkSession (up in {started:.1f}s)"
        warm = warm_up(place, spark)
        time.sleep(1.1)
        taken = datetime.now(UTC)  # T_inv: after every write
        inv = inventories(place, taken)
        by_list = place.gc_run("list", spark, mode="mark_only")
        runs = [by_list]
        for fmt, mode in (("CSV", "mark_only"), ("Parquet", "mark_and_sweep")):
            loc = f"s3://{DEST}/reports/{BUCKET}/gc-{fmt.lower()}"
            runs.append(
                place.gc_run(
                    fmt,
                    spark,
                    mode=mode,
                    listing_source="inventory",
                    inventory_location=loc,
                    inventory_source_prefix="",
                )
            )
        marks = [place.marked(r) for r in runs]
        left = {o.key for o in open_ns(place).list("data/", recursive=True)}
    finally:
        if spark is not None:
            spark.stop()
        place.stop()
    lost, kept = set(live) - left, set(dead) & left
    print(report(n, n_slices, len(dead), took, where, warm, inv, runs), flush=True)
    same = marks[0] == marks[1] == marks[2] == set(dead)
    print(
        f"  check: the three runs mark {'the same' if same else 'DIFFERENT'} objects ({len(marks[0]):,} by LIST, "
        f"{len(marks[1]):,} from CSV, {len(marks[2]):,} from Parquet; {len(dead):,} garbage written); after the "
        f"clean run {len(lost):,} of {len(live):,} referenced objects lost, {len(kept):,} garbage left",
        flush=True,
    )
    return 0 if same and not lost and not kept else 1


def report(n, n_slices, n_dead, took, where, warm, inv, runs: list[Run]) -> str:
    from lakefs_gc.words import plural

    listing, csv, parquet = runs
    lines = [
        f"Listing from an inventory: {n:,} objects in {n_slices} slices ({n_dead:,} garbage) on moto, "
        f"{where}, code at {tree_state()}",
        f"  build: uploads {took['uploads']:.0f}s, garbage {took['garbage']:.0f}s; warm-up run {warm:.1f}s "
        "(in no figure below)",
    ]
    for fmt, (rows, files, secs) in inv.items():
        lines.append(
            f"  S3 Inventory, {fmt}: {plural(rows, 'row')} in {plural(files, 'data file')}, written in {secs:.1f}s"
        )
    lines += ["", f"  {'step (wall s)':<22}{'by LIST':>12}{'CSV inv.':>12}{'Parquet inv.':>14}"]
    lines.append(f"  {'':<22}{'mark_only':>12}{'mark_only':>12}{'clean run':>14}")
    steps = list(parquet.walls)
    for step in steps:
        lines.append(
            f"  {step:<22}"
            + "".join(
                f"{r.walls[step]:{w}.2f}" if step in r.walls else f"{'-':>{w}}" for r, w in zip(runs, (12, 12, 14))
            )
        )
    totals = [sum(r.walls.values()) for r in runs]
    lines.append(f"  {'all steps':<22}{totals[0]:12.2f}{totals[1]:12.2f}{totals[2]:14.2f}")
    lines.append(
        f"  {'list_slices: moto CPU':<22}"
        + "".join(f"{r.server_cpu.get('list_slices', 0):{w}.2f}" for r, w in zip(runs, (12, 12, 14)))
    )
    for label, step, attr in (
        ("objects listed", "list_slices", "listed_objects"),
        ("inventory rows read", "list_slices", "inventory_rows"),
        ("slices topped up", "list_slices", "slices_topped_up"),
        ("candidates", "compute_candidates", "candidates"),
    ):
        vals = [r.get(step, attr) for r in runs]
        lines.append(
            f"  {label:<22}"
            + "".join(f"{v:{w},}" if isinstance(v, int) else f"{'-':>{w}}" for v, w in zip(vals, (12, 12, 14)))
        )
    deleted = getattr(parquet.get("delete", "counts"), "deleted", 0)
    lines.append(f"  {'deleted':<22}{'-':>12}{'-':>12}{deleted:14,}")
    for label, key in (
        ("peak RSS: JVM (MiB)", "jvm"),
        ("peak RSS: workers", "workers"),
        ("peak RSS: this process", "python"),
    ):
        lines.append(
            f"  {label:<22}" + "".join(f"{r.peak.get(key, 0) / MIB:{w}.0f}" for r, w in zip(runs, (12, 12, 14)))
        )
    ls = [r.walls.get("list_slices", 0.0) for r in runs]
    lines += [
        "",
        f"  targets at {AT:,} objects on 2 cores        figure      target   verdict",
        f"  list_slices from the CSV inventory       {ls[1]:8.2f} s   <= {LIST_TARGET:.0f} s   {verdict(ls[1], LIST_TARGET, n)}",
        f"  list_slices from the Parquet inventory   {ls[2]:8.2f} s   <= {LIST_TARGET:.0f} s   {verdict(ls[2], LIST_TARGET, n)}",
        f"  the clean run from the Parquet inventory {totals[2]:8.2f} s  <= {RUN_TARGET:.0f} s  {verdict(totals[2], RUN_TARGET, n)}",
        f"  beside: list_slices by LIST here {ls[0]:.2f} s (CSV {ls[1] / ls[0]:.0%} of it, Parquet {ls[2] / ls[0]:.0%}); "
        f"by LIST at 10,000,000 on local disk (docs/benchmarks.md) {LIST_BEFORE} s",
        "  (at 10,000,000 rows read alone: python -m bench inventory --rows 10000000)",
    ]
    return "\n".join(lines)
