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
5. prints a short report and checks every seeded object against its expected outcome;
6. stops everything it started (by PID). Scratch files stay in ``build/demo/`` for inspection.

Exit status 0 only if the run succeeded and storage matches the expectations.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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
        p = Path(local_root).resolve()
        root = f" --local-root {p.relative_to(ROOT) if p.is_relative_to(ROOT) else p}"
    return f".venv/bin/lakefs-gc {command} {ns}{root} {rest}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--min-age", type=int, default=45, help="the run's min_age_seconds Param (>= 10, the grace period)")
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
        after = {o.key for o in storage.list("", recursive=True)}
        summaries = [json.loads(storage.get(k)) for k in after if k.endswith("/summary.json")]
        if run.returncode != 0 or not summaries or not summaries[0].get("success"):
            log(f"the DAG run failed (exit {run.returncode}); last lines of {scratch / 'dag-test.log'}:")
            print((scratch / "dag-test.log").read_text(errors="replace")[-4000:])
            return 1
        s = summaries[0]
        deleted = set(before) - after
        wrong = [o for o in manifest.objects if (o.address in after) != (o.expect == KEPT)]
        report = storage.full_uri(f"_lakefs/retention/gc/unified/{s['run_id']}/")
        print(f"""
GC of lakeFS repository {repo} ({ns}) -- DAG run took {took:.0f}s
  mode {s["mode"]}, cutoff {s["cutoff_time"]} (min age {s["effective_min_age_seconds"]}s)
  active commits kept:     {s.get("active_commits")}
  objects listed (old):    {s.get("listed_objects")} ({human(int(s.get("listed_bytes") or 0))})
  objects deleted:         {s["deleted"]} ({human(int(s.get("reclaimed_bytes") or 0))} reclaimed)
  objects kept:            {len(after & set(before))} of {len(before)} in the namespace
  report:                  {report}summary.json (+ deleted/*.parquet)
  read it again:           {gc_command("report", ns, target.local_root, "--run " + s["run_id"])}
  why one went:            {gc_command("explain", ns, target.local_root, sorted(deleted)[0] if deleted else "")}
  undo the run:            {gc_command("restore", ns, target.local_root, "--run " + s["run_id"])}
""")
        for o in manifest.objects:
            status = "deleted" if o.address in deleted else "kept"
            print(f"  {status:8} {o.path:34} {o.label}")
        if wrong or len(deleted) != len(manifest.expected(DELETED)):
            log(f"UNEXPECTED: {len(wrong)} object(s) not as expected: {[o.path for o in wrong]}")
            return 1
        log("every seeded object ended as expected; nothing is left running")
        return 0
    finally:
        if migrate is not None and migrate.poll() is None:
            launcher.stop_group(migrate)
        if emu is not None:
            emu.stop()
        if server is not None:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
