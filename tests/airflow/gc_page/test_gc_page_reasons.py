"""Why a failed run failed, from a real task to the GC page's REST answer: real ``dag.test()`` runs of
the GC DAG (SQLite; the lakeFS client and spark-submit stood in for, as in
``tests/airflow/dags/test_dag_run.py``, whose fixture this is), whose failing task pushes its one-line
reason as an XCom (``task_io.records_failure``) through Airflow 3's execution API; the page's route reads
it back through Airflow's XCom model for failed runs only. A refusal (no retry) is ``refused``; a
failure retried until it failed for good is an error, its last try's line alone (a retry clears the
task's XComs); a run that succeeds has none. Nothing here changes what a run deletes.
"""

from __future__ import annotations

from types import SimpleNamespace

from tests.airflow.dags.test_dag_run import GRACE, gc_dag  # noqa: F401 - the fixture, used by name
from tests.airflow.helpers import fake_spark_submit

REFUSED = (
    f"min_age_seconds=60 is below lakeFS's grace period of {GRACE}s: objects uploaded but not yet linked could be "
    f"deleted. Use min_age_seconds >= {GRACE}, or set the Param unsafe_min_age_override=true (tests and emergencies "
    "only; it is written into the report). Nothing was deleted"
)


def _page_runs(dag_id: str) -> dict:
    """``GET /api/dags/<dag_id>/runs`` of the page's app, Airflow's auth stood in for, its real database session."""
    from airflow.api_fastapi.common.db.common import _get_session
    from fastapi.testclient import TestClient

    from lakefs_gc_airflow.gc_page import app as module

    for route in module.app.routes:
        for dep in getattr(route, "dependant", SimpleNamespace(dependencies=[])).dependencies:
            if dep.call is not _get_session:
                module.app.dependency_overrides[dep.call] = lambda: None
    try:
        got = TestClient(module.app).get(f"/api/dags/{dag_id}/runs")
    finally:
        module.app.dependency_overrides.clear()
    assert got.status_code == 200, got.text
    return got.json()


def _reason_xcoms(dag_id: str, run_id: str) -> list[tuple[str, str]]:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as s:
        return sorted(
            (task_id, key)
            for task_id, key in s.execute(
                select(XComModel.task_id, XComModel.key).where(
                    XComModel.dag_id == dag_id, XComModel.run_id == run_id, XComModel.key.in_(("refusal", "error"))
                )
            )
        )


def _page_run(dag_id: str, run_id: str) -> dict:
    answer = _page_runs(dag_id)
    [run] = [r for r in answer["runs"] if r.get("airflow_run_id") == run_id]
    return run


def test_a_refused_run_s_reason_reaches_the_page_api(gc_dag):  # noqa: F811
    dag, ns_dir = gc_dag
    dr = dag.test(run_conf={"min_age_seconds": 60})
    assert dr.state == "failed"
    assert _reason_xcoms(dag.dag_id, dr.run_id) == [("prepare_run", "refusal")]  # pushed, then the task failed: kept
    answer = _page_runs(dag.dag_id)
    [run] = [r for r in answer["runs"] if r.get("airflow_run_id") == dr.run_id]
    assert run["report"] is None
    assert run["dag_run"]["failed_tasks"] == ["prepare_run"]
    assert run["dag_run"]["reason"] == {"task_id": "prepare_run", "refused": True, "reason": REFUSED}
    assert (answer["grace_period_seconds"], answer["grace_period_source"]) == (
        GRACE,
        "lakeFS",
    )  # the form warns below it
    assert not list(ns_dir.glob("_lakefs/**/summary.json"))


def test_a_refusal_in_a_spark_step_is_its_task_s_reason(gc_dag, tmp_path):  # noqa: F811
    dag, _ = gc_dag
    message = "the blast-radius guard refuses 10 of 10 objects (100%); change the Param max_delete_share"
    fake_spark_submit(tmp_path, failures={"delete": {"kind": "refused", "type": "SweepRefused", "message": message}})
    dr = dag.test()
    assert dr.state == "failed"
    assert _page_run(dag.dag_id, dr.run_id)["dag_run"]["reason"] == {
        "task_id": "delete",
        "refused": True,
        "reason": f"delete refused: {message}",
    }


def test_a_failure_retried_to_the_end_is_an_error_with_its_first_line(gc_dag, tmp_path):  # noqa: F811
    dag, _ = gc_dag
    fake_spark_submit(
        tmp_path,
        failures={"list_slices": {"kind": "failed", "type": "StorageError", "message": "s3://b/r/data/: 503 SlowDown"}},
    )
    dr = dag.test()
    ti = {ti.task_id: ti for ti in dr.get_task_instances()}["list_slices"]
    assert (dr.state, ti.state, ti.try_number) == ("failed", "failed", 2)
    assert _reason_xcoms(dag.dag_id, dr.run_id) == [("list_slices", "error")]  # the second try's: the first cleared
    assert _page_run(dag.dag_id, dr.run_id)["dag_run"]["reason"] == {
        "task_id": "list_slices",
        "refused": False,
        "reason": "list_slices failed: StorageError: s3://b/r/data/: 503 SlowDown",
    }


def test_a_run_that_succeeds_has_no_reason(gc_dag):  # noqa: F811
    dag, _ = gc_dag
    dr = dag.test()
    assert dr.state == "success"
    assert _reason_xcoms(dag.dag_id, dr.run_id) == []
    assert _page_run(dag.dag_id, dr.run_id)["dag_run"]["reason"] is None


# what a failing task pushes, without Airflow running: which key, which line, and never a new failure


class _TI:
    def __init__(self, fails: bool = False):
        self.pushed: list[tuple[str, object]] = []
        self.fails = fails

    def xcom_push(self, key: str, value: object) -> None:
        if self.fails:
            raise ConnectionError("the execution API is gone")
        self.pushed.append((key, value))


def _raised(make):
    try:
        make()
    except Exception as e:
        return e
    raise AssertionError("nothing raised")


def test_a_refusal_an_error_and_a_failure_without_retry_are_told_apart():
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    from lakefs_gc.errors import LakeFSGCError, SettingsError, Unreachable
    from lakefs_gc_airflow.task_io import is_refusal

    def fail_from(exc: Exception, suppress: bool):
        try:
            raise exc
        except Exception as e:
            if suppress:
                raise AirflowFailException(str(e)) from None  # as operators._fail raises an Unreachable
            raise AirflowFailException(str(e)) from e

    assert is_refusal(_raised(lambda: fail_from(SettingsError("min_age_seconds too low"), suppress=False)))
    assert not is_refusal(_raised(lambda: fail_from(Unreachable("lakeFS did not answer"), suppress=True)))
    assert not is_refusal(_raised(lambda: fail_from(LakeFSGCError("no lakeFS marker"), suppress=False)))
    assert is_refusal(AirflowFailException("storage connection 'aws_default' is not defined"))  # no retry can help
    assert not is_refusal(AirflowException("list_slices failed: StorageError: 503"))
    assert not is_refusal(KeyError("x"))


def test_the_reason_is_one_masked_line_and_a_push_that_fails_does_not_hide_the_error():
    from airflow.sdk.exceptions import AirflowException, AirflowFailException
    from airflow.sdk.log import mask_secret

    from lakefs_gc_airflow.operators import PrepareRunOperator
    from lakefs_gc_airflow.task_io import REASON_MAX, record_failure, records_failure

    ti = _TI()
    record_failure({"ti": ti}, AirflowFailException("refused:\n  min_age_seconds=60 is below\tthe grace period"))
    record_failure({"ti": ti}, KeyError("mark_id"))
    mask_secret("s3cr3t-value-for-the-page")
    record_failure({"ti": ti}, AirflowException("lakeFS said: bad key s3cr3t-value-for-the-page"))
    record_failure({"ti": ti}, AirflowException("x" * 5000))
    assert ti.pushed[:3] == [
        ("refusal", "refused: min_age_seconds=60 is below the grace period"),
        ("error", "KeyError: 'mark_id'"),
        ("error", "lakeFS said: bad key ***"),
    ]
    assert len(ti.pushed[3][1]) == REASON_MAX

    class Refusing(PrepareRunOperator):
        @records_failure
        def execute(self, context):
            raise AirflowFailException("the original error")

    broken = _TI(fails=True)
    op = Refusing(task_id="prepare_run", repository="r")
    err = _raised(lambda: op.execute({"ti": broken}))
    assert (type(err), str(err)) == (AirflowFailException, "the original error")
