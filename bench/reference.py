"""Differential runs against lakeFS's own Spark GC: `python -m bench reference [--help]`.

For each scenario a repository is built through lakefs-sdk on an ``s3://`` namespace (a moto server
on 127.0.0.1 started here, or the bucket of a real lakeFS given by ``LAKEFS_GC_TARGET_*``), then
lakeFS's GC (``io.treeverse.gc.GarbageCollection``, mark only) and ours (``mark_only``: the Spark
steps in one local SparkSession) mark it, and the two ``deleted/`` address sets are compared.
Each difference is printed with its reason; an unexplained one, or any address only we would
delete, makes the exit status 1.

lakeFS's GC is not part of this project: give its assembly jar and the Hadoop S3 jars it needs
(``hadoop-aws`` matching Spark's Hadoop, the AWS SDK v2 bundle, and the AWS SDK v1 bundle the
GC's own S3 client uses) with ``LAKEFS_GC_REFERENCE_JAR`` and ``LAKEFS_GC_REFERENCE_JARS``
(comma-separated). ``scripts/reference_jars.sh`` fetches the Hadoop pieces from Maven Central and
tries the GC itself (``io.lakefs:lakefs-spark-client_2.13``).

lakeFS is the emulator by default (S3 blockstore on the moto server); with
``LAKEFS_GC_TARGET_ENDPOINT`` (see include/lakefs_sandbox/target.py) a real lakeFS whose namespace
root is ``s3://...``.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
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
            "bundles (scripts/reference_jars.sh fetches what Maven Central serves)")
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


def run_reference(repo: str, lakefs_url: str, ak: str, sk: str, s3: S3Place, work: Path,
                  timeout: int = 3600) -> tuple[float, str]:
    """lakeFS's GC in mark-only mode; returns (seconds, its output)."""
    jar, extra = reference_jars()
    venv_bin = Path(sys.executable).parent
    conf = {
        "spark.hadoop.lakefs.api.url": lakefs_url.rstrip("/") + "/api/v1",
        "spark.hadoop.lakefs.api.access_key": ak, "spark.hadoop.lakefs.api.secret_key": sk,
        "spark.hadoop.lakefs.gc.do_mark": "true", "spark.hadoop.lakefs.gc.do_sweep": "false",
        "spark.hadoop.lakefs.debug.gc.uncommitted_min_age_seconds": str(MIN_AGE),
        "spark.hadoop.fs.s3a.endpoint": s3.endpoint, "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.access.key": s3.access_key, "spark.hadoop.fs.s3a.secret.key": s3.secret_key,
        "spark.hadoop.fs.s3a.endpoint.region": s3.region,
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.driver.host": "127.0.0.1", "spark.ui.enabled": "false",
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
    }
    cmd = [str(venv_bin / "spark-submit"), "--master", "local[2]", "--class", "io.treeverse.gc.GarbageCollection"]
    if extra:
        cmd += ["--jars", ",".join(extra)]
    for k, v in conf.items():
        cmd += ["--conf", f"{k}={v}"]
    cmd += [jar, repo, s3.region]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PATH": f"{venv_bin}:{os.environ.get('PATH', '')}",
           "AWS_REQUEST_CHECKSUM_CALCULATION": "when_required", "AWS_RESPONSE_CHECKSUM_VALIDATION": "when_required"}
    t0 = time.perf_counter()
    with open(work / f"reference-{repo}.log", "w") as fh:
        r = subprocess.run(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout,
                           start_new_session=True)
    took = time.perf_counter() - t0
    out = (work / f"reference-{repo}.log").read_text(errors="replace")
    if r.returncode != 0:
        raise RuntimeError(f"lakeFS's GC failed (exit {r.returncode}) on {repo}; log {work}/reference-{repo}.log:\n"
                           + out[-3000:])
    return took, out


# ---------------------------------------------------------------------------------------------
# ours, mark only, in one SparkSession
# ---------------------------------------------------------------------------------------------

_SPARK = None


def spark_session():
    from lakefs_gc.spark.inprocess import local_session

    return local_session("lakefs-gc reference diff")


def run_ours(repo: str, lakefs_url: str, ak: str, sk: str, s3: S3Place, work: Path) -> tuple[float, str]:
    """Our mark (mark_only): prepare_run and mark_uncommitted, then list_committed, list_slices and
    compute_candidates in one SparkSession (lakefs_gc.spark.inprocess). Returns (seconds, run id)."""
    from lakefs_gc.contract import RunSettings
    from lakefs_gc.gc.prepare import prepare_run
    from lakefs_gc.lakefs.client import LakeFSClient
    from lakefs_gc.spark.inprocess import run_steps
    from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY
    from lakefs_gc.storage import S3Options

    spark = spark_session()
    t0 = time.perf_counter()
    environ = {ENV_LAKEFS_ACCESS_KEY: ak, ENV_LAKEFS_SECRET_KEY: sk,
               **S3Options(access_key_id=s3.access_key, secret_access_key=s3.secret_key).to_env()}
    settings = RunSettings(mode="mark_only", min_age_seconds=MIN_AGE, unsafe_min_age_override=True,
                           confirm_after_seconds=0)
    with LakeFSClient(lakefs_url, ak, sk) as client:
        ctx = prepare_run(client, repo, settings, now=datetime.now(timezone.utc), airflow_run_id=f"ours-{repo}",
                          work_dir=str(work), parallelism=2,
                          s3=S3Options(endpoint_url=s3.endpoint, access_key_id=s3.access_key,
                                       secret_access_key=s3.secret_key, region=s3.region))
        results = run_steps(spark, ctx, client, environ, until="compute_candidates")
    return time.perf_counter() - t0, results["mark_uncommitted"].run_id


# ---------------------------------------------------------------------------------------------
# comparing
# ---------------------------------------------------------------------------------------------

def unified_runs(st) -> set[str]:
    return {o.key.split("/")[4] for o in st.list("_lakefs/retention/gc/unified/", recursive=True)
            if o.key.endswith("summary.json") and o.key.count("/") == 5}


def deleted_set(st, run_id: str) -> set[str]:
    import pyarrow.parquet as pq

    out: set[str] = set()
    for o in st.list(f"_lakefs/retention/gc/unified/{run_id}/deleted/", recursive=True):
        if o.key.endswith(".parquet"):
            out.update(a for a in pq.read_table(io.BytesIO(st.get(o.key)), columns=["address"])
                       .column("address").to_pylist() if a is not None)
    return out


@dataclass
class Outcome:
    scenario: str
    repo: str
    objects: int
    reference: set[str]
    ours: set[str]
    reference_seconds: float
    ours_seconds: float
    explained: dict[str, str] = field(default_factory=dict)  # address -> reason

    @property
    def only_reference(self) -> set[str]:
        return self.reference - self.ours

    @property
    def only_ours(self) -> set[str]:
        return self.ours - self.reference

    @property
    def unexplained(self) -> set[str]:
        return (self.only_reference | self.only_ours) - set(self.explained)

    def ok(self) -> bool:
        # never one where ours deletes what the reference keeps, unless explained
        return not self.unexplained


def explain(outcome: Outcome, facts: dict) -> None:
    """Reasons for known, documented differences (reference hazards, lakeFS's reference doc H1-H8)."""
    for a in outcome.only_reference:
        if a in facts.get("staged_live", set()) and facts.get("h2"):
            outcome.explained[a] = ("H2: staged on a live branch; lakeFS's GC read only the last "
                                    "prepare_uncommited page's location, which was empty, and lost it")


# ---------------------------------------------------------------------------------------------
# scenarios: each builds a repository (on `ns`) and returns facts for `explain`
# ---------------------------------------------------------------------------------------------

def _rules(default: int, **branches: int):
    import lakefs_sdk

    return lakefs_sdk.GarbageCollectionRules(default_retention_days=default, branches=[
        lakefs_sdk.GarbageCollectionRule(branch_id=b, retention_days=d) for b, d in branches.items()])


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
    client.repositories_api.create_repository(lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=ns,
                                                                           default_branch="main"))

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


def scenario_random(client, repo: str, ns: str, rng: random.Random, ops: int = 60) -> dict:
    """A random history: branches from random refs, back-dated commits, uploads, overwrites,
    deletes, resets, branch deletions, staged changes left at the end, random rules."""
    import lakefs_sdk
    from lakefs_sdk.exceptions import ApiException

    now = int(time.time())
    o, b, c = client.objects_api, client.branches_api, client.commits_api
    client.repositories_api.create_repository(lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=ns,
                                                                           default_branch="main"))
    branches = ["main"]
    paths = [f"p/{i:02d}" for i in range(12)]
    age = {"main": rng.uniform(20, 30)}  # days back of each branch's next commit (decreasing)
    for _ in range(ops):
        op = rng.choices(["put", "put", "put", "delete", "commit", "commit", "branch", "reset", "drop"])[0]
        br = rng.choice(branches)
        try:
            if op == "put":
                o.upload_object(repo, br, rng.choice(paths), content=uuid.uuid4().bytes)
            elif op == "delete":
                o.delete_object(repo, br, rng.choice(paths))
            elif op == "commit":
                age[br] = max(0.0, age[br] - rng.uniform(0, 5))
                c.commit(repo, br, lakefs_sdk.CommitCreation(message="c", date=int(now - age[br] * DAY),
                                                             allow_empty=True))
            elif op == "branch" and len(branches) < 6:
                name = f"b{len(age)}"
                b.create_branch(repo, lakefs_sdk.BranchCreation(name=name, source=br))
                branches.append(name)
                age[name] = age[br]
            elif op == "reset":
                b.reset_branch(repo, br, lakefs_sdk.ResetCreation(type="reset"))
            elif op == "drop" and br != "main":
                b.delete_branch(repo, br)
                branches.remove(br)
        except ApiException as e:
            if e.status not in (400, 404, 409):  # deleting a missing path, empty commits: part of the game
                raise
    rules = {br: rng.randint(1, 15) for br in branches if rng.random() < 0.5}
    client.repositories_api.set_gc_rules(repo, _rules(rng.randint(1, 10), **rules))
    return {}


def scenario_h2(client, repo: str, ns: str, rng: random.Random) -> dict:
    """Hazard H2 on a lakeFS that pages ``prepare_uncommited`` (the emulator with one row a page;
    lakeFS cuts pages at 20 MiB or 1 minute): the last page is empty, so its location is "".
    Staged objects on a live branch must be kept."""
    import lakefs_sdk

    from lakefs_gc.storage import parse_namespace, relative_to

    client.repositories_api.create_repository(lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=ns,
                                                                           default_branch="main"))
    client.objects_api.upload_object(repo, "main", "committed.csv", content=b"c")
    client.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message="c", date=int(time.time()) - 5 * DAY))
    roots = parse_namespace(ns).roots()
    staged = set()
    for i in range(3):
        st = client.objects_api.upload_object(repo, "main", f"staged/{i}.json", content=uuid.uuid4().bytes)
        staged.add(relative_to(roots, st.physical_address))
    client.repositories_api.set_gc_rules(repo, _rules(1))
    return {"staged_live": staged, "h2": True}


def scenario_big(client, repo: str, ns: str, rng: random.Random, objects: int = 100_000, s3=None) -> dict:
    """``objects`` objects: half uploaded through lakeFS (8 at a time) and committed on main, half
    written straight into the namespace's data/ slices and never referenced (garbage). lakeFS
    refuses imports from the repository's own namespace, so uploads are the way in."""
    import lakefs_sdk

    from lakefs_sandbox.seed import sdk_client
    from lakefs_gc.storage import make_s3_client, parse_namespace

    client.repositories_api.create_repository(lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=ns,
                                                                           default_branch="main"))
    p = parse_namespace(ns)
    live = objects // 2
    cfg = client.repositories_api.api_client.configuration
    t = time.perf_counter()

    def upload_chunk(idx):
        c = sdk_client(cfg.host, cfg.username, cfg.password)
        for i in range(idx, live, 8):
            c.objects_api.upload_object(repo, "main", f"t/{i % 50:02d}/obj{i:07d}", content=b"x")
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(upload_chunk, range(8)))
    client.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message=f"{live} objects"))
    log(f"  uploaded and committed {live:,} objects through lakeFS in {time.perf_counter() - t:.0f}s")
    s3c = make_s3_client(s3)
    keys = [f"{p.prefix}/data/garbage{i % 50:02d}/obj{i:07d}" for i in range(objects - live)]
    t = time.perf_counter()

    def put_chunk(chunk):
        for k in chunk:
            s3c.put_object(Bucket=p.bucket, Key=k, Body=b"x")
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put_chunk, [keys[i::32] for i in range(32)]))
    log(f"  wrote {len(keys):,} unreferenced objects in {time.perf_counter() - t:.0f}s")
    client.repositories_api.set_gc_rules(repo, _rules(30))
    return {}


# ---------------------------------------------------------------------------------------------

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

    def storage(self, ns: str):
        from lakefs_gc.storage import S3Options, open_storage

        return open_storage(ns, S3Options(endpoint_url=self.s3.endpoint, access_key_id=self.s3.access_key,
                                          secret_access_key=self.s3.secret_key, region=self.s3.region))

    def run(self, scenario: str, build, seed: int, **kw) -> Outcome:
        repo = f"ref-{scenario}-{uuid.uuid4().hex[:6]}".replace("_", "-")
        ns = f"s3://{self.bucket}/{self.prefix}/{repo}"
        rng = random.Random(seed)
        facts = build(self.client, repo, ns, rng, **kw) or {}
        st = self.storage(ns)
        built = time.time()
        listed = sum(1 for o in st.list("data/", recursive=True))
        time.sleep(max(0.0, built + MIN_AGE + 2 - time.time()))  # every object older than both cutoffs
        before = unified_runs(st)
        ref_s, _ = run_reference(repo, self.lakefs_url, self.ak, self.sk, self.s3, self.work)
        [ref_run] = unified_runs(st) - before
        ours_s, our_run = run_ours(repo, self.lakefs_url, self.ak, self.sk, self.s3, self.work)
        outcome = Outcome(scenario, repo, listed, deleted_set(st, ref_run), deleted_set(st, our_run), ref_s, ours_s)
        explain(outcome, facts)
        return outcome


def report(o: Outcome) -> None:
    status = "same" if not (o.only_reference or o.only_ours) else ("explained" if o.ok() else "UNEXPLAINED")
    print(f"{o.scenario:16} {o.repo:28} objects {o.objects:>7,}  reference {len(o.reference):>6,}  "
          f"ours {len(o.ours):>6,}  only-ref {len(o.only_reference):>3}  only-ours {len(o.only_ours):>3}  "
          f"[{status}]  times ref {o.reference_seconds:6.1f}s ours {o.ours_seconds:6.1f}s", flush=True)
    for a in sorted(o.only_reference | o.only_ours)[:20]:
        side = "only reference" if a in o.only_reference else "only ours"
        print(f"    {side:15} {a}  -- {o.explained.get(a, 'UNEXPLAINED')}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench reference", description=__doc__.split("\n\n")[0])
    p.add_argument("--scenarios", default="sample,lakefs_shape,random,h2,big",
                   help="comma-separated: sample, lakefs_shape, random, h2 (emulator only), big")
    p.add_argument("--random", type=int, default=20, help="how many random histories")
    p.add_argument("--seed", type=int, default=1, help="seed of the first random history")
    p.add_argument("--big", type=int, default=100_000, help="objects in the big repository")
    a = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    try:
        reference_jars()  # fail early and clearly
    except ReferenceUnavailable as e:
        print(f"python -m bench reference: {e}", file=sys.stderr)
        return 2
    os.environ.setdefault("AWS_REQUEST_CHECKSUM_CALCULATION", "when_required")
    os.environ.setdefault("AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required")
    from lakefs_sandbox.emulator import launcher
    from lakefs_sandbox.target import target_from_env

    work = Path(tempfile.mkdtemp(prefix="lakefs-gc-reference-"))
    procs = []
    try:
        target = target_from_env()
        if target is None:
            port = launcher.free_port()
            moto = launcher.start_server([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                         work / "moto.log", f"http://127.0.0.1:{port}/moto-api/")
            procs.append(moto)
            s3 = S3Place(f"http://127.0.0.1:{port}", "testing", "testing")
            emu = launcher.start(work / "emulator.log", "--s3-endpoint", s3.endpoint, "--s3-access-key", "testing",
                                 "--s3-secret-key", "testing", "--grace-period", str(MIN_AGE),
                                 access_key=ACCESS, secret_key=SECRET)
            procs.append(emu.proc)
            url, ak, sk, bucket, prefix = emu.url, ACCESS, SECRET, "reference", "repos"
            log(f"lakeFS emulator {url} on moto {s3.endpoint}")
        else:
            from lakefs_gc.storage import parse_namespace

            if target.blockstore_type != "s3":
                raise SystemExit("lakeFS's GC supports s3/azure/gs namespaces only: give an s3:// namespace root")
            ns = parse_namespace(target.namespace_root)
            s3 = S3Place(target.s3_endpoint or "", target.s3_access_key or "", target.s3_secret_key or "",
                         target.s3_region)
            url, ak, sk, bucket, prefix = target.url, target.access_key, target.secret_key, ns.bucket, ns.prefix
            log(f"real lakeFS {url}, namespaces under {target.namespace_root}")
        from lakefs_gc.storage import S3Options, make_s3_client
        from lakefs_sandbox.seed import sdk_client

        s3c = make_s3_client(S3Options(endpoint_url=s3.endpoint, access_key_id=s3.access_key,
                                       secret_access_key=s3.secret_key, region=s3.region))
        try:
            s3c.create_bucket(Bucket=bucket)
        except s3c.exceptions.ClientError:
            pass  # already there
        h = Harness(url, ak, sk, s3, bucket, prefix, work, sdk_client(url, ak, sk))
        wanted = a.scenarios.split(",")
        runs = []
        if "sample" in wanted:
            runs.append(("sample", scenario_sample, 0, {}))
        if "lakefs_shape" in wanted:
            runs.append(("lakefs_shape", scenario_lakefs_shape, 0, {}))
        if "random" in wanted:
            runs += [(f"random-{s}", scenario_random, s, {}) for s in range(a.seed, a.seed + a.random)]
        if "big" in wanted:
            runs.append(("big", scenario_big, 0, {"objects": a.big, "s3": S3Options(
                endpoint_url=s3.endpoint, access_key_id=s3.access_key, secret_access_key=s3.secret_key,
                region=s3.region)}))
        outcomes = []
        for name, build, seed, kw in runs:
            log(f"scenario {name}")
            o = h.run(name, build, seed, **kw)
            report(o)
            outcomes.append(o)
        if "h2" in wanted and target is None:
            paged = launcher.start(work / "emulator-paged.log", "--s3-endpoint", s3.endpoint, "--s3-access-key",
                                   "testing", "--s3-secret-key", "testing", "--grace-period", str(MIN_AGE),
                                   "--uncommitted-page-size", "1", access_key=ACCESS, secret_key=SECRET)
            procs.append(paged.proc)
            hp = Harness(paged.url, ACCESS, SECRET, s3, bucket, prefix, work, sdk_client(paged.url, ACCESS, SECRET))
            log("scenario h2 (prepare_uncommited paged by one row)")
            o = hp.run("h2", scenario_h2, 0)
            report(o)
            outcomes.append(o)
        bad = [o for o in outcomes if not o.ok()]
        same = sum(1 for o in outcomes if not (o.only_reference or o.only_ours))
        print(f"\n{len(outcomes)} scenarios: {same} identical, {len(outcomes) - same - len(bad)} differ only where "
              f"explained, {len(bad)} unexplained")
        return 1 if bad else 0
    finally:
        if _SPARK is not None:
            _SPARK.stop()
        for proc in reversed(procs):
            launcher.stop_group(proc)
