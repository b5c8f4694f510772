"""The Spark steps of a GC run: list_committed, list_slices, compute_candidates, delete.

Each takes the SparkSession, the run-metadata dict and the secrets, and returns the small dict of
keys it adds. Object storage is reached with boto3 / the local filesystem inside Spark tasks
(no Hadoop S3 connector); intermediate Parquet goes to ``meta["work_dir"]``.
"""

from __future__ import annotations

import io
import json
import logging
import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from lakefs_gc import committed as committed_mod
from lakefs_gc import xid
from lakefs_gc.candidates import ADDRESS_SCHEMA, LISTED_SCHEMA, compute_candidates, deletable
from lakefs_gc.graveler import BY_PREFIX_DEPRECATED, normalize_address
from lakefs_gc.lakefs_api import LakeFSClient, LakeFSGCError
from lakefs_gc.plan import iso, parse_iso
from lakefs_gc.report import REPORT_DIR
from lakefs_gc.runmeta import (
    ENV_LAKEFS_ACCESS_KEY,
    ENV_LAKEFS_SECRET_KEY,
    ENV_S3_ACCESS_KEY,
    ENV_S3_SECRET_KEY,
    ENV_S3_SESSION_TOKEN,
)
from lakefs_gc.storage import S3Options, open_storage, parse_namespace

log = logging.getLogger(__name__)

UNCOMMITTED_DIR = "_lakefs/retention/gc/uncommitted/{run_id}/uncommitted/"


@dataclass(frozen=True)
class Secrets:
    """Credentials read from the environment on the driver and shipped to executors in closures."""

    lakefs_access_key: str | None = None
    lakefs_secret_key: str | None = None
    s3_access_key: str | None = None
    s3_secret_key: str | None = None
    s3_session_token: str | None = None

    @classmethod
    def from_env(cls) -> Secrets:
        e = os.environ
        return cls(e.get(ENV_LAKEFS_ACCESS_KEY), e.get(ENV_LAKEFS_SECRET_KEY), e.get(ENV_S3_ACCESS_KEY),
                   e.get(ENV_S3_SECRET_KEY), e.get(ENV_S3_SESSION_TOKEN))

    def __repr__(self) -> str:  # never print secrets
        return "Secrets(***)"


@dataclass(frozen=True)
class StorageRef:
    """Everything an executor needs to open the namespace (picklable)."""

    namespace: str
    endpoint_url: str | None
    region: str | None
    access_key: str | None
    secret_key: str | None
    session_token: str | None
    local_root: str | None = None  # lakeFS's blockstore.local.path, for local:// namespaces

    def open(self):
        opts = S3Options(endpoint_url=self.endpoint_url, access_key_id=self.access_key,
                         secret_access_key=self.secret_key, session_token=self.session_token,
                         region=self.region or "us-east-1")
        return open_storage(self.namespace, opts, self.local_root)

    @property
    def roots(self) -> tuple[str, ...]:
        """Every URI naming the namespace root (locations and full addresses are relative to these)."""
        return parse_namespace(self.namespace, self.local_root).roots()

    def __repr__(self) -> str:
        return f"StorageRef({self.namespace!r})"


def storage_ref(meta: dict, secrets: Secrets) -> StorageRef:
    return StorageRef(meta["storage_namespace"], meta.get("s3_endpoint_url"), meta.get("s3_region"),
                      secrets.s3_access_key, secrets.s3_secret_key, secrets.s3_session_token,
                      meta.get("local_blockstore_root"))


def lakefs_client(meta: dict, secrets: Secrets) -> LakeFSClient:
    if not secrets.lakefs_access_key or not secrets.lakefs_secret_key:
        raise LakeFSGCError(f"lakeFS credentials missing: set {ENV_LAKEFS_ACCESS_KEY} and {ENV_LAKEFS_SECRET_KEY} "
                            f"in the job's environment (the operator does this from the lakeFS connection)")
    return LakeFSClient(meta["lakefs_endpoint"], secrets.lakefs_access_key, secrets.lakefs_secret_key)


def _parallelism(spark, meta: dict) -> int:
    return int(meta.get("parallelism") or spark.sparkContext.defaultParallelism or 2)


def _cutoff_ms(meta: dict) -> int:
    return int(parse_iso(meta["cutoff_time"]).timestamp() * 1000)


# ---------------------------------------------------------------------------------------------
# list_committed
# ---------------------------------------------------------------------------------------------

def _metarange_ranges(sref: StorageRef, keys):
    st = sref.open()
    for key in keys:
        for range_id, _ in committed_mod.metarange_range_ids(st, key):
            yield range_id


def _range_addresses(sref: StorageRef, endpoint: str, repo: str, secrets: Secrets, range_ids):
    st = sref.open()
    roots = sref.roots
    with LakeFSClient(endpoint, secrets.lakefs_access_key, secrets.lakefs_secret_key) as client:
        for rid in range_ids:
            key = committed_mod.relative_key(roots, client.range_location(repo, rid))
            for address in committed_mod.range_addresses(st, key, roots):
                yield (address,)


def list_committed(spark, meta: dict, secrets: Secrets) -> dict[str, Any]:
    """Addresses referenced by the commits lakeFS says to keep, written as Parquet (column address)."""
    repo = meta["repository"]
    sref = storage_ref(meta, secrets)
    ns = sref.roots
    out_dir = os.path.join(meta["work_dir"], "committed")
    with lakefs_client(meta, secrets) as client:
        prep = client.prepare_commits(repo, timeout_seconds=float(meta.get("prepare_commits_timeout_seconds", 1200)))
        csv_loc = prep["gc_commits_location"]
        rows = committed_mod.parse_commits_csv(sref.open().get(committed_mod.relative_key(ns, csv_loc)), csv_loc)
        metarange_ids = sorted({m for _, m in rows if m})
        mr_keys = [committed_mod.relative_key(ns, client.meta_range_location(repo, m)) for m in metarange_ids]
    sc = spark.sparkContext
    n = _parallelism(spark, meta)
    endpoint = meta["lakefs_endpoint"]
    range_ids = (sc.parallelize(mr_keys, max(1, min(len(mr_keys), n)))
                 .mapPartitions(lambda keys: _metarange_ranges(sref, keys))
                 .distinct(n)
                 .cache())
    num_ranges = range_ids.count()
    addresses = range_ids.mapPartitions(lambda ids: _range_addresses(sref, endpoint, repo, secrets, ids))
    df = spark.createDataFrame(addresses, ADDRESS_SCHEMA).distinct()
    df.write.mode("overwrite").parquet(out_dir)
    count = spark.read.parquet(out_dir).count()
    range_ids.unpersist()
    return {"committed_dir": out_dir, "commits_csv": csv_loc, "active_commits": len(rows),
            "metaranges": len(metarange_ids), "ranges": num_ranges, "committed_addresses": count}


# ---------------------------------------------------------------------------------------------
# list_slices
# ---------------------------------------------------------------------------------------------

def _list_prefixes(sref: StorageRef, cutoff_s: float, prefixes):
    st = sref.open()
    for p in prefixes:
        for o in st.list(p, recursive=True):
            if o.last_modified < cutoff_s:
                yield (o.key, o.size, int(o.last_modified * 1000))


def plan_slices(storage, cutoff_s: float) -> tuple[list[str], list[str]]:
    """Slice prefixes (``data/<slice>/``) to list, and slice ids skipped because their id says they
    were created after the cutoff (descending xids; reference 2.2). Non-xid children are listed."""
    to_list, skipped = [], []
    for p in storage.list_prefixes("data/"):
        sid = p[len("data/"):].rstrip("/")
        if xid.is_xid(sid) and xid.descending_time(sid) > cutoff_s:
            skipped.append(sid)
        else:
            to_list.append(p)
    return to_list, skipped


def list_slices(spark, meta: dict, secrets: Secrets) -> dict[str, Any]:
    """Objects under ``data/`` (per slice, in parallel) and legacy root objects older than the cutoff."""
    sref = storage_ref(meta, secrets)
    st = sref.open()
    cutoff_s = parse_iso(meta["cutoff_time"]).timestamp()
    to_list, skipped = plan_slices(st, cutoff_s)
    # files directly under data/ and legacy objects at the root (never _lakefs/, never dummy)
    loose = [(o.key, o.size, int(o.last_modified * 1000)) for o in st.list("data/", recursive=False)
             if o.last_modified < cutoff_s]
    loose += [(o.key, o.size, int(o.last_modified * 1000)) for o in st.list("", recursive=False)
              if o.key != "dummy" and o.last_modified < cutoff_s]
    sc = spark.sparkContext
    n = _parallelism(spark, meta)
    rdd = sc.parallelize(to_list, max(1, min(len(to_list), n * 4))).mapPartitions(
        lambda ps: _list_prefixes(sref, cutoff_s, ps))
    if loose:
        rdd = rdd.union(sc.parallelize(loose, 1))
    out_dir = os.path.join(meta["work_dir"], "listed")
    spark.createDataFrame(rdd, LISTED_SCHEMA).write.mode("overwrite").parquet(out_dir)
    from pyspark.sql import functions as F
    agg = spark.read.parquet(out_dir).agg(F.count("*").alias("n"), F.sum("size").alias("b")).collect()[0]
    listed_ids = [p[len("data/"):].rstrip("/") for p in to_list]
    xids = [s for s in listed_ids if xid.is_xid(s)]
    return {"listed_dir": out_dir, "first_slice": min(xids) if xids else "", "slices_listed": len(to_list),
            "slices_skipped": len(skipped), "listed_objects": int(agg["n"]), "listed_bytes": int(agg["b"] or 0)}


# ---------------------------------------------------------------------------------------------
# compute_candidates
# ---------------------------------------------------------------------------------------------

def _uncommitted_addresses(sref: StorageRef, keys):
    import pyarrow.parquet as pq

    st = sref.open()
    roots = sref.roots
    for key in keys:
        table = pq.read_table(io.BytesIO(st.get(key)), columns=["physical_address"])
        for address in table.column("physical_address").to_pylist():
            if address is None:
                raise LakeFSGCError(f"{st.full_uri(key)}: null physical_address in uncommitted parquet")
            rel = normalize_address(address, BY_PREFIX_DEPRECATED, roots)
            if rel is not None:
                yield (rel,)


def uncommitted_files(storage, meta: dict) -> list[str]:
    """Every file of the uncommitted mark: the run folder listed, plus any location lakeFS returned
    (hazard H2: never only the last page's location)."""
    ns = parse_namespace(meta["storage_namespace"], meta.get("local_blockstore_root")).roots()
    prefixes = {UNCOMMITTED_DIR.format(run_id=meta["run_id"])}
    for loc in meta.get("uncommitted_locations") or []:
        key = committed_mod.relative_key(ns, loc)
        prefixes.add(key if key.endswith("/") else key + "/")
    keys = set()
    for p in sorted(prefixes):
        keys.update(o.key for o in storage.list(p, recursive=True))
    if meta.get("uncommitted_locations") and not keys:
        raise LakeFSGCError(f"lakeFS reported uncommitted data at {meta['uncommitted_locations']} but no file is there; "
                            f"refusing to run without the staged addresses")
    return sorted(keys)


def _write_report_part(sref: StorageRef, part_dir: str, index: int, rows):
    import pyarrow as pa
    import pyarrow.parquet as pq

    addresses, total = [], 0
    for r in rows:
        addresses.append(r[0])
        total += r[1] or 0
    buf = io.BytesIO()
    pq.write_table(pa.table({"address": pa.array(addresses, pa.string())}), buf)
    sref.open().put(f"{part_dir}part-{index:05d}.parquet", buf.getvalue())
    yield (len(addresses), total)


def _read_addresses(sref: StorageRef, keys):
    import pyarrow.parquet as pq

    st = sref.open()
    for key in keys:
        for a in pq.read_table(io.BytesIO(st.get(key)), columns=["address"]).column("address").to_pylist():
            yield (a,)


def _write_parts(df, sref: StorageRef, part_dir: str, n: int) -> tuple[int, int]:
    parts = (df.repartition(max(1, n))
             .rdd.mapPartitionsWithIndex(lambda i, rows: _write_report_part(sref, part_dir, i, rows))
             .collect())
    return sum(c for c, _ in parts), sum(b for _, b in parts)


def compute_candidates_step(spark, meta: dict, secrets: Secrets) -> dict[str, Any]:
    from lakefs_gc import marks

    sref = storage_ref(meta, secrets)
    st = sref.open()
    sc = spark.sparkContext
    n = _parallelism(spark, meta)
    listed = spark.read.parquet(meta["listed_dir"])
    committed = spark.read.parquet(meta["committed_dir"])
    files = uncommitted_files(st, meta)
    unc_rdd = sc.parallelize(files, max(1, min(len(files), n))).mapPartitions(
        lambda ks: _uncommitted_addresses(sref, ks))
    uncommitted = spark.createDataFrame(unc_rdd, ADDRESS_SCHEMA)
    cands = compute_candidates(listed, committed, uncommitted, _cutoff_ms(meta))
    from pyspark.sql import functions as F
    bad = cands.where(~deletable(F.col("address"))).limit(5).collect()
    if bad:  # cannot happen by construction; checked anyway before anything is written
        raise LakeFSGCError(f"refusing: candidates outside data/ or the namespace root: {[r[0] for r in bad]}")
    report_dir = REPORT_DIR.format(run_id=meta["run_id"])
    # a retried attempt must not leave parts of an earlier attempt behind
    for o in list(st.list(report_dir, recursive=True)):
        st.delete(o.key)
    summary = {"run_id": meta["run_id"], "success": False, "first_slice": meta.get("first_slice", ""),
               "start_time": meta["start_time"], "cutoff_time": meta["cutoff_time"], "num_deleted_objects": 0,
               "note": "mark in progress or failed"}
    st.put(report_dir + "summary.json", json.dumps(summary).encode())
    cands = cands.cache()
    out: dict[str, Any] = {"report_dir": sref.namespace.rstrip("/") + "/" + report_dir,
                           "uncommitted_files": len(files)}
    confirm = int(meta.get("confirm_after_seconds") or 0)
    total, total_bytes = _write_parts(cands, sref, report_dir + "candidates/", n)
    out.update({"candidates": total, "candidate_bytes": total_bytes, "confirm_after_seconds": confirm})
    if confirm <= 0:
        to_delete = cands
    else:
        # delayed confirmation: delete only what an earlier successful mark, at least `confirm`
        # seconds older, also found unreferenced
        before = parse_iso(meta["start_time"]) - timedelta(seconds=confirm)
        prev = marks.latest_mark_before(st, before, exclude=meta["run_id"])
        if prev is None:
            to_delete = cands.limit(0)
            out["held_back_reason"] = f"no successful mark started at or before {iso(before)}"
        else:
            parts = marks.candidate_parts(st, prev[0])
            earlier = spark.createDataFrame(
                sc.parallelize(parts, max(1, min(len(parts), n))).mapPartitions(lambda ks: _read_addresses(sref, ks)),
                ADDRESS_SCHEMA) if parts else spark.createDataFrame([], ADDRESS_SCHEMA)
            to_delete = cands.join(earlier, on="address", how="left_semi")
            out["confirmed_by_mark"] = prev[0]
            out["held_back_reason"] = f"not yet a candidate in mark {prev[0]} (started {prev[1].get('start_time')})"
    count, nbytes = _write_parts(to_delete, sref, report_dir + "deleted/", n)
    cands.unpersist()
    out.update({"to_delete": count, "to_delete_bytes": nbytes, "held_back": total - count})
    return out


# ---------------------------------------------------------------------------------------------
# delete
# ---------------------------------------------------------------------------------------------

def _sweep_parts(sref: StorageRef, sdir: str, policy, part_keys):
    from lakefs_gc.sweep import sweep_part

    st = sref.open()
    for key in part_keys:
        yield sweep_part(st, key, sdir, policy)


def _parquet_rows(st, key: str) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(io.BytesIO(st.get(key))).metadata.num_rows


def delete_policy(meta: dict, concurrent_tasks: int):
    """The deleter settings of a run; the global rate is split evenly across the delete tasks that
    can run at once, so together they never exceed it."""
    from lakefs_gc.deleter import DeletePolicy

    rate = float(meta.get("delete_rate") or 0)
    return DeletePolicy(rate=rate / max(1, concurrent_tasks) if rate > 0 else 0.0,
                        batch_size=int(meta.get("delete_batch_size") or 1000),
                        max_attempts=int(meta.get("delete_max_attempts") or 8),
                        dry_run=bool(meta.get("dry_run")))


def delete_step(spark, meta: dict, secrets: Secrets) -> dict[str, Any]:
    if meta.get("mode") == "mark_only":
        return {"deleted": 0, "delete_failed": 0, "delete_skipped": "mark_only"}
    from lakefs_gc.sweep import add_counts, sweep_dir

    sref = storage_ref(meta, secrets)
    st = sref.open()
    mark_id = meta["run_id"]
    report_dir = REPORT_DIR.format(run_id=mark_id)
    if not st.exists(report_dir + "summary.json"):
        raise LakeFSGCError(f"mark {mark_id} has no summary.json at {st.full_uri(report_dir)}: nothing to sweep")
    files = sorted(o.key for o in st.list(report_dir + "deleted/", recursive=True) if o.key.endswith(".parquet"))
    to_delete = sum(_parquet_rows(st, k) for k in files)
    from lakefs_gc.marks import blast_radius

    from lakefs_gc.config import SweepSettings

    defaults = SweepSettings()
    share = meta.get("max_delete_share")
    count = meta.get("max_delete_count")
    blast_radius(mark_id, to_delete, int(meta.get("listed_objects") or 0),
                 float(share) if share is not None else defaults.max_delete_share,
                 int(count) if count is not None else defaults.max_delete_count)
    sc = spark.sparkContext
    concurrency = max(1, min(int(meta.get("delete_concurrency") or _parallelism(spark, meta)), max(1, len(files))))
    policy = delete_policy(meta, min(concurrency, sc.defaultParallelism))
    sdir = sweep_dir(mark_id, str(meta.get("airflow_run_id") or "manual"))
    results = sc.parallelize(files, concurrency).mapPartitions(
        lambda ks: _sweep_parts(sref, sdir, policy, ks)).collect() if files else []
    c = add_counts(results)
    out = {"deleted": c["deleted"], "delete_failed": c["failed"], "delete_missing": c["missing"],
           "delete_retried": c["retried"], "delete_requests": c["requests"], "delete_keys": c["keys"],
           "delete_parts": c["parts"], "delete_resumed_parts": c["resumed_parts"],
           "delete_concurrency": concurrency, "delete_rate": float(meta.get("delete_rate") or 0),
           "sweep_dir": st.full_uri(sdir)}
    if meta.get("dry_run"):
        out.update({"would_delete": c["deleted"], "deleted": 0})
    if c["failed"]:
        out["dead_letters"] = st.full_uri(sdir + "dead_letters/")
    return out
