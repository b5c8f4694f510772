"""Repositories, branches, and the diffs and merge base of refs."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from lakefs_sandbox.emulator.core import APIError
from lakefs_sandbox.emulator.routes.common import (
    CatalogDep,
    body_field,
    json_body,
    json_response,
    pagination,
    query_amount,
    query_bool,
)

router = APIRouter()


# ------------------------------------------------------------------ repositories
@router.get("/repositories")
def list_repositories(request: Request, cat: CatalogDep):
    amount = query_amount(request)
    repos, more = cat.list_repositories(
        request.query_params.get("prefix", ""), request.query_params.get("after", ""), amount
    )
    return {"pagination": pagination(len(repos), more, repos[-1]["id"] if repos else ""), "results": repos}


@router.post("/repositories")
async def create_repository(request: Request, cat: CatalogDep):
    if query_bool(request, "bare"):
        raise APIError(501, "bare repositories are not implemented by the lakeFS emulator")
    body = await json_body(request)
    repo = cat.create_repository(
        body_field(body, "name", str),
        body_field(body, "storage_namespace", str),
        body.get("default_branch") or "main",
        bool(body.get("read_only", False)),
    )
    return json_response(201, repo)


@router.get("/repositories/{repository}")
def get_repository(repository: str, cat: CatalogDep):
    return cat.get_repository(repository)


@router.delete("/repositories/{repository}")
def delete_repository(repository: str, cat: CatalogDep):
    cat.delete_repository(repository)
    return Response(status_code=204)


# ------------------------------------------------------------------ branches
@router.get("/repositories/{repository}/branches")
def list_branches(repository: str, request: Request, cat: CatalogDep):
    amount = query_amount(request)
    refs, more = cat.list_branches(
        repository,
        request.query_params.get("prefix", ""),
        request.query_params.get("after", ""),
        amount,
        query_bool(request, "show_hidden"),
    )
    return {"pagination": pagination(len(refs), more, refs[-1]["id"] if refs else ""), "results": refs}


@router.post("/repositories/{repository}/branches")
async def create_branch(repository: str, request: Request, cat: CatalogDep):
    body = await json_body(request)
    cid = cat.create_branch(
        repository, body_field(body, "name", str), body_field(body, "source", str), bool(body.get("hidden", False))
    )
    return Response(status_code=201, content=cid, media_type="text/html")


@router.get("/repositories/{repository}/branches/{branch}")
def get_branch(repository: str, branch: str, cat: CatalogDep):
    return cat.get_branch(repository, branch)


def _diff_list(diffs: list, more: bool) -> dict:
    results = [
        {"path": p, "type": t, "path_type": "common_prefix"}
        if n is None
        else {"path": p, "type": t, "path_type": "object", "size_bytes": n}
        for p, t, n in diffs
    ]
    return {"pagination": pagination(len(results), more, diffs[-1][0] if diffs else ""), "results": results}


@router.get("/repositories/{repository}/branches/{branch}/diff")
def diff_branch(repository: str, branch: str, request: Request, cat: CatalogDep):
    q = request.query_params
    return _diff_list(
        *cat.diff_branch(
            repository, branch, q.get("prefix", ""), q.get("after", ""), query_amount(request), q.get("delimiter", "")
        )
    )


@router.get("/repositories/{repository}/refs/{left_ref}/diff/{right_ref}")
def diff_refs(repository: str, left_ref: str, right_ref: str, request: Request, cat: CatalogDep):
    q = request.query_params
    kind = q.get("type") or "three_dot"
    if kind not in ("two_dot", "three_dot"):
        raise APIError(400, "type: invalid value")
    return _diff_list(
        *cat.diff_refs(
            repository,
            left_ref,
            right_ref,
            kind,
            q.get("prefix", ""),
            q.get("after", ""),
            query_amount(request),
            q.get("delimiter", ""),
        )
    )


@router.get("/repositories/{repository}/refs/{source_ref}/merge/{destination_branch}")
def find_merge_base(repository: str, source_ref: str, destination_branch: str, cat: CatalogDep):
    source, destination, base = cat.find_merge_base(repository, source_ref, destination_branch)
    return {"source_commit_id": source, "destination_commit_id": destination, "base_commit_id": base}


@router.delete("/repositories/{repository}/branches/{branch}")
def delete_branch(repository: str, branch: str, cat: CatalogDep):
    cat.delete_branch(repository, branch)
    return Response(status_code=204)


@router.put("/repositories/{repository}/branches/{branch}")
async def reset_branch(repository: str, branch: str, request: Request, cat: CatalogDep):
    body = await json_body(request)
    cat.reset_branch(repository, branch, body_field(body, "type", str), body.get("path"))
    return Response(status_code=204)
