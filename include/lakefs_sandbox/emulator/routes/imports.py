"""Imports: start one (``importStart``) and ask how it went (``importStatus``)."""

from __future__ import annotations

import threading
import time
from typing import Annotated

from fastapi import APIRouter, Depends, Request

from lakefs_sandbox.emulator.core import APIError, ImportFailed, _now_iso
from lakefs_sandbox.emulator.routes.common import (
    CatalogDep,
    User,
    body_field,
    commit_json,
    json_body,
    json_response,
    query_required,
)
from lakefs_sandbox.emulator.xid import new_xid


class ImportTasks:
    """The imports an app started, by id (in memory), with their results or errors."""

    def __init__(self) -> None:
        self.tasks: dict[str, dict] = {}
        self.lock = threading.Lock()

    def add(self, task_id: str, task: dict) -> None:
        with self.lock:
            self.tasks[task_id] = task

    def get(self, task_id: str) -> dict | None:
        with self.lock:
            return self.tasks.get(task_id)


async def import_tasks(request: Request) -> ImportTasks:
    return request.app.state.import_tasks


ImportTasksDep = Annotated[ImportTasks, Depends(import_tasks)]
router = APIRouter()


@router.post("/repositories/{repository}/branches/{branch}/import")
async def import_start(
    repository: str, branch: str, request: Request, cat: CatalogDep, imports: ImportTasksDep, user: User
):
    body = await json_body(request)
    paths = body_field(body, "paths", list)
    creation = body_field(body, "commit", dict)
    for p in paths:
        if not isinstance(p, dict) or not all(isinstance(p.get(k), str) for k in ("type", "path", "destination")):
            raise APIError(400, "paths: invalid value")
    try:
        # the commit's date is not taken: lakeFS's catalog.ImportCommit has no date (now, always)
        res = cat.import_objects(
            repository, branch, paths, body_field(creation, "message", str), creation.get("metadata"), None, user
        )
    except ImportFailed as exc:  # lakeFS fails it after the 202: the status tells
        res = {"error": exc.message, "ingested_objects": exc.ingested}
    task_id = new_xid(cat.now())  # lakeFS's import id: xid.New()
    imports.add(task_id, {"repo": repository, "branch": branch, "time": time.time(), **res})
    return json_response(202, {"id": task_id})


@router.get("/repositories/{repository}/branches/{branch}/import")
def import_status(repository: str, branch: str, request: Request, cat: CatalogDep, imports: ImportTasksDep):
    task_id = query_required(request, "id")
    cat.get_branch(repository, branch)
    t = imports.get(task_id)
    if t is None or t["repo"] != repository or t["branch"] != branch:
        raise APIError(404, "import: not found")
    if "error" in t:  # lakeFS's importStatusToResponse of a failed import: not completed, ErrImport
        return {
            "completed": False,
            "update_time": _now_iso(t["time"]),
            "ingested_objects": t["ingested_objects"],
            "error": {"message": f"import error: {t['error']}"},
        }
    return {
        "completed": True,
        "update_time": _now_iso(t["time"]),
        "ingested_objects": t["ingested_objects"],
        "metarange_id": t["metarange_id"],
        "commit": commit_json(t["commit"]),
    }
