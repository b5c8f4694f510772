"""The run-metadata dict: the only thing GC tasks hand each other (by XCom).

It carries ids, URIs, counts, bytes and times, never address lists and never secrets. Each task
receives the merged dict of the tasks before it and returns only the keys it adds.

Contract between the Airflow side (plugins/, dags/) and the Spark jobs (jobs/):

* A Spark job is run as ``spark-submit [--py-files build/lakefs_gc.zip] jobs/<step>.py --meta FILE
  --result FILE``: ``--meta`` is a JSON file holding this dict, ``--result`` is where the job writes
  a small JSON dict of the keys it adds (read back into XCom by the operator).
* Secrets reach jobs only through the environment (never argv, never this dict): the names are in
  ``SECRET_ENV``. The driver reads them and ships them to executors inside task closures.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypedDict

# Environment variables a job reads its secrets from.
ENV_LAKEFS_ACCESS_KEY = "LAKEFS_GC_LAKEFS_ACCESS_KEY_ID"
ENV_LAKEFS_SECRET_KEY = "LAKEFS_GC_LAKEFS_SECRET_ACCESS_KEY"
ENV_S3_ACCESS_KEY = "LAKEFS_GC_S3_ACCESS_KEY_ID"
ENV_S3_SECRET_KEY = "LAKEFS_GC_S3_SECRET_ACCESS_KEY"
ENV_S3_SESSION_TOKEN = "LAKEFS_GC_S3_SESSION_TOKEN"
SECRET_ENV = (ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY, ENV_S3_ACCESS_KEY, ENV_S3_SECRET_KEY, ENV_S3_SESSION_TOKEN)

MODES = ("mark_and_sweep", "mark_only", "sweep_only")


class RunMeta(TypedDict, total=False):
    # prepare_run
    repository: str
    lakefs_endpoint: str            # e.g. http://127.0.0.1:8000/api/v1
    storage_namespace: str          # e.g. s3://bucket/repo or local:///data/repo
    blockstore_type: str            # s3 | local | ...
    s3_endpoint_url: str | None     # S3-compatible endpoint (no secrets)
    s3_region: str | None
    grace_period_seconds: int
    min_age_seconds: int
    unsafe_min_age_override: bool
    start_time: str                 # ISO 8601, UTC, ns precision
    cutoff_time: str                # start - max(min age, grace period) unless overridden
    mode: str                       # one of MODES
    work_dir: str                   # where intermediate Parquet and results go (Spark-writable)
    airflow_run_id: str
    # mark_uncommitted
    run_id: str                     # uncommitted prepare run id = report run id = mark id
    uncommitted_locations: list[str]
    uncommitted_pages: int
    # list_committed
    committed_dir: str
    commits_csv: str
    active_commits: int
    metaranges: int
    ranges: int
    committed_addresses: int
    # list_slices
    listed_dir: str
    first_slice: str
    slices_listed: int
    slices_skipped: int
    listed_objects: int
    listed_bytes: int
    # compute_candidates
    candidates_dir: str
    report_dir: str
    candidates: int
    candidate_bytes: int
    # delete
    deleted: int
    delete_failed: int


def write_meta(meta: dict[str, Any], path: str | os.PathLike) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(meta, sort_keys=True, default=str))
    tmp.replace(p)


def read_meta(path: str | os.PathLike) -> dict[str, Any]:
    return json.loads(Path(path).read_text())
