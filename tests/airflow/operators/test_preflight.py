"""The DAG's prepare_run task runs ``lakefs-gc doctor``'s checks first (issue 54): a failed check fails the task
at once, without retry, with every failed line and that nothing was marked or deleted. The checks
themselves, against lakeFS itself and an IAM-enforcing S3: ``tests/real_lakefs/test_doctor.py``."""

from __future__ import annotations

import pytest

import lakefs_gc.doctor.preflight as doctor
from tests.airflow.helpers import context, dag_module, repo_config


def test_a_failed_check_fails_prepare_run_without_retry(fake_client, monkeypatch):
    from airflow.sdk.exceptions import AirflowFailException

    asked = []

    def failing(client, repository, branch, storage, now, quarantine_days):
        asked.append((repository, branch, storage.uri))
        raise doctor.PreflightFailed(
            f"repository {repository!r}: 1 check of lakefs-gc doctor failed at the start of the run, so nothing was "
            f"marked or deleted: FAIL  s3:DeleteObject: DeleteObjects refused (AccessDenied)"
        )

    monkeypatch.setattr(doctor, "preflight", failing)
    op = dag_module().build_gc_dag(repo_config()).get_task("prepare_run")
    with pytest.raises(AirflowFailException, match=r"nothing was marked or deleted: FAIL  s3:DeleteObject"):
        op.execute(context({}, params={"flow": "clean"}))
    assert asked == [("sample-repo", "main", "s3://bucket/sample-repo")]
