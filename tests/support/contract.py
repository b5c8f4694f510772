"""Run contexts and step inputs for tests that drive the steps without Airflow."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from lakefs_gc.contract import RunContext, RunSettings, StepInputs, StorageLocation
from lakefs_gc.timestamps import iso


def make_context(
    namespace: str = "local://ns/repo",
    *,
    local_root: str | None = None,
    s3_endpoint: str | None = None,
    s3_region: str | None = None,
    start: datetime | None = None,
    cutoff: datetime | None = None,
    work_dir: str = "/tmp/lakefs-gc-test",
    repository: str = "repo",
    lakefs_endpoint: str = "http://127.0.0.1:1/api/v1",
    airflow_run_id: str = "manual__test",
    parallelism: int | None = 2,
    sweep_mark=None,
    grace: int = 86400,
    **settings: Any,
) -> RunContext:
    start = start or datetime.now(UTC)
    cutoff = cutoff or start - timedelta(days=1)
    blockstore = "s3" if namespace.startswith("s3://") else "local"
    return RunContext(
        repository=repository,
        lakefs_endpoint=lakefs_endpoint,
        storage=StorageLocation(namespace, blockstore, s3_endpoint, s3_region, local_root),
        grace_period_seconds=grace,
        start_time=iso(start),
        cutoff_time=iso(cutoff),
        effective_min_age_seconds=int((start - cutoff).total_seconds()),
        work_dir=work_dir,
        airflow_run_id=airflow_run_id,
        settings=RunSettings(**settings),
        parallelism=parallelism,
        sweep_mark=sweep_mark,
    )


def inputs(ctx: RunContext, **results: Any) -> StepInputs:
    return StepInputs(ctx, results)
