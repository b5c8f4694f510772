"""The stack's health check for the dag-processor and triggerer (``docker/job_alive.py``): its
connection string and its refusals. That it answers "alive" for a running component, and only
then, is what ``test_compose_stack`` waits on (every service healthy)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from lakefs_sandbox.compose_stack import ROOT

SCRIPT = ROOT / "docker" / "job_alive.py"


def _module():
    spec = importlib.util.spec_from_file_location("job_alive", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_sqlalchemy_url_becomes_libpq_uri():
    assert (
        _module().dsn("postgresql+psycopg2://airflow:pw@postgres/airflow") == "postgresql://airflow:pw@postgres/airflow"
    )


def test_a_database_that_is_not_postgres_is_refused_with_why():
    with pytest.raises(SystemExit, match="must be a PostgreSQL URL, got scheme 'sqlite'"):
        _module().dsn("sqlite:////tmp/airflow.db")


def test_an_unknown_job_type_prints_usage():
    p = subprocess.run(
        [sys.executable, str(SCRIPT), "WorkerJob"], capture_output=True, text=True, timeout=60, check=False
    )
    assert p.returncode == 2
    assert "usage: job_alive.py {DagProcessorJob|TriggererJob|SchedulerJob}" in p.stderr
