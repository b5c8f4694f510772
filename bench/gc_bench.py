"""The GC DAG on a synthetic repository: 1,000,000 objects, half garbage, several hundred commits.

    .venv/bin/python -m bench gc [--objects N] [--commits N] [--slices N] [--keep]

Builds, in a scratch directory (``$LAKEFS_GC_BENCH_DIR`` or the system temp dir):
  * a local namespace with N objects in lakeFS's layout (``data/<slice>/<object>``, descending-xid
    slice names, small files);
  * a repository on the lakeFS emulator whose ``main`` has ``--commits`` commits, all within
    retention: one import commit per kept slice (half the slices: N/2 objects referenced), then
    small commits that each re-reference one already committed object. The other half of the
    objects is referenced by nothing: garbage.
Then runs the GC DAG once (``dag.test()``, Airflow on SQLite, real spark-submit, ``local[*]``),
checks that exactly the garbage is gone, and prints wall time per task and end to end beside floors
measured in the same run on the same data:
  * listing: ``os.scandir`` + ``stat`` over the same tree, one process;
  * candidates: an in-memory pyarrow left-anti join of the same address sets;
  * deletion: an ``os.unlink`` loop over the same number of files (a scratch copy).
No target yet: this sets the baseline. Spark startup (about 8-15 s per job) is part of each task.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ACCESS, SECRET = "AKIAIOSFOBENCHMARKS", "bench/secret/key"
REPO = "bench-repo"
TASKS = [
    "prepare_run",
    "mark_uncommitted",
    "list_committed",
    "list_slices",
    "compute_candidates",
    "delete",
    "save_report",
]


def log(msg: str) -> None:
    print(f"[gc-bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def make_files(base: Path, names: list[str], per_dir: int) -> list[str]:
    """``per_dir`` files in each directory ``base/<name>``; returns keys relative to ``base``. Each
    file's bytes are its own key: no two files have the same content, as in a real data lake (the
    staged check compares sizes and checksums)."""
    keys = []
    from lakefs_sandbox.emulator.xid import new_xid

    now = time.time()
    for d in names:
        (base / d).mkdir(parents=True, exist_ok=True)
        for _ in range(per_dir):
            k = f"{d}/{new_xid(now)}"
            fd = os.open(base / k, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, k.encode())
            os.close(fd)
            keys.append(k)
    return keys


def floor_list(root: Path) -> tuple[float, list[str]]:
    t = time.perf_counter()
    out: list[str] = []
    stack = [root]
    while stack:
        d = stack.pop()
        with os.scandir(d) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    stack.append(Path(e.path))
                else:
                    e.stat(follow_symlinks=False)
                    out.append(os.path.relpath(e.path, root.parent))
    return time.perf_counter() - t, out


def floor_antijoin(listed: list[str], committed: list[str]) -> tuple[float, int]:
    import pyarrow as pa

    a = pa.table({"address": pa.array(listed, pa.string())})
    b = pa.table({"address": pa.array(committed, pa.string())})
    t = time.perf_counter()
    n = a.join(b, keys="address", join_type="left anti").num_rows
    return time.perf_counter() - t, n


def floor_unlink(scratch: Path, count: int) -> float:
    keys = make_files(scratch, [f"d{i:04d}" for i in range(max(1, count // 10_000))], min(count, 10_000))
    t = time.perf_counter()
    for k in keys:
        os.unlink(scratch / k)
    return time.perf_counter() - t


def build_repository(emu, ns: str, ns_dir: Path, kept_slices: list[str], keys_by_slice: dict, commits: int):
    import lakefs_sdk

    from lakefs_sandbox import seed

    client = seed.sdk_client(emu.url, ACCESS, SECRET)
    client.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=REPO, storage_namespace=ns, default_branch="main")
    )
    client.repositories_api.set_gc_rules(
        REPO, lakefs_sdk.GarbageCollectionRules(default_retention_days=30, branches=[])
    )
    made = 0

    def run_import(paths, message):
        seed.run_import(client, REPO, "main", paths, message, timeout=300)

    for s in kept_slices:
        run_import(
            [
                lakefs_sdk.ImportLocation(
                    type="common_prefix", path=f"local://{ns_dir}/data/{s}/", destination=f"t/{s}/"
                )
            ],
            f"import slice {s}",
        )
        made += 1
    i = 0
    while made < commits:
        s = kept_slices[i % len(kept_slices)]
        k = keys_by_slice[s][i % len(keys_by_slice[s])]
        run_import(
            [lakefs_sdk.ImportLocation(type="object", path=f"local://{ns_dir}/{k}", destination=f"small/{i:05d}")],
            f"small commit {i}",
        )
        made += 1
        i += 1
    return made


def run_dag(work: Path, emu, parallelism: int):
    cfg = work / "gc.yaml"
    cfg.write_text(
        textwrap.dedent(f"""
        repositories:
          - repository: {REPO}
            lakefs_conn_id: lakefs_default
            storage_conn_id: aws_default
            spark_conn_id: spark_default
            min_age_seconds: 0
            mode: mark_and_sweep
            work_dir: {work / "gcwork"}
            spark:
              parallelism: {parallelism}
              driver_memory: 4g
              conf: {{spark.ui.enabled: "false"}}
    """)
    )
    os.environ.update(
        {
            "LAKEFS_GC_CONFIG": str(cfg),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "AIRFLOW_CONN_LAKEFS_DEFAULT": json.dumps(
                {
                    "conn_type": "lakefs",
                    "host": emu.url,
                    "login": ACCESS,
                    "password": SECRET,
                    "extra": {"local_blockstore_root": str(work)},
                }
            ),
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[*]"}),
        }
    )
    from airflow.dag_processing.dagbag import DagBag
    from airflow.utils import db

    db.resetdb()
    bag = DagBag(dag_folder=str(ROOT / "dags" / "gc_dags.py"))
    if bag.import_errors:
        raise RuntimeError(f"DAG import errors: {bag.import_errors}")
    dag = bag.dags[f"lakefs_gc__{REPO}"]
    t = time.perf_counter()
    # no rate limit: the delete figure is then throughput, comparable with the unlink floor
    dr = dag.test(run_conf={"mode": "mark_and_sweep", "min_age_seconds": 0, "delete_rate": 0})
    total = time.perf_counter() - t
    tis = {ti.task_id: ti for ti in dr.get_task_instances()}
    return dr, tis, total


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench gc", description=__doc__.split("\n\n")[0])
    p.add_argument("--objects", type=int, default=1_000_000)
    p.add_argument("--slices", type=int, default=100, help="data/ slices (objects are spread evenly)")
    p.add_argument("--commits", type=int, default=300)
    p.add_argument("--parallelism", type=int, default=2)
    p.add_argument("--keep", action="store_true", help="keep the scratch directory")
    a = p.parse_args(argv)
    if a.slices < 2 or a.commits < a.slices // 2:
        sys.exit("need at least 2 slices and commits >= slices/2 (one import commit per kept slice)")
    sys.path.insert(0, str(ROOT))
    work = Path(tempfile.mkdtemp(prefix="lakefs-gc-bench-", dir=os.environ.get("LAKEFS_GC_BENCH_DIR")))
    home = work / "airflow"
    home.mkdir()
    # Airflow reads its configuration once, at import: set it before anything imports airflow.
    os.environ.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
        }
    )
    from lakefs_sandbox.emulator import launcher
    from lakefs_sandbox.emulator.xid import new_descending_xid

    emu = launcher.start(
        work / "emulator.log", "--grace-period", "0", "--local-path", str(work), access_key=ACCESS, secret_key=SECRET
    )
    try:
        ns_dir = work / "ns" / REPO
        ns = f"local://ns/{REPO}"  # under the emulator's blockstore root (work)
        per_slice = a.objects // a.slices
        now = time.time()
        slices = sorted({new_descending_xid(now - i) for i in range(a.slices)})
        t = time.perf_counter()
        keys = make_files(ns_dir / "data", slices, per_slice)
        keys = [f"data/{k}" for k in keys]
        log(f"wrote {len(keys):,} objects in {len(slices)} slices in {time.perf_counter() - t:.0f}s")
        keys_by_slice: dict[str, list[str]] = {}
        for k in keys:
            keys_by_slice.setdefault(k.split("/")[1], []).append(k)
        kept_slices = slices[::2]
        committed = [k for s in kept_slices for k in keys_by_slice[s]]
        t = time.perf_counter()
        made = build_repository(emu, ns, ns_dir, kept_slices, keys_by_slice, a.commits)
        log(
            f"made {made} commits on the emulator in {time.perf_counter() - t:.0f}s "
            f"({len(committed):,} objects referenced, {len(keys) - len(committed):,} garbage)"
        )

        fl_list, listed = floor_list(ns_dir / "data")
        listed = [x for x in listed]
        fl_join, n_cand = floor_antijoin(listed, committed)
        fl_unlink = floor_unlink(work / "unlink-floor", len(keys) - len(committed))
        log("floors measured; running the GC DAG")

        dr, tis, total = run_dag(work, emu, a.parallelism)
        states = {k: ti.state for k, ti in tis.items()}
        if dr.state != "success" or any(states.get(tk) != "success" for tk in TASKS):
            sys.exit(f"GC run failed: {states}")
        left = {os.path.relpath(os.path.join(d, f), ns_dir) for d, _, fs in os.walk(ns_dir / "data") for f in fs}
        ok = left == set(committed)
        from lakefs_gc.contract import read_result

        deleted = read_result("delete", tis["save_report"].xcom_pull(task_ids="delete")).counts.deleted
        dur = {k: (ti.end_date - ti.start_date).total_seconds() for k, ti in tis.items()}

        def ratio(x, y):
            return f"{x / y:7.1f}x" if y > 0 else "    n/a"

        garbage = len(keys) - len(committed)
        print(f"""
GC benchmark: {len(keys):,} objects ({garbage:,} garbage) in {len(slices)} slices, {made} commits, \
parallelism {a.parallelism}, {os.cpu_count()} cores
  storage left == committed set: {ok}    deleted by the run: {deleted}
  task                 wall s   floor s   ratio   floor
  list_committed      {dur["list_committed"]:7.1f}
  list_slices         {dur["list_slices"]:7.1f}   {fl_list:7.2f} {ratio(dur["list_slices"], fl_list)}   os.scandir+stat, same tree
  compute_candidates  {dur["compute_candidates"]:7.1f}   {fl_join:7.2f} {ratio(dur["compute_candidates"], fl_join)}   pyarrow left-anti join ({n_cand:,} rows)
  delete              {dur["delete"]:7.1f}   {fl_unlink:7.2f} {ratio(dur["delete"], fl_unlink)}   os.unlink x {garbage:,}
  prepare_run         {dur["prepare_run"]:7.1f}
  mark_uncommitted    {dur["mark_uncommitted"]:7.1f}
  save_report         {dur["save_report"]:7.1f}
  end to end (dag.test)  {total:.1f}s  ({len(keys) / total:,.0f} objects/s)
""")
        if not ok:
            sys.exit("storage does not match the committed set")
    finally:
        emu.stop()
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            log(f"scratch kept in {work}")
