"""The GC page's TypeScript types (``www/src/types.ts``) against its API's OpenAPI (``app.openapi()``,
built from the routes' response models, ``gc_page/models.py``), as Airflow's UI keeps its own types to
its OpenAPI.

Every field an answer type names is in the schema of the same name, with a type that holds every
value the schema allows (string, number, boolean, array, object, null), optional (``?``) exactly
when the API may leave it out; one level into arrays, records, inline objects and named types. A
small reader of types.ts's ``export type X = { a: string; b?: number | null; ... }`` forms; a form
it does not read fails the test rather than passing unchecked.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from lakefs_gc_airflow.gc_page import runs

TYPES = Path(runs.__file__).parent / "www" / "src" / "types.ts"
# the types the page reads from our API; each is the OpenAPI schema of the same name
CHECKED = (
    "Repo",
    "DagRun",
    "FailureReason",
    "Run",
    "ExplainAnswer",
    "WhatIfAnswer",
    "RunsAnswer",
    "ReposAnswer",
    "Removed",
    "SpaceDoc",
    "Amount",
    "HeldBy",
    "RunListing",
    "RunCost",
    "FleetInventory",
    "FleetReader",
    "OrphanedNamespace",
)
ROUTES = {
    "/api/repositories": "ReposAnswer",
    "/api/dags/{dag_id}/runs": "RunsAnswer",
    "/api/dags/{dag_id}/explain": "ExplainAnswer",
    "/api/dags/{dag_id}/whatif": "WhatIfAnswer",
}
REF = "#/components/schemas/"
SCALARS = {"string", "number", "boolean", "null"}


def _split(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside brackets, each part stripped, empty parts dropped."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch in "{[(<") - (ch in "}])>")
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [p.strip() for p in [*parts, cur] if p.strip()]


def _fields(literal: str) -> dict[str, tuple[bool, str]]:
    """The fields of an object type literal ``{ a: T; b?: U }``: name -> (optional, type)."""
    assert literal.startswith("{"), literal
    assert literal.endswith("}"), literal
    out = {}
    for member in _split(literal[1:-1], ";"):
        name, colon, typ = member.partition(":")
        assert colon, f"not a field: {member!r}"
        assert re.fullmatch(r"\w+\??", name.strip()), f"not a field: {member!r}"
        out[name.strip().rstrip("?")] = (name.strip().endswith("?"), typ.strip())
    return out


def ts_types(text: str) -> dict[str, dict[str, tuple[bool, str]]]:
    """types.ts's object types: ``export type X = { ... };`` -> X's fields."""
    text = re.sub(r"//[^\n]*", "", text)
    out = {}
    for m in re.finditer(r"export type (\w+) = ", text):
        body, depth, end = text[m.end() :], 0, 0
        if not body.startswith("{"):
            continue
        while end == 0 or depth:
            depth += (body[end] == "{") - (body[end] == "}")
            end += 1
        out[m.group(1)] = _fields(body[:end])
    return out


def _alternatives(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return (
        [a for s in schema.get("anyOf", schema.get("oneOf", [schema])) for a in _alternatives(s)]
        if ("anyOf" in schema or "oneOf" in schema)
        else [schema]
    )


def _resolve(schema: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    return schemas[schema["$ref"].removeprefix(REF)] if "$ref" in schema else schema


def api_kinds(schema: dict[str, Any], schemas: dict[str, Any]) -> set[str] | None:
    """What JSON values the schema allows, as kinds; None: any."""
    kinds: set[str] = set()
    for alt in _alternatives(schema):
        t = _resolve(alt, schemas).get("type")
        if t is None:
            return None
        kinds.add("number" if t == "integer" else t)
    return kinds


def ts_kinds(typ: str, named: set[str]) -> set[str] | None:
    """What JSON values a TypeScript type allows, as kinds; None: any (``unknown``)."""
    kinds: set[str] = set()
    for part in _split(typ, "|"):
        if part in SCALARS:
            kinds.add(part)
        elif part == "unknown":
            return None
        elif part.startswith('"'):
            kinds.add("string")
        elif part.endswith("[]") or part.startswith("["):
            kinds.add("array")
        elif part.startswith(("{", "Record<")) or part in named:
            kinds.add("object")
        else:
            raise AssertionError(f"types.ts: a type this test does not read: {part!r} (in {typ!r})")
    return kinds


def _check_type(
    where: str, typ: str, schema: dict[str, Any], schemas: dict[str, Any], named: set[str], problems: list[str]
) -> None:
    api, ts = api_kinds(schema, schemas), ts_kinds(typ, named)
    if api is not None and ts is not None and not api <= ts:
        problems.append(f"{where}: the API sends {sorted(api)}, types.ts says {typ!r}")
    alts = [_resolve(a, schemas) for a in _alternatives(schema)]
    for part in _split(typ, "|"):  # one level in
        if part.endswith("[]"):
            for a in alts:
                if a.get("type") == "array" and "items" in a:
                    _check_type(f"{where}[]", part[:-2].strip("()"), a["items"], schemas, named, problems)
        elif part.startswith("Record<"):
            value = _split(part[len("Record<") : -1], ",")[1]
            for a in alts:
                if a.get("type") == "object" and isinstance(a.get("additionalProperties"), dict):
                    _check_type(f"{where}{{}}", value, a["additionalProperties"], schemas, named, problems)
        elif part in named:
            refs = [a["$ref"].removeprefix(REF) for a in _alternatives(schema) if "$ref" in a]
            if refs != [part]:
                problems.append(f"{where}: types.ts says {part}, the API's schema is {refs or schema}")
        elif part.startswith("{"):
            for a in alts:
                if a.get("type") == "object" and "properties" in a:
                    _check_fields(where, _fields(part), a, schemas, named, problems)


def _check_fields(
    where: str,
    fields: dict[str, tuple[bool, str]],
    schema: dict[str, Any],
    schemas: dict[str, Any],
    named: set[str],
    problems: list[str],
) -> None:
    props, required = schema.get("properties", {}), set(schema.get("required", ()))
    for name, (optional, typ) in fields.items():
        at = f"{where}.{name}"
        if name not in props:
            problems.append(f"{at}: types.ts names it, the API's schema has no such field")
            continue
        if optional and name in required:
            problems.append(f"{at}: optional in types.ts, always there in the API: drop the ?")
        if not optional and name not in required:
            problems.append(f"{at}: required in types.ts, the API may leave it out: make it {name}?")
        _check_type(at, typ, props[name], schemas, named, problems)


def problems(types_ts: str, openapi: dict[str, Any]) -> list[str]:
    """Every disagreement between the answer types of ``types_ts`` and ``openapi``, one line each."""
    types, schemas = ts_types(types_ts), openapi["components"]["schemas"]
    out: list[str] = []
    for path, name in ROUTES.items():
        answer = openapi["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        if answer != {"$ref": REF + name}:
            out.append(f"{path}: answers {answer}, not {name}")
    for name in CHECKED:
        if name not in types or name not in schemas:
            out.append(f"{name}: in types.ts {name in types}, in the OpenAPI {name in schemas}")
        else:
            _check_fields(name, types[name], schemas[name], schemas, set(types), out)
    return out


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    from lakefs_gc_airflow.gc_page.app import app

    return copy.deepcopy(app.openapi())


def test_the_page_types_are_the_api_answers(openapi):
    assert set(CHECKED) <= set(ts_types(TYPES.read_text())), "an answer type is no longer an object type"
    assert problems(TYPES.read_text(), openapi) == []


def _rename(schema: str, old: str, new: str):
    def change(schemas: dict[str, Any]) -> None:
        s = schemas[schema]
        s["properties"][new] = s["properties"].pop(old)
        s["required"] = [new if f == old else f for f in s.get("required", ())]

    return change


def _ts(old: str, new: str):
    def change(text: str, openapi: dict[str, Any]) -> str:
        assert text.count(old) == 1, old
        return text.replace(old, new)

    return change


def _api(change_api):
    def change(text: str, openapi: dict[str, Any]) -> str:
        change_api(openapi["components"]["schemas"])
        return text

    return change


@pytest.mark.parametrize(
    ("change", "found"),
    [
        # a field renamed on either side
        (_ts("failed_tasks: string[]", "failed_task: string[]"), "DagRun.failed_task: types.ts names it"),
        (_ts("removed_at: string", "removed_on: string"), "Removed.removed_on: types.ts names it"),
        (_ts("max_delete_share: number | null", "max_share: number | null"), "Run.guard.max_share: types.ts names it"),
        (_api(_rename("Run", "report", "report_uri")), "Run.report: types.ts names it"),
        (
            _api(_rename("StaleBranch", "head_age_days", "age_days")),
            "SpaceDoc.stale[].head_age_days: types.ts names it",
        ),
        # optional on one side only, a type the page does not expect, another named type
        (_ts("error: string | null; runs", "error?: string | null; runs"), "RunsAnswer.error: optional in types.ts"),
        (_ts("config?: string;", "config: string;"), "ReposAnswer.config: required in types.ts"),
        (_ts("verdict: string;", "verdict: number;"), "ExplainAnswer.verdict: the API sends ['string']"),
        (
            _api(
                lambda s: s["SpaceDoc"]["properties"].update(
                    computed_at={"anyOf": [{"type": "string"}, {"type": "null"}]}
                )
            ),
            "SpaceDoc.computed_at: the API sends ['null', 'string']",
        ),
        (
            _ts("alone: Record<string, Amount>", "alone: Record<string, number>"),
            "HeldBy.alone{}: the API sends ['object']",
        ),
        (_ts("dag_run: DagRun | null", "dag_run: Removed | null"), "Run.dag_run: types.ts says Removed"),
    ],
)
def test_a_disagreement_is_found(openapi, change, found):
    api = copy.deepcopy(openapi)
    text = change(TYPES.read_text(), api)
    got = problems(text, api)
    assert any(p.startswith(found) for p in got), got
