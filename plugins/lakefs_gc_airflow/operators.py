"""
GC operators: thin shells around ``lakefs_gc`` (the run contract, the steps).

Here the Python steps (``prepare_run``, ``mark_uncommitted``, ``save_report``); the Spark steps'
operator is in ``spark_submit.py`` and the restore and discovery operators in ``housekeeping.py``
(every operator importable from here), the extra links in ``links.py``, what every task reads in
``task_io.py``.

Each task reads the run context (``prepare_run``'s XCom) and exactly the results it needs, by task
id (``lakefs_gc.contract.STEP_INPUTS``), as typed values, and returns its own result type as a
small dict; a task that fails leaves why in one line, its XCom ``refusal`` or ``error``
(``task_io.records_failure``, for the GC page). Hooks and clients are built in ``execute``;
``__init__`` only stores arguments. Secrets never enter an XCom, argv or a log.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from lakefs_gc import contract
from lakefs_gc.config import resolve_work_dir
from lakefs_gc_airflow.hooks import LakeFSHook, storage_options
from lakefs_gc_airflow.housekeeping import (  # noqa: F401 - every operator of the provider importable from here
    DiscoverRepositoriesOperator,
    RepositoryConnections,
    RestoreOperator,
)
from lakefs_gc_airflow.lineage import OpenLineageMixin
from lakefs_gc_airflow.links import GCPageLink, GCReportLink, LakeFSRepositoryLink
from lakefs_gc_airflow.spark_submit import GCSparkSubmitOperator  # noqa: F401 - every operator importable from here
from lakefs_gc_airflow.task_io import failure_exception, namespace_storage, records_failure, step_inputs

if TYPE_CHECKING:
    from airflow.sdk import Context

    from lakefs_gc.storage.base import Storage


def _fail(exc: Exception) -> AirflowFailException:
    """
    Turn the refusal of a task before the sweep into its failure, without retry.

    A refusal: a bad setting, missing rules, an unsafe input; in prepare_run, the run's first call to
    lakeFS, any GC error, lakeFS unreachable included (a wrong connection more likely than a
    restart). The failure says why in one line, and that nothing was deleted.
    """
    import logging

    from lakefs_gc_airflow.task_io import log_reason

    message = str(exc).rstrip()
    if "nothing was deleted" not in message.lower():
        message += ("" if message.endswith(".") else ".") + " Nothing was deleted"
    log_reason(logging.getLogger(__name__), "The task is refused (no retry)", message)
    return AirflowFailException(message)


# ----------------------------------------------------------------------------------------------
# Python steps


def run_clock_start(context: Context) -> datetime:
    """
    When the run's clock starts: the DAG run's start, not this task's.

    A run that waits for a worker, a slow DAG parse or a retried ``prepare_run`` would otherwise
    move the cutoff later, over objects written after the run was started; an earlier start only
    keeps more (retention, cutoff and confirmation all count back from it). Now, when the DAG run
    has no start yet.
    """
    now = datetime.now(UTC)
    started = getattr(context.get("dag_run"), "start_date", None)
    if isinstance(started, datetime) and started.tzinfo is not None and started < now:
        return started.astimezone(UTC)
    return now


class PrepareRunOperator(OpenLineageMixin, BaseOperator):
    """
    Validate the run's Params into ``RunSettings``, resolve the repository and fix the run clock.

    The step ``lakefs_gc.steps.prepare_run``; returns the ``RunContext`` every later task reads.

    Refusals (a minimum age below lakeFS's grace period without ``unsafe_min_age_override``, no GC
    rules, a missing connection, a sweep_only mark that is missing, failed or stale) fail the task
    without retry, naming what to change.

    :param repository: the lakeFS repository to collect.
    :param lakefs_conn_id: the lakeFS connection (``lakefs_gc``, or ``airflow-provider-lakefs``'s
        ``lakefs``).
    :param storage_conn_id: the connection that serves the repository's storage namespace (``aws``,
        ``wasb`` or ``google_cloud_platform``); None for a ``local://`` namespace.
    :param work_dir: where the run's intermediate parts go (default: the config's work location).
    :param parallelism: the partitions the jobs list and delete with (None: Spark's default).
    :param schedule_interval_seconds: the DAG's schedule interval, for the incremental flow's choice
        (0: a manual DAG).
    :param clean_run_every: when an incremental chain ends in a clean run: ``{"runs": N, "days": D}``.
    :param prices: the price table a run's cost is figured with (the config's ``prices``, as
        ``lakefs_gc.contract.to_wire`` writes it; None: the public list prices).
    :param keep: the config's keep rules (``lakefs_gc.contract.KeepRules`` as ``to_wire`` writes
        it; None: lakeFS's rules alone).
    :param approval: when a sweep waits for a person (``lakefs_gc.contract.ApprovalRule`` as
        ``to_wire`` writes it; None: never). The DAG has the task ``approve_sweep`` then.
    """

    step: ClassVar[str] = "prepare_run"  # its task id (lakefs_gc.contract.STEP_TABLE)
    template_fields: Sequence[str] = ("repository", "lakefs_conn_id", "storage_conn_id", "work_dir")
    ui_color = "#d7ecff"

    def __init__(
        self,
        *,
        repository: str,
        lakefs_conn_id: str = LakeFSHook.default_conn_name,
        storage_conn_id: str | None = "aws_default",
        work_dir: str | None = None,
        parallelism: int | None = None,
        schedule_interval_seconds: int = 0,
        clean_run_every: dict[str, Any] | None = None,
        prices: dict[str, Any] | None = None,
        keep: dict[str, Any] | None = None,
        approval: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.repository = repository
        self.approval = approval  # the config's approval rule, as lakefs_gc.contract.to_wire writes an ApprovalRule
        self.keep = keep  # the config's keep rules, as lakefs_gc.contract.to_wire writes a KeepRules
        self.prices = prices  # the config's price table, as lakefs_gc.contract.to_wire writes a Prices
        self.clean_run_every = clean_run_every  # {"runs": N, "days": D} (lakefs_gc.gc.flow.CleanRunEvery)
        self.lakefs_conn_id = lakefs_conn_id
        self.storage_conn_id = storage_conn_id
        self.work_dir = work_dir
        self.parallelism = parallelism
        self.schedule_interval_seconds = schedule_interval_seconds

    @records_failure
    def execute(self, context: Context) -> dict[str, Any]:
        from lakefs_gc.errors import LakeFSGCError, Unreachable
        from lakefs_gc.gc.flow import CleanRunEvery
        from lakefs_gc.steps import STEP_FUNCTIONS

        prepare_run = STEP_FUNCTIONS[self.step]
        run_type = str(getattr(context.get("dag_run"), "run_type", "manual") or "manual")
        hook = LakeFSHook(lakefs_conn_id=self.lakefs_conn_id)
        try:
            settings = contract.settings_from_params(
                context.get("params") or {}, run_type=run_type, schedule_interval_seconds=self.schedule_interval_seconds
            )
            ctx = prepare_run(
                hook.get_conn(),
                self.repository,
                settings,
                now=run_clock_start(context),
                airflow_run_id=context["run_id"],
                work_dir=resolve_work_dir(self.work_dir),
                storage_options=storage_options(self.storage_conn_id),
                local_root=hook.local_blockstore_root(),
                parallelism=self.parallelism,
                storage_conn_id=self.storage_conn_id,
                lakefs_conn_id=self.lakefs_conn_id,
                lakefs_retries=hook.retries(),
                clean_run_every=CleanRunEvery(**(self.clean_run_every or {})),
                prices=contract.from_wire(contract.Prices, self.prices, "prices") if self.prices else None,
                keep=contract.from_wire(contract.KeepRules, self.keep, "keep") if self.keep else None,
                approval=contract.from_wire(contract.ApprovalRule, self.approval, "approval")
                if self.approval
                else None,
                preflight=True,  # lakefs-gc doctor's checks first: fail closed before the mark
            )
        except LakeFSGCError as e:
            raise _fail(e) from (None if isinstance(e, Unreachable) else e)
        self.log.info(
            "run %s on %s (%s): mode %s, flow %s (%s), start %s, cutoff %s, work dir %s",
            ctx.airflow_run_id,
            ctx.repository,
            ctx.storage.namespace,
            ctx.mode,
            ctx.flow,
            ctx.flow_reason,
            ctx.start_time,
            ctx.cutoff_time,
            ctx.work_dir,
        )
        return contract.to_wire(ctx)


class MarkUncommittedOperator(OpenLineageMixin, BaseOperator):
    """
    lakeFS's uncommitted mark (every page, hazard H2), completed from lakeFS's API.

    Every branch is listed against its HEAD commit (``listObjects``) and the staged addresses
    lakeFS's mark lacks are kept beside it (``lakefs_gc.steps.mark_uncommitted``).

    A refusal fails the task at once; any other error (lakeFS restarting after it answered
    prepare_run, its async prepare timing out) is retried by Airflow, as in the Spark steps.

    :param lakefs_conn_id: the lakeFS connection (``lakefs_gc``, or ``airflow-provider-lakefs``'s
        ``lakefs``).
    :param storage_conn_id: the connection that serves the repository's storage namespace (``aws``,
        ``wasb`` or ``google_cloud_platform``); None for a ``local://`` namespace.
    """

    step: ClassVar[str] = "mark_uncommitted"  # its task id (lakefs_gc.contract.STEP_TABLE)
    template_fields: Sequence[str] = ("lakefs_conn_id", "storage_conn_id")
    ui_color = "#d7ecff"

    def __init__(
        self,
        *,
        lakefs_conn_id: str = LakeFSHook.default_conn_name,
        storage_conn_id: str | None = "aws_default",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.lakefs_conn_id = lakefs_conn_id
        self.storage_conn_id = storage_conn_id

    @records_failure
    def execute(self, context: Context) -> dict[str, Any] | None:
        from lakefs_gc.errors import LakeFSGCError, Refusal, Unreachable
        from lakefs_gc.steps import STEP_FUNCTIONS

        mark_uncommitted = STEP_FUNCTIONS[self.step]
        ctx = step_inputs(self.step, context).context
        if contract.skipped(self.step, ctx.mode):
            self.log.info("%s: no new mark; sweeping mark %s", ctx.mode, ctx.sweep_mark and ctx.sweep_mark.mark_id)
            return None
        try:
            result = mark_uncommitted(
                LakeFSHook(lakefs_conn_id=self.lakefs_conn_id).get_conn(),
                ctx,
                namespace_storage(ctx, self.storage_conn_id),
            )
        except Refusal as e:
            raise _fail(e) from e
        except LakeFSGCError as e:  # lakeFS answered prepare_run moments ago: a restart, a slow prepare; retried
            raise failure_exception(self.log, self.step, contract.failure_of(e)) from (
                None if isinstance(e, Unreachable) else e
            )
        if result.staged_check == "candidates":
            self.log.info(
                "uncommitted mark %s: %d location(s) over %d page(s); branch HEADs recorded for the staged "
                "check on the candidates (compute_candidates), %d moved during the mark and were listed: "
                "%d live staged address(es) lakeFS's mark lacked (kept)",
                result.run_id,
                len(result.locations),
                result.pages,
                result.branches_moved,
                result.staged_addresses_lakefs_omitted,
            )
        else:
            self.log.info(
                "uncommitted mark %s: %d location(s) over %d page(s); %d staged entr(ies) on %d branch(es) "
                "checked through the API, %d live staged address(es) lakeFS's mark lacked (kept)",
                result.run_id,
                len(result.locations),
                result.pages,
                result.staged_entries_checked,
                result.staged_branches,
                result.staged_addresses_lakefs_omitted,
            )
        return contract.to_wire(result)


class SaveReportOperator(OpenLineageMixin, BaseOperator):
    """
    Write ``summary.json`` last, and show the run where Airflow users look.

    The summary holds lakeFS's fields plus ours (``success: true``) and is made from the typed
    results of every step (the step ``lakefs_gc.steps.save_report``).

    Airflow 3's Task SDK gives a task no way to set its own DAG-run note (the execution API reads
    it, and sets it only on a run the task triggers), so the run's summary
    (``lakefs_gc.report.render.summary_text``: listed, candidates, marked, held back and until when,
    deleted, already gone, dead letters, reclaimed, flow, cutoff, the report's URI) is:
    the rendered template field ``run_summary`` (Rendered Templates tab, rewritten after execution),
    the ``summary`` of the XCom ``return_value``, and the task log (one line per row); and on the GC
    page (plain, wrapped text, with the runs before it). Three extra links (``GCReportLink``,
    ``LakeFSRepositoryLink``, ``GCPageLink``) open the report, the repository, and the GC page.

    :param storage_conn_id: the connection that serves the repository's storage namespace (``aws``,
        ``wasb`` or ``google_cloud_platform``); None for a ``local://`` namespace.
    """

    step: ClassVar[str] = "save_report"  # its task id (lakefs_gc.contract.STEP_TABLE)
    template_fields: Sequence[str] = ("storage_conn_id", "run_summary")
    overwrite_rtif_after_execution = True  # run_summary is set in execute
    operator_extra_links = (GCReportLink(), LakeFSRepositoryLink(), GCPageLink())
    ui_color = "#d7ecff"

    def __init__(self, *, storage_conn_id: str | None = "aws_default", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.storage_conn_id = storage_conn_id
        self.run_summary = "(written when the task has run)"

    @records_failure
    def execute(self, context: Context) -> dict[str, Any]:
        from lakefs_gc.steps import STEP_FUNCTIONS

        save_report = STEP_FUNCTIONS[self.step]
        inputs = step_inputs(self.step, context)
        storage = namespace_storage(inputs.context, self.storage_conn_id)
        result = save_report(storage, inputs)
        self.log.info("report for GC run %s written: %s", inputs.mark_id(), result.summary_uri)
        for line in result.summary.splitlines():  # summary_text's "label: value" rows
            label, _, value = line.partition(": ")
            self.log.info("%-13s %s", label + ":", value)
        self.run_summary = result.summary
        self.announce(context, inputs, storage)
        return contract.to_wire(result)

    def announce(self, context: Context, inputs: contract.StepInputs, storage: Storage | None = None) -> None:
        """
        Send the run's figures as metrics (Airflow's ``Stats``) and its Asset events (``observability``).

        The figures are the summary.json the step wrote, read back from ``storage`` (it holds what
        only the step knew, such as the GC's own leftovers it removed); the steps' results when it
        cannot be read. Events go only through the repository's alias among this task's ``outlets``
        (the GC DAG and the task group declare it); a metric or event that cannot be sent is logged,
        never fails a run whose report is written.
        """
        import json

        from lakefs_gc.report.figures import run_figures
        from lakefs_gc.report.run_summary import RunSummary
        from lakefs_gc.report.summary import build_summary, summary_location
        from lakefs_gc_airflow import observability

        repository = inputs.context.repository
        try:
            if storage is None:
                raise LookupError("no storage given")
            summary = RunSummary.from_doc(json.loads(storage.get(summary_location(inputs))))
        except Exception as e:  # the figures the steps returned: all but what save_report itself did
            self.log.warning("summary.json of %s not read back (%s): figures from the steps' results", repository, e)
            summary = build_summary(inputs, success=True)
        figures = run_figures(summary)
        try:
            names = observability.emit_metrics(repository, figures)
            self.log.info(
                "metrics: %d figures sent as %s.*", len(names), observability.metric_name(repository, "")[:-1]
            )
        except Exception as e:  # metrics are never worth a failed run
            self.log.warning("metrics of %s not sent: %s", repository, e)
        if observability.events_alias(repository) in self.outlets:
            assets = observability.emit_asset_events(context, repository, summary, figures)
            self.log.info("Asset events: %s", ", ".join(assets) or "none (nothing marked or swept)")


# ----------------------------------------------------------------------------------------------
# Undo: the restore DAG's one task
