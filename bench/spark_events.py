"""Where a Spark application's time went, from its event log (``spark.eventLog.enabled``): the one
reader of that format here (``python -m bench reference`` times lakeFS's GC per phase with it).

A phase is a set of stages, named by the source files of the code that built their RDDs (the
"Callsite" of each RDD in a stage: ``mapPartitions at DataLister.scala:60``), else by the action
of their job (``parquet at GarbageCollection.scala:283``). A phase's time is the wall time its
stages cover (stages of one phase that overlap count once); stages of two phases may overlap,
and then both count it. What no job covers between the application's start and end is the
driver's own work (API calls, waits, planning): ``driver, outside jobs``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

_SITE = re.compile(r"at ([A-Za-z0-9_$]+\.(?:scala|java|py)):\d+")


@dataclass
class Stage:
    stage_id: int
    job_site: str  # the action of its job
    rdd_files: list[str]  # the source files of its RDDs' call sites, in order
    scopes: list[str]  # the operators (SQL plan nodes, RDD operations) that built its RDDs
    start: float  # seconds (epoch)
    end: float
    tasks: int


@dataclass
class Application:
    start: float = 0.0
    end: float = 0.0
    stages: list[Stage] = field(default_factory=list)
    jobs: list[tuple[float, float, str]] = field(default_factory=list)  # (start, end, call site)


def _log_files(log_dir: Path) -> list[Path]:
    """The files of the one application logged in ``log_dir``: a single file, or (Spark 4's
    rolling logs, ``eventlog_v2_<app>/events_<n>_<app>``) its parts in order."""
    entries = [p for p in Path(log_dir).iterdir() if not p.name.endswith(".inprogress")]
    if len(entries) != 1:
        raise ValueError(f"{log_dir} holds {len(entries)} finished event logs, not one")
    [entry] = entries
    if entry.is_file():
        return [entry]
    parts = [p for p in entry.iterdir() if p.name.startswith("events_")]
    if not parts:
        raise ValueError(f"{entry} holds no events_* file")
    return sorted(parts, key=lambda p: int(p.name.split("_")[1]))


def _events(log_dir: Path):
    for f in _log_files(log_dir):
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)


def read(log_dir: Path) -> Application:
    """The one application whose event log is in ``log_dir`` (uncompressed JSON lines)."""
    app = Application()
    job_site: dict[int, str] = {}
    stage_job: dict[int, int] = {}
    job_start: dict[int, float] = {}
    sql_site: dict[str, str] = {}  # SQL execution id -> its action ("parquet at GarbageCollection.scala:283")
    for e in _events(log_dir):
        kind = e.get("Event")
        if kind == "SparkListenerApplicationStart":
            app.start = e["Timestamp"] / 1000
        elif kind == "SparkListenerApplicationEnd":
            app.end = e["Timestamp"] / 1000
        elif kind.endswith("SparkListenerSQLExecutionStart"):
            sql_site[str(e.get("executionId"))] = e.get("description", "")
        elif kind == "SparkListenerJobStart":
            props = e.get("Properties") or {}
            job_site[e["Job ID"]] = props.get("callSite.short") or sql_site.get(
                str(props.get("spark.sql.execution.root.id", props.get("spark.sql.execution.id"))), "")
            job_start[e["Job ID"]] = e["Submission Time"] / 1000
            for sid in e.get("Stage IDs", []):
                stage_job[sid] = e["Job ID"]
        elif kind == "SparkListenerJobEnd":
            jid = e["Job ID"]
            app.jobs.append((job_start.get(jid, e["Completion Time"] / 1000), e["Completion Time"] / 1000,
                             job_site.get(jid, "")))
        elif kind == "SparkListenerStageCompleted":
            info = e["Stage Info"]
            if "Submission Time" not in info or "Completion Time" not in info:
                continue  # skipped: its output was there already
            files_: list[str] = []
            scopes: list[str] = []
            for rdd in sorted(info.get("RDD Info", []), key=lambda r: r.get("RDD ID", 0)):
                m = _SITE.search(rdd.get("Callsite", ""))
                if m and m.group(1) not in files_:
                    files_.append(m.group(1))
                scope = json.loads(rdd["Scope"]).get("name", "") if rdd.get("Scope") else ""
                if scope and scope not in scopes:
                    scopes.append(scope)
            app.stages.append(Stage(info["Stage ID"], job_site.get(stage_job.get(info["Stage ID"], -1), ""),
                                    files_, scopes, info["Submission Time"] / 1000,
                                    info["Completion Time"] / 1000, info.get("Number of Tasks", 0)))
    return app


def covered(intervals: list[tuple[float, float]]) -> float:
    """Seconds covered by the union of ``intervals``."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def phases(app: Application, name_of, launched: float | None = None, exited: float | None = None) -> dict[str, float]:
    """Seconds per phase. ``name_of(stage)`` names a stage's phase. ``launched``/``exited``: when the
    process was started and ended (epoch seconds), for the start-up and shut-down phases."""
    out: dict[str, float] = {}
    if launched is not None and app.start:
        out["start-up (JVM, SparkContext)"] = app.start - launched
    by_phase: dict[str, list[tuple[float, float]]] = {}
    for st in app.stages:
        by_phase.setdefault(name_of(st), []).append((st.start, st.end))
    for name, spans in by_phase.items():
        out[name] = covered(spans)
    if app.start and app.end:
        out["driver, outside jobs"] = (app.end - app.start) - covered([(a, b) for a, b, _ in app.jobs])
    if exited is not None and app.end:
        out["shut-down"] = exited - app.end
    return out
