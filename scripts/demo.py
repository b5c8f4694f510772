"""The main job on the embedded default: the GC DAG end to end against the lakeFS emulator.

1. starts the lakeFS API emulator (local blockstore) on a free 127.0.0.1 port; with ``--lakefs real``
   (``make demo LAKEFS=real``) lakeFS 1.84 itself instead (the server the set-up builds, local
   blockstore, in ``build/demo/lakefs``); when ``LAKEFS_GC_TARGET_ENDPOINT`` and its companions are
   set (include/lakefs_sandbox/target.py), that real lakeFS: the repository gets a fresh name. On a
   real lakeFS commits are dated back with the commit API, and the run overrides the minimum age
   (``unsafe_min_age_override``) since a real server's grace period is a day;
2. seeds ``sample-repo`` through lakefs-sdk with ``lakefs_sandbox.seed`` (the emulator's clock is moved
   back while seeding, so the commits are ten days old and the 1-day retention has passed);
3. waits until the seeded objects are older than the run's minimum age (``--min-age``, default
   45 s, above the emulator's 10 s grace period and above the time ``airflow dags test`` needs to
   start the DAG run, whose start is the run clock, on a busy machine), then writes fresh garbage
   that must be kept;
4. runs ``airflow dags test lakefs_gc__sample-repo`` (Airflow on SQLite in a scratch home, the
   checked-in ``config/gc_repositories.yaml``, Spark ``local[*]``);
5. prints the run's figures from its report (``summary.json``, ``space.json``), each one saying what
   it counts and adding up (listed = HEAD + retention + staged + candidates + too young; candidates =
   marked + held back; deleted = marked - already gone - dead letters), the namespace before and
   after, and every seeded object (one row each, in the groups those figures count); it checks every
   object against its expected outcome and every group against the run's figure;
6. stops everything it started (by PID). Scratch files stay in ``build/demo/`` for inspection.
   With ``--keep`` (``make demo ARGS=--keep``) it leaves lakeFS running on what the run left, prints
   ``lakefs-gc explain``, ``space`` and ``whatif`` commands against it (their lakeFS endpoint and
   keys in ``build/demo/lakefs-gc.env``), and stops everything on Ctrl-C.

Exit status 0 only if the run succeeded and storage matches the expectations.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPO = "sample-repo"
DAG_ID = f"lakefs_gc__{REPO}"
ACCESS, SECRET = "AKIAIOSFODEMOEXAMPLE", "demo/secret/key/for/the/emulator"
GRACE = 10
DAY = 86400


def log(msg: str) -> None:
    print(f"[demo {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def gc_command(command: str, ns: str, local_root: str | None, rest: str) -> str:
    """A ``lakefs-gc`` command on the demo's namespace (``report``, ``restore``, ``explain``; a
    local:// namespace needs lakeFS's blockstore root: a relative path when it is under the project)."""
    root = ""
    if ns.startswith("local://") and local_root:
        root = f" --local-root {relative(local_root)}"
    return f"lakefs-gc {command} {ns}{root} {rest}"


def relative(path: str | Path) -> Path:
    p = Path(path).resolve()
    return p.relative_to(ROOT) if p.is_relative_to(ROOT) else p


def figures(
    s, classes: dict, data_before: int, data_after: int, meta_before: int, meta_kept: int, meta_new: int
) -> str:
    """The run's figures as its report has them (``s``: its RunSummary; ``classes``: space.json's
    objects per class), each saying what it counts, and the sums that join them."""
    from lakefs_gc.report.render import human_bytes
    from lakefs_gc.words import plural

    def n(c: str) -> int:
        return int(classes.get(c, {}).get("objects", 0))

    listed, candidates, marked = s.listed_objects or 0, s.candidates or 0, s.num_deleted_objects or 0
    gone, failed = s.already_gone or 0, s.delete_failed or 0
    skipped = f"; {plural(s.slices_skipped, 'slice')} created after it skipped" if s.slices_skipped else ""
    return f"""
  The run's figures (its report: summary.json, space.json), and how they add up:
  listed        {plural(listed, "object")} ({human_bytes(s.listed_bytes or 0)}): every data object older than the cutoff{skipped}
                = {n("head")} read by a branch HEAD + {n("retention")} only in a retention window + {n("staged")} only staged
                + {candidates} candidates + {n("young")} unreferenced but too young
  candidates    {candidates} ({human_bytes(s.candidate_bytes or 0)}): listed, referenced by no kept commit and not staged
                = {marked} marked (the mark's deleted/ list) + {s.held_back or 0} held back
  deleted       {s.deleted} ({human_bytes(s.reclaimed_bytes or 0)} reclaimed) = {marked} marked - {gone} already gone - {failed} dead letters

  The namespace ({s.storage_namespace}), every file before and after the run:
  data/         {plural(data_before, "object")} before = {listed} listed + {data_before - listed} written after the cutoff (not listed)
                {data_after} after = {data_before} - {s.deleted} deleted
  _lakefs/      {plural(meta_before, "file")} of lakeFS's own before (ranges, metaranges, ...): {meta_kept} of them still there;
                + {plural(meta_new, "file")} of this run's report
"""


def table(manifest, deleted: set[str], s, data_before: int) -> tuple[str, list[str]]:
    """Every seeded object, one row each, in the groups the run's figures count (``s``: its
    RunSummary); and each group whose number of rows is not the run's figure."""
    listed, candidates = s.listed_objects or 0, s.candidates or 0
    groups: dict[str, list] = {"deleted": [], "referenced": [], "not listed": []}
    for o in manifest.objects:
        g = "deleted" if o.address in deleted else "not listed" if o.phase == "fresh" else "referenced"
        groups[g].append(o)
    figure = {"deleted": s.deleted, "referenced": listed - candidates, "not listed": data_before - listed}
    heads = {
        "deleted": f"deleted, {len(groups['deleted'])} (the figure 'deleted': candidates marked and swept)",
        "referenced": f"kept, {len(groups['referenced'])} (listed {listed} - {candidates} candidates: held by a "
        "HEAD, a retention window or staging)",
        "not listed": f"kept, {len(groups['not listed'])} (not listed: written after the cutoff)",
    }
    rows = [
        f"  The {len(manifest.objects)} objects the seeding wrote (every object under data/), one row each, "
        "grouped as the figures count them:"
    ]
    wrong = []
    for g, objs in groups.items():
        rows.append(f"  {heads[g]}")
        rows += [f"    {o.path:34} {o.label}" for o in objs]
        if len(objs) != figure[g]:
            wrong.append(f"{len(objs)} rows {g}, the run's figures say {figure[g]}")
    return "\n".join(rows), wrong


def interrupted(*_: object) -> None:
    raise KeyboardInterrupt


def keep(started, target, repo: str, ns: str, scratch: Path, manifest, deleted: set[str], min_age: int) -> int:
    """``--keep``: print commands to try on what the run left (their env in a file), and wait for
    Ctrl-C with lakeFS running; the caller stops what it started."""
    from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY
    from lakefs_gc.storage.settings import ENV_ACCESS_KEY, ENV_ENDPOINT_URL, ENV_REGION, ENV_SECRET_KEY

    env = {"LAKEFS_GC_LAKEFS_ENDPOINT": target.url, ENV_LAKEFS_ACCESS_KEY: target.access_key}
    env[ENV_LAKEFS_SECRET_KEY] = target.secret_key
    if ns.startswith("s3://"):
        env.update({ENV_ACCESS_KEY: target.s3_access_key or "", ENV_SECRET_KEY: target.s3_secret_key or ""})
        env.update({ENV_ENDPOINT_URL: target.s3_endpoint or "", ENV_REGION: target.s3_region})
    env_file = scratch / "lakefs-gc.env"
    env_file.touch(mode=0o600)
    env_file.write_text(
        "# lakeFS as `make demo ARGS=--keep` left it (scripts/demo.py): for the lakefs-gc commands it printed\n"
        + "".join(f"{k}={v}\n" for k, v in env.items() if v)
    )
    # a path whose object the run deleted and that its branch no longer reads (the seed's gone.csv)
    kept_paths = {o.path for o in manifest.objects if o.address not in deleted}
    gone = next(o for o in manifest.objects if o.address in deleted and o.path not in kept_paths)
    branch, path = gone.path.split(":", 1)
    lake = f"--repository {repo} --min-age-seconds {min_age}"
    print(f"""
  lakeFS is left running (--keep) at {target.url} on what the run left; in another shell, from {ROOT}:
    source .venv/bin/activate                  # the lakefs-gc command (once per shell)
    set -a; . {relative(env_file)}; set +a     # lakeFS's endpoint and keys for lakefs-gc
    {gc_command("explain", ns, target.local_root, f"--repository {repo} --ref {branch} {path}")}
    {gc_command("explain", ns, target.local_root, f"--repository {repo} {gone.address}")}
    {gc_command("explain", ns, target.local_root, f"--repository {repo} tables/keep.csv")}
    {gc_command("space", ns, target.local_root, lake)}
    {gc_command("whatif", ns, target.local_root, lake + " --rule recent=0")}
  (min age {min_age}s, the run's: lakeFS's default of a day counts every object here as too young)
""")
    if started is None:
        log("the lakeFS is not this demo's (LAKEFS_GC_TARGET_ENDPOINT): nothing to keep running")
        return 0
    log(f"lakeFS (pid {started.pid}) runs until Ctrl-C")
    # Ctrl-C and a kill stop it, even when it was started with SIGINT ignored (a child inherits an
    # ignored signal, and Python then leaves it ignored: the test suite's workers can start it so)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, interrupted)
    try:
        while started.poll() is None:
            time.sleep(0.5)
    except KeyboardInterrupt:
        log(f"Ctrl-C: stopping lakeFS (pid {started.pid})")
        return 0
    log(f"lakeFS (pid {started.pid}) exited by itself ({started.returncode})")
    return 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--min-age", type=int, default=45, help="the run's min_age_seconds Param (>= 10, the grace period)")
    p.add_argument(
        "--keep",
        action="store_true",
        help="after the run, leave lakeFS running on what it left and print lakefs-gc explain, space and "
        "whatif commands to try on it; Ctrl-C stops everything",
    )
    p.add_argument(
        "--lakefs",
        choices=("emulator", "real"),
        default=os.environ.get("LAKEFS_GC_DEMO_LAKEFS") or "emulator",
        help="the lakeFS API emulator (default; $LAKEFS_GC_DEMO_LAKEFS) or lakeFS 1.84 itself (the "
        "server scripts/setup.sh builds)",
    )
    a = p.parse_args()
    sys.path.insert(0, str(ROOT))
    from lakefs_sandbox.emulator import launcher
    from lakefs_sandbox.seed import DELETED, KEPT, seed, seed_fresh
    from lakefs_sandbox.target import LakeFSTarget, target_from_env

    scratch = ROOT / "build" / "demo"
    shutil.rmtree(scratch, ignore_errors=True)
    (scratch / "airflow").mkdir(parents=True)
    venv_bin = Path(sys.executable).parent
    real = target_from_env()
    emu = server = None
    repo, dag_id, config = REPO, DAG_ID, ROOT / "config" / "gc_repositories.yaml"
    if real is None and a.lakefs == "real":
        from lakefs_sandbox import real_lakefs

        server = real_lakefs.start(scratch / "lakefs")
        target = server.target("local://demo")
    elif real is None:
        block = scratch / "block"
        emu = launcher.start(
            scratch / "emulator.log",
            "--grace-period",
            str(GRACE),
            "--state",
            str(scratch / "emulator-state"),
            "--local-path",
            str(block),
            access_key=ACCESS,
            secret_key=SECRET,
        )
        target = LakeFSTarget(emu.url, ACCESS, SECRET, "local://demo", local_root=str(block))
    else:
        target = real
        repo = f"gc-demo-{int(time.time())}"
        dag_id = f"lakefs_gc__{repo}"
        config = scratch / "gc_repositories.yaml"
        config.write_text(
            (ROOT / "config" / "gc_repositories.yaml")
            .read_text()
            .replace("repository: sample-repo", f"repository: {repo}")
        )
    url = target.url
    migrate = None
    try:
        log(
            f"lakeFS emulator up at {url} (pid {emu.proc.pid})"
            if emu
            else f"lakeFS {real_lakefs.VERSION} itself up at {url} (pid {server.proc.pid}; state, log and "
            f"blockstore in {server.workdir})"
            if server
            else f"using the lakeFS at {url} (LAKEFS_GC_TARGET_ENDPOINT), namespaces under {target.namespace_root}"
        )

        env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
        env.update(
            {
                "AIRFLOW_HOME": str(scratch / "airflow"),
                "AIRFLOW__CORE__PARALLELISM": "4",
                "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
                "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
                "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{scratch / 'airflow' / 'airflow.db'}",
                "AIRFLOW_CONN_LAKEFS_DEFAULT": json.dumps(target.lakefs_conn()),
                "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[*]"}),
                "LAKEFS_GC_CONFIG": str(config),
                "LAKEFS_GC_WORK_DIR": str(scratch / "work"),
                "SPARK_LOCAL_IP": "127.0.0.1",
                "PATH": f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}",
            }
        )
        if target.aws_conn():
            env["AIRFLOW_CONN_AWS_DEFAULT"] = json.dumps(target.aws_conn())
        airflow = [sys.executable, "-m", "airflow"]
        migrate = subprocess.Popen(
            [*airflow, "db", "migrate"],
            env=env,
            cwd=scratch,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

        ns = target.namespace(repo)
        client = target.client()
        offsets = {"old": -10 * DAY, "recent": -3600, "fresh": 0}
        phase = (lambda ph: emu.set_clock(offsets[ph])) if emu else (lambda ph: None)
        manifest = seed(client, repo, ns, phase=phase, backdate=emu is None, local_root=target.local_root)
        seeded_at = time.time()
        if emu:
            emu.set_clock(0)
        log(
            f"seeded {repo} on {ns}: {len(manifest.objects)} objects, commits dated ten days back, GC rules "
            f"retention 1 day; {len(manifest.expected(DELETED))} of them are garbage"
        )

        out, _ = migrate.communicate(timeout=600)
        if migrate.returncode != 0:
            log("airflow db migrate failed:\n" + out.decode(errors="replace")[-3000:])
            return 1
        remaining = seeded_at + a.min_age + 2 - time.time()
        if remaining > 0:
            log(f"waiting {remaining:.0f}s so the seeded objects are older than the minimum age ({a.min_age}s)")
            time.sleep(remaining)
        seed_fresh(client, manifest, phase=phase, local_root=target.local_root)
        log(
            f"wrote {manifest.objects[-1].path} (garbage newer than the run's cutoff will be): "
            f"{len(manifest.objects)} objects seeded in all"
        )
        storage = target.storage(ns)
        before = {o.key: o.size for o in storage.list("", recursive=True)}

        # quarantine (local://): the sweep moves what it deletes under _lakefs/ for 7 days, so that
        # `lakefs-gc restore` can bring the run back
        run_conf = {"mode": "mark_and_sweep", "min_age_seconds": a.min_age, "quarantine_days": 7}
        if emu is None:  # a real lakeFS's grace period is a day: the demo cannot wait that long
            run_conf["unsafe_min_age_override"] = True
        conf = json.dumps(run_conf)
        log(f"running: airflow dags test {dag_id} --conf '{conf}'  (log: {scratch / 'dag-test.log'})")
        t0 = time.monotonic()
        with open(scratch / "dag-test.log", "wb") as fh:
            run = subprocess.run(
                [*airflow, "dags", "test", dag_id, "--conf", conf],
                env=env,
                cwd=scratch,
                stdout=fh,
                stderr=subprocess.STDOUT,
                timeout=1800,
                start_new_session=True,
                check=False,
            )
        took = time.monotonic() - t0
        from lakefs_gc.report import formats
        from lakefs_gc.report.marks import iter_marks

        marks = [summary for _, summary, _ in iter_marks(storage) if summary is not None]
        if run.returncode != 0 or not marks or not marks[0].success:
            log(f"the DAG run failed (exit {run.returncode}); last lines of {scratch / 'dag-test.log'}:")
            print((scratch / "dag-test.log").read_text(errors="replace")[-4000:])
            return 1
        s = marks[0]
        after = {o.key for o in storage.list("", recursive=True)}
        deleted = set(before) - after
        classes = formats.read_space(storage, s.space_file)["attribution"]["classes"] if s.space_file else {}
        data_before = {k for k in before if k.startswith("data/")}
        meta_before = set(before) - data_before
        report = storage.full_uri(f"_lakefs/retention/gc/unified/{s.run_id}/")
        rules = f"lakeFS's rules keep {s.active_commits} commits"
        print(f"""
GC of lakeFS repository {repo} ({ns}) -- DAG run took {took:.0f}s
  mode {s.mode}, cutoff {s.cutoff_time} (min age {s.effective_min_age_seconds}s); {rules}""")
        print(
            figures(
                s,
                classes,
                len(data_before),
                len(data_before & after),
                len(meta_before),
                len(meta_before & after),
                len({k for k in after - meta_before if not k.startswith("data/")}),
            )
        )
        rows, mismatched = table(manifest, deleted, s, len(data_before))
        print(rows)
        print(f"""
  report:                  {report}summary.json (+ deleted/*.parquet, space.json)
  lakefs-gc:               source .venv/bin/activate first (once per shell), from {ROOT}
  read it again:           {gc_command("report", ns, target.local_root, "--run " + str(s.run_id))}
  why one went:            {gc_command("explain", ns, target.local_root, sorted(deleted)[0] if deleted else "")}
  undo the run:            {gc_command("restore", ns, target.local_root, "--run " + str(s.run_id))}
""")
        wrong = [o for o in manifest.objects if (o.address in after) != (o.expect == KEPT)]
        if wrong or len(deleted) != len(manifest.expected(DELETED)) or mismatched:
            log(f"UNEXPECTED: {len(wrong)} object(s) not as expected: {[o.path for o in wrong]}; {mismatched}")
            return 1
        if not a.keep:
            log("every seeded object ended as expected; nothing is left running")
            return 0
        log("every seeded object ended as expected")
        started = emu.proc if emu else server.proc if server else None
        return keep(started, target, repo, ns, scratch, manifest, deleted, a.min_age)
    finally:
        if migrate is not None and migrate.poll() is None:
            launcher.stop_group(migrate)
        if emu is not None:
            emu.stop()
        if server is not None:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
