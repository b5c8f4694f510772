"""
The GC page's API, a FastAPI app the api-server mounts at ``/lakefs-gc`` (``fastapi_apps``).

Every route checks Airflow's auth itself (a mounted app gets none from Airflow): the list needs
the Plugins view and shows only the repositories whose DAG the user may read; a repository's runs
need read access to its DAG's runs. The data are the reports in each repository's namespace, read
through our storage layer with the repository's configured connections (the lakeFS connection for
the namespace, the storage connection for the store), and the DAG's runs in Airflow's database,
read only, with the one line a failed run's task left on why (its XCom ``refusal`` or ``error``,
``task_io.records_failure``). Every answer is a response model of :mod:`~lakefs_gc_airflow.gc_page.models` (the app's
OpenAPI, against which the page's ``www/src/types.ts`` is tested), serialized without the fields a
route leaves out. The React bundle (``www/dist``) is static code, served without auth, as Airflow's own
provider plugins serve theirs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from airflow.api_fastapi.auth.managers.models.resource_details import AccessView, DagAccessEntity, DagDetails
from airflow.api_fastapi.common.db.common import SessionDep  # noqa: TC002 (FastAPI reads the annotation at run time)
from airflow.api_fastapi.core_api.security import GetUserDep, requires_access_dag, requires_access_view
from fastapi import Depends, FastAPI, HTTPException
from fastapi.staticfiles import StaticFiles

from lakefs_gc_airflow.gc_page import models, runs as gc_runs

log = logging.getLogger(__name__)

URL_PREFIX = "/lakefs-gc"
DIST = Path(__file__).parent / "www" / "dist"
MAX_DAG_RUNS = 200

app = FastAPI(title="lakeFS GC", description="The GC page's data: GC runs per repository, from their reports.")


def _config():
    from lakefs_gc.config import load_config

    return load_config(strict=False)


def _repo(dag_id: str, cfg=None):
    cfg = cfg or _config()
    for r in cfg.repositories:
        if r.dag_id == dag_id:
            return r
    raise HTTPException(404, f"no GC repository with DAG {dag_id!r} in {cfg.path}")


def _recorded_inventories(cfg) -> list[Any]:
    """Return what the discovery refresh recorded of the inventory locations the entries read (none: [])."""
    from lakefs_gc.config.discovered import read_discovered

    if cfg.discovery is None:
        return []
    try:
        return read_discovered(cfg.discovery.state_file).inventories
    except Exception as e:  # the page shows the rest; the config's own check names the file
        log.warning("GC page: the discovery refresh's record does not read: %s", e)
        return []


def _recorded_orphans(cfg) -> list[Any]:
    """Return the orphaned namespaces the discovery refresh recorded (those still held by a repository left out)."""
    from lakefs_gc.config.discovered import read_discovered

    if cfg.discovery is None:
        return []
    try:
        return [o for o in read_discovered(cfg.discovery.state_file).orphans if o.orphaned]
    except Exception as e:  # as _recorded_inventories
        log.warning("GC page: the discovery refresh's record does not read: %s", e)
        return []


def _may_read(user, dag_id: str) -> bool:
    from airflow.api_fastapi.app import get_auth_manager

    return get_auth_manager().is_authorized_dag(
        method="GET", access_entity=DagAccessEntity.RUN, details=DagDetails(id=dag_id), user=user
    )


@app.get(
    "/api/repositories",
    response_model=models.ReposAnswer,
    response_model_exclude_unset=True,
    dependencies=[Depends(requires_access_view(AccessView.PLUGINS))],
)
def repositories(user: GetUserDep) -> dict[str, Any]:
    """Return the configured repositories whose DAG this user may read, and the config's own errors."""
    try:
        cfg = _config()
    except Exception as e:
        return {"repositories": [], "errors": [str(e)]}
    out: dict[str, Any] = {
        "repositories": [
            {
                "repository": r.repository,
                "dag_id": r.dag_id,
                "schedule": r.schedule,
                "lakefs_conn_id": r.lakefs_conn_id,
                "storage_conn_id": r.storage_conn_id,
            }
            for r in cfg.repositories
            if _may_read(user, r.dag_id)
        ],
        "errors": list(cfg.entry_errors),
        "config": str(cfg.path),
        # discovered repositories gone from lakeFS: their DAG is no longer built
        "removed": [
            {
                "repository": r.repository,
                "dag_id": f"lakefs_gc__{r.repository}",
                "lakefs_conn_id": r.lakefs_conn_id,
                "removed_at": r.removed_at,
            }
            for r in cfg.removed
        ],
        "refreshed_at": cfg.refreshed_at,
    }
    inventories = _recorded_inventories(cfg)
    if inventories:
        out["inventories"] = [r.to_doc() for r in inventories]
    orphans = _recorded_orphans(cfg)
    if orphans:
        out["orphans"] = [o.to_doc() for o in orphans]
    return out


def _storage(repo):
    """Open the repository's namespace as the GC's tasks open it."""
    from lakefs_gc_airflow.task_io import repository_storage

    return repository_storage(repo.repository, repo.lakefs_conn_id, repo.storage_conn_id)


def _grace_period(repo) -> int:
    """Return lakeFS's grace period (seconds) as ``prepare_run`` reads it, through the repository's lakeFS connection."""
    from lakefs_gc_airflow.hooks import LakeFSHook

    client = LakeFSHook(lakefs_conn_id=repo.lakefs_conn_id).get_conn()
    try:
        return int(client.grace_period_seconds())
    finally:
        client.close()


def _dag_runs(session, dag_id: str) -> list[dict[str, Any]]:
    from airflow.models.dagrun import DagRun
    from airflow.models.taskinstance import TaskInstance
    from sqlalchemy import select

    rows = session.execute(
        select(DagRun.run_id, DagRun.state, DagRun.run_type, DagRun.logical_date, DagRun.start_date, DagRun.end_date)
        .where(DagRun.dag_id == dag_id)
        .order_by(DagRun.id.desc())
        .limit(MAX_DAG_RUNS)
    ).all()
    failed: dict[str, list[str]] = {}
    for run_id, task_id in session.execute(
        select(TaskInstance.run_id, TaskInstance.task_id).where(
            TaskInstance.dag_id == dag_id, TaskInstance.state == "failed"
        )
    ):  # not upstream_failed
        failed.setdefault(run_id, []).append(task_id)

    def iso(t):
        return t.isoformat() if t is not None else None

    def state(r) -> str:
        return str(r.state.value if hasattr(r.state, "value") else r.state)

    reasons = _failure_reasons(
        session, dag_id, {r.run_id: failed.get(r.run_id, []) for r in rows if state(r) == "failed"}
    )
    return [
        {
            "run_id": r.run_id,
            "state": state(r),
            "run_type": str(r.run_type.value if hasattr(r.run_type, "value") else r.run_type),
            "logical_date": iso(r.logical_date),
            "start_date": iso(r.start_date),
            "end_date": iso(r.end_date),
            "failed_tasks": sorted(failed.get(r.run_id, [])),
            "reason": reasons.get(r.run_id),
        }
        for r in rows
    ]


def _failure_reasons(session, dag_id: str, failed: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    """
    Return why each failed run failed: the one line its first failed task left (``task_io.records_failure``).

    Read through Airflow's own XCom model, for failed runs and their failed tasks only (a task's
    XComs are cleared when it is retried); a value that is not a line of text is left out.
    """
    from airflow.models.xcom import XComModel
    from sqlalchemy import select

    from lakefs_gc_airflow.task_io import ERROR_KEY, REASON_MAX, REFUSAL_KEY

    if not any(failed.values()):
        return {}
    out: dict[str, dict[str, Any]] = {}
    rows = session.execute(
        select(XComModel.run_id, XComModel.task_id, XComModel.key, XComModel.value)
        .where(
            XComModel.dag_id == dag_id,
            XComModel.run_id.in_([run_id for run_id, tasks in failed.items() if tasks]),
            XComModel.key.in_((REFUSAL_KEY, ERROR_KEY)),
        )
        .order_by(XComModel.timestamp)
    ).all()
    for row in rows:  # the first to fail first
        if row.run_id in out or row.task_id not in failed[row.run_id]:
            continue
        try:
            value = XComModel.deserialize_value(row)
        except Exception:  # a value some other writer left: not ours
            continue
        if isinstance(value, str) and value.strip():
            line = " ".join(value.split())[:REASON_MAX]
            out[row.run_id] = {"task_id": row.task_id, "refused": row.key == REFUSAL_KEY, "reason": line}
    return out


@app.get(
    "/api/dags/{dag_id}/runs",
    response_model=models.RunsAnswer,
    response_model_exclude_unset=True,
    dependencies=[Depends(requires_access_dag("GET", DagAccessEntity.RUN))],
)
def dag_gc_runs(dag_id: str, session: SessionDep) -> dict[str, Any]:
    """Return the repository's GC runs, newest first: its reports merged with its DAG's runs."""
    cfg = _config()
    repo = _repo(dag_id, cfg)
    dag_runs = _dag_runs(session, dag_id)
    from lakefs_gc import __version__

    out: dict[str, Any] = {
        "repository": repo.repository,
        "dag_id": dag_id,
        "namespace": None,
        "error": None,
        "version": __version__,
    }
    grace: tuple[int, str] | None = None
    try:
        namespace, storage = _storage(repo)
        out["namespace"] = namespace
        records = gc_runs.repository_runs(storage)
        out["space"] = gc_runs.newest_space(storage, records)
    except Exception as e:
        log.warning("GC page: the reports of %s cannot be read: %s", repo.repository, e)
        out["error"] = f"the reports cannot be read: {e}"
        records = []
    else:  # lakeFS answered: its grace period now (the trigger form warns below it)
        try:
            grace = _grace_period(repo), "lakeFS"
        except Exception as e:
            log.warning("GC page: lakeFS's grace period for %s cannot be read: %s", repo.repository, e)
    out["grace_period_seconds"], out["grace_period_source"] = grace or gc_runs.recorded_grace_period(records)
    if repo.listing.source == "inventory":
        recorded = next((r for r in _recorded_inventories(cfg) if repo.repository in r.repositories), None)
        if recorded is not None:
            out["inventory"] = recorded.to_doc()
    out["runs"] = gc_runs.merge(records, dag_runs)
    out["steps"] = list(gc_runs.STEPS)  # the timed steps, in the DAG's order: the page's chart series
    return out


@contextmanager
def _lakefs_and_namespace(repo, what: str) -> Iterator[tuple[Any, Any, tuple[str, ...], str | None]]:
    """
    Yield (lakeFS client, namespace storage, its roots, the local blockstore root) of a configured repository.

    Through its connections (the hooks). A ``ValueError`` inside is the request's fault (400, its
    message); anything else is lakeFS or the store failing to answer (502: cannot ``what``).
    """
    from lakefs_gc.storage import open_storage, parse_namespace
    from lakefs_gc_airflow.hooks import LakeFSHook
    from lakefs_gc_airflow.task_io import storage_settings

    hook = LakeFSHook(lakefs_conn_id=repo.lakefs_conn_id)
    client = hook.get_conn()
    try:
        namespace = client.get_repository(repo.repository).storage_namespace
        local_root = hook.local_blockstore_root()
        storage = open_storage(namespace, storage_settings(namespace, local_root, repo.storage_conn_id), local_root)
        yield client, storage, parse_namespace(namespace, local_root).roots(), local_root
    except HTTPException:
        raise
    except ValueError as e:
        raise HTTPException(400, str(e).replace("--delete-branch", "delete branch").replace("--rule", "rule")) from None
    except Exception as e:
        log.warning("GC page: %s in %s: %s", what, repo.repository, e)
        raise HTTPException(502, f"cannot {what}: {e}") from None
    finally:
        client.close()


@app.get(
    "/api/dags/{dag_id}/explain",
    response_model=models.ExplainAnswer,
    response_model_exclude_unset=True,
    dependencies=[Depends(requires_access_dag("GET", DagAccessEntity.RUN))],
)
def dag_gc_explain(dag_id: str, target: str, ref: str | None = None) -> dict[str, Any]:
    """
    ``lakefs-gc explain`` for the repository of ``dag_id``: an address, or a logical path on ``ref``.

    A path ``ref`` no longer reads: the address it had in the newest commit of ``ref`` that had it
    (the note names that commit), 404 saying so when none had it. 400 naming what is wrong with the
    target, 502 when lakeFS or the store cannot answer.
    """
    from lakefs_gc.explain import explain, resolve
    from lakefs_gc.path_history import PathNeverOnRef

    repo = _repo(dag_id)
    with _lakefs_and_namespace(repo, f"explain {target!r}") as (client, storage, roots, _):
        try:
            bound = "lakefs-gc explain --max-commits"
            address, path, note = resolve(roots, target, client, repo.repository, ref, ref_flag="ref", bound_flag=bound)
        except PathNeverOnRef as e:
            raise HTTPException(404, str(e)) from None
        ex = explain(storage, address, roots, client, repo.repository, path=path)
    return {
        "target": target,
        "address": address,
        "note": note,
        "verdict": ex.verdict,
        "reason": ex.reason,
        "fates": ex.fates,
        "lines": ex.lines(),
    }


@app.get(
    "/api/dags/{dag_id}/whatif",
    response_model=models.WhatIfAnswer,
    response_model_exclude_unset=True,
    dependencies=[Depends(requires_access_dag("GET", DagAccessEntity.RUN))],
)
def dag_gc_whatif(dag_id: str, delete_branch: str | None = None, rule: str | None = None) -> dict[str, Any]:
    """
    ``lakefs-gc whatif`` for the repository of ``dag_id``: what the next run would free after a change.

    ``delete_branch=B``, or ``rule=DAYS`` / ``rule=BRANCH=DAYS``; nothing is changed or deleted. 400
    naming what is wrong with the change, 502 when lakeFS or the store cannot answer.
    """
    from lakefs_gc.space import parse_change, whatif_now

    repo = _repo(dag_id)
    try:
        change = parse_change(delete_branch or None, rule or None)
    except ValueError as e:
        raise HTTPException(400, str(e).replace("--delete-branch", "delete branch").replace("--rule", "rule")) from None
    with _lakefs_and_namespace(repo, f"price {change.describe()}") as (client, storage, roots, local_root):
        lines = whatif_now(client, repo.repository, storage, roots, local_root, repo.min_age_seconds, change, repo.keep)
    return {"change": change.describe(), "lines": lines}


if DIST.is_dir():
    app.mount("/static", StaticFiles(directory=DIST), name="static")
