"""
``approve_sweep``: a person approves a sweep in Airflow's own UI before anything is deleted.

In the DAG when the repository asks for it (``sweep.confirm: approval``, or ``sweep.approval_above``:
``guard``, a share or a count), between ``attribute_space`` and ``delete``. The standard provider's
``ApprovalOperator`` asks: on Airflow 3.3 the task waits in ``awaiting_input``, before 3.3 it defers
to the triggerer; either way it holds no worker or pool slot while nobody answers. A run whose
sweep is under the threshold (or a dry run, or mark_only) does not ask and goes on.

The task's XCom is a :class:`lakefs_gc.contract.Approval`: the mark and the count the person was
shown, the decision, who answered and when. The delete step sweeps only that mark of that size
(:func:`lakefs_gc.gc.guards.sweep_guard`); "Reject" sweeps nothing (the run ends, the report says who
rejected); no answer within ``sweep.approval_timeout_hours`` fails the task and nothing is deleted.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from airflow.providers.standard.exceptions import HITLTimeoutError
from airflow.providers.standard.operators.hitl import ApprovalOperator, HITLOperator
from airflow.sdk.exceptions import AirflowFailException

from lakefs_gc import contract
from lakefs_gc_airflow.task_io import namespace_storage, pulled_inputs, record_failure, records_failure

if TYPE_CHECKING:
    from airflow.sdk import Context

# what the question reads besides the run context: the delete step's inputs, and where the bytes go
_READS = ("mark_uncommitted", "list_slices", "compute_candidates", "attribute_space")


class SweepApprovalOperator(ApprovalOperator):
    """
    Ask a person to approve this run's sweep (Approve / Reject in Airflow's UI), when the run's rule asks.

    :param storage_conn_id: the connection that serves the repository's storage namespace (the
        mark's list is counted there, as the delete step counts it); None for ``local://``.
    :param response_timeout: how long the question waits (``sweep.approval_timeout_hours``); no answer
        by then deletes nothing and fails the task.
    """

    template_fields = (*ApprovalOperator.template_fields, "storage_conn_id")
    ui_color = "#ffe4b3"

    def __init__(self, *, storage_conn_id: str | None = "aws_default", **kwargs: Any) -> None:
        kwargs.setdefault("subject", "Approve this sweep?")
        super().__init__(**kwargs)
        self.storage_conn_id = storage_conn_id

    def _inputs(self, context: Context) -> tuple[contract.StepInputs, Any]:
        """Return the run's inputs (the delete step's) and attribute_space's result, pulled in this task's group."""
        from lakefs_gc.errors import ContractError

        try:
            inputs = pulled_inputs(contract.APPROVAL_TASK, context, _READS)
        except ContractError as e:
            raise AirflowFailException(f"{contract.APPROVAL_TASK}: {e}") from e
        return inputs, inputs.results["attribute_space"]

    @records_failure
    def execute(self, context: Context) -> dict[str, Any]:
        from lakefs_gc.gc.approval import question

        inputs, space = self._inputs(context)
        ctx = inputs.context
        if ctx.mode == "mark_only":
            return contract.to_wire(contract.Approval("not_needed", reason="mark_only: nothing is swept"))
        q = question(inputs, namespace_storage(ctx, self.storage_conn_id), space, _page_url(context))
        if q.reason is None:
            why = "a dry run deletes nothing" if ctx.settings.dry_run else f"under {ctx.approval.describe()}"
            self.log.info("no approval needed for mark %s (%d object(s) to delete): %s", q.mark_id, q.to_delete, why)
            return contract.to_wire(q.not_needed(why))
        self.subject, self.body = q.subject, q.body
        # what execute_complete records: the mark and count shown, in the task's own XCom (a resumed
        # task is a new process; its operator's attributes are not kept)
        context["ti"].xcom_push(
            key="asked",
            value=contract.to_wire(contract.Approval("asked", q.mark_id, q.to_delete, q.listed, reason=q.reason)),
        )
        self.log.info("waiting for a person to approve the sweep of mark %s: %s", q.mark_id, q.reason)
        return super().execute(context)  # type: ignore[no-any-return, unused-ignore]  # raises: waits for the answer

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        try:
            return self._answered(context, event)
        except Exception as exc:
            record_failure(context, exc)  # why, in one line, for the GC page
            raise

    def _answered(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        """Return the answer as an :class:`~lakefs_gc.contract.Approval` on the wire; no answer in time fails the task."""
        asked = contract.from_wire(
            contract.Approval, context["ti"].xcom_pull(task_ids=context["ti"].task_id, key="asked"), "asked"
        )
        hours = (self.response_timeout or timedelta(0)).total_seconds() / 3600
        try:
            answer = HITLOperator.execute_complete(self, context, event)  # not ApprovalOperator's: it skips downstream
        except HITLTimeoutError:
            raise AirflowFailException(
                f"nobody approved or rejected the sweep of mark {asked.mark_id} ({asked.to_delete:,} object(s)) within "
                f"{hours:g} hour(s) (sweep.approval_timeout_hours). Nothing was deleted; the mark stays and a "
                f"sweep_only run can sweep it"
            ) from None
        user = answer.get("responded_by_user") or {}
        at = answer.get("responded_at")
        decision = "approved" if answer["chosen_options"] == [self.APPROVE] else "rejected"
        approval = contract.Approval(
            decision,
            asked.mark_id,
            asked.to_delete,
            asked.listed,
            by=str(user.get("name") or user.get("id") or "") if isinstance(user, dict) else str(user),
            at=(at if isinstance(at, datetime) else datetime.now(UTC)).astimezone(UTC).isoformat(),
            reason=asked.reason,
        )
        self.log.info("the sweep of mark %s was %s by %s", approval.mark_id, decision, approval.by or "(unknown)")
        return contract.to_wire(approval)


def _page_url(context: Context) -> str:
    """Return the GC page of this DAG, a full URL when ``[api] base_url`` says the host, else a path."""
    from urllib.parse import quote

    from airflow.configuration import conf

    from lakefs_gc_airflow.gc_page import URL_ROUTE

    base = (conf.get("api", "base_url", fallback="") or "").rstrip("/")
    dag_id = str(getattr(context.get("dag"), "dag_id", "") or context["ti"].dag_id)
    return f"{base}/dags/{quote(dag_id, safe='')}/plugin/{URL_ROUTE}-dag"
