"""A clean GC run, churn, then an incremental run (issue 18's optimized run, the design's Flow 2).

    .venv/bin/python -m bench incremental [--objects N] [--churn 0.01] [--slices S] [--garbage 0.1]
                                          [--commits 3] [--branches 3] [--suspicious 0.01]
                                          [--no-full-peer] [--keep]

Builds, in a scratch directory (``$LAKEFS_GC_BENCH_DIR`` or the system temp dir), on the lakeFS
emulator with a ``local://`` namespace, as ``bench gc`` does (files written straight into
``data/<slice>/``, one import commit per referenced slice; no N uploads):
  * N objects in S old slices; a ``--garbage`` share of the slices is referenced by nothing;
  * GC rules: 30 days, so every commit is retained;
  * ``--branches`` branches in all (``main`` and branches made from it after the imports);
  * every file's bytes are its own key (no two alike); with ``--suspicious`` that share of the
    garbage (the old unreferenced slices, and the churn's unreferenced files) holds the bytes of a
    committed object instead: the staged check must ask lakeFS about those.
Then, in one process on one SparkSession (the test suite's in-process runner, every step):
  1. a clean run;
  2. churn, all of it in slices newer than the clean run's newest: ``--churn`` x N new objects
     uploaded to ``main`` in ``--commits`` new commits (new ranges), overwrites of existing paths
     under two prefixes (a partition rewritten: a few ranges change; random overwrites over the
     whole key space would touch every range), staged uploads, staged overwrites and staged deletes
     left uncommitted, and garbage: uploads overwritten, deleted or reset before any commit, plus
     a slice of unreferenced files;
  3. an incremental run (``flow="incremental"``; without that Param in this tree the second run is
     clean, and the bench says so).
Both runs use the default staged check (``candidates``); the full check's listing of every branch
(``staged_check: full``) is measured once after the clean run, as its peer (``--no-full-peer``: not).
Prints one table: wall seconds per step of both runs, objects listed, ranges read, new commits,
the ratios and the issue's targets with PASS/MISS (informational: exit 0). The JVM and
SparkSession start-up, and a warm-up GC run on a tiny repository of its own, are measured apart
and are in no step. Checks that exactly the garbage is gone after both runs: every object of
``main`` (committed and staged) and of its commit before the churn is still in storage, and every
unreferenced one is not; exit 1 otherwise. What is live comes from the bench's own records of what it
imported and uploaded, checked against lakeFS: a sample of paths asked on both refs (statObject), and,
up to ``LISTED_MAX`` live objects, every key listed through lakeFS's API (about 100,000 keys a minute
on the emulator: 20,000,000 at 10 M objects would take hours).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.gc_bench import ACCESS, REPO, SECRET, build_repository, make_files

ROOT = Path(__file__).resolve().parents[1]
STEPS = (
    "prepare_run",
    "mark_uncommitted",
    "list_committed",
    "list_slices",
    "compute_candidates",
    "attribute_space",
    "delete",
    "save_report",
)
LISTED_TARGET, TIME_TARGET = 0.02, 0.15  # issue 18's targets: listed objects and listing + committed wall
MARK_TARGET, RUN_TARGET = 5.0, 0.15  # issue 28's: mark_uncommitted seconds, incremental / clean run
SPACE_TARGET = 0.15  # issue 43's: attribute_space / the rest of a clean run
UPLOAD_THREADS = 4
SAMPLE = 2_000  # paths per ref asked of lakeFS (statObject) to check the bench's records
LISTED_MAX = 2_000_000  # live keys also listed through lakeFS's API (the emulator: ~100,000 a minute)
WARM_REPO = "warm-up"


def log(msg: str) -> None:
    print(f"[incremental-bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def flow_available() -> bool:
    from lakefs_gc.contract import PARAM_NAMES

    return "flow" in PARAM_NAMES


def run_settings(flow: str):
    from lakefs_gc.contract import RunSettings

    # as tests/runs/test_random_histories.py: everything written before the run is old enough; no rate limit
    kw: dict[str, Any] = dict(
        min_age_seconds=0, unsafe_min_age_override=True, confirm_after_seconds=0, max_delete_share=1.0, delete_rate=0
    )
    if flow_available():
        kw["flow"] = flow
    return RunSettings(**kw)


class PeakRSS:
    """The peak resident memory, sampled every ``every`` s while running: the driver's JVM (the java
    child of this process), the Python workers (the JVM's Python children, summed) and this
    process (the driver's Python)."""

    def __init__(self, every: float = 0.25):
        import psutil

        self.me, self.every = psutil.Process(), every
        self.peak = {"jvm": 0, "workers": 0, "python": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="peak-rss", daemon=True)

    def sample(self) -> None:
        import psutil

        try:
            jvms = [p for p in self.me.children(recursive=True) if p.name() == "java"]
            now = {
                "python": self.me.memory_info().rss,
                "jvm": sum(p.memory_info().rss for p in jvms),
                "workers": sum(c.memory_info().rss for p in jvms for c in p.children(recursive=True)),
            }
        except psutil.Error:
            return
        for k, v in now.items():
            self.peak[k] = max(self.peak[k], v)

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self.sample()

    def __enter__(self) -> PeakRSS:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sample()


def du(path: Path) -> int:
    """Bytes of the files under ``path``."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


@contextmanager
def timed_steps(walls: dict[str, float]):
    """Wall time of every step the in-process runner calls, by task id (the step tables wrapped
    for the duration)."""
    from lakefs_gc.steps import STEP_FUNCTIONS
    from lakefs_sandbox import inprocess

    tables = (STEP_FUNCTIONS, inprocess.SPARK_STEPS)
    saved = [dict(t) for t in tables]

    def wrap(step: str, fn: Callable) -> Callable:
        def timed(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                walls[step] = time.perf_counter() - t

        return timed

    for t in tables:
        for step, fn in list(t.items()):
            t[step] = wrap(step, fn)
    try:
        yield walls
    finally:
        for t, s in zip(tables, saved):
            t.clear()
            t.update(s)


@dataclass
class Run:
    name: str
    flow: str = "clean"
    reason: str = ""
    walls: dict[str, float] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    peak_rss: dict[str, int] = field(default_factory=dict)
    written: int = 0  # bytes the run wrote to its work location and to the namespace's _lakefs/ (its mark)

    def get(self, step: str, attr: str, default: Any = None) -> Any:
        return getattr(self.results.get(step), attr, default)


def gc_run(name: str, flow: str, spark, gc_client, emu, work: Path, repo: str = REPO) -> Run:
    from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY
    from lakefs_gc.steps.prepare_run import prepare_run
    from lakefs_sandbox.inprocess import run_steps

    run = Run(name)
    time.sleep(1.1)  # every write is strictly older than the cutoff (xid times are whole seconds)
    now = datetime.now(UTC)
    t = time.perf_counter()
    ctx = prepare_run(
        gc_client,
        repo,
        run_settings(flow),
        now=now,
        airflow_run_id=f"bench-{name}",
        work_dir=str(work / "gcwork"),
        local_root=str(work),
        parallelism=2,
    )
    run.walls["prepare_run"] = time.perf_counter() - t
    run.flow, run.reason = getattr(ctx, "flow", "clean"), getattr(ctx, "flow_reason", "")
    env = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
    before = du(work / "gcwork") + du(work / "ns" / repo / "_lakefs")
    with timed_steps(run.walls), PeakRSS() as rss:
        run.results = run_steps(spark, ctx, gc_client, env)
    run.peak_rss = rss.peak
    run.written = du(work / "gcwork") + du(work / "ns" / repo / "_lakefs") - before
    log(f"{name} run done ({run.flow}) in {sum(run.walls.values()):.1f}s")
    return run


@dataclass
class Churn:
    new_objects: int = 0  # uploads, all in new slices
    committed: int = 0  # of which committed (new paths and overwrites)
    overwrites: int = 0
    staged: int = 0  # left staged (new paths and overwrites)
    staged_deletes: int = 0  # tombstones over committed paths, left staged
    garbage: list[str] = field(default_factory=list)  # keys nothing references any more
    main: dict[str, str] = field(default_factory=dict)  # path -> key of what main's uploads left (committed, staged)
    deleted: list[str] = field(default_factory=list)  # committed paths main deletes, staged
    commits: int = 0
    suspicious: int = 0  # garbage holding a committed object's bytes


def key_of(physical: str) -> str:
    """The namespace key of a physical address the emulator prints (every object here is under
    the namespace's ``data/``; a FULL local address prints with the blockstore root twice)."""
    return "data/" + physical.rsplit("/data/", 1)[-1]


def make_suspicious(ns_dir: Path, garbage: list[str], committed: list[str], share: float, seed: int) -> int:
    """Give ``share`` of the ``garbage`` keys the bytes of a committed object (same size and MD5):
    candidates the staged check must ask lakeFS about. Their times stay those of their slice."""
    import random

    rng = random.Random(seed)
    chosen = rng.sample(garbage, round(len(garbage) * share)) if share else []
    for k in chosen:
        src = rng.choice(committed)
        path = ns_dir / k
        st = path.stat()
        path.write_bytes((ns_dir / src).read_bytes())
        os.utime(path, (st.st_atime, st.st_mtime))
    return len(chosen)


def churn(
    client,
    ns_dir: Path,
    committed_paths: list[str],
    n_new: int,
    commits: int,
    committed_keys: list[str],
    suspicious: float,
) -> Churn:
    """Writes after the clean run, every object in a slice newer than its newest (module doc)."""
    import lakefs_sdk

    from lakefs_sandbox.emulator.xid import new_descending_xid

    c = Churn()
    pool = ThreadPoolExecutor(UPLOAD_THREADS)

    def upload(paths: list[str]) -> list[str]:
        def one(p: str) -> str:
            st = client.objects_api.upload_object(REPO, "main", p, content=f"churned {p} {time.time()}".encode())
            return key_of(st.physical_address)

        keys = list(pool.map(one, paths))
        c.new_objects += len(keys)
        c.main.update(zip(paths, keys))
        return keys

    def commit(message: str) -> None:
        client.commits_api.commit(REPO, "main", lakefs_sdk.CommitCreation(message=message))
        c.commits += 1

    # unreferenced files in a slice of their own, as a crashed writer leaves them
    n_direct = max(1, n_new // 10)
    direct = [f"data/{k}" for k in make_files(ns_dir / "data", [new_descending_xid(time.time())], n_direct)]
    c.suspicious = make_suspicious(ns_dir, direct, committed_keys, suspicious, 2)
    c.garbage += direct
    c.new_objects += n_direct
    # committed: new paths over --commits commits, overwrites of two prefixes in the last one
    n_over, n_part = max(1, n_new // 10), max(1, n_new // 20)
    per_commit = max(1, (n_new - n_direct - n_over - 6 * n_part) // commits)
    prefixes = sorted({p.rsplit("/", 1)[0] for p in committed_paths})[:2]
    over = [p for p in committed_paths if p.rsplit("/", 1)[0] in prefixes][:n_over]
    for i in range(commits):
        upload([f"new/c{i}/{j:07d}" for j in range(per_commit)])
        c.committed += per_commit
        if i == commits - 1:
            upload(over)
            c.committed += len(over)
            c.overwrites = len(over)
        commit(f"churn commit {i}")
    # left staged: new paths, overwrites of committed paths, deletes of committed paths
    upload([f"staged/{j:07d}" for j in range(n_part)])
    upload(committed_paths[-n_part:])
    c.staged = 2 * n_part
    tail = committed_paths[-2 * n_part : -n_part]
    list(pool.map(lambda p: client.objects_api.delete_object(REPO, "main", p), tail))
    c.staged_deletes = len(tail)
    c.deleted += tail
    # garbage: uploaded, then overwritten / deleted / reset before any commit
    twice = [f"twice/{j:07d}" for j in range(n_part)]
    c.garbage += upload(twice)
    upload(twice)
    c.staged += n_part
    gone = [f"deleted/{j:07d}" for j in range(n_part)]
    c.garbage += upload(gone)
    list(pool.map(lambda p: client.objects_api.delete_object(REPO, "main", p), gone))
    reset = [f"reset/{j:07d}" for j in range(n_part)]
    c.garbage += upload(reset)
    list(
        pool.map(
            lambda p: client.branches_api.reset_branch(REPO, "main", lakefs_sdk.ResetCreation(type="object", path=p)),
            reset,
        )
    )
    pool.shutdown()
    for p in (*gone, *reset):
        del c.main[p]
    return c


def listed_keys(client, ref: str) -> set[str]:
    out, after = set(), ""
    while True:
        page = client.objects_api.list_objects(REPO, ref, after=after, amount=1000)
        out.update(key_of(o.physical_address) for o in page.results)
        if not page.pagination.has_more:
            return out
        after = page.pagination.next_offset


def expected_live(committed_paths: list[str], committed_keys: list[str], ch: Churn) -> tuple[dict, dict]:
    """path -> key of ``main`` before the churn and of ``main`` now (committed and staged), from
    what the bench itself imported and uploaded: no listing, no reader of lakeFS's formats."""
    before = dict(zip(committed_paths, committed_keys))
    gone = set(ch.deleted)
    now = {p: k for p, k in before.items() if p not in gone}
    now.update(ch.main)
    return before, now


def disagreements(client, ref: str, expected: dict[str, str], n: int, seed: int) -> list[str]:
    """``n`` paths of ``expected`` (path -> key) asked of lakeFS on ``ref`` (statObject): those whose
    key lakeFS does not give."""
    import random

    paths = random.Random(seed).sample(sorted(expected), min(n, len(expected)))

    def one(p: str) -> str | None:
        got = key_of(client.objects_api.stat_object(REPO, ref, p).physical_address)
        return None if got == expected[p] else f"{ref}:{p} is {got}, the bench recorded {expected[p]}"

    with ThreadPoolExecutor(8) as pool:
        return [d for d in pool.map(one, paths) if d]


def commit_ranges(client, ns_dir: Path) -> dict[str, set[str]]:
    """Commit id -> the ids of the ranges its tree holds (read from the namespace's metaranges)."""
    from lakefs_gc.lakefs.graveler import iter_metarange
    from lakefs_gc.lakefs.sstable import SSTableReader

    out: dict[str, set[str]] = {}
    for b in client.branches_api.list_branches(REPO, amount=1000).results:
        after = ""
        while True:
            page = client.refs_api.log_commits(REPO, b.commit_id, after=after, amount=1000)
            for cm in page.results:
                if cm.id in out or not cm.meta_range_id:
                    out.setdefault(cm.id, set())
                    continue
                with open(ns_dir / "_lakefs" / cm.meta_range_id, "rb") as f:
                    out[cm.id] = {ri.id for _, ri in iter_metarange(SSTableReader(f, name=cm.meta_range_id))}
            if not page.pagination.has_more:
                break
            after = page.pagination.next_offset
    return out


def full_peer(gc_client, work: Path) -> tuple[float, int, int]:
    """The full check's reading (staged_check: full), timed: every branch against its HEAD commit."""
    from lakefs_gc.listing.uncommitted import api_staged
    from lakefs_gc.storage import parse_namespace

    t = time.perf_counter()
    check = api_staged(gc_client, REPO, parse_namespace(f"local://ns/{REPO}", str(work)).roots(), str(work))
    seconds = time.perf_counter() - t
    log(f"peer: the full check listed {check.listed:,} objects on {check.branches} branch(es) in {seconds:.1f}s")
    return seconds, check.listed, check.branches


def warm_session():
    """The shared local SparkSession (JVM start-up), timed apart from any run; its driver JVM as a
    job's starts (lakefs_gc.spark.jvm: the fast start, spark.fast_start's default)."""
    from lakefs_gc.spark.jvm import driver_java_options
    from lakefs_sandbox.inprocess import local_session

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    options = driver_java_options(str(Path(sys.executable).parent / "spark-submit"), sys.executable)
    t = time.perf_counter()
    spark = local_session("lakefs-gc incremental bench", cores=2, java_options=options)
    return spark, time.perf_counter() - t


def warm_up_run(spark, gc_client, client, emu, work: Path) -> float:
    """A whole GC run on a tiny repository of its own (Python workers, first jobs, imports): so the
    clean run's steps do not pay a warm-up the second run is spared. Returns its wall time."""
    import lakefs_sdk

    t = time.perf_counter()
    client.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(
            name=WARM_REPO, storage_namespace=f"local://ns/{WARM_REPO}", default_branch="main"
        )
    )
    client.repositories_api.set_gc_rules(
        WARM_REPO, lakefs_sdk.GarbageCollectionRules(default_retention_days=30, branches=[])
    )
    for i in range(4):
        client.objects_api.upload_object(WARM_REPO, "main", f"w/{i}", content=b"warm-up")
        if i == 1:
            client.commits_api.commit(WARM_REPO, "main", lakefs_sdk.CommitCreation(message="warm-up"))
    client.objects_api.upload_object(WARM_REPO, "main", "w/3", content=b"warm-up again")  # garbage
    gc_run("warm-up", "clean", spark, gc_client, emu, work, WARM_REPO)
    return time.perf_counter() - t


def tree_state() -> str:
    """The code measured: its commit, and whether the working tree had changes."""
    import subprocess

    def git(*args: str) -> str:
        r = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False)
        return r.stdout.strip() if r.returncode == 0 else ""

    rev = git("rev-parse", "--short", "HEAD") or "unknown"
    return rev + (" with uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def share(x: float, y: float) -> str:
    return f"{x / y:.1%}" if y else "n/a"


def table(
    clean: Run,
    incr: Run,
    jvm: tuple[float, float],
    build: dict[str, float],
    ch: Churn,
    new_ranges: int,
    new_commits: int,
    n_objects: int,
    n_slices: int,
    garbage0: int,
    branches: int = 1,
    suspicious0: int = 0,
    peer: tuple[float, int, int] | None = None,
) -> str:
    def w(run: Run, step: str) -> str:
        return f"{run.walls[step]:11.2f}" if step in run.walls else f"{'-':>11}"

    lines = [
        f"Incremental GC benchmark: {n_objects:,} objects in {n_slices} slices ({garbage0:,} garbage, "
        f"{suspicious0:,} of it with a committed object's bytes), {branches} branch(es), "
        f"{os.cpu_count()} cores, local[2], code at {tree_state()}",
        f"  build: files {build['files']:.0f}s, import commits {build['imports']:.0f}s, churn {build['churn']:.0f}s",
        f"  churn: {ch.new_objects:,} new objects in new slices ({ch.committed:,} committed in {ch.commits} commits, "
        f"{ch.overwrites:,} of them overwrites; {ch.staged:,} left staged; {len(ch.garbage):,} garbage, "
        f"{ch.suspicious:,} of it with a committed object's bytes), "
        f"{ch.staged_deletes:,} staged deletes",
        f"  JVM + SparkSession start-up: {jvm[0]:.1f}s; a warm-up GC run on a tiny repository {jvm[1]:.1f}s: "
        f"in no step below",
        f"  clean run: flow {clean.flow}{' (' + clean.reason + ')' if clean.reason else ''}",
        f"  second run: flow {incr.flow}{' (' + incr.reason + ')' if incr.reason else ''}",
    ]
    if not flow_available():
        lines.append("  incremental flow not available in this tree: second run is clean")
    lines += ["", f"  {'step (wall s)':<24}{'clean':>11}{'second':>11}   second/clean"]
    for step in STEPS:
        r = share(incr.walls.get(step, 0), clean.walls.get(step, 0))
        lines.append(f"  {step:<24}{w(clean, step)}{w(incr, step)}   {r:>8}")
    tot = [sum(r.walls.values()) for r in (clean, incr)]
    lines.append(f"  {'all steps':<24}{tot[0]:11.2f}{tot[1]:11.2f}   {share(tot[1], tot[0]):>8}")
    mib = 1 << 20
    for label, key in (
        ("peak RSS, driver JVM (MiB)", "jvm"),
        ("peak RSS, Python workers", "workers"),
        ("peak RSS, driver Python", "python"),
    ):
        lines.append(f"  {label:<24}{clean.peak_rss.get(key, 0) / mib:11.0f}{incr.peak_rss.get(key, 0) / mib:11.0f}")
    lines.append(
        f"  {'written (MiB)':<24}{clean.written / mib:11.1f}{incr.written / mib:11.1f}   (work location and the mark)"
    )

    def lc(run: Run) -> float:
        return run.walls.get("list_slices", 0) + run.walls.get("list_committed", 0)

    def num(run: Run, step: str, attr: str) -> str:
        v = run.get(step, attr)
        return f"{v:11,}" if isinstance(v, int) else f"{'-':>11}"

    lines += ["", f"  {'figure':<24}{'clean':>11}{'second':>11}"]
    for label, step, attr in (
        ("objects listed (slices)", "list_slices", "listed_objects"),
        ("slices listed", "list_slices", "slices_listed"),
        ("slices skipped", "list_slices", "slices_skipped"),
        ("slices before the base", "list_slices", "slices_before_base"),
        ("ranges read", "list_committed", "ranges"),
        ("ranges known (skipped)", "list_committed", "ranges_known"),
        ("new commits", "list_committed", "new_commits"),
        ("active commits", "list_committed", "active_commits"),
        ("committed addresses", "list_committed", "committed_addresses"),
        ("objects via API (mark)", "mark_uncommitted", "staged_objects_listed"),
        ("staged: suspicious", "compute_candidates", "staged_suspicious"),
        ("staged: statObject calls", "compute_candidates", "staged_stats"),
        ("staged: kept", "compute_candidates", "staged_kept"),
        ("commits since (check)", "compute_candidates", "commits_since"),
        ("candidates", "compute_candidates", "candidates"),
        ("deleted", "delete", "counts"),
    ):
        if attr == "counts":
            lines.append(
                f"  {label:<24}" + "".join(f"{getattr(r.get(step, attr), 'deleted', 0):11,}" for r in (clean, incr))
            )
        else:
            lines.append(f"  {label:<24}{num(clean, step, attr)}{num(incr, step, attr)}")
    lines.append(f"  (independently: {new_commits} commits and {new_ranges} ranges are new since the clean run)")
    listed = [r.get("list_slices", "listed_objects", 0) or 0 for r in (clean, incr)]
    ranges_read = incr.get("list_committed", "ranges", 0) or 0
    lines += [
        "",
        "  targets (issue 18)                                     figure   target   verdict",
        f"  objects listed, second / clean                   {share(listed[1], listed[0]):>12}   <= {LISTED_TARGET:.0%}"
        f"    {verdict(listed[0] > 0 and listed[1] <= LISTED_TARGET * listed[0])}",
        f"  ranges read by the second run / new ranges       {ranges_read:>5} / {new_ranges:<5} <= new  "
        f"  {verdict(ranges_read <= new_ranges)}",
        f"  list_slices + list_committed wall, second / clean {share(lc(incr), lc(clean)):>11}   <= {TIME_TARGET:.0%}"
        f"   {verdict(lc(clean) > 0 and lc(incr) <= TIME_TARGET * lc(clean))}"
        f"   ({lc(incr):.2f}s / {lc(clean):.2f}s)",
    ]
    marks = [r.walls.get("mark_uncommitted", 0) for r in (clean, incr)]
    own = [r.get("mark_uncommitted", "lakefs_seconds", 0) or 0 for r in (clean, incr)]
    checks = [r.get("compute_candidates", "staged_check_seconds", 0) or 0 for r in (clean, incr)]
    sus = [r.get("compute_candidates", "staged_suspicious", 0) or 0 for r in (clean, incr)]
    lines += [
        "",
        "  targets (issue 28), staged check on the candidates          figure      target   verdict",
        f"  mark_uncommitted, clean run                            {marks[0]:9.2f}s   <= {MARK_TARGET:.0f}s"
        f"      {verdict(marks[0] <= MARK_TARGET)}   (lakeFS's own mark in it: {own[0]:.2f}s)",
        f"  mark_uncommitted, second run                           {marks[1]:9.2f}s   <= {MARK_TARGET:.0f}s"
        f"      {verdict(marks[1] <= MARK_TARGET)}   (lakeFS's own mark in it: {own[1]:.2f}s)",
        f"  all steps, second / clean                              {share(tot[1], tot[0]):>10}   <= {RUN_TARGET:.0%}"
        f"     {verdict(tot[0] > 0 and tot[1] <= RUN_TARGET * tot[0])}",
    ]
    space = clean.walls.get("attribute_space", 0)
    rest = tot[0] - space
    skipped = clean.get("attribute_space", "skipped")
    lines += [
        "",
        "  target (issue 43), where the bytes go                     figure      target   verdict",
        f"  attribute_space / the rest of the clean run            {share(space, rest):>10}   <= {SPACE_TARGET:.0%}"
        f"     {verdict(rest > 0 and space <= SPACE_TARGET * rest and not skipped)}   ({space:.2f}s / {rest:.2f}s"
        + (
            f"; not attributed: {skipped}"
            if skipped
            else f"; {clean.get('attribute_space', 'objects', 0) or 0:,} objects attributed, "
            f"{clean.get('attribute_space', 'branches', 0) or 0} branch(es))"
        ),
    ]
    for name, i in (("clean", 0), ("second", 1)):
        per = (
            f"{checks[i] / sus[i] * 1000:.1f} ms per suspicious candidate (upper bound: the whole check)"
            if sus[i]
            else "no suspicious candidate"
        )
        lines.append(
            f"  the check in compute_candidates, {name} run: {checks[i]:.2f}s, {sus[i]:,} suspicious "
            f"({share(sus[i], r_cands(clean if i == 0 else incr))} of the candidates); {per}"
        )
    if peer is not None:
        lines.append(
            f"  peer, the full check (staged_check: full) on the clean run's repository: {peer[0]:.2f}s to list "
            f"{peer[1]:,} objects on {peer[2]} branch(es) and their HEAD commits (its mark_uncommitted would "
            f"add lakeFS's own mark)"
        )
    return "\n".join(lines)


def r_cands(run: Run) -> int:
    return run.get("compute_candidates", "candidates", 0) or 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench incremental", description=__doc__.split("\n\n")[0])
    p.add_argument("--objects", type=int, default=1_000_000)
    p.add_argument("--churn", type=float, default=0.01, help="new objects after the clean run, share of --objects")
    p.add_argument("--slices", type=int, default=100, help="old data/ slices (objects spread evenly)")
    p.add_argument("--garbage", type=float, default=0.1, help="share of the old slices nothing references")
    p.add_argument("--commits", type=int, default=3, help="new commits in the churn")
    p.add_argument("--branches", type=int, default=3, help="branches in all (main and copies of it)")
    p.add_argument(
        "--suspicious",
        type=float,
        default=0.0,
        help="share of the garbage holding a committed object's bytes (the staged check asks about those)",
    )
    p.add_argument("--no-full-peer", action="store_true", help="do not measure the full check's listing")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory")
    a = p.parse_args(argv)
    if a.slices < 2 or not 0 <= a.garbage < 1 or a.churn <= 0 or a.commits < 1:
        sys.exit("need --slices >= 2, 0 <= --garbage < 1, --churn > 0, --commits >= 1")
    sys.path.insert(0, str(ROOT))
    import lakefs_sdk

    from lakefs_gc.lakefs.client import LakeFSClient
    from lakefs_sandbox import seed
    from lakefs_sandbox.emulator import launcher
    from lakefs_sandbox.emulator.xid import new_descending_xid

    work = Path(tempfile.mkdtemp(prefix="lakefs-gc-incr-bench-", dir=os.environ.get("LAKEFS_GC_BENCH_DIR")))
    n_new = max(20, round(a.objects * a.churn))
    # the churn's uploads roll over into a few new slices
    emu = launcher.start(
        work / "emulator.log",
        "--grace-period",
        "0",
        "--local-path",
        str(work),
        "--slice-size",
        str(max(10, n_new // 4)),
        access_key=ACCESS,
        secret_key=SECRET,
    )
    spark = None
    try:
        ns_dir = work / "ns" / REPO
        per_slice = a.objects // a.slices
        now = time.time()  # old slices: an hour ago and before, one a minute
        slices = sorted({new_descending_xid(now - 3600 - 60 * i) for i in range(a.slices)})
        t = time.perf_counter()
        keys = [f"data/{k}" for k in make_files(ns_dir / "data", slices, per_slice)]
        build = {"files": time.perf_counter() - t}
        log(f"wrote {len(keys):,} objects in {len(slices)} slices in {build['files']:.0f}s")
        step = round(1 / a.garbage) if a.garbage else 0
        kept = [s for i, s in enumerate(slices) if not step or i % step]
        keys_by_slice: dict[str, list[str]] = {}
        for k in keys:
            keys_by_slice.setdefault(k.split("/")[1], []).append(k)
        garbage0 = len(keys) - sum(len(keys_by_slice[s]) for s in kept)
        t = time.perf_counter()
        build_repository(emu, f"local://ns/{REPO}", ns_dir, kept, keys_by_slice, len(kept))
        build["imports"] = time.perf_counter() - t
        log(f"made {len(kept)} import commits in {build['imports']:.0f}s ({garbage0:,} objects unreferenced)")
        client = seed.sdk_client(emu.url, ACCESS, SECRET)
        committed_paths = [f"t/{s}/{k.rsplit('/', 1)[1]}" for s in kept for k in keys_by_slice[s]]
        committed_keys = [k for s in kept for k in keys_by_slice[s]]
        for i in range(1, a.branches):
            client.branches_api.create_branch(REPO, lakefs_sdk.BranchCreation(name=f"branch-{i}", source="main"))
        suspicious0 = make_suspicious(
            ns_dir, [k for s in slices if s not in set(kept) for k in keys_by_slice[s]], committed_keys, a.suspicious, 1
        )

        spark, started = warm_session()
        log(f"SparkSession up in {started:.1f}s")
        with LakeFSClient(emu.url, ACCESS, SECRET) as gc_client:
            warm = warm_up_run(spark, gc_client, client, emu, work)
            clean = gc_run("clean", "clean", spark, gc_client, emu, work)
            peer = None if a.no_full_peer else full_peer(gc_client, work)
            before_ranges = commit_ranges(client, ns_dir)
            head0 = client.branches_api.get_branch(REPO, "main").commit_id
            t = time.perf_counter()
            ch = churn(client, ns_dir, committed_paths, n_new, a.commits, committed_keys, a.suspicious)
            build["churn"] = time.perf_counter() - t
            log(f"churn: {ch.new_objects:,} new objects, {ch.commits} commits in {build['churn']:.0f}s")
            after_ranges = commit_ranges(client, ns_dir)
            known = set().union(*before_ranges.values())
            new_ranges = set().union(*(r for c, r in after_ranges.items() if c not in before_ranges)) - known
            new_commits = len(set(after_ranges) - set(before_ranges))
            incr = gc_run("incremental", "incremental", spark, gc_client, emu, work)

        print(
            table(
                clean,
                incr,
                (started, warm),
                build,
                ch,
                len(new_ranges),
                new_commits,
                len(keys),
                len(slices),
                garbage0,
                a.branches,
                suspicious0,
                peer,
            ),
            flush=True,
        )
        # nothing live lost: main (committed and staged) and its commit before the churn, as the bench
        # recorded them; the records asked of lakeFS (a sample of paths; every key listed up to LISTED_MAX)
        t = time.perf_counter()
        before, now = expected_live(committed_paths, committed_keys, ch)
        live = set(before.values()) | set(now.values())
        wrong = disagreements(client, head0, before, SAMPLE, 3) + disagreements(client, "main", now, SAMPLE, 4)
        how = f"{2 * min(SAMPLE, len(live)):,} paths asked of lakeFS agree with the records"
        if len(live) <= LISTED_MAX:
            with ThreadPoolExecutor(2) as pool:  # the client's parsing overlaps the emulator's work
                listed = set().union(*pool.map(lambda ref: listed_keys(client, ref), ("main", head0)))
            if listed != live:
                wrong.append(
                    f"lakeFS lists {len(listed - live):,} key(s) the bench did not record (e.g. "
                    f"{sorted(listed - live)[:3]}) and not {len(live - listed):,} it did "
                    f"(e.g. {sorted(live - listed)[:3]})"
                )
            how = f"every key listed through lakeFS's API, and {how}"
        lost = sorted(k for k in live if not (ns_dir / k).exists())
        garbage = [k for s in slices if s not in set(kept) for k in keys_by_slice[s]] + ch.garbage
        left = [k for k in garbage if (ns_dir / k).exists()]
        print(
            f"  check: {len(live):,} live objects (main with its staged entries, and main before the churn; "
            f"{how if not wrong else 'the records DISAGREE with lakeFS'}): {len(lost)} lost; garbage "
            f"collected {len(garbage) - len(left):,} of {len(garbage):,} (the old slices' and the churn's) "
            f"({time.perf_counter() - t:.0f}s)",
            flush=True,
        )
        if wrong:
            print(
                "the bench's records of what is live disagree with lakeFS:\n  " + "\n  ".join(wrong[:10]),
                file=sys.stderr,
            )
            return 1
        if lost:
            print(f"LOST live objects, e.g. {lost[:5]}", file=sys.stderr)
            return 1
        if left:
            print(f"garbage left in storage, e.g. {left[:5]}", file=sys.stderr)
            return 1
        return 0
    finally:
        if spark is not None:
            spark.stop()
        emu.stop()
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            log(f"scratch kept in {work}")
