"""Tags."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

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


@router.get("/repositories/{repository}/tags")
def list_tags(repository: str, request: Request, cat: CatalogDep):
    tags, more = cat.list_tags(
        repository, request.query_params.get("prefix", ""), request.query_params.get("after", ""), query_amount(request)
    )
    return {"pagination": pagination(len(tags), more, tags[-1]["id"] if tags else ""), "results": tags}


@router.post("/repositories/{repository}/tags")
async def create_tag(repository: str, request: Request, cat: CatalogDep):
    body = await json_body(request)
    tag = body_field(body, "id", str)
    cid = cat.create_tag(repository, tag, body_field(body, "ref", str), body.get("force") is True)
    return json_response(201, {"id": tag, "commit_id": cid})


@router.get("/repositories/{repository}/tags/{tag}")
def get_tag(repository: str, tag: str, cat: CatalogDep):
    return {"id": tag, "commit_id": cat.get_tag(repository, tag)}


@router.delete("/repositories/{repository}/tags/{tag}")
def delete_tag(repository: str, tag: str, request: Request, cat: CatalogDep):
    cat.delete_tag(repository, tag, query_bool(request, "force"))
    return Response(status_code=204)
