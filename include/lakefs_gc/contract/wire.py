"""
The wire: every value a small dict, and the failure a job's result file records.

Part of :mod:`lakefs_gc.contract` (import from there).
"""

from __future__ import annotations

import dataclasses
import json
import os
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, Union

from lakefs_gc.contract.approval import APPROVAL_TASK, Approval
from lakefs_gc.contract.context import RunContext
from lakefs_gc.contract.steps import RESULT_TYPES, PreparedCommits, StepInputs
from lakefs_gc.errors import ContractError, Refusal

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")


# The field metadata of a field made by rest_field
_REST = "lakefs_gc.wire.rest"


def rest_field() -> Any:
    """
    Return a dataclass field that keeps the wire fields its class does not name, verbatim.

    For a document other versions write too (``summary.json``): :func:`from_wire` collects those
    fields into it instead of refusing them, and :func:`to_wire` writes them back after the named
    ones, so a document round-trips whatever version wrote it.
    """
    return field(default_factory=dict, hash=False, metadata={_REST: True})


def _rest_name(cls: Any) -> str | None:
    return next((f.name for f in dataclasses.fields(cls) if f.metadata.get(_REST)), None)


def to_wire(obj: Any) -> Any:
    """
    Return a dataclass as a JSON-ready dict (tuples become lists); None stays None.

    A class whose ``wire_omit_none`` is true leaves its None fields out (absent from the
    document), and writes its :func:`rest_field` back after the others.
    """
    if obj is None:
        return None
    if dataclasses.is_dataclass(obj):
        omit_none = getattr(obj, "wire_omit_none", False)
        rest = _rest_name(obj)
        out = {
            f.name: to_wire(getattr(obj, f.name))
            for f in dataclasses.fields(obj)
            if f.name != rest and not (omit_none and getattr(obj, f.name) is None)
        }
        if rest is not None:
            kept: Mapping[str, Any] = getattr(obj, rest)
            named = sorted({f.name for f in dataclasses.fields(obj) if f.name != rest} & set(kept))
            if named:
                raise ContractError(f"{type(obj).__name__}.{rest} holds named field(s) {named}")
            out.update(kept)
        return out
    if isinstance(obj, (tuple, list)):
        return [to_wire(x) for x in obj]
    return obj


def from_wire(cls: type[T], data: Any, where: str = "") -> T:
    """
    Read ``cls`` back from :func:`to_wire`'s dict.

    Missing or mistyped fields raise :class:`ContractError` naming them; so do unknown fields,
    unless ``cls`` has a :func:`rest_field`, which keeps them.
    """
    where = where or cls.__name__
    if not isinstance(data, Mapping):
        raise ContractError(f"{where}: expected an object, got {type(data).__name__}")
    rest = _rest_name(cls)
    names = {f.name: f for f in dataclasses.fields(cls) if f.name != rest}
    unknown = set(data) - set(names)
    if unknown and rest is None:
        raise ContractError(f"{where}: unknown field(s) {sorted(unknown)}")
    hints = typing.get_type_hints(cls)
    values = {}
    for name, f in names.items():
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ContractError(f"{where}: missing field {name!r}")
            continue
        values[name] = _value(hints[name], data[name], f"{where}.{name}")
    if rest is not None:
        values[rest] = {k: v for k, v in data.items() if k in unknown}  # in the document's order
    try:
        return cls(**values)
    except (TypeError, ValueError) as e:
        raise ContractError(f"{where}: {e}") from e


def value_from_wire(tp: Any, v: Any, where: str = "value") -> Any:
    """Read one value of type ``tp`` (a type hint) as :func:`from_wire` reads a field: ContractError if mistyped."""
    return _value(tp, v, where)


def _value(tp: Any, v: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if v is None:
            return None
        return _value(args[0], v, where)
    if origin is tuple:
        if not isinstance(v, (list, tuple)):
            raise ContractError(f"{where}: expected a list, got {type(v).__name__}")
        (item,) = {a for a in typing.get_args(tp) if a is not Ellipsis}
        return tuple(_value(item, x, where) for x in v)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return from_wire(tp, v, where)
    if tp is float and isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    if tp is Any or (isinstance(tp, type) and isinstance(v, tp) and not (tp is int and isinstance(v, bool))):
        return v
    raise ContractError(f"{where}: expected {getattr(tp, '__name__', tp)}, got {v!r}")


# what a step may read: the steps' results, and a person's approval of the sweep (not a step of the table:
# its task is in the DAG only when the repository asks for approval)
_READABLE: dict[str, type] = {**RESULT_TYPES, APPROVAL_TASK: Approval}


def read_result(step: str, value: Any) -> Any:
    """Return a task's XCom value as its result type (None for a step that did not run)."""
    if value is None:
        return None
    return from_wire(_READABLE[step], value, f"result of task {step!r}")


# a step's input file: its context and results, and lakeFS's commits preparation when the task waited for it
_INPUT_FIELDS = frozenset({"context", "results", "prepared_commits"})


def inputs_to_wire(inputs: StepInputs) -> dict[str, Any]:
    doc = {"context": to_wire(inputs.context), "results": {k: to_wire(v) for k, v in inputs.results.items()}}
    if inputs.prepared_commits is not None:  # absent otherwise: the document as before
        doc["prepared_commits"] = to_wire(inputs.prepared_commits)
    return doc


def inputs_from_wire(doc: Any) -> StepInputs:
    if not isinstance(doc, Mapping) or not {"context", "results"} <= set(doc) <= _INPUT_FIELDS:
        raise ContractError("a step's input must be an object with 'context', 'results' and at most 'prepared_commits'")
    results = doc["results"]
    if not isinstance(results, Mapping):
        raise ContractError("'results' must be an object keyed by task id")
    unknown = set(results) - set(_READABLE)
    if unknown:
        raise ContractError(f"results of unknown task(s) {sorted(unknown)}")
    prepared = doc.get("prepared_commits")
    return StepInputs(
        from_wire(RunContext, doc["context"], "context"),
        {k: read_result(k, v) for k, v in results.items()},
        None if prepared is None else from_wire(PreparedCommits, prepared, "prepared_commits"),
    )


def write_json(doc: Any, path: str | os.PathLike[str]) -> None:
    """Write atomically (a reader never sees half a file)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(doc, sort_keys=True))
    tmp.replace(p)


def read_json(path: str | os.PathLike[str]) -> Any:
    return json.loads(Path(path).read_text())


REFUSED, FAILED = "refused", "failed"
FAILURE_KINDS = (REFUSED, FAILED)


@dataclass(frozen=True)
class StepFailure:
    """
    Why a Spark job failed, in its result file instead of a result: ``{"failure": {...}}``.

    ``refused``: a :class:`lakefs_gc.errors.Refusal`, the same on every retry (the task fails at
    once); ``failed``: anything else (Airflow retries the task). See :mod:`lakefs_gc.errors`.
    """

    kind: str
    type: str  # the exception's class name
    message: str

    def __post_init__(self) -> None:
        if self.kind not in FAILURE_KINDS:
            raise ValueError(f"failure kind must be one of {', '.join(FAILURE_KINDS)}, got {self.kind!r}")


def failure_of(exc: BaseException) -> StepFailure:
    return StepFailure(REFUSED if isinstance(exc, Refusal) else FAILED, type(exc).__name__, str(exc))


def read_failure(doc: Any) -> StepFailure | None:
    """Return the failure a job's result file records, or None when it holds a result."""
    if isinstance(doc, Mapping) and set(doc) == {"failure"}:
        return from_wire(StepFailure, doc["failure"], "failure in a job's result file")
    return None
