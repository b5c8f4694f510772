"""Where a Spark application's time went, from its event log (``spark.eventLog.enabled``): the one
reader of that format here (``python -m bench reference`` times lakeFS's GC per phase with it).

An **action** is what the application asked Spark to do: a SQL execution (``parquet at
GarbageCollection.scala:291``: its jobs, and what the driver does for it after them, such as a
write's commit) or an RDD job outside any. :func:`phases` gives the wall seconds of each named group
of actions (actions of one name that overlap count once), the start-up before the application's
start, what no action covers (the driver's own work: API calls, waits, planning) and the shut-down.
:func:`stage_phases` names stages inside actions (by the source files of the code that built their
RDDs, or by the operators in them): those overlap the actions' figures, they say what an action
spent its time on.
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
class Action:
    site: str  # "parquet at GarbageCollection.scala:291"
    start: float
    end: float


@dataclass
class Application:
    start: float = 0.0
    end: float = 0.0
    stages: list[Stage] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)


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


def _stage(info: dict, site: str) -> Stage:
    files: list[str] = []
    scopes: list[str] = []
    for rdd in sorted(info.get("RDD Info", []), key=lambda r: r.get("RDD ID", 0)):
        m = _SITE.search(rdd.get("Callsite", ""))
        if m and m.group(1) not in files:
            files.append(m.group(1))
        scope = json.loads(rdd["Scope"]).get("name", "") if rdd.get("Scope") else ""
        if scope and scope not in scopes:
            scopes.append(scope)
    return Stage(
        info["Stage ID"],
        site,
        files,
        scopes,
        info["Submission Time"] / 1000,
        info["Completion Time"] / 1000,
        info.get("Number of Tasks", 0),
    )


def read(log_dir: Path) -> Application:
    """The one application whose event log is in ``log_dir`` (uncompressed JSON lines)."""
    app = Application()
    job_site: dict[int, str] = {}
    job_sql: dict[int, str] = {}  # job -> its root SQL execution
    job_start: dict[int, float] = {}
    stage_job: dict[int, int] = {}
    sql: dict[str, Action] = {}  # root SQL execution id -> its action
    for e in _events(log_dir):
        kind = e.get("Event", "")
        if kind == "SparkListenerApplicationStart":
            app.start = e["Timestamp"] / 1000
        elif kind == "SparkListenerApplicationEnd":
            app.end = e["Timestamp"] / 1000
        elif kind.endswith("SparkListenerSQLExecutionStart"):
            eid, root = str(e.get("executionId")), str(e.get("rootExecutionId", e.get("executionId")))
            if eid == root:
                sql[eid] = Action(e.get("description", ""), e["time"] / 1000, e["time"] / 1000)
        elif kind.endswith("SparkListenerSQLExecutionEnd"):
            if str(e.get("executionId")) in sql:
                sql[str(e["executionId"])].end = e["time"] / 1000
        elif kind == "SparkListenerJobStart":
            props = e.get("Properties") or {}
            root = props.get("spark.sql.execution.root.id", props.get("spark.sql.execution.id"))
            jid = e["Job ID"]
            if root is not None and str(root) in sql:
                job_sql[jid] = str(root)
            job_site[jid] = props.get("callSite.short") or (sql[job_sql[jid]].site if jid in job_sql else "")
            job_start[jid] = e["Submission Time"] / 1000
            for sid in e.get("Stage IDs", []):
                stage_job[sid] = jid
        elif kind == "SparkListenerJobEnd":
            jid = e["Job ID"]
            if jid not in job_sql:  # an RDD job of its own
                app.actions.append(
                    Action(
                        job_site.get(jid, ""),
                        job_start.get(jid, e["Completion Time"] / 1000),
                        e["Completion Time"] / 1000,
                    )
                )
        elif kind == "SparkListenerStageCompleted":
            info = e["Stage Info"]
            if "Submission Time" in info and "Completion Time" in info:  # else skipped: its output was there
                app.stages.append(_stage(info, job_site.get(stage_job.get(info["Stage ID"], -1), "")))
    app.actions += sql.values()
    app.actions.sort(key=lambda a: a.start)
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
    """Seconds per phase, in the order they began. ``name_of(action_site)`` names an action's phase.
    ``launched``/``exited``: when the process was started and ended (epoch seconds), for the
    start-up and shut-down phases."""
    out: dict[str, float] = {}
    if launched is not None and app.start:
        out["start-up (JVM, SparkContext)"] = app.start - launched
    by_phase: dict[str, list[tuple[float, float]]] = {}
    for action in app.actions:
        by_phase.setdefault(name_of(action.site), []).append((action.start, action.end))
    for name, spans in by_phase.items():
        out[name] = covered(spans)
    if app.start and app.end:
        out["driver, outside Spark actions"] = (app.end - app.start) - covered([(a.start, a.end) for a in app.actions])
    if exited is not None and app.end:
        out["shut-down"] = exited - app.end
    return out


def stage_phases(app: Application, name_of) -> dict[str, float]:
    """Wall seconds of the stages ``name_of(stage)`` names (None: not counted), per name."""
    by_name: dict[str, list[tuple[float, float]]] = {}
    for st in app.stages:
        name = name_of(st)
        if name is not None:
            by_name.setdefault(name, []).append((st.start, st.end))
    return {name: covered(spans) for name, spans in by_name.items()}
