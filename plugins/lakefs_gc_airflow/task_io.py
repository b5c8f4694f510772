"""
What every GC task reads.

The run contract from XCom (by task id, typed), the work location when it is a local directory,
the spark-submit next to the worker's Python, and the repository's namespace opened with the
storage connection's settings. Shared by the Python steps (``operators.py``) and the Spark steps
(``spark_submit.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from airflow.sdk.exceptions import AirflowFailException

from lakefs_gc import contract
from lakefs_gc.errors import ContractError
from lakefs_gc_airflow.hooks import storage_options

if TYPE_CHECKING:
    import logging

    from airflow.sdk import Context
    from airflow.sdk.types import Logger as TaskLogger

    from lakefs_gc.storage import Storage, StorageOptions


def group_prefix(step: str, task_id: str) -> str:
    """
    Return the task group's prefix of a GC task (``""`` in the GC DAG, ``"<group_id>."`` in a user's DAG).

    A step's task id is its step's name, after its group's id when the group prefixes
    (:func:`lakefs_gc_airflow.task_group.lakefs_gc_task_group`).
    """
    return task_id[: -len(step)] if task_id.endswith(step) else ""


def step_inputs(step: str, context: Context) -> contract.StepInputs:
    """Return the run context and the results ``step`` reads, pulled by task id (in the task's own group) and typed."""
    needed = ("prepare_run", *contract.STEP_INPUTS[step])
    prefix = group_prefix(step, str(getattr(context["ti"], "task_id", step)))
    values = context["ti"].xcom_pull(task_ids=[prefix + n for n in needed]) or []
    pulled = dict(zip(needed, values))
    try:
        if pulled.get("prepare_run") is None:
            raise ContractError("the run context (XCom of task 'prepare_run') is missing")
        ctx = contract.from_wire(contract.RunContext, pulled["prepare_run"], "context (XCom of task 'prepare_run')")
        results = {k: contract.read_result(k, pulled.get(k)) for k in contract.STEP_INPUTS[step]}
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
