"""
A chaos run on the compose stack.

Writers change ``chaos-repo`` all along, GC runs are triggered
through Airflow's REST API one after another, each struck by one fault of the seed's plan, and the
checker reads lakeFS against the store after every run; then the faults stop, the writers stop,
and one quiet clean run must collect every piece of garbage old enough.

The run kinds (:func:`kind_of`): clean and ``auto`` runs (incremental on the previous mark when
it can) alternate; every third run is ``mark_only`` (unless its fault aims at the sweep), followed by
a ``sweep_only`` run of that mark (a clean run when the mark failed). Sweeps are slowed
(:data:`SWEEP_CONF`) so that a fault aimed at ``delete`` strikes once the sweep has deleted something.
Every run uses ``expire_leftovers: false`` so that every mark's confirmed candidates stay for the
delete audit. After a run whose sweep was struck and that succeeded, ``lakefs-gc restore`` (in the
scheduler's container, as a person runs it) brings back what it deleted, and every key it says it
restored must be readable (the bucket has versioning on: a restore removes the sweep's delete marker).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.parse
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from lakefs_gc.report import marks
from lakefs_sandbox.chaos.checker import Check, Checker
from lakefs_sandbox.chaos.faults import Fault, Injector, plan
from lakefs_sandbox.chaos.writers import Writers
from lakefs_sandbox.compose_stack import LONG_RUNNING

REPO = "chaos-repo"
DAG_ID = f"lakefs_gc__{REPO}"
BUCKET = "chaos"
MIN_AGE_S = 90  # the runs' min_age_seconds (with unsafe_min_age_override): writers link within seconds
# the quiet run's: the writers have stopped (joined), so no write is between its upload and its link
# and a short min age is safe; it collects nearly all the garbage, the check holds it to that
QUIET_MIN_AGE_S = 10
RUN_DEADLINE_S = 900  # a run not ended by then is "stuck" (a finding), marked failed so the next can start
# a sweep a fault aims at, slow enough to be struck in the middle: keys per DeleteObjects request,
# deletes per second (every other run sweeps at the normal rate)
SWEEP_CONF = {"delete_batch_size": 5, "delete_rate": 5}
SHORT_PHASES = ("prepare_run", "save_report")


def kind_of(index: int, phase: str, previous: str | None) -> str:
    """
    Return the kind of the run ``index``, whose fault aims at ``phase``, after a run of kind ``previous``.

    A mark_only run is followed by the sweep_only run of its mark; a fault aimed at the sweep strikes
    a run that sweeps; every third run otherwise marks only; the rest alternate clean and auto.
    """
    if previous == "mark_only":
        return "sweep_only"
    if index % 3 == 2 and phase not in ("delete", "save_report"):
        return "mark_only"
    return ("clean", "auto")[index % 2]


@dataclass
class RunOutcome:
    """One GC run of the chaos run, its fault, and the check after it."""

    index: int
    kind: str
    run_id: str
    fault: dict
    struck_during: list[str]  # the tasks running when the fault struck ([] between runs)
    state: str = ""  # success | failed | stuck
    tasks: dict[str, str] = field(default_factory=dict)
    tries: dict[str, int] = field(default_factory=dict)
    reason: str = ""  # a failed run's failed tasks and their last error lines
    seconds: float = 0.0
    deleted: int | None = None
    restore: dict | None = None
    check: Check | None = None


class Chaos:
    """Drives one chaos run on ``stack`` (:class:`lakefs_sandbox.compose_stack.Stack`, up, with docker/chaos.compose.yaml)."""

    def __init__(self, stack, api, lakefs_client, s3, storage, seed: int, log=None, min_age_s: int = MIN_AGE_S):
        """``s3``: boto3 on the stack's bucket; ``storage``: the chaos namespace opened by the GC (its reports)."""
        self.stack, self.api, self.client, self.s3, self.storage = stack, api, lakefs_client, s3, storage
        self.seed = seed
        self.min_age_s = min_age_s
        self.log = log or (lambda *a: print(*a, flush=True))
        self.injector = Injector(stack)
        self.checker = Checker(lakefs_client, REPO, s3, BUCKET, REPO, storage)
        self.outcomes: list[RunOutcome] = []
        self.progress: Path | None = None  # where each run's outcome is written as it ends

    # -- set-up ---------------------------------------------------------------------------------
    def create_repository(self) -> None:
        import lakefs_sdk

        self.s3.create_bucket(Bucket=BUCKET)
        self.s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        self.client.repositories_api.create_repository(
            lakefs_sdk.RepositoryCreation(name=REPO, storage_namespace=f"s3://{BUCKET}/{REPO}", default_branch="main")  # type: ignore[call-arg]
        )
        self.client.repositories_api.set_gc_rules(
            REPO, lakefs_sdk.GarbageCollectionRules(default_retention_days=7, branches=[])
        )
        for i in range(6):
            self.client.objects_api.upload_object(REPO, "main", f"base/{i}.bin", content=f"base {i}".encode())
        self.client.commits_api.commit(REPO, "main", lakefs_sdk.CommitCreation(message="base"))  # type: ignore[call-arg]

    # -- the REST API, through faults -----------------------------------------------------------
    def _call(self, method: str, path: str, body: dict | None = None, patience_s: float = 300):
        """Call Airflow's API, retrying while it (or its database) is down."""
        deadline = time.monotonic() + patience_s
        while True:
            try:
                return self.api.call(method, path, body)
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
                if isinstance(e, urllib.error.HTTPError) and e.code < 500 and e.code != 401:
                    raise
                if time.monotonic() > deadline:
                    raise
                if isinstance(e, urllib.error.HTTPError) and e.code == 401:
                    self.api.refresh_token()  # the api-server restarted
                time.sleep(2)

    def _tis(self, path: str) -> dict[str, dict]:
        return {t["task_id"]: t for t in self._call("GET", path + "/taskInstances")["task_instances"]}

    def _conf(self, kind: str, fault: Fault | None) -> dict:
        aimed = fault.phase if fault is not None else ""
        conf: dict[str, Any] = {
            "min_age_seconds": QUIET_MIN_AGE_S if kind == "quiet" else self.min_age_s,
            "unsafe_min_age_override": True,
            "expire_leftovers": False,
            "mode": "mark_and_sweep",
            "flow": "clean" if kind in ("clean", "quiet") else "auto",
            # where the bytes go is a report only (it never changes what is deleted) and a Spark job:
            # attributed in the runs whose fault aims at it
            "attribute_space": aimed == "attribute_space",
            **(SWEEP_CONF if aimed == "delete" else {}),
        }
        if kind == "mark_only":
            conf["mode"] = "mark_only"
        elif kind == "sweep_only":
            mark = self._last_mark_only()
            if mark:
                conf.update(mode="sweep_only", mark_id=mark)
            else:
                conf["flow"] = "clean"
        return conf

    def _last_mark_only(self) -> str | None:
        last = self.outcomes[-1] if self.outcomes else None
        if last is None or last.kind != "mark_only" or last.state != "success":
            return None
        found = self._run_found(last.run_id)
        return found.mark_id if found else None

    def _run_found(self, run_id: str) -> marks.FoundRun | None:
        """Return the GC run of an Airflow run (its mark, and its own summary), None when it wrote none."""
        try:
            return marks.find_run(self.storage, run_id)
        except LookupError:
            return None

    # -- one run --------------------------------------------------------------------------------
    def _strike(self, fault: Fault, path: str | None, struck: list[str], done: threading.Event) -> None:
        """Wait for the fault's phase (its task running), strike, wait, heal, wait healthy."""
        if path is not None:
            deadline = time.monotonic() + RUN_DEADLINE_S
            while not done.is_set() and time.monotonic() < deadline:
                try:
                    tis = self._tis(path)
                except Exception:
                    time.sleep(1)
                    continue
                if (tis.get(fault.phase) or {}).get("state") == "running":
                    break
                time.sleep(0.5)
            if fault.phase == "delete":  # in the middle of the sweep: once it has deleted something
                self._wait_for_a_delete(done)
            # prepare_run and save_report take seconds: strike them early enough to find them running
            time.sleep(fault.delay_s / 8 if fault.phase in SHORT_PHASES else fault.delay_s)
            try:
                struck += sorted(t for t, ti in self._tis(path).items() if ti["state"] == "running")
            except Exception as e:
                struck.append(f"(unknown: {type(e).__name__})")
        self.log(
            f"  fault: {fault.way} {fault.service} for {fault.down_s}s (aimed at {fault.phase}; running: {struck})"
        )
        self.injector.strike(fault)
        time.sleep(fault.down_s)
        self.injector.heal(fault)
        for service in LONG_RUNNING:  # the whole stack back (a lost database can take others down with it)
            self.injector.wait_healthy(service, deadline_s=600)

    def _wait_for_a_delete(self, done: threading.Event, patience_s: float = 120) -> None:
        """
        Return once a confirmed candidate the store held when the sweep started is gone (or the run ended).

        Only a sweep deletes under ``data/`` (the writers delete through lakeFS, which keeps the
        objects). The plain listing, not the versions': the stand-in's ListObjectVersions deep-copies
        every version of the bucket on each page (moto 5.2.5), and until docker/standins/minio.py
        stopped moto tracking them, kept the copies: polled, it exhausted the machine's memory by run 28.
        """
        deadline = time.monotonic() + patience_s
        held: set[str] | None = None
        while not done.is_set() and time.monotonic() < deadline:
            try:
                if held is None:
                    held = self.checker.confirmed_candidates() & self.checker.stored().keys()
                elif not held <= self.checker.stored().keys():
                    return
            except Exception:
                pass  # the store is the service struck, or busy: look again
            time.sleep(0.3)

    def _striking(self, fault: Fault, path: str | None, struck: list[str], done: threading.Event, errors: list) -> None:
        try:
            self._strike(fault, path, struck, done)
        except Exception as e:  # said in the run's outcome: a fault that could not be healed stops the chaos run
            errors.append(f"{type(e).__name__}: {e}")

    def one(self, index: int, kind: str, fault: Fault | None) -> RunOutcome:
        conf = self._conf(kind, fault)
        struck: list[str] = []
        if fault is not None and fault.phase == "between":
            self._strike(fault, None, struck, threading.Event())
        t0 = time.monotonic()
        run = self._call("POST", f"/api/v2/dags/{DAG_ID}/dagRuns", {"logical_date": None, "conf": conf})
        run_id = run["dag_run_id"]
        path = f"/api/v2/dags/{DAG_ID}/dagRuns/{urllib.parse.quote(run_id)}"
        self.log(f"run {index} ({kind}, {conf['mode']}): {run_id}")
        done = threading.Event()
        errors: list[str] = []
        striker = None
        if fault is not None and fault.phase != "between":
            striker = threading.Thread(
                target=self._striking,
                args=(fault, path, struck, done, errors),
                daemon=True,
            )
            striker.start()
        out = RunOutcome(index, kind, run_id, fault.as_dict() if fault else {}, struck)
        while True:
            state = self._call("GET", path, patience_s=600)["state"]
            if state in ("success", "failed"):
                break
            if time.monotonic() - t0 > RUN_DEADLINE_S:
                state = "stuck"
                self._call("PATCH", path, {"state": "failed"})
                break
            time.sleep(1)
        done.set()
        if striker is not None:
            striker.join(RUN_DEADLINE_S)
        if errors:
            raise RuntimeError(f"run {index}: the fault {fault} was not healed: {errors[0]}")
        out.state, out.seconds = state, round(time.monotonic() - t0, 1)
        tis = self._tis(path)
        out.tasks = {t: ti["state"] for t, ti in tis.items()}
        out.tries = {t: ti.get("try_number", 0) for t, ti in tis.items()}
        if state != "success":
            out.reason = self._reason(path, tis)
        found = self._run_found(run_id)
        out.deleted = found.summary.deleted if found else None
        swept = ""
        if state == "success" and found and conf["mode"] != "mark_only":
            swept = conf.get("mark_id") or found.mark_id
        out.check = self._check(swept_mark=swept)
        if state == "success" and fault is not None and fault.phase == "delete" and (out.deleted or 0) > 0:
            try:
                out.restore = self.restore(run_id)
            except Exception as e:  # recorded (a problem of the verdict), the chaos run goes on
                out.restore = {
                    "exit": -1,
                    "keys": 0,
                    "restored": 0,
                    "unreadable": [],
                    "line": f"{type(e).__name__}: {e}",
                }
        self.log(
            f"  {state} in {out.seconds:.0f}s, deleted {out.deleted}; live {out.check.live}, lost "
            f"{len(out.check.lost)}, deletes outside the candidates {len(out.check.outside)}, forgotten "
            f"{len(out.check.forgotten)}, deleted twice {out.check.deleted_twice}"
            + (f"; restore: {out.restore}" if out.restore else "")
            + (f"\n  why: {out.reason[:600]}" if out.reason else "")
        )
        return out

    def _check(self, **kw) -> Check:
        """Run the checker's check, again when lakeFS or the store answers an error (just healed)."""
        for attempt in range(5):
            try:
                return self.checker.check(**kw)
            except Exception as e:
                if attempt == 4:
                    raise
                self.log(f"  check: {type(e).__name__}: {str(e)[:200]}; again in 10 s")
                time.sleep(10)
        raise AssertionError("unreachable")

    def _reason(self, path: str, tis: dict[str, dict]) -> str:
        """Return the failed tasks and the last error lines of their logs."""
        out = []
        for task, ti in tis.items():
            if ti["state"] != "failed":
                continue
            try:
                lines = self.api.task_log(path, task, ti.get("try_number") or 1)
                errors = [ln for ln in lines if "Error" in ln or "error" in ln or "refus" in ln] or lines
                out.append(f"{task}: {errors[-1][:300] if errors else '(empty log)'}")
            except Exception as e:
                out.append(f"{task}: (log not readable: {e})")
        return "; ".join(out) or "(no failed task)"

    def restore(self, run_id: str) -> dict:
        """``lakefs-gc restore`` of the run in the scheduler's container; every key it restored must be readable."""
        p = self.stack.compose(
            "exec", "-T", "airflow-scheduler", "lakefs-gc", "restore", f"s3://{BUCKET}/{REPO}",
            "--run", run_id, "--limit", "0", timeout=600, check=False,
        )  # fmt: skip
        rows = [ln.split("  ", 1) for ln in p.stdout.splitlines() if ln.startswith("data/")]
        restored = [k for k, rest in rows if rest.strip().startswith("restored")]
        unreadable = [k for k in restored if not self.checker.readable(k)]
        said = [ln for ln in p.stdout.splitlines() if ln.startswith("mark ")] or (
            p.stderr or p.stdout
        ).strip().splitlines()[-3:]
        return {"exit": p.returncode, "keys": len(rows), "restored": len(restored), "unreadable": unreadable[:20],
                "line": " | ".join(said)[:600]}  # fmt: skip

    # -- the whole chaos run --------------------------------------------------------------------
    def run(self, runs: int, writers: int = 2) -> dict:
        faults = plan(self.seed, runs)
        ws = Writers(writers, self.client, REPO, self.s3, BUCKET, self.seed)
        ws.start()
        t0 = time.monotonic()
        try:
            for i, fault in enumerate(faults):
                previous = self.outcomes[-1].kind if self.outcomes else None
                self.outcomes.append(self.one(i, kind_of(i, fault.phase, previous), fault))
                if self.progress is not None:  # what is known so far, should the chaos run itself fail
                    self.progress.write_text(json.dumps([self._as_dict(o) for o in self.outcomes], default=str))
        finally:
            ws.stop()
        ok, failed, commits = ws.totals()
        self.log(f"writers stopped: {sum(ok.values())} operations took effect, {sum(failed.values())} failed")
        # the quiet run: no faults, no writers; everything older than its cutoff and unreferenced goes.
        # Its cutoff is counted from its DAG run's start, after the trigger: the check's, from the
        # trigger, is older (5 s more for rounding)
        triggered = datetime.now(UTC)
        quiet = self.one(len(faults), "quiet", None)
        cutoff = triggered - timedelta(seconds=QUIET_MIN_AGE_S + 5)
        final = self._check(quiet_cutoff=cutoff, ever_committed=commits)
        quiet.check = final
        return {
            "seed": self.seed,
            "runs": [self._as_dict(o) for o in self.outcomes],
            "quiet": self._as_dict(quiet),
            "writers": {"ok": dict(ok), "failed": dict(failed), "commits": len(commits)},
            "seconds": round(time.monotonic() - t0, 1),
        }

    @staticmethod
    def _as_dict(o: RunOutcome) -> dict:
        from dataclasses import asdict

        return asdict(o)
