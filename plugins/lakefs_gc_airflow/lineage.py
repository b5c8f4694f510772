"""
OpenLineage from every GC task: what it read, what it wrote, and the figures it produced.

With ``apache-airflow-providers-openlineage`` installed and a transport configured, the provider's
listener asks each task for its lineage (``get_openlineage_facets_on_start`` and
``..._on_complete(task_instance)``, as it asks the official providers' operators) through
:class:`OpenLineageMixin`, a base of every GC operator. The listener builds a task's events in a
forked process, where the task's XComs cannot be read (the Task SDK's channel to its supervisor
belongs to the task's process), so the task keeps what its lineage is made of when its ``execute``
returns, as the official operators keep a job id or the keys they deleted: its result, and the
run context and mark it ran with (:attr:`OpenLineageMixin.lineage_sources`). Without the provider
nothing of it is imported; without a transport (lineage off) a task reads nothing more.

**Datasets** (the OpenLineage naming spec, https://openlineage.io/docs/spec/naming):

- the repository's commits: namespace ``lakefs://<host>:<port>`` (lakeFS's endpoint the run
  read, as ``postgres://<host>:<port>`` names a database server), name ``<repository>``. The GC
  reads every branch and every retained commit, so no ``<repository>@<ref>`` is named;
- the storage namespace (the repository's objects) as the spec names its store: ``s3://<bucket>``,
  ``gs://<bucket>``, ``wasbs://<container>@<account>.dfs.core.windows.net`` (the spec's Azure Blob
  name; another Azure cloud's domain likewise), or ``file`` for a ``local://`` namespace (the spec's
  local file system, as Airflow's own file Assets name it), name the prefix (the absolute path for
  ``file``);
- the run's listing of the namespace (``list_slices``' Parquet, ``<work dir>/listed``), named as
  its store is (``file`` for a local work location);
- the mark: ``<prefix>/_lakefs/retention/gc/unified/<mark id>`` in the same store (the folder of
  the run's candidates, to-delete list and report); the space attribution's ``space.json``; the
  report: the ``summary.json`` ``save_report`` wrote.

**The facet** ``lakefs_gc`` (:func:`facet_class`) of each task's run: its step, repository, mode,
mark id and ``figures``, the counts and bytes the task produced, read from its own result (the
XCom ``return_value``), each named as the field of ``summary.json`` that holds it
(:func:`step_figures`), so a lineage backend and the report never disagree.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from lakefs_gc import contract

if TYPE_CHECKING:
    from airflow.providers.openlineage.extractors import OperatorLineage

log = logging.getLogger(__name__)

FACET = "lakefs_gc"  # the run facet's key in an event's run.facets
LAKEFS_SCHEME = "lakefs"
STEP_DATASETS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # step: (inputs, outputs), by kind: commits (lakeFS), namespace (the objects), listing (the run's
    # listing of them, in its work location), mark, space (space.json), report (summary.json)
    "prepare_run": (("commits",), ()),
    "mark_uncommitted": (("commits",), ("mark",)),
    "list_committed": (("commits",), ("mark",)),
    "list_slices": (("namespace",), ("listing",)),
    "compute_candidates": (("mark", "listing"), ("mark",)),
    "attribute_space": (("commits", "mark", "listing"), ("space",)),
    "delete": (("mark",), ("namespace",)),
    "save_report": (("mark",), ("report",)),
}


# ----------------------------------------------------------------------------------------------
# Dataset names


def lakefs_dataset(endpoint: str, repository: str) -> tuple[str, str]:
    """
    Return (namespace, name) of a repository's commits: ``lakefs://<host>:<port>``, ``<repository>``.

    The port is the URL's, else its scheme's default (80, 443), as a database server is named.
    """
    url = urlsplit(endpoint)
    port = url.port or (443 if url.scheme == "https" else 80)
    return f"{LAKEFS_SCHEME}://{url.hostname or 'localhost'}:{port}", repository


def store_dataset(namespace: str, local_root: str | None, key: str = "") -> tuple[str, str]:
    """
    Return (namespace, name) of a storage namespace, or of ``key`` under it, as OpenLineage names its store.

    ``s3://<bucket>``, ``gs://<bucket>``, ``wasbs://<container>@<account>.dfs.<cloud domain>``
    (``blob.`` of lakeFS's Azure domain becomes ``dfs.``, as the spec writes Azure Blob's) with the
    key's path as the name; ``file`` with the absolute path for a ``local://`` namespace.
    """
    from lakefs_gc.storage.namespace import AZURE, LOCAL, parse_namespace

    ns = parse_namespace(namespace, local_root)
    name = "/".join(p for p in (ns.prefix.rstrip("/"), key.strip("/")) if p)
    if ns.scheme == LOCAL:
        return "file", name
    if ns.scheme == AZURE:
        account, _, domain = ns.host.partition(".")
        domain = "dfs." + domain.removeprefix("blob.") if domain.startswith("blob.") else domain
        return f"wasbs://{ns.bucket}@{account}.{domain}", name or "/"
    return f"{ns.scheme}://{ns.bucket}", name or "/"


def location_dataset(uri: str) -> tuple[str, str]:
    """Return (namespace, name) of a work location: ``file`` and its absolute path, or its store's (``s3://``...)."""
    from lakefs_gc_airflow.task_io import local_dir

    path = local_dir(uri)
    if path is not None:
        return "file", os.path.normpath(os.path.abspath(path))
    return store_dataset(uri, None)


def step_datasets(
    step: str, ctx: contract.RunContext, mark_id: str | None, result: Any
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """
    Return the (namespace, name) pairs ``step`` read and wrote (:data:`STEP_DATASETS`).

    A dataset the run cannot name (the mark before there is one, a space attribution that was
    skipped, a report not written) is left out.
    """
    from lakefs_gc.report import layout

    loc = ctx.storage

    def named(kind: str) -> tuple[str, str] | None:
        if kind == "commits":
            return lakefs_dataset(ctx.lakefs_endpoint, ctx.repository)
        if kind == "namespace":
            return store_dataset(loc.namespace, loc.local_root)
        if kind == "listing":
            return location_dataset(layout.listed_dir(ctx.work_dir))
        if kind == "mark":
            return store_dataset(loc.namespace, loc.local_root, layout.report_dir(mark_id)) if mark_id else None
        if kind == "space":
            key = getattr(result, "space_key", None)
            return store_dataset(loc.namespace, loc.local_root, key) if key else None
        uri = getattr(result, "summary_uri", None)  # the report: where save_report wrote it
        key = _relative_key(ctx, uri) if uri else None
        return store_dataset(loc.namespace, loc.local_root, key) if key else None

    inputs, outputs = STEP_DATASETS[step]
    return (
        [d for d in map(named, inputs) if d is not None],
        [d for d in map(named, outputs) if d is not None],
    )


def _relative_key(ctx: contract.RunContext, uri: str) -> str | None:
    """Return ``uri`` (a full URI of the namespace's storage) relative to the namespace, or None."""
    from lakefs_gc.storage.namespace import parse_namespace, relative_to

    return relative_to(parse_namespace(ctx.storage.namespace, ctx.storage.local_root).roots(), uri)


# ----------------------------------------------------------------------------------------------
# Figures


def _seconds(step: str, result: Any) -> dict[str, Any]:
    """Return the step's ``<step>_seconds``, when the report times it."""
    timed = {s.task_id for s in contract.STEP_TABLE if s.timed}
    return {f"{step}_seconds": result.seconds} if step in timed else {}


# the results whose figures are their own fields, named as summary.json names them
_PLAIN: dict[type, tuple[str, ...]] = {
    contract.RunContext: ("start_time", "cutoff_time", "grace_period_seconds", "effective_min_age_seconds"),
    contract.UncommittedResult: (
        "staged_branches",
        "staged_entries_checked",
        "staged_addresses_lakefs_omitted",
        "branches_moved",
    ),
    contract.CommittedResult: (
        "active_commits",
        "metaranges",
        "ranges",
        "committed_addresses",
        "documented_commits",
        "commits_lakefs_lacked",
    ),
    contract.SlicesResult: ("slices_listed", "slices_skipped", "listed_objects", "listed_bytes"),
    contract.CandidatesResult: (
        "uncommitted_files",
        "candidates",
        "candidate_bytes",
        "to_delete",
        "to_delete_bytes",
        "held_back",
    ),
}
# attribute_space's: summary.json field -> SpaceResult field
_SPACE = {
    "space_objects": "objects",
    "space_bytes": "bytes",
    **{f"space_{k}_bytes": f"{k}_bytes" for k in ("head", "retention", "staged", "deleted", "held_back", "young")},
    "space_branches": "branches",
    "stale_branches": "stale_branches",
    "stale_alone_bytes": "stale_alone_bytes",
}


def step_figures(step: str, result: Any) -> dict[str, Any]:
    """
    Return the counts and bytes ``result`` (the step's own result) holds, by the summary.json fields they are.

    Empty for a step that did not run (None) or did nothing (a skipped space attribution or sweep).
    """
    if result is None or getattr(result, "skipped", None):
        return {}
    if isinstance(result, contract.DeleteResult):
        return _delete_figures(step, result)
    out: dict[str, Any] = {}
    if isinstance(result, contract.UncommittedResult):
        out = {"run_id": result.run_id, "uncommitted_pages": result.pages}
    elif isinstance(result, contract.SpaceResult):
        out = {field: getattr(result, name) for field, name in _SPACE.items()}
    out.update({k: getattr(result, k) for k in _PLAIN.get(type(result), ())})
    return {**out, **_seconds(step, result)}


def _delete_figures(step: str, result: contract.DeleteResult) -> dict[str, Any]:
    """Return the sweep's figures: what it deleted (a dry run: would have), failed, and reclaimed."""
    if result.skipped:
        return {}
    c = result.counts
    out: dict[str, Any] = {
        "deleted": 0 if result.dry_run else c.deleted,
        "already_gone": 0 if result.dry_run else c.already_gone,
        "delete_failed": c.failed,
        "delete_keys": c.keys,
        "delete_retried": c.retried,
        "delete_requests": c.requests,
        "delete_parts": c.parts,
        **_seconds(step, result),
    }
    if result.dry_run:
        out["would_delete"] = c.deleted
    if result.freed_now_bytes is not None:  # the bytes it deleted, split by what the store does with them
        later = sum(x.bytes for x in result.freed_later)
        out["freed_now_bytes"] = result.freed_now_bytes
        out["still_billed_bytes"] = result.still_billed_bytes
        out["reclaimed_bytes"] = result.freed_now_bytes + later + (result.still_billed_bytes or 0)
    return out


@functools.cache
def facet_class() -> type:
    """
    Return the run facet ``lakefs_gc``: an attrs class on OpenLineage's ``RunFacet``.

    Made on first use: it needs the provider's OpenLineage client, which only the listener's call brings.
    """
    import attrs
    from airflow.providers.common.compat.openlineage.facet import RunFacet

    @attrs.define
    class LakeFSGCRunFacet(RunFacet):
        """
        A GC task's run: its step, the repository, the run's mode and mark, and the figures it produced.

        ``figures`` are named as the run's summary.json fields; ``summaryUri``: the report
        (``save_report`` only).
        """

        step: str
        repository: str
        mode: str
        markId: str | None = None  # OpenLineage's facets are camelCase
        figures: dict[str, Any] = attrs.field(factory=dict)
        summaryUri: str | None = None

    return LakeFSGCRunFacet


# ----------------------------------------------------------------------------------------------
# The operators' side

# the methods whose return value is the task's result (the XCom return_value): execute, and
# execute_complete when a task that deferred resumes
RESULT_METHODS = ("execute", "execute_complete")


def lineage_enabled() -> bool:
    """Return whether the OpenLineage provider is installed and configured (a transport, not disabled)."""
    try:
        from airflow.providers.openlineage.conf import is_disabled
    except ImportError:
        return False
    return not is_disabled()


def _keeping_sources(method: Callable[..., Any]) -> Callable[..., Any]:
    """
    Wrap a GC operator's ``execute`` (or ``execute_complete``): keep what its lineage is made of.

    The task's result, and the run context and mark it ran with, read in the task's own process
    (the listener builds an event in a forked process, where the task's XComs cannot be read).
    Only when lineage is on; a failure to read them never fails the task: it loses its lineage.
    """

    @functools.wraps(method)
    def run(self: OpenLineageMixin, context: Any, *args: Any, **kwargs: Any) -> Any:
        result = method(self, context, *args, **kwargs)
        if lineage_enabled():
            try:
                self.lineage_sources = self._lineage_sources(context, result)
            except Exception as e:  # lineage is never worth a failed task
                log.warning("OpenLineage: the run context of this task was not read (%s): it reports no datasets", e)
        return result

    run.lineage_wrapped = True  # type: ignore[attr-defined]
    return run


class OpenLineageMixin:
    """
    A GC operator's OpenLineage methods, read by the provider's listener (``DefaultExtractor``).

    The operator has ``step``, its step's name (``lakefs_gc.contract.STEPS``). Its ``execute`` and
    ``execute_complete`` keep the task's result, run context and mark (``lineage_sources``) when
    lineage is on: the official providers' operators keep what their lineage needs in ``execute``
    too (a job id, the keys deleted).
    """

    lineage_sources: dict[str, Any] | None = None  # {"context", "mark_uncommitted", "result"}: XCom values

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in RESULT_METHODS:
            method = cls.__dict__.get(name)
            if callable(method) and not getattr(method, "lineage_wrapped", False):
                setattr(cls, name, _keeping_sources(method))

    def _lineage_sources(self, context: Any, result: Any) -> dict[str, Any]:
        """Return the task's result and the XComs of ``prepare_run`` and ``mark_uncommitted`` (in the task's group)."""
        from lakefs_gc_airflow.task_io import group_prefix

        step = str(getattr(self, "step"))  # each operator's own: a class attribute, or an instance one
        first, uncommitted = contract.STEPS[0], "mark_uncommitted"
        if step == first:
            return {"context": result, uncommitted: None, "result": result}
        ti = context["ti"]
        prefix = group_prefix(step, str(ti.task_id))
        ctx, unc = (ti.xcom_pull(task_ids=[prefix + first, prefix + uncommitted]) or [None, None])[:2]
        return {"context": ctx, uncommitted: result if step == uncommitted else unc, "result": result}

    def get_openlineage_facets_on_start(self) -> OperatorLineage:
        """
        Return nothing yet: what a GC task reads and writes is named by the run context, known once it ran.

        Its COMPLETE event names them.
        """
        from airflow.providers.openlineage.extractors import OperatorLineage

        return OperatorLineage()

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> OperatorLineage:
        """Return the datasets this task read and wrote, and its figures (nothing when it kept no result)."""
        from airflow.providers.common.compat.openlineage.facet import Dataset
        from airflow.providers.openlineage.extractors import OperatorLineage

        sources = self.lineage_sources
        if not sources or sources.get("context") is None:
            return OperatorLineage()
        step = str(getattr(self, "step"))
        ctx = contract.from_wire(contract.RunContext, sources["context"], "context (XCom of task 'prepare_run')")
        result = ctx if step == contract.STEPS[0] else contract.read_result(step, sources["result"])
        unc = contract.read_result("mark_uncommitted", sources["mark_uncommitted"])
        mark_id = ctx.sweep_mark.mark_id if ctx.sweep_mark is not None else (unc.run_id if unc is not None else None)
        inputs, outputs = step_datasets(step, ctx, mark_id, result)
        facet = facet_class()(
            step=step,
            repository=ctx.repository,
            mode=ctx.mode,
            markId=mark_id,
            figures=step_figures(step, result),
            summaryUri=getattr(result, "summary_uri", None),
        )
        return OperatorLineage(
            inputs=[Dataset(namespace=ns, name=name) for ns, name in inputs],
            outputs=[Dataset(namespace=ns, name=name) for ns, name in outputs],
            run_facets={FACET: facet},
        )
