"""
Endpoints lakeFS does not have: the emulator's clock and staging compaction (``/_emulator``).

``fallback`` answers 501 to anything no router took; ``create_app`` includes it last.
"""

from __future__ import annotations

import time

from fastapi import APIRouter, Depends, Request

from lakefs_sandbox.emulator.core import APIError
from lakefs_sandbox.emulator.routes.common import CatalogDep, auth, json_body, json_response

router = APIRouter(dependencies=[Depends(auth)])
fallback = APIRouter()


@router.get("/_emulator/clock")
def get_clock(cat: CatalogDep):
    return {"now": cat.now(), "offset": cat.clock_offset()}


@router.post("/_emulator/compact/{repository}/{branch}")
def compact(repository: str, branch: str, cat: CatalogDep):
    """Staging compaction of a branch (what lakeFS Enterprise does in the background)."""
    return {"compacted": cat.compact(repository, branch)}


@router.put("/_emulator/clock")
async def set_clock(request: Request, cat: CatalogDep):
    body = await json_body(request)
    if "offset" in body:
        cat.set_clock_offset(float(body["offset"]))
    elif "now" in body:
        cat.set_clock_offset(float(body["now"]) - time.time())
    elif "advance" in body:
        cat.set_clock_offset(cat.clock_offset() + float(body["advance"]))
    else:
        raise APIError(400, "expected one of 'offset', 'now', 'advance' (seconds)")
    return {"now": cat.now(), "offset": cat.clock_offset()}


@fallback.api_route("/{rest:path}", methods=["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"])
def not_implemented(rest: str, request: Request):
    return json_response(501, {"message": f"{request.method} /{rest} is not implemented by the lakeFS emulator"})
