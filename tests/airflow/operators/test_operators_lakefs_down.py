"""lakeFS not answering: prepare_run (the run's first call) fails at once; mark_uncommitted, after it, is retried."""

from __future__ import annotations

import socket

import pytest

from tests.airflow.conftest import LAKEFS_ACCESS, LAKEFS_SECRET, conn_env
from tests.airflow.helpers import context, dag_module, repo_config
from tests.airflow.operators.support import base_ctx, wire


@pytest.fixture
def lakefs_down(monkeypatch, connections) -> str:
    """The lakeFS connection points at a port nothing listens on; returns its API endpoint."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv(
        *conn_env(
            "lakefs_default",
            conn_type="lakefs_gc",
            host=f"http://127.0.0.1:{port}",
            login=LAKEFS_ACCESS,
            password=LAKEFS_SECRET,
            extra={"max_retries": 1, "backoff_base": 0.01},
        )
    )
    return f"http://127.0.0.1:{port}/api/v1"


def _one_line_without_chain(err: BaseException) -> None:
    assert "lakeFS connection 'lakefs_default'" in str(err)
    assert "\n" not in str(err)
    assert err.__cause__ is None
    assert err.__suppress_context__


def test_prepare_run_against_an_unreachable_lakefs_fails_at_once_with_one_line(lakefs_down):
    """lakeFS down at the run's first call (a wrong connection likelier than a restart): after the
    connection's retry budget (its extras), one line naming the endpoint and the connection; no
    urllib3 chain attached, no Airflow retry."""
    from airflow.sdk.exceptions import AirflowFailException

    op = dag_module().build_gc_dag(repo_config()).get_task("prepare_run")
    with pytest.raises(AirflowFailException) as err:
        op.execute(context({}))
    assert str(err.value).startswith(f"lakeFS at {lakefs_down} is unreachable (connection refused) after 2 attempt(s)")
    _one_line_without_chain(err.value)


def test_mark_uncommitted_against_a_lakefs_gone_after_prepare_run_is_retried(lakefs_down, tmp_path):
    """lakeFS answered prepare_run, then stopped answering (a restart: the chaos bench's lakeFS
    killed in mark_uncommitted failed the run at once): the task fails with Airflow's retries, one
    line, and the GC page does not call it a refusal."""
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    from lakefs_gc_airflow.task_io import is_refusal

    op = dag_module().build_gc_dag(repo_config()).get_task("mark_uncommitted")
    with pytest.raises(AirflowException) as err:
        op.execute(context(wire(base_ctx(tmp_path))))
    assert not isinstance(err.value, AirflowFailException)
    assert str(err.value).startswith(
        f"mark_uncommitted failed: LakeFSUnreachable: lakeFS at {lakefs_down} is unreachable (connection refused)"
    )
    _one_line_without_chain(err.value)
    assert not is_refusal(err.value)


def test_mark_uncommitted_refused_fails_at_once(monkeypatch, tmp_path, connections):
    """A refusal in mark_uncommitted (the same inputs give the same answer) is not retried."""
    from airflow.sdk.exceptions import AirflowFailException

    from lakefs_gc.errors import SettingsError
    from lakefs_gc.steps import STEP_FUNCTIONS

    def refuse(*_a, **_kw):
        raise SettingsError("staged_check='odd' is not one of candidates, full: change the Param staged_check")

    monkeypatch.setitem(STEP_FUNCTIONS, "mark_uncommitted", refuse)
    op = dag_module().build_gc_dag(repo_config()).get_task("mark_uncommitted")
    with pytest.raises(AirflowFailException, match=r"change the Param staged_check. Nothing was deleted$"):
        op.execute(context(wire(base_ctx(tmp_path))))
