"""
What every router shares: the app's catalog and settings, basic auth, parameter readers, JSON shapes.

``create_app`` keeps the catalog and the settings in ``app.state``; an endpoint asks for them as
dependencies (:data:`CatalogDep`, :data:`SettingsDep`, :data:`User` for the authenticated key).
"""

from __future__ import annotations

import base64
import binascii
import hmac
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, Request
from fastapi.responses import JSONResponse

from lakefs_sandbox.emulator.core import APIError, Catalog, Settings

if TYPE_CHECKING:
    from lakefs_gc.lakefs.graveler import Entry

API = "/api/v1"
VERSION = "1.88.0-emulator"
MAX_AMOUNT = 1000
DEFAULT_AMOUNT = 100


# the dependencies are coroutines so that FastAPI calls them in the event loop, not in a worker thread
async def catalog(request: Request) -> Catalog:
    return request.app.state.catalog


async def settings(request: Request) -> Settings:
    return request.app.state.settings


def auth(request: Request) -> str:
    """Check the request's basic auth against the settings' key pair; return the access key (401 otherwise)."""
    s: Settings = request.app.state.settings
    header = request.headers.get("authorization", "")
    if header.lower().startswith("basic "):
        try:
            user, _, pw = base64.b64decode(header[6:].strip(), validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            user, pw = "", ""
        if hmac.compare_digest(user.encode(), s.access_key.encode()) and hmac.compare_digest(
            pw.encode(), s.secret_key.encode()
        ):
            return user
    raise APIError(401, "error authenticating request")


CatalogDep = Annotated[Catalog, Depends(catalog)]
SettingsDep = Annotated[Settings, Depends(settings)]
User = Annotated[str, Depends(auth)]


def json_response(status: int, body: Any) -> JSONResponse:
    return JSONResponse(status_code=status, content=body)


def pagination(results: int, has_more: bool, next_offset: str) -> dict:
    return {
        "has_more": has_more,
        "next_offset": next_offset if has_more else "",
        "results": results,
        "max_per_page": MAX_AMOUNT,
    }


def query_amount(request: Request) -> int:
    raw = request.query_params.get("amount")
    if raw is None or raw == "":
        return DEFAULT_AMOUNT
    try:
        v = int(raw)
    except ValueError:
        raise APIError(400, "amount: invalid value") from None
    if v < 0:
        return DEFAULT_AMOUNT
    return min(v, MAX_AMOUNT)


def query_bool(request: Request, name: str, default: bool = False) -> bool:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    return raw.lower() in ("1", "true", "yes")


def query_required(request: Request, name: str) -> str:
    v = request.query_params.get(name)
    if v is None:
        raise APIError(400, f"parameter {name!r} is required")
    return v


async def json_body(request: Request) -> dict:
    try:
        data = await request.json()
    except Exception:
        raise APIError(400, "request body: invalid JSON") from None
    if not isinstance(data, dict):
        raise APIError(400, "request body: expected a JSON object")
    return data


def body_field(body: dict, name: str, kind: type | tuple[type, ...]) -> Any:
    if name not in body:
        raise APIError(400, f"{name}: required field missing")
    v = body[name]
    if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
        raise APIError(400, f"{name}: invalid value")
    return v


def object_stats(cat: Catalog, ns: str, path: str, e: Entry, user_metadata: bool = True, listing: bool = False) -> dict:
    """
    Answer lakeFS's ObjectStats of an entry.

    ``metadata`` is always in a stat (``{}`` without ``user_metadata``), in a listing only when the
    entry has some (and ``user_metadata``).
    """
    out = {
        "path": path,
        "path_type": "object",
        "physical_address": cat.address_uri(ns, e),
        "checksum": e.etag,
        "size_bytes": e.size,
        "mtime": int(e.last_modified_seconds),
        "content_type": e.content_type,
    }
    if not listing or (user_metadata and e.metadata):
        out["metadata"] = dict(e.metadata) if user_metadata else {}
    return out


def commit_json(c: dict) -> dict:
    return {
        k: c[k]
        for k in (
            "id",
            "parents",
            "committer",
            "message",
            "creation_date",
            "meta_range_id",
            "metadata",
            "generation",
            "version",
        )
    }


def storage_config(s: Settings) -> dict:
    if s.blockstore_type == "s3":
        example, regex, prefix = "s3://example-bucket/", "^s3://", ""
    else:  # lakeFS's local adapter suggests local:// (pkg/block/local DefaultNamespacePrefix)
        example, regex, prefix = "local://example-bucket/", "^local://", "local://"
    return {
        "blockstore_type": s.blockstore_type,
        "blockstore_namespace_example": example,
        "blockstore_namespace_ValidityRegex": regex,
        "default_namespace_prefix": prefix,
        "pre_sign_support": s.blockstore_type == "s3",
        "pre_sign_support_ui": False,
        "import_support": True,
        "import_validity_regex": regex,
        "pre_sign_multipart_upload": False,
        "blockstore_id": "",
        "blockstore_description": "",
    }


def http_date(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")
