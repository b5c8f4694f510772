"""The HTTP layer: lakeFS's REST API (paths, fields and status codes of swagger.yml) over the Catalog."""

from __future__ import annotations

import base64
import binascii
import hmac
import threading
import time
from datetime import UTC, datetime

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response

from lakefs_gc.lakefs.graveler import Entry
from lakefs_gc.storage import S3Storage

from .core import APIError, Catalog, ImportFailed, MergeConflict, Settings, _now_iso
from .faults import install as install_faults
from .xid import new_xid

API = "/api/v1"
VERSION = "1.88.0-emulator"
MAX_AMOUNT = 1000
DEFAULT_AMOUNT = 100


def _json(status: int, body) -> JSONResponse:
    return JSONResponse(status_code=status, content=body)


def _pagination(results: int, has_more: bool, next_offset: str) -> dict:
    return {"has_more": has_more, "next_offset": next_offset if has_more else "", "results": results,
            "max_per_page": MAX_AMOUNT}


def _amount(request: Request) -> int:
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


def _bool(request: Request, name: str, default: bool = False) -> bool:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    return raw.lower() in ("1", "true", "yes")


def _required(request: Request, name: str) -> str:
    v = request.query_params.get(name)
    if v is None:
        raise APIError(400, f"parameter {name!r} is required")
    return v


async def _body(request: Request) -> dict:
    try:
        data = await request.json()
    except Exception:
        raise APIError(400, "request body: invalid JSON") from None
    if not isinstance(data, dict):
        raise APIError(400, "request body: expected a JSON object")
    return data


def _field(body: dict, name: str, kind: type | tuple[type, ...]):
    if name not in body:
        raise APIError(400, f"{name}: required field missing")
    v = body[name]
    if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
        raise APIError(400, f"{name}: invalid value")
    return v


def object_stats(cat: Catalog, ns: str, path: str, e: Entry, user_metadata: bool = True,
                 listing: bool = False) -> dict:
    """
    LakeFS's ObjectStats: ``metadata`` always in a stat (``{}`` without ``user_metadata``), in a
    listing only when the entry has some (and ``user_metadata``).
    """
    out = {"path": path, "path_type": "object", "physical_address": cat.address_uri(ns, e), "checksum": e.etag,
           "size_bytes": e.size, "mtime": int(e.last_modified_seconds), "content_type": e.content_type}
    if not listing or (user_metadata and e.metadata):
        out["metadata"] = dict(e.metadata) if user_metadata else {}
    return out


def commit_json(c: dict) -> dict:
    return {k: c[k] for k in ("id", "parents", "committer", "message", "creation_date", "meta_range_id", "metadata",
                              "generation", "version")}


def storage_config(s: Settings) -> dict:
    if s.blockstore_type == "s3":
        example, regex, prefix = "s3://example-bucket/", "^s3://", ""
    else:  # lakeFS's local adapter suggests local:// (pkg/block/local DefaultNamespacePrefix)
        example, regex, prefix = "local://example-bucket/", "^local://", "local://"
    return {"blockstore_type": s.blockstore_type, "blockstore_namespace_example": example,
            "blockstore_namespace_ValidityRegex": regex, "default_namespace_prefix": prefix,
            "pre_sign_support": s.blockstore_type == "s3", "pre_sign_support_ui": False,
            "import_support": True, "import_validity_regex": regex, "pre_sign_multipart_upload": False,
            "blockstore_id": "", "blockstore_description": ""}


def create_app(settings: Settings, catalog: Catalog | None = None) -> FastAPI:
    cat = catalog or Catalog(settings)
    app = FastAPI(title="lakeFS API emulator", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.catalog = cat
    imports: dict[str, dict] = {}
    imports_lock = threading.Lock()

    @app.exception_handler(APIError)
    async def _api_error(_: Request, exc: APIError):
        return _json(exc.status, {"message": exc.message})

    def auth(request: Request) -> str:
        header = request.headers.get("authorization", "")
        if header.lower().startswith("basic "):
            try:
                user, _, pw = base64.b64decode(header[6:].strip(), validate=True).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                user, pw = "", ""
            if hmac.compare_digest(user.encode(), settings.access_key.encode()) and \
                    hmac.compare_digest(pw.encode(), settings.secret_key.encode()):
                return user
        raise APIError(401, "error authenticating request")

    api = APIRouter(prefix=API, dependencies=[Depends(auth)])
    install_faults(app, auth)

    # ------------------------------------------------------------------ config
    @app.get(API + "/healthcheck")
    def healthcheck():
        return Response(status_code=204)

    @api.get("/config")
    def get_config():
        # as lakeFS 1.84 with one blockstore: an empty storage_config_list, no capabilities listed
        return {"version_config": {"version": VERSION, "version_context": "lakeFS"},
                "storage_config": storage_config(settings), "storage_config_list": [],
                "ui_config": {}, "capabilities_config": {}}

    @api.get("/config/storage")
    def get_storage_config():
        return storage_config(settings)

    @api.get("/config/version")
    def get_version():
        return {"version": VERSION, "version_context": "lakeFS"}

    @api.get("/config/garbage-collection")
    def get_gc_config():
        return {"grace_period": settings.grace_period}

    # ------------------------------------------------------------------ repositories
    @api.get("/repositories")
    def list_repositories(request: Request):
        amount = _amount(request)
        repos, more = cat.list_repositories(request.query_params.get("prefix", ""),
                                            request.query_params.get("after", ""), amount)
        return {"pagination": _pagination(len(repos), more, repos[-1]["id"] if repos else ""), "results": repos}

    @api.post("/repositories")
    async def create_repository(request: Request):
        if _bool(request, "bare"):
            raise APIError(501, "bare repositories are not implemented by the lakeFS emulator")
        body = await _body(request)
        repo = cat.create_repository(_field(body, "name", str), _field(body, "storage_namespace", str),
                                     body.get("default_branch") or "main", bool(body.get("read_only", False)))
        return _json(201, repo)

    @api.get("/repositories/{repository}")
    def get_repository(repository: str):
        return cat.get_repository(repository)

    @api.delete("/repositories/{repository}")
    def delete_repository(repository: str):
        cat.delete_repository(repository)
        return Response(status_code=204)

    # ------------------------------------------------------------------ branches
    @api.get("/repositories/{repository}/branches")
    def list_branches(repository: str, request: Request):
        amount = _amount(request)
        refs, more = cat.list_branches(repository, request.query_params.get("prefix", ""),
                                       request.query_params.get("after", ""), amount, _bool(request, "show_hidden"))
        return {"pagination": _pagination(len(refs), more, refs[-1]["id"] if refs else ""), "results": refs}

    @api.post("/repositories/{repository}/branches")
    async def create_branch(repository: str, request: Request):
        body = await _body(request)
        cid = cat.create_branch(repository, _field(body, "name", str), _field(body, "source", str),
                                bool(body.get("hidden", False)))
        return Response(status_code=201, content=cid, media_type="text/html")

    @api.get("/repositories/{repository}/branches/{branch}")
    def get_branch(repository: str, branch: str):
        return cat.get_branch(repository, branch)

    def _diff_list(diffs: list, more: bool) -> dict:
        results = [{"path": p, "type": t, "path_type": "common_prefix"} if n is None else
                   {"path": p, "type": t, "path_type": "object", "size_bytes": n} for p, t, n in diffs]
        return {"pagination": _pagination(len(results), more, diffs[-1][0] if diffs else ""), "results": results}

    @api.get("/repositories/{repository}/branches/{branch}/diff")
    def diff_branch(repository: str, branch: str, request: Request):
        q = request.query_params
        return _diff_list(*cat.diff_branch(repository, branch, q.get("prefix", ""), q.get("after", ""),
                                           _amount(request), q.get("delimiter", "")))

    @api.get("/repositories/{repository}/refs/{left_ref}/diff/{right_ref}")
    def diff_refs(repository: str, left_ref: str, right_ref: str, request: Request):
        q = request.query_params
        kind = q.get("type") or "three_dot"
        if kind not in ("two_dot", "three_dot"):
            raise APIError(400, "type: invalid value")
        return _diff_list(*cat.diff_refs(repository, left_ref, right_ref, kind, q.get("prefix", ""),
                                         q.get("after", ""), _amount(request), q.get("delimiter", "")))

    @api.get("/repositories/{repository}/refs/{source_ref}/merge/{destination_branch}")
    def find_merge_base(repository: str, source_ref: str, destination_branch: str):
        source, destination, base = cat.find_merge_base(repository, source_ref, destination_branch)
        return {"source_commit_id": source, "destination_commit_id": destination, "base_commit_id": base}

    @api.delete("/repositories/{repository}/branches/{branch}")
    def delete_branch(repository: str, branch: str):
        cat.delete_branch(repository, branch)
        return Response(status_code=204)

    @api.put("/repositories/{repository}/branches/{branch}")
    async def reset_branch(repository: str, branch: str, request: Request):
        body = await _body(request)
        cat.reset_branch(repository, branch, _field(body, "type", str), body.get("path"))
        return Response(status_code=204)

    # ------------------------------------------------------------------ objects
    @api.post("/repositories/{repository}/branches/{branch}/objects")
    async def upload_object(repository: str, branch: str, request: Request):
        path = _required(request, "path")
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
        metadata = {k[len("x-lakefs-meta-"):]: v for k, v in request.headers.items()
                    if k.lower().startswith("x-lakefs-meta-")}
        if request.headers.get("if-none-match") == "*":
            try:
                cat.get_entry(repository, branch, path)
                raise APIError(412, "path already exists")
            except APIError as exc:
                if exc.status != 404:
                    raise
        r, e = cat.upload(repository, branch, path, data, content_type, metadata)
        return _json(201, object_stats(cat, r["storage_namespace"], path, e))

    @api.delete("/repositories/{repository}/branches/{branch}/objects")
    def delete_object(repository: str, branch: str, request: Request):
        cat.delete_object(repository, branch, _required(request, "path"))
        return Response(status_code=204)

    @api.post("/repositories/{repository}/branches/{branch}/objects/delete")
    async def delete_objects(repository: str, branch: str, request: Request):
        """LakeFS's bulk delete: 200 with the per-path errors (none for a path that is not there)."""
        paths = _field(await _body(request), "paths", list)
        if not all(isinstance(p, str) for p in paths):
            raise APIError(400, "paths: invalid value")
        return {"errors": cat.delete_objects(repository, branch, paths)}

    @api.get("/repositories/{repository}/refs/{ref}/objects/stat")
    def stat_object(repository: str, ref: str, request: Request):
        path = _required(request, "path")
        r, e = cat.get_entry(repository, ref, path)
        return object_stats(cat, r["storage_namespace"], path, e, _bool(request, "user_metadata", True))

    @api.get("/repositories/{repository}/refs/{ref}/objects")
    def get_object(repository: str, ref: str, request: Request):
        e, data = cat.read_object(repository, ref, _required(request, "path"))
        return Response(content=data, media_type=e.content_type or "application/octet-stream",
                        headers={"ETag": f'"{e.etag}"', "Last-Modified": _http_date(e.last_modified_seconds)})

    @api.head("/repositories/{repository}/refs/{ref}/objects")
    def head_object(repository: str, ref: str, request: Request):
        _, e = cat.get_entry(repository, ref, _required(request, "path"))
        return Response(status_code=200, headers={"Content-Length": str(e.size), "ETag": f'"{e.etag}"',
                                                  "Last-Modified": _http_date(e.last_modified_seconds)})

    @api.get("/repositories/{repository}/refs/{ref}/objects/ls")
    def list_objects(repository: str, ref: str, request: Request):
        q = request.query_params
        r, items, more = cat.list_objects(repository, ref, q.get("prefix", ""), q.get("after", ""), _amount(request),
                                          q.get("delimiter", ""))
        um = _bool(request, "user_metadata", True)
        results = [object_stats(cat, r["storage_namespace"], p, e, um, listing=True) if e is not None else
                   {"path": p, "path_type": "common_prefix", "physical_address": "", "checksum": "", "mtime": 0}
                   for p, e in items]
        return {"pagination": _pagination(len(results), more, items[-1][0] if items else ""), "results": results}

    # ------------------------------------------------------------------ staging
    @api.get("/repositories/{repository}/branches/{branch}/staging/backing")
    def get_physical_address(repository: str, branch: str, request: Request):
        r, key, signed = cat.get_physical_address(repository, branch, _required(request, "path"))
        out: dict = {"physical_address": signed, "presigned_url": None}
        if _bool(request, "presign"):
            st = cat.storage(r["storage_namespace"])
            if cat.s.blockstore_type == "local":  # lakeFS's local adapter
                raise APIError(500, "local adapter presigned URL: operation not supported")
            if not isinstance(st, S3Storage):
                raise APIError(400, f"presign is not supported by the emulator's {cat.s.blockstore_type} blockstore")
            expiry = 900
            out["presigned_url"] = cat.presign(r["storage_namespace"], "put_object", key, expiry)  # signature incl.
            out["presigned_url_expiry"] = int(time.time()) + expiry
        return out

    @api.put("/repositories/{repository}/branches/{branch}/staging/backing")
    async def link_physical_address(repository: str, branch: str, request: Request):
        path = _required(request, "path")
        body = await _body(request)
        staging = _field(body, "staging", dict)
        physical = staging.get("physical_address")
        if not isinstance(physical, str) or not physical:
            raise APIError(400, "staging.physical_address: required")
        r, e = cat.link_physical_address(repository, branch, path, physical, _field(body, "checksum", str),
                                         _field(body, "size_bytes", int), body.get("content_type") or "",
                                         body.get("user_metadata"))
        # lakeFS answers the address as the client sent it; stat and listing print it resolved
        return {**object_stats(cat, r["storage_namespace"], path, e), "physical_address": physical}

    # ------------------------------------------------------------------ commits
    @api.post("/repositories/{repository}/branches/{branch}/commits")
    async def commit(repository: str, branch: str, request: Request, user: str = Depends(auth)):
        if request.query_params.get("source_metarange"):
            raise APIError(501, "commit with source_metarange is not implemented by the lakeFS emulator")
        body = await _body(request)
        date = body.get("date")
        if date is not None and (not isinstance(date, int) or isinstance(date, bool)):
            raise APIError(400, "date: invalid value")
        c = cat.commit(repository, branch, _field(body, "message", str), body.get("metadata"), date,
                       bool(body.get("allow_empty", False)), committer=user)
        return _json(201, commit_json(c))

    @api.get("/repositories/{repository}/commits/{commit_id}")
    def get_commit(repository: str, commit_id: str):
        return commit_json(cat.get_commit(repository, commit_id))

    @api.get("/repositories/{repository}/refs/{ref}/commits")
    def log_commits(repository: str, ref: str, request: Request):
        for unsupported in ("objects", "prefixes", "since", "stop_at"):
            if request.query_params.get(unsupported):
                raise APIError(501, f"logCommits with {unsupported!r} is not implemented by the lakeFS emulator")
        commits, more = cat.log(repository, ref, request.query_params.get("after", ""), _amount(request),
                                _bool(request, "first_parent"))
        return {"pagination": _pagination(len(commits), more, commits[-1]["id"] if commits else ""),
                "results": [commit_json(c) for c in commits]}

    # ------------------------------------------------------------------ copies, merges, reverts, cherry-picks
    @api.post("/repositories/{repository}/branches/{branch}/objects/copy")
    async def copy_object(repository: str, branch: str, request: Request):
        dest_path = _required(request, "dest_path")
        body = await _body(request)
        src_ref = body.get("src_ref") or ""
        if not isinstance(src_ref, str):
            raise APIError(400, "src_ref: invalid value")
        r, e = cat.copy_object(repository, branch, dest_path, src_ref, _field(body, "src_path", str),
                               body.get("force") is True, body.get("shallow") is True)
        return _json(201, object_stats(cat, r["storage_namespace"], dest_path, e))

    @api.post("/repositories/{repository}/refs/{source_ref}/merge/{destination_branch}")
    async def merge_into_branch(repository: str, source_ref: str, destination_branch: str, request: Request,
                                user: str = Depends(auth)):
        body = await _body(request) if (await request.body()).strip() else {}
        message, strategy = body.get("message") or "", body.get("strategy") or ""
        metadata = body.get("metadata") or {}
        if not isinstance(message, str) or not isinstance(strategy, str) or not isinstance(metadata, dict):
            raise APIError(400, "merge: invalid value")
        try:
            cid = cat.merge(repository, source_ref, destination_branch, message, metadata, strategy,
                            body.get("force") is True, body.get("allow_empty") is True,
                            body.get("squash_merge") is True, user)
        except MergeConflict:  # lakeFS 1.84 answers a MergeResult with an empty reference
            return _json(409, {"reference": ""})
        return {"reference": cid}

    def _overrides(body: dict) -> dict | None:
        o = body.get("commit_overrides")
        if o is not None and (not isinstance(o, dict) or not isinstance(o.get("message", ""), str)
                              or not isinstance(o.get("metadata") or {}, dict)):
            raise APIError(400, "commit_overrides: invalid value")
        return o

    @api.post("/repositories/{repository}/branches/{branch}/revert")
    async def revert_branch(repository: str, branch: str, request: Request, user: str = Depends(auth)):
        body = await _body(request)
        cat.revert(repository, branch, _field(body, "ref", str), _field(body, "parent_number", int),
                   body.get("allow_empty") is True, _overrides(body), body.get("force") is True, user)
        return Response(status_code=204)

    @api.post("/repositories/{repository}/branches/{branch}/cherry-pick")
    async def cherry_pick(repository: str, branch: str, request: Request, user: str = Depends(auth)):
        body = await _body(request)
        parent = body.get("parent_number")
        if parent is not None and (not isinstance(parent, int) or isinstance(parent, bool)):
            raise APIError(400, "parent_number: invalid value")
        c = cat.cherry_pick(repository, branch, _field(body, "ref", str), parent, _overrides(body),
                            body.get("force") is True, user)
        return _json(201, commit_json(c))

    # ------------------------------------------------------------------ tags
    @api.get("/repositories/{repository}/tags")
    def list_tags(repository: str, request: Request):
        tags, more = cat.list_tags(repository, request.query_params.get("prefix", ""),
                                   request.query_params.get("after", ""), _amount(request))
        return {"pagination": _pagination(len(tags), more, tags[-1]["id"] if tags else ""), "results": tags}

    @api.post("/repositories/{repository}/tags")
    async def create_tag(repository: str, request: Request):
        body = await _body(request)
        tag = _field(body, "id", str)
        cid = cat.create_tag(repository, tag, _field(body, "ref", str), body.get("force") is True)
        return _json(201, {"id": tag, "commit_id": cid})

    @api.get("/repositories/{repository}/tags/{tag}")
    def get_tag(repository: str, tag: str):
        return {"id": tag, "commit_id": cat.get_tag(repository, tag)}

    @api.delete("/repositories/{repository}/tags/{tag}")
    def delete_tag(repository: str, tag: str, request: Request):
        cat.delete_tag(repository, tag, _bool(request, "force"))
        return Response(status_code=204)

    # ------------------------------------------------------------------ import
    @api.post("/repositories/{repository}/branches/{branch}/import")
    async def import_start(repository: str, branch: str, request: Request, user: str = Depends(auth)):
        body = await _body(request)
        paths = _field(body, "paths", list)
        creation = _field(body, "commit", dict)
        for p in paths:
            if not isinstance(p, dict) or not all(isinstance(p.get(k), str) for k in ("type", "path", "destination")):
                raise APIError(400, "paths: invalid value")
        try:
            # the commit's date is not taken: lakeFS's catalog.ImportCommit has no date (now, always)
            res = cat.import_objects(repository, branch, paths, _field(creation, "message", str),
                                     creation.get("metadata"), None, user)
        except ImportFailed as exc:  # lakeFS fails it after the 202: the status tells
            res = {"error": exc.message, "ingested_objects": exc.ingested}
        task_id = new_xid(cat.now())  # lakeFS's import id: xid.New()
        with imports_lock:
            imports[task_id] = {"repo": repository, "branch": branch, "time": time.time(), **res}
        return _json(202, {"id": task_id})

    @api.get("/repositories/{repository}/branches/{branch}/import")
    def import_status(repository: str, branch: str, request: Request):
        task_id = _required(request, "id")
        cat.get_branch(repository, branch)
        with imports_lock:
            t = imports.get(task_id)
        if t is None or t["repo"] != repository or t["branch"] != branch:
            raise APIError(404, "import: not found")
        if "error" in t:  # lakeFS's importStatusToResponse of a failed import: not completed, ErrImport
            return {"completed": False, "update_time": _now_iso(t["time"]), "ingested_objects": t["ingested_objects"],
                    "error": {"message": f"import error: {t['error']}"}}
        return {"completed": True, "update_time": _now_iso(t["time"]), "ingested_objects": t["ingested_objects"],
                "metarange_id": t["metarange_id"], "commit": commit_json(t["commit"])}

    # ------------------------------------------------------------------ GC rules
    def _rules_body(body: dict) -> dict:
        days = _field(body, "default_retention_days", int)
        branches = _field(body, "branches", list)
        out = []
        for b in branches:
            if not isinstance(b, dict) or not isinstance(b.get("branch_id"), str) or \
                    not isinstance(b.get("retention_days"), int):
                raise APIError(400, "branches: invalid value")
            out.append({"branch_id": b["branch_id"], "retention_days": b["retention_days"]})
        return {"default_retention_days": days, "branches": out}

    @api.get("/repositories/{repository}/settings/gc_rules")
    @api.get("/repositories/{repository}/gc/rules")
    def get_gc_rules(repository: str):
        rules = dict(cat.get_gc_rules(repository))
        # lakeFS 1.84 answers "branches": null when no branch has a rule of its own (a JSON nil slice)
        return {**rules, "branches": rules.get("branches") or None}

    @api.put("/repositories/{repository}/settings/gc_rules")
    @api.post("/repositories/{repository}/gc/rules")
    async def set_gc_rules(repository: str, request: Request):
        cat.set_gc_rules(repository, _rules_body(await _body(request)))
        return Response(status_code=204)

    @api.delete("/repositories/{repository}/settings/gc_rules")
    @api.delete("/repositories/{repository}/gc/rules")
    def delete_gc_rules(repository: str):
        cat.set_gc_rules(repository, None)
        return Response(status_code=204)

    @api.get("/repositories/{repository}/gc/rules/set_allowed")
    def set_rules_preflight(repository: str):
        cat.get_repository(repository)
        return Response(status_code=204)

    # ------------------------------------------------------------------ GC preparation
    @api.post("/repositories/{repository}/gc/prepare_commits")
    def prepare_commits(repository: str):
        return _json(201, cat.prepare_commits(repository))

    @api.post("/repositories/{repository}/gc/prepare_commits/async")
    def prepare_commits_async(repository: str):
        return _json(202, {"id": cat.start_prepare_commits_task(repository)})

    @api.get("/repositories/{repository}/gc/prepare_commits/status")
    def prepare_commits_status(repository: str, request: Request):
        return cat.prepare_commits_status(repository, _required(request, "id"))

    @api.post("/repositories/{repository}/gc/prepare_uncommited")
    async def prepare_uncommitted(repository: str, request: Request):
        raw = await request.body()
        token = None
        if raw.strip():
            body = await _body(request)
            token = body.get("continuation_token")
            if token is not None and not isinstance(token, str):
                raise APIError(400, "invalid continuation token")
        return _json(201, cat.prepare_uncommitted(repository, token or None))

    # ------------------------------------------------------------------ metadata
    @api.get("/repositories/{repository}/metadata/meta_range/{meta_range}")
    @api.get("/repositories/{repository}/metadata/range/{meta_range}")
    def get_table_location(repository: str, meta_range: str):
        cat.get_repository(repository)
        location = f"_lakefs/{meta_range}"
        return JSONResponse({"location": location}, headers={"Location": location})

    app.include_router(api)

    # ------------------------------------------------------------------ emulator-only: the clock
    @app.get("/_emulator/clock")
    def get_clock(_: str = Depends(auth)):
        return {"now": cat.now(), "offset": cat.clock_offset()}

    @app.post("/_emulator/compact/{repository}/{branch}")
    def compact(repository: str, branch: str, _: str = Depends(auth)):
        """Staging compaction of a branch (what lakeFS Enterprise does in the background)."""
        return {"compacted": cat.compact(repository, branch)}

    @app.put("/_emulator/clock")
    async def set_clock(request: Request, _: str = Depends(auth)):
        body = await _body(request)
        if "offset" in body:
            cat.set_clock_offset(float(body["offset"]))
        elif "now" in body:
            cat.set_clock_offset(float(body["now"]) - time.time())
        elif "advance" in body:
            cat.set_clock_offset(cat.clock_offset() + float(body["advance"]))
        else:
            raise APIError(400, "expected one of 'offset', 'now', 'advance' (seconds)")
        return {"now": cat.now(), "offset": cat.clock_offset()}

    # ------------------------------------------------------------------ anything else
    @app.api_route("/{rest:path}", methods=["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"])
    def not_implemented(rest: str, request: Request):
        return _json(501, {"message": f"{request.method} /{rest} is not implemented by the lakeFS emulator"})

    return app


def _http_date(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")
