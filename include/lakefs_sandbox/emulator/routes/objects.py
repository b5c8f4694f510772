"""Objects (upload, delete, stat, read, list) and staging (``getPhysicalAddress``, ``linkPhysicalAddress``)."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import Response

from lakefs_gc.storage import S3Storage
from lakefs_sandbox.emulator.core import APIError
from lakefs_sandbox.emulator.routes.common import (
    CatalogDep,
    body_field,
    http_date,
    json_body,
    json_response,
    object_stats,
    pagination,
    query_amount,
    query_bool,
    query_required,
)

router = APIRouter()


# ------------------------------------------------------------------ objects
@router.post("/repositories/{repository}/branches/{branch}/objects")
async def upload_object(repository: str, branch: str, request: Request, cat: CatalogDep):
    path = query_required(request, "path")
    ctype = request.headers.get("content-type", "")
    content_type = "application/octet-stream"
    if ctype.startswith("multipart/form-data"):
        form = await request.form()
        f = form.get("content")
        if f is None or isinstance(f, str):
            raise APIError(400, "multipart upload must carry a file named 'content'")
        data = await f.read()
        content_type = f.content_type or content_type
    else:
        data = await request.body()
        content_type = ctype or content_type
    metadata = {
        k[len("x-lakefs-meta-") :]: v for k, v in request.headers.items() if k.lower().startswith("x-lakefs-meta-")
    }
    if request.headers.get("if-none-match") == "*":
        try:
            cat.get_entry(repository, branch, path)
            raise APIError(412, "path already exists")
        except APIError as exc:
            if exc.status != 404:
                raise
    r, e = cat.upload(repository, branch, path, data, content_type, metadata)
    return json_response(201, object_stats(cat, r["storage_namespace"], path, e))


@router.delete("/repositories/{repository}/branches/{branch}/objects")
def delete_object(repository: str, branch: str, request: Request, cat: CatalogDep):
    cat.delete_object(repository, branch, query_required(request, "path"))
    return Response(status_code=204)


@router.post("/repositories/{repository}/branches/{branch}/objects/delete")
async def delete_objects(repository: str, branch: str, request: Request, cat: CatalogDep):
    """LakeFS's bulk delete: 200 with the per-path errors (none for a path that is not there)."""
    paths = body_field(await json_body(request), "paths", list)
    if not all(isinstance(p, str) for p in paths):
        raise APIError(400, "paths: invalid value")
    return {"errors": cat.delete_objects(repository, branch, paths)}


@router.get("/repositories/{repository}/refs/{ref}/objects/stat")
def stat_object(repository: str, ref: str, request: Request, cat: CatalogDep):
    path = query_required(request, "path")
    r, e = cat.get_entry(repository, ref, path)
    return object_stats(cat, r["storage_namespace"], path, e, query_bool(request, "user_metadata", True))


@router.get("/repositories/{repository}/refs/{ref}/objects")
def get_object(repository: str, ref: str, request: Request, cat: CatalogDep):
    e, data = cat.read_object(repository, ref, query_required(request, "path"))
    return Response(
        content=data,
        media_type=e.content_type or "application/octet-stream",
        headers={"ETag": f'"{e.etag}"', "Last-Modified": http_date(e.last_modified_seconds)},
    )


@router.head("/repositories/{repository}/refs/{ref}/objects")
def head_object(repository: str, ref: str, request: Request, cat: CatalogDep):
    _, e = cat.get_entry(repository, ref, query_required(request, "path"))
    return Response(
        status_code=200,
        headers={
            "Content-Length": str(e.size),
            "ETag": f'"{e.etag}"',
            "Last-Modified": http_date(e.last_modified_seconds),
        },
    )


@router.get("/repositories/{repository}/refs/{ref}/objects/ls")
def list_objects(repository: str, ref: str, request: Request, cat: CatalogDep):
    q = request.query_params
    r, items, more = cat.list_objects(
        repository, ref, q.get("prefix", ""), q.get("after", ""), query_amount(request), q.get("delimiter", "")
    )
    um = query_bool(request, "user_metadata", True)
    results = [
        object_stats(cat, r["storage_namespace"], p, e, um, listing=True)
        if e is not None
        else {"path": p, "path_type": "common_prefix", "physical_address": "", "checksum": "", "mtime": 0}
        for p, e in items
    ]
    return {"pagination": pagination(len(results), more, items[-1][0] if items else ""), "results": results}


# ------------------------------------------------------------------ staging
@router.get("/repositories/{repository}/branches/{branch}/staging/backing")
def get_physical_address(repository: str, branch: str, request: Request, cat: CatalogDep):
    r, key, signed = cat.get_physical_address(repository, branch, query_required(request, "path"))
    out: dict = {"physical_address": signed, "presigned_url": None}
    if query_bool(request, "presign"):
        st = cat.storage(r["storage_namespace"])
        if cat.s.blockstore_type == "local":  # lakeFS's local adapter
            raise APIError(500, "local adapter presigned URL: operation not supported")
        if not isinstance(st, S3Storage):
            raise APIError(400, f"presign is not supported by the emulator's {cat.s.blockstore_type} blockstore")
        expiry = 900
        out["presigned_url"] = cat.presign(r["storage_namespace"], "put_object", key, expiry)  # signature incl.
        out["presigned_url_expiry"] = int(time.time()) + expiry
    return out


@router.put("/repositories/{repository}/branches/{branch}/staging/backing")
async def link_physical_address(repository: str, branch: str, request: Request, cat: CatalogDep):
    path = query_required(request, "path")
    body = await json_body(request)
    staging = body_field(body, "staging", dict)
    physical = staging.get("physical_address")
    if not isinstance(physical, str) or not physical:
        raise APIError(400, "staging.physical_address: required")
    r, e = cat.link_physical_address(
        repository,
        branch,
        path,
        physical,
        body_field(body, "checksum", str),
        body_field(body, "size_bytes", int),
        body.get("content_type") or "",
        body.get("user_metadata"),
    )
    # lakeFS answers the address as the client sent it; stat and listing print it resolved
    return {**object_stats(cat, r["storage_namespace"], path, e), "physical_address": physical}
