"""
What every GC task reads.

The run contract from XCom (by task id, typed), the work location when it is a local directory,
the spark-submit next to the worker's Python, and the repository's namespace opened with the
storage connection's settings; and what a failing task leaves behind: its reason in the task log,
in short lines, and in one line as an XCom the GC page reads (:func:`records_failure`). Shared by
the Python steps (``operators.py``) and the Spark steps (``spark_submit.py``).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from airflow.sdk.exceptions import AirflowException, AirflowFailException

from lakefs_gc import contract
from lakefs_gc.errors import ContractError
from lakefs_gc_airflow.hooks import storage_options

if TYPE_CHECKING:
    import logging

    from airflow.sdk import Context
    from airflow.sdk.types import Logger as TaskLogger

    from lakefs_gc.storage import Storage, StorageOptions

_Op = TypeVar("_Op")
_R = TypeVar("_R")


def group_prefix(step: str, task_id: str) -> str:
    """
    Return the task group's prefix of a GC task (``""`` in the GC DAG, ``"<group_id>."`` in a user's DAG).

    A step's task id is its step's name, after its group's id when the group prefixes
    (:func:`lakefs_gc_airflow.task_group.lakefs_gc_task_group`).
    """
    return task_id[: -len(step)] if task_id.endswith(step) else ""


def pulled_inputs(reader: str, context: Context, reads: Sequence[str]) -> contract.StepInputs:
    """
    Return the run context and the results of the tasks ``reads``, pulled in the group of the task ``reader`` and typed.

    A missing result is None; a missing run context, or a value of the wrong shape, is a :class:`ContractError`.
    """
    needed = ("prepare_run", *reads)
    prefix = group_prefix(reader, str(getattr(context["ti"], "task_id", reader)))
    values = context["ti"].xcom_pull(task_ids=[prefix + n for n in needed]) or []
    pulled = dict(zip(needed, values))
    if pulled.get("prepare_run") is None:
        raise ContractError("the run context (XCom of task 'prepare_run') is missing")
    ctx = contract.from_wire(contract.RunContext, pulled["prepare_run"], "context (XCom of task 'prepare_run')")
    return contract.StepInputs(ctx, {k: contract.read_result(k, pulled.get(k)) for k in reads})


def step_inputs(step: str, context: Context) -> contract.StepInputs:
    """Return the run context and the results ``step`` reads (:func:`pulled_inputs`); one missing fails the task without retry."""
    # the sweep's guard reads a person's answer (approve_sweep) when the run asks for one: pulled with the rest
    asked = (contract.APPROVAL_TASK,) if step == "delete" else ()
    try:
        inputs = pulled_inputs(step, context, (*contract.STEP_INPUTS[step], *asked))
        ctx, results = inputs.context, dict(inputs.results)
        if asked and not ctx.approval.active:
            del results[contract.APPROVAL_TASK]
        missing = [k for k in contract.required_inputs(step, ctx.mode) if results[k] is None]
        if missing and not contract.skipped(step, ctx.mode):
            raise ContractError(
                f"the result of task {missing[0]!r} is missing (mode {ctx.mode}); re-run the whole DAG run"
            )
    except ContractError as e:
        raise AirflowFailException(f"{step}: {e}") from e
    return contract.StepInputs(ctx, results)


def local_dir(uri: str) -> Path | None:
    """Return the local path of a work location (plain path, ``file://`` or ``local://``), else None."""
    for prefix in ("file://", "local://"):
        if uri.startswith(prefix):
            return Path(uri[len(prefix) :])
    if "://" in uri:
        return None
    return Path(uri)


def default_spark_binary() -> str:
    """``spark-submit`` next to the running Python (the project venv), else from PATH."""
    candidate = Path(sys.executable).parent / "spark-submit"
    return str(candidate) if candidate.exists() else "spark-submit"


def namespace_options(ctx: contract.RunContext, storage_conn_id: str | None) -> StorageOptions | None:
    """
    Return the storage connection's settings for the namespace (None for ``local://``).

    For the namespace and the endpoint the run recorded; a missing connection is an error, never a
    silent fall-back to ambient credentials.
    """
    return storage_settings(ctx.storage.namespace, ctx.storage.local_root, storage_conn_id)


def storage_settings(namespace: str, local_root: str | None, storage_conn_id: str | None) -> StorageOptions | None:
    """Return the storage connection's settings for ``namespace``, checked against its kind (None for ``local://``)."""
    from lakefs_gc.storage import kind_of

    kind, _ = kind_of(namespace, local_root)
    if kind.options_type is None:  # local://: lakeFS's blockstore root, no connection
        return None
    options = storage_options(storage_conn_id)
    if options is None or not isinstance(options, kind.options_type):
        raise AirflowFailException(
            f"storage connection {storage_conn_id!r} is not defined or not of the namespace's "
            f"kind; the namespace {namespace!r} needs {kind.connection_help}"
        )
    return options


def repository_storage(repository: str, lakefs_conn_id: str, storage_conn_id: str | None) -> tuple[str, Storage]:
    """
    Return (namespace, storage) of a configured repository outside a GC run (the GC page, the restore).

    The namespace as lakeFS names it, opened as the GC's tasks open it.
    """
    from lakefs_gc.storage import open_storage
    from lakefs_gc_airflow.hooks import LakeFSHook

    hook = LakeFSHook(lakefs_conn_id=lakefs_conn_id)
    client = hook.get_conn()
    try:
        namespace = client.get_repository(repository).storage_namespace
    finally:
        client.close()
    local_root = hook.local_blockstore_root()
    return namespace, open_storage(namespace, storage_settings(namespace, local_root, storage_conn_id), local_root)


def namespace_storage(ctx: contract.RunContext, storage_conn_id: str | None) -> Storage:
    """Return the repository's storage namespace, opened with the storage connection's settings."""
    from lakefs_gc.storage import open_storage

    loc = ctx.storage
    return open_storage(loc.namespace, namespace_options(ctx, storage_conn_id), loc.local_root)


# The widest line a failure's reason gets in the task log: Airflow's log view does not wrap by
# default, and a refusal's message (a namespace, a connection, what to fix) runs to 300 characters.
REASON_WIDTH = 100


def reason_lines(message: str, width: int = REASON_WIDTH) -> list[str]:
    """``message`` as lines of at most ``width`` characters (a longer word, a URI, stays whole)."""
    import textwrap

    return [
        piece
        for para in str(message).splitlines()
        for piece in (textwrap.wrap(para, width, break_long_words=False, break_on_hyphens=False) or [""])
    ]


def log_reason(log: logging.Logger | TaskLogger, headline: str, message: str) -> None:
    """
    Write why a task fails to the task log, as short lines under ``headline``, readable without scrolling sideways.

    The exception raised after it keeps the message whole, one line.
    """
    log.error("%s:", headline)
    for line in reason_lines(message):
        log.error("    %s", line)


def failure_exception(log: logging.Logger | TaskLogger, step: str, failure: contract.StepFailure) -> AirflowException:
    """
    Return the exception that fails ``step`` for ``failure``, after logging why.

    A refusal fails the task at once (no retry); any other failure is retried by Airflow.
    """
    if failure.kind == contract.REFUSED:
        log_reason(log, f"{step} refused (no retry)", failure.message)
        return AirflowFailException(f"{step} refused: {failure.message}")
    log_reason(log, f"{step} failed ({failure.type})", failure.message)
    return AirflowException(f"{step} failed: {failure.type}: {failure.message}")


# ----------------------------------------------------------------------------------------------
# Why a task failed, for the GC page: one line in an XCom of the failed task

REFUSAL_KEY = "refusal"  # the task was refused: the same inputs give the same answer (no retry)
ERROR_KEY = "error"  # the task failed otherwise: a retry may pass
REASON_MAX = 600  # characters: a refusal's message runs to 300


def is_refusal(exc: BaseException) -> bool:
    """
    Return whether ``exc`` is a refusal: a :class:`~lakefs_gc.errors.Refusal` in its chain, or a failure without retry.

    ``AirflowFailException`` with no GC error behind it (a missing input, a connection of the wrong
    kind) is one too; a :class:`~lakefs_gc.errors.LakeFSGCError` that is not a refusal (lakeFS
    unreachable, a namespace without lakeFS's marker) is not, as ``lakefs_gc.errors`` classifies it.
    """
    from lakefs_gc.errors import LakeFSGCError, Refusal

    chain: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and len(chain) < 10:
        chain.append(e)
        e = e.__cause__ or e.__context__
    if any(isinstance(x, Refusal) for x in chain):
        return True
    return isinstance(exc, AirflowFailException) and not any(isinstance(x, LakeFSGCError) for x in chain)


def reason_line(exc: BaseException) -> str:
    """Return the failure's reason in one line: an Airflow exception's message, else ``Type: message`` (at most ``REASON_MAX``)."""
    from airflow.sdk.exceptions import AirflowException

    text = str(exc) if isinstance(exc, AirflowException) else f"{type(exc).__name__}: {exc}"
    line = " ".join(text.split()) or type(exc).__name__
    return line if len(line) <= REASON_MAX else line[: REASON_MAX - 1] + "…"


def record_failure(context: Context, exc: BaseException) -> None:
    """
    Push why the task fails, one line, as its XCom ``refusal`` or ``error``, before the exception goes on.

    The GC page reads it for failed runs (:mod:`lakefs_gc_airflow.gc_page.app`). Airflow's secrets
    masker runs over it first (without it, an error's line is not pushed). Never raises: a push that
    fails is logged and the task's own error stays.
    """
    import logging

    try:
        key = REFUSAL_KEY if is_refusal(exc) else ERROR_KEY
        line = reason_line(exc)
        try:
            from airflow.sdk._shared.secrets_masker import redact

            line = str(redact(line))
        except ImportError:  # the masker moved (another Airflow): only our own refusals, which hold no secret
            if key != REFUSAL_KEY:
                return
        context["ti"].xcom_push(key=key, value=line)
    except Exception as e:
        logging.getLogger(__name__).warning("why the task failed is not recorded for the GC page: %s", e)


def records_failure(execute: Callable[[_Op, Context], _R]) -> Callable[[_Op, Context], _R]:
    """Wrap a GC task's ``execute``: any exception is recorded (:func:`record_failure`), then raised as it was."""

    @functools.wraps(execute)
    def run(self: _Op, context: Context) -> _R:
        try:
            return execute(self, context)
        except Exception as exc:
            record_failure(context, exc)
            raise

    return run
