"""Differential runs against lakeFS's own Spark GC: `python -m bench reference [--help]`.

For each scenario a repository is built through lakefs-sdk on an ``s3://`` namespace (an S3 server
on 127.0.0.1 started here: SeaweedFS, or moto with ``--s3 moto``; or the bucket of a real lakeFS given
by ``LAKEFS_GC_TARGET_*``), then lakeFS's GC (``io.treeverse.gc.GarbageCollection``, mark only, a
spark-submit) and ours (``mark_only``: the Spark steps in one local SparkSession) mark it, and the two
``deleted/`` address sets are compared. Both are timed per phase (lakeFS's from its Spark event log,
bench.spark_events; ours per step), and the CPU the S3 server and lakeFS used meanwhile is read from
``/proc``: a server near one core's worth is what a GC waits on.
Each difference is printed with its reason; an unexplained one, any address only we would
delete, or any address ours would delete that a live branch shows (staged or committed), makes
the exit status 1.

lakeFS's GC is not part of this project: give its assembly jar and the Hadoop S3 jars it needs
(``hadoop-aws`` matching Spark's Hadoop, the AWS SDK v2 bundle, and the AWS SDK v1 bundle the
GC's own S3 client uses) with ``LAKEFS_GC_REFERENCE_JAR`` and ``LAKEFS_GC_REFERENCE_JARS``
(comma-separated). ``scripts/reference_jars.sh`` fetches the Hadoop pieces from Maven Central and
tries the GC itself (``io.lakefs:lakefs-spark-client_2.13``). Without them the reference side is
skipped, saying why, and ours runs alone on every scenario (still judged against the live objects).

lakeFS is lakeFS 1.84 itself by default (the server ``scripts/setup.sh`` builds, S3 blockstore on
the S3 server started here, ``--lakefs real``), or the emulator (``--lakefs emulator``; scenario h2 needs it),
or, with ``LAKEFS_GC_TARGET_ENDPOINT`` (see include/lakefs_sandbox/target.py), a lakeFS of your own
whose namespace root is ``s3://...``. Our side runs in ``make test`` against lakeFS itself
(``tests/real_lakefs/test_bench_reference.py``), so a broken call here fails the suite.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DAY = 86400
MIN_AGE = 10  # seconds: both GCs' minimum object age (lakeFS's debug knob; our unsafe override)
ACCESS, SECRET = "AKIAIOSFOLREFERENCE", "reference/secret/key"


def log(msg: str) -> None:
    print(f"[reference {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------------------------------------
# the reference GC
# ---------------------------------------------------------------------------------------------


class ReferenceUnavailable(RuntimeError):
    pass


def reference_jars() -> tuple[str, list[str]]:
    """(GC assembly jar, extra jars) from the environment; a clear error when missing."""
    jar = os.environ.get("LAKEFS_GC_REFERENCE_JAR")
    extra = [j for j in (os.environ.get("LAKEFS_GC_REFERENCE_JARS") or "").split(",") if j]
    if not jar or not Path(jar).is_file():
        raise ReferenceUnavailable(
            "lakeFS's Spark GC jar is not available: set LAKEFS_GC_REFERENCE_JAR to an assembly of "
            "io.lakefs:lakefs-spark-client_2.13 and LAKEFS_GC_REFERENCE_JARS to hadoop-aws + the AWS SDK "
            "bundles (scripts/reference_jars.sh fetches what Maven Central serves)"
        )
    missing = [j for j in extra if not Path(j).is_file()]
    if missing:
        raise ReferenceUnavailable(f"LAKEFS_GC_REFERENCE_JARS names missing files: {missing}")
    return jar, extra


@dataclass
class S3Place:
    endpoint: str
    access_key: str
    secret_key: str
    region: str = "us-east-1"

    @property
    def endpoint_url(self) -> str:  # the name lakefs_sandbox's servers use (real_lakefs.start's store)
        return self.endpoint

    def options(self):
        """The same place as our storage settings (``lakefs_gc.storage.S3Options``)."""
        from lakefs_gc.storage import S3Options

        return S3Options(
            endpoint_url=self.endpoint,
            access_key_id=self.access_key,
            secret_access_key=self.secret_key,
            region=self.region,
        )


def reference_action(site: str) -> str:
    """The phase of an action of lakeFS's GC (``GarbageCollection.run`` of clients/spark 0.22.0, in
    lakeFS v1.84's tree; bench.spark_events): named by the line that asked for it."""
    m = re.match(r"(\w+) at (\w+)\.scala:(\d+)", site)
    what, file, line = (m.group(1), m.group(2), int(m.group(3))) if m else ("", "", 0)
    if file == "GarbageCollection" and what in ("isEmpty", "first"):
        return "first slice: data/ listed to its first row"
    if file == "ActiveCommitsAddressLister":
        return "the commits CSV lakeFS prepared"
    if file == "GarbageCollection" and what == "parquet" and line < 250:
        return "lakeFS's uncommitted Parquet (its schema)"
    if file == "GarbageCollection" and what == "parquet":
        return "mark: data/ listed, minus committed and uncommitted, deleted/ written"
    if file == "GarbageCollection" and what == "text":
        return "deleted.text written (the same set again)"
    if file == "GarbageCollection" and what == "count":
        return "the count for summary.json"
    return f"other: {site}"


def reference_stage(stage) -> str | None:
    """What a stage inside lakeFS's GC's mark did, where it can be told (None: not counted): the
    kept commits' ranges (LakeFSContext's RDDs), the listing of data/ (the per-slice UDF, run in the
    stage that reads the slice ids' shuffle), and the final stage that subtracts and writes."""
    if not stage.job_site.startswith("parquet at GarbageCollection.scala"):
        return None
    if "LakeFSContext.scala" in stage.rdd_files:
        return "of which: the kept commits' ranges read"
    if "WriteFiles" in stage.scopes:
        return "of which: the final stage (subtract, write)"
    if (
        stage.scopes[:1] == ["Exchange"]
        and any(x.startswith("WholeStageCodegen") for x in stage.scopes)
        and not {"AQEShuffleRead", "InMemoryTableScan"} & set(stage.scopes)
    ):
        return "of which: data/ listed (a UDF per slice)"
    return None


def run_reference(
    repo: str,
    lakefs_url: str,
    ak: str,
    sk: str,
    s3: S3Place,
    work: Path,
    timeout: int = 3600,
    phases: dict[str, float] | None = None,
) -> tuple[float, str]:
    """lakeFS's GC in mark-only mode; returns (seconds, its output). ``phases`` (when given) gets
    the seconds of each phase, read from the application's Spark event log (bench.spark_events)."""
    from bench import spark_events

    jar, extra = reference_jars()
    venv_bin = Path(sys.executable).parent
    events = work / f"events-{repo}"
    events.mkdir(parents=True, exist_ok=True)
    conf = {
        "spark.hadoop.lakefs.api.url": lakefs_url.rstrip("/") + "/api/v1",
        "spark.hadoop.lakefs.api.access_key": ak,
        "spark.hadoop.lakefs.api.secret_key": sk,
        "spark.hadoop.lakefs.gc.do_mark": "true",
        "spark.hadoop.lakefs.gc.do_sweep": "false",
        "spark.hadoop.lakefs.debug.gc.uncommitted_min_age_seconds": str(MIN_AGE),
        "spark.hadoop.fs.s3a.endpoint": s3.endpoint,
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.access.key": s3.access_key,
        "spark.hadoop.fs.s3a.secret.key": s3.secret_key,
        "spark.hadoop.fs.s3a.endpoint.region": s3.region,
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": events.as_uri(),
        "spark.eventLog.compress": "false",
    }
    cmd = [str(venv_bin / "spark-submit"), "--master", "local[2]", "--class", "io.treeverse.gc.GarbageCollection"]
    if extra:
        cmd += ["--jars", ",".join(extra)]
    for k, v in conf.items():
        cmd += ["--conf", f"{k}={v}"]
    cmd += [jar, repo, s3.region]
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PATH": f"{venv_bin}:{os.environ.get('PATH', '')}",
        "AWS_REQUEST_CHECKSUM_CALCULATION": "when_required",
        "AWS_RESPONSE_CHECKSUM_VALIDATION": "when_required",
    }
    t0, launched = time.perf_counter(), time.time()
    with open(work / f"reference-{repo}.log", "w") as fh:
        r = subprocess.run(
            cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout, start_new_session=True, check=False
        )
    took, exited = time.perf_counter() - t0, time.time()
    out = (work / f"reference-{repo}.log").read_text(errors="replace")
    if r.returncode != 0:
        raise RuntimeError(
            f"lakeFS's GC failed (exit {r.returncode}) on {repo}; log {work}/reference-{repo}.log:\n" + out[-3000:]
        )
    if phases is not None:
        app = spark_events.read(events)
        phases.update(spark_events.phases(app, reference_action, launched, exited))
        phases.update(spark_events.stage_phases(app, reference_stage))
        with open(work / f"reference-{repo}-stages.txt", "w") as fh:  # what the phases were made of
            for st in app.stages:
                fh.write(
                    f"{st.stage_id}\t{st.end - st.start:.2f}s\t{st.tasks} tasks\t{reference_stage(st)}\t"
                    f"{st.job_site}\t{','.join(st.rdd_files)}\t{','.join(st.scopes)}\n"
                )
    return took, out


# ---------------------------------------------------------------------------------------------
# ours, mark only, in one SparkSession
# ---------------------------------------------------------------------------------------------

_SPARK = None


def spark_session():
    """One local SparkSession for our side (kept in ``_SPARK``: ``main`` stops it at the end)."""
    global _SPARK
    from lakefs_sandbox.inprocess import local_session

    if _SPARK is None:
        _SPARK = local_session("lakefs-gc reference diff")
    return _SPARK


def run_ours(
    repo: str,
    lakefs_url: str,
    ak: str,
    sk: str,
    s3: S3Place,
    work: Path,
    *,
    flow: str = "clean",
    sweep: bool = False,
    phases: dict[str, float] | None = None,
) -> tuple[float, str]:
    """Our mark (mark_only): prepare_run and mark_uncommitted, then list_committed, list_slices and
    compute_candidates in one SparkSession (lakefs_sandbox.inprocess). With ``sweep``, a whole run
    (mark_and_sweep through save_report: it deletes, and later incremental runs build on it).
    ``flow``: the run's flow Param (clean, incremental). Returns (seconds, run id); ``phases`` (when
    given) gets the seconds of each step (the SparkSession is made before, once per process)."""
    from lakefs_gc.contract import RunSettings
    from lakefs_gc.lakefs.client import LakeFSClient
    from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY
    from lakefs_gc.steps.prepare_run import prepare_run
    from lakefs_gc.storage import S3Options
    from lakefs_sandbox.inprocess import run_steps

    made = _SPARK is None
    t_session = time.perf_counter()
    spark = spark_session()
    if phases is not None and made:  # lakeFS's GC's start-up is in its figures: ours too, when it happens here
        phases["SparkSession start (once per process; not in the total)"] = time.perf_counter() - t_session
    t0 = time.perf_counter()
    environ = {
        ENV_LAKEFS_ACCESS_KEY: ak,
        ENV_LAKEFS_SECRET_KEY: sk,
        **S3Options(access_key_id=s3.access_key, secret_access_key=s3.secret_key).to_env(),
    }
    settings = RunSettings(
        mode="mark_and_sweep" if sweep else "mark_only",
        min_age_seconds=MIN_AGE,
        unsafe_min_age_override=True,
        confirm_after_seconds=0,
        max_delete_share=1.0,
        flow=flow,
    )
    marks: list[tuple[str, float]] = [("prepare_run", t0)]  # (step, when it started)
    with LakeFSClient(lakefs_url, ak, sk) as client:
        ctx = prepare_run(
            client,
            repo,
            settings,
            now=datetime.now(UTC),
            airflow_run_id=f"ours-{repo}",
            work_dir=str(work),
            parallelism=2,
            storage_options=s3.options(),
        )
        if ctx.flow != flow:
            raise RuntimeError(f"our {flow} run of {repo} would run {ctx.flow}: {ctx.flow_reason}")
        results = run_steps(
            spark,
            ctx,
            client,
            environ,
            until="save_report" if sweep else "compute_candidates",
            between=lambda step: marks.append((step, time.perf_counter())),
        )
    took = time.perf_counter() - t0
    if phases is not None:
        ends = [when for _, when in marks[1:]] + [t0 + took]
        phases.update({step: end - start for (step, start), end in zip(marks, ends)})
    return took, results["mark_uncommitted"].run_id


# ---------------------------------------------------------------------------------------------
# comparing
# ---------------------------------------------------------------------------------------------


def unified_runs(st) -> set[str]:
    from lakefs_gc.report.layout import UNIFIED

    return {
        o.key.split("/")[4]
        for o in st.list(UNIFIED, recursive=True)
        if o.key.endswith("summary.json") and o.key.count("/") == 5
    }


def deleted_set(st, run_id: str) -> set[str]:
    from lakefs_gc.report.formats import read_addresses
    from lakefs_gc.report.layout import deleted_dir
    from lakefs_gc.report.marks import parquet_parts

    out: set[str] = set()
    for key in parquet_parts(st, deleted_dir(run_id)):
        out.update(a for a in read_addresses(st, key) if a is not None)
    return out


@dataclass
class Outcome:
    scenario: str
    repo: str
    objects: int
    reference: set[str] | None  # None: lakeFS's GC not run (skipped, see `skipped`)
    ours: set[str]
    reference_seconds: float
    ours_seconds: float
    explained: dict[str, str] = field(default_factory=dict)  # address -> reason
    live: set[str] = field(default_factory=set)  # visible on a live branch, staged or committed
    skipped: str = ""  # why lakeFS's GC did not run
    clean: set[str] | None = None  # two runs in a row: our clean mark at the moment of the incremental one
    reference_phases: dict[str, float] = field(default_factory=dict)  # phase -> seconds (bench.spark_events)
    ours_phases: dict[str, float] = field(default_factory=dict)  # step -> seconds
    servers_cpu: dict[str, dict[str, float]] = field(default_factory=dict)  # side -> server -> CPU seconds
    garbage: set[str] | None = None  # what the scenario knows to be garbage, exactly (the big one)

    @property
    def only_reference(self) -> set[str]:
        return self.reference - self.ours if self.reference is not None else set()

    @property
    def only_ours(self) -> set[str]:
        return self.ours - self.reference if self.reference is not None else set()

    @property
    def unexplained(self) -> set[str]:
        return (self.only_reference | self.only_ours) - set(self.explained)

    def ok(self) -> bool:
        # never one where ours deletes what the reference keeps, unless explained; never a live one;
        # exactly the garbage where the scenario knows it
        return (
            not self.unexplained
            and not self.ours & self.live
            and (self.clean is None or self.ours <= self.clean)
            and (self.garbage is None or self.ours == self.garbage)
        )


def explain(outcome: Outcome, facts: dict) -> None:
    """Reasons for known, documented differences (reference hazards, lakeFS's reference doc H1-H8)."""
    for a in outcome.only_reference:
        if a in facts.get("staged_live", set()) and facts.get("h2"):
            outcome.explained[a] = (
                "H2: staged on a live branch; lakeFS's GC read only the last "
                "prepare_uncommited page's location, which was empty, and lost it"
            )


# ---------------------------------------------------------------------------------------------
# scenarios: each builds a repository (on `ns`) and returns facts for `explain`
# ---------------------------------------------------------------------------------------------


def _rules(default: int, **branches: int):
    import lakefs_sdk

    return lakefs_sdk.GarbageCollectionRules(
        default_retention_days=default,
        branches=[lakefs_sdk.GarbageCollectionRule(branch_id=b, retention_days=d) for b, d in branches.items()],
    )


def scenario_sample(client, repo: str, ns: str, rng: random.Random) -> dict:
    from lakefs_sandbox.seed import seed

    seed(client, repo, ns, backdate=True)
    return {}


def scenario_lakefs_shape(client, repo: str, ns: str, rng: random.Random) -> dict:
    """The shape of lakeFS's own GC end-to-end test: branches with different retention,
    back-dated commits, a deleted branch, a reset branch, staged and staged-then-deleted objects."""
    import lakefs_sdk

    now = int(time.time())
    o, b, c = client.objects_api, client.branches_api, client.commits_api
    client.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=ns, default_branch="main")
    )

    def commit(branch: str, days: float, msg: str) -> None:
        c.commit(repo, branch, lakefs_sdk.CommitCreation(message=msg, date=int(now - days * DAY)))

    def put(branch: str, path: str) -> None:
        o.upload_object(repo, branch, path, content=f"{branch}:{path}:{uuid.uuid4()}".encode())

    for i, days in enumerate((15, 12, 8, 5, 2)):
        put("main", "tables/a.csv")
        put("main", f"tables/part-{i}.csv")
        commit("main", days, f"main {days}d")
    b.create_branch(repo, lakefs_sdk.BranchCreation(name="b1", source="main"))
    for days in (4, 1):
        put("b1", "tables/a.csv")
        commit("b1", days, f"b1 {days}d")
    b.create_branch(repo, lakefs_sdk.BranchCreation(name="gone", source="main"))
    put("gone", "tables/only-on-gone.csv")
    commit("gone", 3, "gone 3d")
    put("gone", "tables/staged-on-gone.csv")
    b.delete_branch(repo, "gone")
    b.create_branch(repo, lakefs_sdk.BranchCreation(name="rst", source="main"))
    put("rst", "wip/x.csv")
    b.reset_branch(repo, "rst", lakefs_sdk.ResetCreation(type="reset"))
    for i in range(3):
        put("main", f"staging/s{i}.json")
    put("main", "staging/tmp.json")
    o.delete_object(repo, "main", "staging/tmp.json")
    client.repositories_api.set_gc_rules(repo, _rules(1, main=10, b1=3))
    return {}


def random_ops(
    client,
    repo: str,
    branches: list[str],
    paths: list[str],
    rng: random.Random,
    ops: int,
    commit_date,
    *,
    max_branches: int,
    name: str,
    weights: tuple[int, ...],
    branched=lambda new, source: None,
) -> None:
    """``ops`` random operations on ``branches`` (kept up to date): uploads and overwrites, deletes,
    commits dated ``commit_date(branch)``, new branches from a random one (``branched(new,
    source)`` is told), resets and branch deletions; ``weights`` for (put, delete, commit, branch,
    reset, drop). What lakeFS refuses (a missing path, an empty commit) is part of the game."""
    import lakefs_sdk
    from lakefs_sdk.exceptions import ApiException

    o, b, c = client.objects_api, client.branches_api, client.commits_api
    made = len(branches)  # new branch names never repeat one dropped earlier
    for _ in range(ops):
        op = rng.choices(["put", "delete", "commit", "branch", "reset", "drop"], weights=weights)[0]
        br = rng.choice(branches)
        try:
            if op == "put":
                o.upload_object(repo, br, rng.choice(paths), content=uuid.uuid4().bytes)
            elif op == "delete":
                o.delete_object(repo, br, rng.choice(paths))
            elif op == "commit":
                c.commit(repo, br, lakefs_sdk.CommitCreation(message="c", date=commit_date(br), allow_empty=True))
            elif op == "branch" and len(branches) < max_branches:
                new, made = f"{name}{made}", made + 1
                b.create_branch(repo, lakefs_sdk.BranchCreation(name=new, source=br))
                branches.append(new)
                branched(new, br)
            elif op == "reset":
                b.reset_branch(repo, br, lakefs_sdk.ResetCreation(type="reset"))
            elif op == "drop" and br != "main":
                b.delete_branch(repo, br)
                branches.remove(br)
        except ApiException as e:
            if e.status not in (400, 404, 409):
                raise


def scenario_random(client, repo: str, ns: str, rng: random.Random, ops: int = 60) -> dict:
    """A random history: branches from random refs, back-dated commits, uploads, overwrites,
    deletes, resets, branch deletions, staged changes left at the end, random rules."""
    import lakefs_sdk

    now = int(time.time())
    client.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=ns, default_branch="main")
    )
    branches = ["main"]
    paths = [f"p/{i:02d}" for i in range(12)]
    age = {"main": rng.uniform(20, 30)}  # days back of each branch's next commit (decreasing)

    def commit_date(br: str) -> int:
        age[br] = max(0.0, age[br] - rng.uniform(0, 5))
        return int(now - age[br] * DAY)

    def branched(new: str, source: str) -> None:  # its commits start where its source's are
        age[new] = age[source]

    random_ops(
        client,
        repo,
        branches,
        paths,
        rng,
        ops,
        commit_date,
        max_branches=6,
        name="b",
        weights=(3, 1, 2, 1, 1, 1),
        branched=branched,
    )
    rules = {br: rng.randint(1, 15) for br in branches if rng.random() < 0.5}
    client.repositories_api.set_gc_rules(repo, _rules(rng.randint(1, 10), **rules))
    return {}


def scenario_lineage(client, repo: str, ns: str, rng: random.Random, s3=None) -> dict:
    """What lakeFS users do every day beyond commits: merges (two parents, the destination's HEAD
    first; one squashed), a conflict resolved by a strategy, reverts and cherry-picks (of a merge
    commit too, with a parent number), tags (one on a deleted branch's commit outside the
    retention: lakeFS's walk never starts from tags), copies (same branch from a staged source,
    across branches, from a commit and from a tag; lakeFS copies the data to a new address) and
    the staging link flow (written with S3, linked, left staged or committed; one written and never
    linked). Merges, reverts and cherry-picks carry lakeFS's own clock."""
    import hashlib

    import lakefs_sdk

    from lakefs_gc.storage import open_storage, parse_namespace, relative_to

    now = int(time.time())
    o, b, c, r = client.objects_api, client.branches_api, client.commits_api, client.refs_api
    client.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=ns, default_branch="main")
    )

    def put(branch: str, path: str) -> None:
        o.upload_object(repo, branch, path, content=f"{branch}:{path}:{uuid.uuid4()}".encode())

    def commit(branch: str, days: float, msg: str) -> str:
        return c.commit(repo, branch, lakefs_sdk.CommitCreation(message=msg, date=int(now - days * DAY))).id

    def branch(name: str, source: str) -> None:
        b.create_branch(repo, lakefs_sdk.BranchCreation(name=name, source=source))

    def copy(dest_branch: str, dest: str, src_ref: str, src: str) -> None:
        o.copy_object(repo, dest_branch, dest, lakefs_sdk.ObjectCopyCreation(src_path=src, src_ref=src_ref))

    for i in range(4):
        put("main", f"tables/t{i}.csv")
    base = commit("main", 25, "base")
    client.tags_api.create_tag(repo, lakefs_sdk.TagCreation(id="v0", ref=base))
    branch("feat", "main")
    put("feat", "tables/t0.csv")
    o.delete_object(repo, "feat", "tables/t1.csv")
    put("feat", "tables/feat.csv")
    feat1 = commit("feat", 18, "feat 1")
    client.tags_api.create_tag(repo, lakefs_sdk.TagCreation(id="v1", ref=feat1))
    put("main", "tables/t2.csv")
    put("main", "tables/main.csv")
    commit("main", 15, "main 1")
    merge = r.merge_into_branch(repo, "feat", "main", merge=lakefs_sdk.Merge(message="merge feat")).reference
    # both sides change t3: a conflict, resolved by letting the source win
    put("feat", "tables/t3.csv")
    commit("feat", 10, "feat 2")
    put("main", "tables/t3.csv")
    commit("main", 9, "main 2")
    r.merge_into_branch(repo, "feat", "main", merge=lakefs_sdk.Merge(strategy="source-wins"))
    branch("hot", "main")
    put("hot", "hot/fix.csv")
    commit("hot", 8, "hot")
    squash = r.merge_into_branch(repo, "hot", "main", merge=lakefs_sdk.Merge(squash_merge=True)).reference
    b.delete_branch(repo, "hot")
    b.revert_branch(repo, "main", lakefs_sdk.RevertCreation(ref=squash, parent_number=0))
    branch("rel", base)
    b.cherry_pick(repo, "rel", lakefs_sdk.CherryPickCreation(ref=feat1))
    # the revert of the merge first: once a merge commit is cherry-picked, lakeFS 1.84 answers 404
    # for its full id until it restarts (its cherry-pick writes into the cached commit's metadata)
    branch("undo", "main")
    b.revert_branch(repo, "undo", lakefs_sdk.RevertCreation(ref=merge, parent_number=1))
    branch("rel2", base)
    b.cherry_pick(repo, "rel2", lakefs_sdk.CherryPickCreation(ref=merge, parent_number=1))
    b.delete_branch(repo, "feat")  # feat's commits: a tag and the merges' second parents
    # an old branch, tagged and deleted: outside every retention, its objects are garbage to both GCs
    branch("gone", base)
    put("gone", "gone/only.csv")
    gone = commit("gone", 30, "gone")
    client.tags_api.create_tag(repo, lakefs_sdk.TagCreation(id="gone-tag", ref=gone))
    b.delete_branch(repo, "gone")
    client.tags_api.delete_tag(repo, "v0")
    # copies: staged source, across branches, from a commit, from a tag
    put("main", "staged/src.csv")
    copy("main", "copies/same.csv", "main", "staged/src.csv")
    copy("main", "copies/from-rel.csv", "rel", "tables/feat.csv")
    copy("rel", "copies/from-commit.csv", base, "tables/t0.csv")
    copy("rel", "copies/from-tag.csv", "v1", "tables/feat.csv")
    commit("rel", 1, "copies")
    # the staging link flow, the client writing the object itself (signature part of the key)
    if s3 is not None:
        st = open_storage(ns, s3)
        roots = parse_namespace(ns).roots()
        for path, link, then_commit in (
            ("linked/staged.bin", True, False),
            ("linked/committed.bin", True, True),
            ("linked/never.bin", False, False),
        ):
            loc = client.staging_api.get_physical_address(repo, "rel2", path)
            data = f"{path}:{uuid.uuid4()}".encode()
            st.put(relative_to(roots, loc.physical_address), data)
            if link:
                client.staging_api.link_physical_address(
                    repo,
                    "rel2",
                    path,
                    lakefs_sdk.StagingMetadata(
                        staging=loc, checksum=hashlib.md5(data).hexdigest(), size_bytes=len(data)
                    ),
                )
            if then_commit:
                commit("rel2", 0.5, "linked")
    # staged and dropped: garbage
    put("main", "staged/tmp.csv")
    o.delete_object(repo, "main", "staged/tmp.csv")
    client.repositories_api.set_gc_rules(repo, _rules(7, main=10))
    # lakeFS 1.84 answers 404 for a cherry-picked merge commit's full id until it restarts, and
    # lakeFS's GC reads every commit by it (ApiClient.getCommit): the harness restarts lakeFS
    return {"cherry_picked": True}


def scenario_h2(client, repo: str, ns: str, rng: random.Random) -> dict:
    """Hazard H2 on a lakeFS that pages ``prepare_uncommited`` (the emulator with one row a page;
    lakeFS cuts pages at 20 MiB or 1 minute): the last page is empty, so its location is "".
    Staged objects on a live branch must be kept."""
    import lakefs_sdk

    from lakefs_gc.storage import parse_namespace, relative_to

    client.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=ns, default_branch="main")
    )
    client.objects_api.upload_object(repo, "main", "committed.csv", content=b"c")
    client.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message="c", date=int(time.time()) - 5 * DAY))
    roots = parse_namespace(ns).roots()
    staged = set()
    for i in range(3):
        st = client.objects_api.upload_object(repo, "main", f"staged/{i}.json", content=uuid.uuid4().bytes)
        staged.add(relative_to(roots, st.physical_address))
    client.repositories_api.set_gc_rules(repo, _rules(1))
    return {"staged_live": staged, "h2": True}


def _big_live(i: int) -> tuple[str, bytes]:
    """:func:`scenario_big`'s i-th committed object: its path and its bytes (its own: no two alike)."""
    path = f"t/{i % 50:02d}/obj{i:07d}"
    return path, path.encode()


def _upload_part(host: str, username: str, password: str, repo: str, part: int, parts: int, live: int) -> None:
    """One process's share of :func:`scenario_big`'s uploads through lakeFS (8 threads)."""
    from lakefs_sandbox.seed import sdk_client

    def upload(idx: int) -> None:
        c = sdk_client(host, username, password)
        for i in range(idx, live, parts * 8):
            path, data = _big_live(i)
            c.objects_api.upload_object(repo, "main", path, content=data)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(upload, range(part, parts * 8, parts)))


def _put_part(s3, bucket: str, objects: list[tuple[str, bytes]]) -> None:
    """One process's share of :func:`scenario_big`'s writes straight into the namespace (8 threads)."""
    from lakefs_gc.storage import make_s3_client

    s3c = make_s3_client(s3)

    def put(chunk: list[tuple[str, bytes]]) -> None:
        for k, data in chunk:
            s3c.put_object(Bucket=bucket, Key=k, Body=data)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, [objects[i::8] for i in range(8)]))


def scenario_big(
    client,
    repo: str,
    ns: str,
    rng: random.Random,
    objects: int = 100_000,
    s3=None,
    processes: int = 4,
    suspicious: float = 0.0,
) -> dict:
    """``objects`` objects: half uploaded through lakeFS and committed on main, half written
    straight into the namespace's data/ slices and never referenced (garbage); ``processes``
    processes of 8 threads each do either half (one Python process tops out at about 500 requests
    a second). lakeFS refuses imports from the repository's own namespace, so uploads are the way in.
    Every object's bytes are its own, but for the ``suspicious`` share of the garbage, which holds a
    committed object's bytes: the candidates our staged check must ask lakeFS about (lakeFS's
    uncommitted mark omits an entry re-staged with its committed identity)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    import lakefs_sdk

    from lakefs_gc.storage import parse_namespace

    client.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=ns, default_branch="main")
    )
    p = parse_namespace(ns)
    live = objects // 2
    cfg = client.repositories_api.api_client.configuration
    t = time.perf_counter()
    spawn = multiprocessing.get_context("spawn")  # never fork a process that may run a SparkSession's threads
    with ProcessPoolExecutor(processes, mp_context=spawn) as pool:
        list(
            pool.map(
                _upload_part,
                *zip(
                    *[(cfg.host, cfg.username, cfg.password, repo, part, processes, live) for part in range(processes)]
                ),
            )
        )
    client.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message=f"{live} objects"))
    log(f"  uploaded and committed {live:,} objects through lakeFS in {time.perf_counter() - t:.0f}s")
    n_sus = round((objects - live) * suspicious)
    garbage = [
        (
            f"{p.prefix}/data/garbage{i % 50:02d}/obj{i:07d}",
            _big_live(rng.randrange(live))[1] if i < n_sus else f"garbage {i}".encode(),
        )
        for i in range(objects - live)
    ]
    t = time.perf_counter()
    with ProcessPoolExecutor(processes, mp_context=spawn) as pool:
        list(pool.map(_put_part, *zip(*[(s3, p.bucket, garbage[i::processes]) for i in range(processes)])))
    log(
        f"  wrote {len(garbage):,} unreferenced objects ({n_sus:,} with a committed object's bytes) in "
        f"{time.perf_counter() - t:.0f}s"
    )
    client.repositories_api.set_gc_rules(repo, _rules(30))
    return {"garbage": {k[len(p.prefix) + 1 :] if p.prefix else k for k, _ in garbage}}


def churn_between_runs(client, repo: str, ns: str, rng: random.Random, ops: int = 40) -> dict:
    """What happens between two scheduled GC runs, on any repository built above: first the
    design's trap (the objects staged when the first run marked are committed now, in commits
    dated back before that run, as a client may date them), then random uploads, overwrites,
    deletes, commits, resets, new branches and branch deletions, some staged changes left."""
    import lakefs_sdk

    now = int(time.time())
    c = client.commits_api
    branches = branch_ids(client, repo)
    committed_staged = 0
    for br in branches:  # the trap: staged at the first mark, committed after it, dated before it
        if client.branches_api.diff_branch(repo, br, amount=1).results:
            c.commit(repo, br, lakefs_sdk.CommitCreation(message="staged at the first run", date=now - 2 * DAY))
            committed_staged += 1
    paths = [f"churn/{i:02d}" for i in range(10)] + ["tables/a.csv", "tables/t0.csv", "staging/s0.json"]
    random_ops(
        client,
        repo,
        branches,
        paths,
        rng,
        ops,
        lambda br: now - int(rng.uniform(0, 3) * DAY),
        max_branches=8,
        name="churn",
        weights=(3, 1, 1, 1, 1, 1),
    )
    return {"committed_staged_branches": committed_staged}


# ---------------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Harness:
    lakefs_url: str
    ak: str
    sk: str
    s3: S3Place
    bucket: str
    prefix: str
    work: Path
    client: object = None
    servers: dict[str, int] = field(default_factory=dict)  # name -> PID: their CPU during each GC is reported
    restart: Callable[[], None] | None = None  # lakeFS itself again on its state and port (after a cherry-pick)

    def _cpu(self) -> dict[str, float]:
        return {name: cpu_seconds(pid) for name, pid in self.servers.items()}

    def _cpu_since(self, before: dict[str, float]) -> dict[str, float]:
        return {name: cpu - before.get(name, 0.0) for name, cpu in self._cpu().items()}

    def storage(self, ns: str):
        from lakefs_gc.storage import open_storage

        return open_storage(ns, self.s3.options())

    def _build(self, scenario: str, build, seed: int, **kw):
        repo = f"ref-{scenario}-{uuid.uuid4().hex[:6]}".replace("_", "-")
        ns = f"s3://{self.bucket}/{self.prefix}/{repo}"
        rng = random.Random(seed)
        facts = build(self.client, repo, ns, rng, **kw) or {}
        if facts.pop("cherry_picked", False) and self.restart is not None:
            log("  lakeFS restarted on its state (a cherry-picked merge commit is found by its id only then)")
            self.restart()
        return repo, ns, rng, facts, self.storage(ns)

    def _moment(self, repo: str, ns: str, st, outcome: Outcome) -> None:
        """The objects listed and the live set now; once every object is older than both cutoffs,
        lakeFS's GC marks: ``outcome``'s listed, live, reference (None and ``skipped`` saying why
        when its jar is not given), its seconds, phases and the servers' CPU meanwhile."""
        built = time.time()
        outcome.objects = sum(1 for o in st.list("data/", recursive=True))
        outcome.live = live_addresses(self.client, repo, ns)
        time.sleep(max(0.0, built + MIN_AGE + 2 - time.time()))  # every object older than both cutoffs
        before, cpu = unified_runs(st), self._cpu()
        try:
            outcome.reference_seconds, _ = run_reference(
                repo, self.lakefs_url, self.ak, self.sk, self.s3, self.work, phases=outcome.reference_phases
            )
        except ReferenceUnavailable as e:
            outcome.skipped = str(e)
            return
        outcome.servers_cpu["reference"] = self._cpu_since(cpu)
        [ref_run] = unified_runs(st) - before
        outcome.reference = deleted_set(st, ref_run)

    def _ours(self, repo: str, outcome: Outcome | None = None, **kw) -> tuple[float, str]:
        """Our run; with ``outcome``, its seconds, steps and the servers' CPU go there."""
        if outcome is None:
            return run_ours(repo, self.lakefs_url, self.ak, self.sk, self.s3, self.work, **kw)
        cpu = self._cpu()
        took, run_id = run_ours(
            repo, self.lakefs_url, self.ak, self.sk, self.s3, self.work, phases=outcome.ours_phases, **kw
        )
        outcome.servers_cpu["ours"] = self._cpu_since(cpu)
        outcome.ours_seconds = took
        return took, run_id

    def run(self, scenario: str, build, seed: int, **kw) -> Outcome:
        repo, ns, _, facts, st = self._build(scenario, build, seed, **kw)
        outcome = Outcome(scenario, repo, 0, None, set(), 0.0, 0.0)
        self._moment(repo, ns, st, outcome)
        _, our_run = self._ours(repo, outcome)
        outcome.ours = deleted_set(st, our_run)
        outcome.garbage = facts.get("garbage")
        explain(outcome, facts)
        return outcome

    def run_two(self, scenario: str, build, seed: int, **kw) -> Outcome:
        """Two GC runs in a row (issue 18): ours runs clean and sweeps; then churn
        (:func:`churn_between_runs`); then, at the same moment, lakeFS's GC marks, ours marks
        incrementally, and ours marks clean. The incremental ``deleted/`` set must be a subset of
        lakeFS's (and of our clean one): what it leaves to the next clean run is explained, never
        the other way round."""
        repo, ns, rng, facts, st = self._build(scenario, build, seed, **kw)
        time.sleep(MIN_AGE + 2)
        first_s, first = self._ours(repo, sweep=True)
        log(f"  first run (ours, clean, sweeping): {len(deleted_set(st, first))} deleted in {first_s:.1f}s")
        facts |= churn_between_runs(self.client, repo, ns, rng)
        outcome = Outcome(scenario, repo, 0, None, set(), 0.0, 0.0)
        self._moment(repo, ns, st, outcome)
        _, incr = self._ours(repo, outcome, flow="incremental")
        _, clean = self._ours(repo)
        outcome.ours, outcome.clean = deleted_set(st, incr), deleted_set(st, clean)
        explain(outcome, facts)
        for a in outcome.only_reference & outcome.clean:
            outcome.explained.setdefault(
                a, "left by the incremental run to the next clean run (our clean run at the same moment marks it too)"
            )
        return outcome


def start_lakefs(workdir: Path, s3: S3Place):
    """lakeFS 1.84 itself on an S3 blockstore at ``s3`` (lakefs_sandbox.real_lakefs), stopped by the caller."""
    from lakefs_sandbox import real_lakefs

    return real_lakefs.start(workdir, "s3", s3)


def live_addresses(client, repo: str, ns: str) -> set[str]:
    """Namespace-relative addresses visible on every branch (staged and committed), from the API."""
    from lakefs_gc.storage import parse_namespace, relative_to

    roots = parse_namespace(ns).roots()
    out: set[str] = set()
    for branch in branch_ids(client, repo):
        after = ""
        while True:
            objs = client.objects_api.list_objects(repo, branch, after=after, amount=1000)
            out.update(a for a in (relative_to(roots, x.physical_address) for x in objs.results) if a)
            if not objs.pagination.has_more:
                break
            after = objs.pagination.next_offset
    return out


def branch_ids(client, repo: str) -> list[str]:
    """Every branch of ``repo`` (lakefs-sdk, all pages)."""
    out: list[str] = []
    after = ""
    while True:
        page = client.branches_api.list_branches(repo, after=after, amount=1000)
        out += [r.id for r in page.results]
        if not page.pagination.has_more:
            return out
        after = page.pagination.next_offset


def report(o: Outcome) -> None:
    if o.ours & o.live:
        status = "OURS DELETES LIVE"
    elif o.garbage is not None and o.ours != o.garbage:
        status = "OURS IS NOT EXACTLY THE GARBAGE"
    elif o.clean is not None and not o.ours <= o.clean:
        status = "INCREMENTAL NOT WITHIN CLEAN"
    elif o.reference is None:
        status = "reference skipped"
    else:
        status = "same" if not (o.only_reference or o.only_ours) else ("explained" if o.ok() else "UNEXPLAINED")
    ref = f"{len(o.reference):>6,}" if o.reference is not None else "     -"
    print(
        f"{o.scenario:16} {o.repo:28} objects {o.objects:>7,}  live {len(o.live):>6,}  reference {ref}  "
        f"ours {len(o.ours):>6,}  only-ref {len(o.only_reference):>3}  only-ours {len(o.only_ours):>3}  "
        f"[{status}]  times ref {o.reference_seconds:6.1f}s ours {o.ours_seconds:6.1f}s",
        flush=True,
    )
    if o.clean is not None:
        print(
            f"    the second run was incremental: it marks {len(o.ours):,}, our clean run at the same moment "
            f"{len(o.clean):,}; incremental within clean: {o.ours <= o.clean}"
        )
        for a in sorted(o.ours - o.clean)[:20]:
            print(f"    only the incremental run {a}")
    for side, phases in (("lakeFS's GC (spark-submit)", o.reference_phases), ("ours (mark_only)", o.ours_phases)):
        if phases:
            print(f"    {side}, seconds per phase:")
            for name, secs in phases.items():
                print(f"      {name:44} {secs:8.1f}")
    for side, cpu in o.servers_cpu.items():
        took = o.reference_seconds if side == "reference" else o.ours_seconds
        print(
            f"    servers' CPU during {side}'s {took:.1f} s: "
            + ", ".join(f"{name} {secs:.1f} s ({secs / took:.0%} of one core)" for name, secs in cpu.items())
        )
    for a in sorted(o.ours & o.live)[:20]:
        print(f"    ours deletes a live object {a}")
    if o.garbage is not None:
        print(
            f"    the scenario's garbage: {len(o.garbage):,} objects; ours marks exactly it: {o.ours == o.garbage}"
            + ("" if o.reference is None else f"; lakeFS's GC marks exactly it: {o.reference == o.garbage}")
        )
        for a in sorted(o.garbage - o.ours)[:20]:
            print(f"    garbage ours keeps {a}")
        for a in sorted(o.ours - o.garbage)[:20]:
            print(f"    ours marks what is not garbage {a}")
    for a in sorted(o.only_reference | o.only_ours)[:20]:
        side = "only reference" if a in o.only_reference else "only ours"
        print(f"    {side:15} {a}  -- {o.explained.get(a, 'UNEXPLAINED')}")


def run_scenarios(h: Harness, runs) -> tuple[list[Outcome], list[str]]:
    """Each scenario of ``runs`` (name, build, seed, keyword arguments) to its verdict, reported as
    it ends; one that fails (lakeFS, a GC, the harness) is reported FAILED with its error and the
    rest still run. The outcomes, and the names of the failed scenarios."""
    import traceback

    outcomes, failed = [], []
    for name, build, seed, scenario_kw in runs:
        log(f"scenario {name}")
        kw = dict(scenario_kw)
        try:
            o = h.run_two(name, build, seed, **kw) if kw.pop("two", False) else h.run(name, build, seed, **kw)
        except Exception as e:
            failed.append(name)
            print(f"{name:16} [FAILED] {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
            traceback.print_exc(file=sys.stderr)
            continue
        report(o)
        outcomes.append(o)
    return outcomes, failed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench reference", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--scenarios",
        default="sample,lakefs_shape,lineage,random,h2,big,two_runs",
        help="comma-separated: sample, lakefs_shape, lineage (merges, reverts, cherry-picks, tags, "
        "copies, the link flow), random, h2 (emulator only), big, two_runs (a clean run, "
        "churn, then an incremental run beside lakeFS's GC)",
    )
    p.add_argument("--random", type=int, default=20, help="how many random histories")
    p.add_argument("--seed", type=int, default=1, help="seed of the first random history")
    p.add_argument("--big", type=int, default=100_000, help="objects in the big repository")
    p.add_argument(
        "--big-suspicious",
        type=float,
        default=0.0,
        help="the share of the big repository's garbage that holds a committed object's bytes (every "
        "other object's are its own): what our staged check asks lakeFS about",
    )
    p.add_argument(
        "--lakefs",
        choices=("real", "emulator"),
        default="real",
        help="lakeFS 1.84 itself (default; the server scripts/setup.sh builds) or the emulator, on "
        "the S3 server this command starts (ignored with LAKEFS_GC_TARGET_ENDPOINT)",
    )
    p.add_argument(
        "--two-runs",
        type=int,
        default=3,
        help="two GC runs in a row (ours clean and sweeping, churn, then lakeFS's GC beside our "
        "incremental run): on lakefs_shape, lineage and this many random histories",
    )
    p.add_argument(
        "--s3",
        choices=("seaweedfs", "moto"),
        default="seaweedfs",
        help="the S3 server started here: SeaweedFS (default: Go, every core, a prefix listed by a "
        "seek; scripts/seaweedfs.sh builds it on first use, about 10 minutes) or moto (one Python "
        "process that scans every key for each listing: at 100,000 objects it is what lakeFS's GC "
        "waits on)",
    )
    a = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    try:
        reference_jars()  # say early and clearly why the reference side will be skipped
    except ReferenceUnavailable as e:
        print(f"python -m bench reference: the reference side is skipped, ours runs alone: {e}", file=sys.stderr)
    os.environ.setdefault("AWS_REQUEST_CHECKSUM_CALCULATION", "when_required")
    os.environ.setdefault("AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required")
    from lakefs_sandbox.emulator import launcher
    from lakefs_sandbox.target import target_from_env

    work = Path(tempfile.mkdtemp(prefix="lakefs-gc-reference-"))
    procs = []
    try:
        target = target_from_env()
        servers: dict[str, int] = {}
        if target is None:
            if a.s3 == "moto":
                port = launcher.free_port()
                s3proc = launcher.start_server(
                    [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                    work / "moto.log",
                    f"http://127.0.0.1:{port}/moto-api/",
                )
                s3 = S3Place(f"http://127.0.0.1:{port}", "testing", "testing")
            else:
                from lakefs_sandbox.cloud_servers import start_seaweedfs

                srv = start_seaweedfs(work)
                s3proc = srv.proc
                s3 = S3Place(srv.endpoint_url, srv.access_key, srv.secret_key)
            procs.append(s3proc)
            servers[a.s3] = s3proc.pid
            if a.lakefs == "real":
                server = start_lakefs(work / "lakefs", s3)
                procs.append(server.proc)
                servers["lakeFS"] = server.proc.pid
                url, ak, sk = server.url, server.access_key, server.secret_key
                log(f"lakeFS {server.url} itself (1.84) on {a.s3} {s3.endpoint}")

                def restart_lakefs() -> None:
                    nonlocal server
                    from lakefs_sandbox import real_lakefs

                    old = server.proc
                    server = real_lakefs.restart(server)
                    procs[procs.index(old)] = server.proc
                    servers["lakeFS"] = server.proc.pid
            else:
                emu = launcher.start(
                    work / "emulator.log",
                    "--s3-endpoint",
                    s3.endpoint,
                    "--s3-access-key",
                    s3.access_key,
                    "--s3-secret-key",
                    s3.secret_key,
                    "--grace-period",
                    str(MIN_AGE),
                    access_key=ACCESS,
                    secret_key=SECRET,
                )
                procs.append(emu.proc)
                servers["emulator"] = emu.proc.pid
                url, ak, sk = emu.url, ACCESS, SECRET
                log(f"lakeFS emulator {url} on {a.s3} {s3.endpoint}")
            bucket, prefix = "reference", "repos"
        else:
            from lakefs_gc.storage import parse_namespace

            if target.blockstore_type != "s3":
                raise SystemExit("lakeFS's GC supports s3/azure/gs namespaces only: give an s3:// namespace root")
            ns = parse_namespace(target.namespace_root)
            s3 = S3Place(
                target.s3_endpoint or "", target.s3_access_key or "", target.s3_secret_key or "", target.s3_region
            )
            url, ak, sk, bucket, prefix = target.url, target.access_key, target.secret_key, ns.bucket, ns.prefix
            log(f"real lakeFS {url}, namespaces under {target.namespace_root}")
        from lakefs_gc.storage import make_s3_client
        from lakefs_sandbox.seed import sdk_client

        s3c = make_s3_client(s3.options())
        with contextlib.suppress(s3c.exceptions.ClientError):  # already there
            s3c.create_bucket(Bucket=bucket)
        h = Harness(
            url,
            ak,
            sk,
            s3,
            bucket,
            prefix,
            work,
            sdk_client(url, ak, sk),
            servers,
            restart_lakefs if target is None and a.lakefs == "real" else None,
        )
        wanted = a.scenarios.split(",")
        runs = []
        if "sample" in wanted:
            runs.append(("sample", scenario_sample, 0, {}))
        if "lakefs_shape" in wanted:
            runs.append(("lakefs_shape", scenario_lakefs_shape, 0, {}))
        if "lineage" in wanted:
            runs.append(("lineage", scenario_lineage, 0, {"s3": s3.options()}))
        if "random" in wanted:
            runs += [(f"random-{s}", scenario_random, s, {}) for s in range(a.seed, a.seed + a.random)]
        if "big" in wanted:
            runs.append(
                ("big", scenario_big, 0, {"objects": a.big, "s3": s3.options(), "suspicious": a.big_suspicious})
            )
        if "two_runs" in wanted:
            runs += [
                ("two_runs-shape", scenario_lakefs_shape, 0, {"two": True}),
                ("two_runs-lineage", scenario_lineage, 0, {"two": True, "s3": s3.options()}),
            ]
            runs += [
                (f"two_runs-random-{s}", scenario_random, s, {"two": True}) for s in range(a.seed, a.seed + a.two_runs)
            ]
        outcomes, failed = run_scenarios(h, runs)
        if "h2" in wanted and target is None and a.lakefs == "emulator":
            paged = launcher.start(
                work / "emulator-paged.log",
                "--s3-endpoint",
                s3.endpoint,
                "--s3-access-key",
                s3.access_key,
                "--s3-secret-key",
                s3.secret_key,
                "--grace-period",
                str(MIN_AGE),
                "--uncommitted-page-size",
                "1",
                access_key=ACCESS,
                secret_key=SECRET,
            )
            procs.append(paged.proc)
            hp = Harness(paged.url, ACCESS, SECRET, s3, bucket, prefix, work, sdk_client(paged.url, ACCESS, SECRET))
            log("scenario h2 (prepare_uncommited paged by one row)")
            more, more_failed = run_scenarios(hp, [("h2", scenario_h2, 0, {})])
            outcomes += more
            failed += more_failed
        bad = [o for o in outcomes if not o.ok()]
        judged = [o for o in outcomes if o.reference is not None]
        same = sum(1 for o in judged if not (o.only_reference or o.only_ours))
        print(
            f"\n{len(outcomes)} scenarios: {same} identical, "
            f"{len(judged) - same - len([o for o in bad if o in judged])} differ only where explained, "
            f"{len(bad)} unexplained or deleting live objects, {len(outcomes) - len(judged)} without the reference"
            + (f", {len(failed)} FAILED ({', '.join(failed)})" if failed else "")
        )
        return 1 if bad or failed else 0
    finally:
        if _SPARK is not None:
            _SPARK.stop()
        for proc in reversed(procs):
            launcher.stop_group(proc)
