"""Validate recorded HTTP responses against lakeFS's swagger.yml (OpenAPI 3.0) with jsonschema.

The recorder wraps the lakefs-sdk REST client, so every call a test makes through the SDK is
checked: the path and method must be an operation of the contract, the status code one it
documents, and a JSON body must match the documented schema (``nullable`` translated to JSON Schema).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

import jsonschema
import yaml

# lakeFS 1.84's own api/swagger.yml, from the Go module the set-up downloads (scripts/setup.sh)
SWAGGER_CANDIDATES = [
    os.environ.get("LAKEFS_SWAGGER", ""),
    str(Path(__file__).resolve().parents[2] / ".tools" / "lakefs-swagger.yml"),
]


def swagger_path() -> Path:
    for c in SWAGGER_CANDIDATES:
        if c and Path(c).is_file():
            return Path(c).resolve()
    raise FileNotFoundError(
        "lakeFS's swagger.yml not found in .tools/ (run make setup: it takes it from lakeFS's "
        "Go module) and LAKEFS_SWAGGER is not set"
    )


def _to_json_schema(node):
    """OpenAPI 3.0 schema -> JSON Schema (draft 4-ish): nullable, refs to #/definitions."""
    if isinstance(node, list):
        return [_to_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k == "$ref":
            out[k] = v.replace("#/components/schemas/", "#/definitions/")
        elif k in (
            "nullable",
            "example",
            "discriminator",
            "xml",
            "externalDocs",
            "deprecated",
            "readOnly",
            "writeOnly",
        ):
            continue
        else:
            out[k] = _to_json_schema(v)
    if node.get("nullable"):
        if "type" in out:
            t = out["type"]
            out["type"] = (t if isinstance(t, list) else [t]) + ["null"]
        elif "$ref" in out:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


@dataclass(frozen=True)
class Operation:
    method: str
    template: str
    regex: re.Pattern
    responses: dict


@lru_cache(maxsize=1)
def load_contract() -> tuple[list[Operation], dict, str]:
    doc = yaml.safe_load(swagger_path().read_text())
    base = urlsplit(doc["servers"][0]["url"]).path.rstrip("/")
    ops = []
    for template, item in doc["paths"].items():
        rx = re.compile("^" + base + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$")
        for method, op in item.items():
            if isinstance(op, dict) and "responses" in op:
                ops.append(Operation(method.upper(), template, rx, op["responses"]))
    # literal segments beat parameters: match longer literal templates first
    ops.sort(key=lambda o: -len(re.sub(r"\{[^}]+\}", "", o.template)))
    definitions = _to_json_schema(doc["components"]["schemas"])
    comp_responses = doc["components"].get("responses", {})
    return ops, {"definitions": definitions, "responses": comp_responses}, base


@dataclass
class Recorded:
    method: str
    url: str
    status: int
    content_type: str
    body: bytes


# Where lakeFS itself (checked against a server built from its v1.84 source) answers outside its own
# swagger.yml, the emulator answers as lakeFS does: (operation template, JSON path, value allowed).
LAKEFS_DEVIATIONS = {
    ("/repositories/{repository}/settings/gc_rules", ("branches",), None),  # Go nil slice -> null
    ("/repositories/{repository}/gc/rules", ("branches",), None),
}


def validate_response(rec: Recorded) -> str | None:
    """None when the response matches the contract (or deviates exactly as lakeFS does, see
    ``LAKEFS_DEVIATIONS``), else a description of the mismatch."""
    ops, comp, _ = load_contract()
    path = urlsplit(rec.url).path
    op = next((o for o in ops if o.method == rec.method and o.regex.match(path)), None)
    where = f"{rec.method} {path} -> {rec.status}"
    if op is None:
        return f"{where}: no such operation in swagger.yml"
    resp = op.responses.get(rec.status) or op.responses.get(str(rec.status)) or op.responses.get("default")
    if resp is None:
        return f"{where}: status not documented for {op.template} (documented: {sorted(map(str, op.responses))})"
    if "$ref" in resp:
        resp = comp["responses"][resp["$ref"].rsplit("/", 1)[-1]]
    content = resp.get("content") or {}
    if "application/json" not in content:
        return None
    if not rec.content_type.startswith("application/json"):
        return f"{where}: expected application/json, got {rec.content_type!r}"
    schema = content["application/json"].get("schema")
    if schema is None:
        return None
    try:
        body = json.loads(rec.body)
    except ValueError as exc:
        return f"{where}: invalid JSON body ({exc})"
    full = dict(_to_json_schema(schema))
    full["definitions"] = comp["definitions"]
    for template, at, allowed in LAKEFS_DEVIATIONS:
        if (
            template == op.template
            and isinstance(body, dict)
            and len(at) == 1
            and at[0] in body
            and body[at[0]] == allowed
        ):
            body = {k: v for k, v in body.items() if k != at[0]} | {at[0]: []}
    try:
        jsonschema.Draft4Validator(full).validate(body)
    except jsonschema.ValidationError as exc:
        return f"{where}: body does not match {op.template} schema: {exc.message} at {list(exc.absolute_path)}"
    return None


class ResponseRecorder:
    """Wraps ``client._api.rest_client.request`` to keep every response the SDK received."""

    def __init__(self, lakefs_client):
        self.records: list[Recorded] = []
        rest = lakefs_client._api.rest_client
        original = rest.request

        def request(method, url, *args, **kwargs):
            try:
                r = original(method, url, *args, **kwargs)
            except Exception as exc:  # ApiException subclasses carry status/body/headers
                status = getattr(exc, "status", None)
                if status:
                    headers = getattr(exc, "headers", None) or {}
                    body = getattr(exc, "body", b"") or b""
                    self.records.append(
                        Recorded(
                            method, url, int(status), _ctype(headers), body.encode() if isinstance(body, str) else body
                        )
                    )
                raise
            self.records.append(Recorded(method, url, r.status, _ctype(r.getheaders()), r.data or b""))
            return r

        rest.request = request

    def problems(self) -> list[str]:
        return [p for p in (validate_response(r) for r in self.records) if p]


def _ctype(headers) -> str:
    try:
        return headers.get("content-type") or headers.get("Content-Type") or ""
    except AttributeError:
        return ""
