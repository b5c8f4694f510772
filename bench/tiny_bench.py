"""The fixed cost of a GC run: the demo's tiny repository end to end, per task, beside floors.

    .venv/bin/python -m bench tiny [--runs N]

Runs the main job (``scripts/demo.py``: the GC DAG by ``airflow dags test`` on the emulator's
``sample-repo``, 14 objects, 5 of them garbage; it exits 1 unless exactly the garbage is gone) and
reads its task log for where the time goes, per task: Airflow's start of the task, spark-submit to
a running SparkContext (the launcher, the driver's JVM and Python), the step itself (what the job
reports), and the end (the session's stop, the JVM's exit, Airflow's end of the task); a step the
task runs in its own process, without Spark (``spark.in_process_max_keys``: every Spark step of a
repository this small), shows its total only. Measured in the same run, the floors:

  spark-submit   a job that opens a session, runs one JVM action and one Python action, and stops,
                 with the driver's fast start (lakefs_gc.spark.jvm) and without it: the least one
                 Spark step costs
  dags test      ``airflow dags test`` of the same DAG file up to its first task, and after its last
                 (the CLI, the DAG's parse, the in-process API): Airflow's own share

Target (issue 29): the run at most 45 s end to end on 2 cores, on a quiet machine (informational:
exit 0 unless the demo fails).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 45.0
LOG = ROOT / "build" / "demo" / "dag-test.log"
STEPS = (
    "prepare_run",
    "list_slices",
    "mark_uncommitted",
    "list_committed",
    "compute_candidates",
    "delete",
    "save_report",
)

_TS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z")
_BARE = """
import sys, time
t0 = time.monotonic()
from pyspark.sql import SparkSession
spark = SparkSession.builder.appName("bench tiny: floor").getOrCreate()
spark.range(10).count()
spark.sparkContext.parallelize(range(4), 2).map(lambda x: x).collect()
spark.stop()
"""


def _ts(line: str) -> float | None:
    m = _TS.match(line)
    return datetime.fromisoformat(m.group(1)).timestamp() if m else None


def task_times(log: str) -> tuple[dict[str, dict[str, float]], float, float]:
    """Per task: start, submit, context, result, end (epoch seconds, where the log has them); and the
    first and last timestamps of the log."""
    tasks: dict[str, dict[str, float]] = {}
    current = None
    first = last = None
    for line in log.splitlines():
        t = _ts(line)
        if t is None:
            continue
        first = first if first is not None else t
        last = t
        m = re.search(r"\[DAG TEST\] starting task_id=(\w+)", line)
        if m:
            current = m.group(1)
            tasks[current] = {"start": t}
            continue
        if current is None:
            continue
        rec = tasks[current]
        if "Task started" in line and "submit" not in rec:  # the task's own start, past dags test's own work
            rec["start"] = t
        elif "Spark-Submit cmd:" in line:
            rec.setdefault("submit", t)
        elif "SparkContext: Running Spark version" in line:
            rec.setdefault("context", t)
        elif re.search(rf"lakefs-gc {current}: ", line) or "in this task's process, without Spark" in line:
            rec.setdefault("result", t)
        elif "new_state=success" in line or "new_state=failed" in line:
            rec["end"] = t
    return tasks, first or 0.0, last or 0.0


def _floor(binary: str, options: str | None, runs: int) -> float:
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    times = []
    with tempfile.TemporaryDirectory(prefix="bench-tiny-") as tmp:
        job = Path(tmp) / "bare.py"
        job.write_text(_BARE)
        cmd = [binary, "--master", "local[*]", "--conf", "spark.ui.enabled=false", "--conf", "spark.log.level=WARN"]
        if options:
            cmd += ["--conf", f"spark.driver.extraJavaOptions={options}"]
        for _ in range(runs):
            t0 = time.monotonic()
            subprocess.run([*cmd, str(job)], env=env, cwd=tmp, check=True, capture_output=True, timeout=600)
            times.append(time.monotonic() - t0)
    return statistics.median(times)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench tiny", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="runs of each spark-submit floor (the median is shown)")
    args = ap.parse_args(argv)
    from lakefs_gc.spark.jvm import C1_ONLY, driver_java_options

    binary = str(Path(sys.executable).parent / "spark-submit")
    fast = driver_java_options(binary, sys.executable)  # the archive made now if it is not there yet
    print(f"floors: spark-submit of a bare job, median of {args.runs} ...", flush=True)
    floor_fast = _floor(binary, fast, args.runs)
    floor_plain = _floor(binary, None, args.runs)
    print("the tiny run: scripts/demo.py (the GC DAG by airflow dags test, 14 objects) ...", flush=True)
    t0 = time.monotonic()
    demo = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo.py")], capture_output=True, text=True, timeout=1800, check=False
    )
    if demo.returncode != 0:
        print(demo.stdout[-4000:], demo.stderr[-4000:], sep="\n")
        print("the demo failed: no figures")
        return 1
    took = float(re.search(r"DAG run took (\d+)s", demo.stdout).group(1))  # the demo's clock: CLI start to end
    tasks, first, last = task_times(LOG.read_text(errors="replace"))
    rows, spark_steps = [], 0
    for step in STEPS:
        r = tasks.get(step)
        if not r or "end" not in r:
            continue
        total = r["end"] - r["start"]
        if "context" in r:
            spark_steps += 1
            launch = r["context"] - r["submit"]
            work = r.get("result", r["end"]) - r["context"]
            end = r["end"] - r.get("result", r["end"])
            rows.append((step, total, r["submit"] - r["start"], launch, work, end))
        else:
            rows.append((step, total, None, None, total, None))
    in_tasks = sum(r[1] for r in rows)
    airflow_own = took - in_tasks  # the CLI's start, the DAG's parse, the in-process API, the run's end

    def f(x):
        return f"{x:7.1f}" if x is not None else "      -"

    print()
    print(f"  the tiny run (sample-repo, 14 objects), code at {_head()}, {os.cpu_count()} cores")
    print("  task                  total  to submit  submit->context  context->result  result->end")
    for step, total, pre, launch, work, end in rows:
        print(f"  {step:20} {f(total)}    {f(pre)}          {f(launch)}          {f(work)}      {f(end)}")
    print(f"  {'in the tasks':20} {f(in_tasks)}")
    print(
        f"  {'dags test, its own':20} {f(airflow_own)}   (outside the tasks: the CLI, the DAG's parse, the "
        f"in-process API; its log spans {last - first:.1f} s)"
    )
    print()
    print(
        f"  floor: a bare spark-submit, fast start        {floor_fast:7.1f} s  x {spark_steps} Spark step(s) = "
        f"{floor_fast * spark_steps:.1f} s"
    )
    print(
        f"  floor: a bare spark-submit, JVM defaults      {floor_plain:7.1f} s  (fast start saves "
        f"{floor_plain - floor_fast:.1f} s a step)"
    )
    verdict = "PASS" if took <= TARGET_S else "MISS"
    print(f"  the DAG run end to end (demo's clock)         {took:7.1f} s  target <= {TARGET_S:.0f} s: {verdict}")
    if verdict == "MISS":
        print(
            f"  reason: {spark_steps} spark-submit(s) at {floor_fast:.1f} s at least each, and Airflow's own "
            f"{airflow_own:.1f} s, leave {TARGET_S - floor_fast * spark_steps - airflow_own:.1f} s for the work"
        )
    print(
        f"  (bench wall time {time.monotonic() - t0:.0f} s, the demo's wait for its minimum age included; "
        f"JVM options of the fast start: {fast or C1_ONLY})"
    )
    return 0


def _head() -> str:
    try:
        return (
            subprocess.run(
                ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            ).stdout.strip()
            or "?"
        )
    except (OSError, subprocess.SubprocessError):
        return "?"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
