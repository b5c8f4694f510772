"""Garbage collection: retention rules, ``prepare_commits``, ``prepare_uncommited``, and where metadata lies."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from lakefs_sandbox.emulator.core import APIError
from lakefs_sandbox.emulator.routes.common import CatalogDep, body_field, json_body, json_response, query_required

router = APIRouter()


# ------------------------------------------------------------------ GC rules
def _rules_body(body: dict) -> dict:
    days = body_field(body, "default_retention_days", int)
    branches = body_field(body, "branches", list)
    out = []
    for b in branches:
        if (
            not isinstance(b, dict)
            or not isinstance(b.get("branch_id"), str)
            or not isinstance(b.get("retention_days"), int)
        ):
            raise APIError(400, "branches: invalid value")
        out.append({"branch_id": b["branch_id"], "retention_days": b["retention_days"]})
    return {"default_retention_days": days, "branches": out}


@router.get("/repositories/{repository}/settings/gc_rules")
@router.get("/repositories/{repository}/gc/rules")
def get_gc_rules(repository: str, cat: CatalogDep):
    rules = dict(cat.get_gc_rules(repository))
    # lakeFS 1.84 answers "branches": null when no branch has a rule of its own (a JSON nil slice)
    return {**rules, "branches": rules.get("branches") or None}


@router.put("/repositories/{repository}/settings/gc_rules")
@router.post("/repositories/{repository}/gc/rules")
async def set_gc_rules(repository: str, request: Request, cat: CatalogDep):
    cat.set_gc_rules(repository, _rules_body(await json_body(request)))
    return Response(status_code=204)


@router.delete("/repositories/{repository}/settings/gc_rules")
@router.delete("/repositories/{repository}/gc/rules")
def delete_gc_rules(repository: str, cat: CatalogDep):
    cat.set_gc_rules(repository, None)
    return Response(status_code=204)


@router.get("/repositories/{repository}/gc/rules/set_allowed")
def set_rules_preflight(repository: str, cat: CatalogDep):
    cat.get_repository(repository)
    return Response(status_code=204)


# ------------------------------------------------------------------ GC preparation
@router.post("/repositories/{repository}/gc/prepare_commits")
def prepare_commits(repository: str, cat: CatalogDep):
    return json_response(201, cat.prepare_commits(repository))


@router.post("/repositories/{repository}/gc/prepare_commits/async")
def prepare_commits_async(repository: str, cat: CatalogDep):
    return json_response(202, {"id": cat.start_prepare_commits_task(repository)})


@router.get("/repositories/{repository}/gc/prepare_commits/status")
def prepare_commits_status(repository: str, request: Request, cat: CatalogDep):
    return cat.prepare_commits_status(repository, query_required(request, "id"))


@router.post("/repositories/{repository}/gc/prepare_uncommited")
async def prepare_uncommitted(repository: str, request: Request, cat: CatalogDep):
    raw = await request.body()
    token = None
    if raw.strip():
        body = await json_body(request)
        token = body.get("continuation_token")
        if token is not None and not isinstance(token, str):
            raise APIError(400, "invalid continuation token")
    return json_response(201, cat.prepare_uncommitted(repository, token or None))


# ------------------------------------------------------------------ metadata
@router.get("/repositories/{repository}/metadata/meta_range/{meta_range}")
@router.get("/repositories/{repository}/metadata/range/{meta_range}")
def get_table_location(repository: str, meta_range: str, cat: CatalogDep):
    cat.get_repository(repository)
    location = f"_lakefs/{meta_range}"
    return JSONResponse({"location": location}, headers={"Location": location})
