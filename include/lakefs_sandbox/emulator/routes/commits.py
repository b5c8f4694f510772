"""Commits and the log; copies, merges, reverts, cherry-picks."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from lakefs_sandbox.emulator.core import APIError, MergeConflict
from lakefs_sandbox.emulator.routes.common import (
    CatalogDep,
    User,
    body_field,
    commit_json,
    json_body,
    json_response,
    object_stats,
    pagination,
    query_amount,
    query_bool,
    query_required,
)

router = APIRouter()


# ------------------------------------------------------------------ commits
@router.post("/repositories/{repository}/branches/{branch}/commits")
async def commit(repository: str, branch: str, request: Request, cat: CatalogDep, user: User):
    if request.query_params.get("source_metarange"):
        raise APIError(501, "commit with source_metarange is not implemented by the lakeFS emulator")
    body = await json_body(request)
    date = body.get("date")
    if date is not None and (not isinstance(date, int) or isinstance(date, bool)):
        raise APIError(400, "date: invalid value")
    c = cat.commit(
        repository,
        branch,
        body_field(body, "message", str),
        body.get("metadata"),
        date,
        bool(body.get("allow_empty", False)),
        committer=user,
    )
    return json_response(201, commit_json(c))


@router.get("/repositories/{repository}/commits/{commit_id}")
def get_commit(repository: str, commit_id: str, cat: CatalogDep):
    return commit_json(cat.get_commit(repository, commit_id))


@router.get("/repositories/{repository}/refs/{ref}/commits")
def log_commits(repository: str, ref: str, request: Request, cat: CatalogDep):
    for unsupported in ("objects", "prefixes", "since", "stop_at"):
        if request.query_params.get(unsupported):
            raise APIError(501, f"logCommits with {unsupported!r} is not implemented by the lakeFS emulator")
    commits, more = cat.log(
        repository,
        ref,
        request.query_params.get("after", ""),
        query_amount(request),
        query_bool(request, "first_parent"),
    )
    return {
        "pagination": pagination(len(commits), more, commits[-1]["id"] if commits else ""),
        "results": [commit_json(c) for c in commits],
    }


# ------------------------------------------------------------------ copies, merges, reverts, cherry-picks
@router.post("/repositories/{repository}/branches/{branch}/objects/copy")
async def copy_object(repository: str, branch: str, request: Request, cat: CatalogDep):
    dest_path = query_required(request, "dest_path")
    body = await json_body(request)
    src_ref = body.get("src_ref") or ""
    if not isinstance(src_ref, str):
        raise APIError(400, "src_ref: invalid value")
    r, e = cat.copy_object(
        repository,
        branch,
        dest_path,
        src_ref,
        body_field(body, "src_path", str),
        body.get("force") is True,
        body.get("shallow") is True,
    )
    return json_response(201, object_stats(cat, r["storage_namespace"], dest_path, e))


@router.post("/repositories/{repository}/refs/{source_ref}/merge/{destination_branch}")
async def merge_into_branch(
    repository: str, source_ref: str, destination_branch: str, request: Request, cat: CatalogDep, user: User
):
    body = await json_body(request) if (await request.body()).strip() else {}
    message, strategy = body.get("message") or "", body.get("strategy") or ""
    metadata = body.get("metadata") or {}
    if not isinstance(message, str) or not isinstance(strategy, str) or not isinstance(metadata, dict):
        raise APIError(400, "merge: invalid value")
    try:
        cid = cat.merge(
            repository,
            source_ref,
            destination_branch,
            message,
            metadata,
            strategy,
            body.get("force") is True,
            body.get("allow_empty") is True,
            body.get("squash_merge") is True,
            user,
        )
    except MergeConflict:  # lakeFS 1.84 answers a MergeResult with an empty reference
        return json_response(409, {"reference": ""})
    return {"reference": cid}


def _overrides(body: dict) -> dict | None:
    o = body.get("commit_overrides")
    if o is not None and (
        not isinstance(o, dict)
        or not isinstance(o.get("message", ""), str)
        or not isinstance(o.get("metadata") or {}, dict)
    ):
        raise APIError(400, "commit_overrides: invalid value")
    return o


@router.post("/repositories/{repository}/branches/{branch}/revert")
async def revert_branch(repository: str, branch: str, request: Request, cat: CatalogDep, user: User):
    body = await json_body(request)
    cat.revert(
        repository,
        branch,
        body_field(body, "ref", str),
        body_field(body, "parent_number", int),
        body.get("allow_empty") is True,
        _overrides(body),
        body.get("force") is True,
        user,
    )
    return Response(status_code=204)


@router.post("/repositories/{repository}/branches/{branch}/cherry-pick")
async def cherry_pick(repository: str, branch: str, request: Request, cat: CatalogDep, user: User):
    body = await json_body(request)
    parent = body.get("parent_number")
    if parent is not None and (not isinstance(parent, int) or isinstance(parent, bool)):
        raise APIError(400, "parent_number: invalid value")
    c = cat.cherry_pick(
        repository, branch, body_field(body, "ref", str), parent, _overrides(body), body.get("force") is True, user
    )
    return json_response(201, commit_json(c))
