"""Isolated Airflow for the DAG/operator tests: a temporary AIRFLOW_HOME on SQLite.

Set at import time (before any test module imports airflow, which reads its config once).
Connections are given as AIRFLOW_CONN_* environment variables (JSON form) by the fixtures below.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_HOME = tempfile.mkdtemp(prefix="lakefs-gc-airflow-home-")
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)
os.environ.update(
    {
        "AIRFLOW_HOME": _HOME,
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{_HOME}/airflow.db",
    }
)

# Fake secrets: tests assert they never reach argv and always reach the env.
LAKEFS_ACCESS = "AKIAFAKELAKEFSACCESS"
LAKEFS_SECRET = "lakefs-secret-value-7f3a9c"
S3_ACCESS = "AKIAFAKES3ACCESSKEY"
S3_SECRET = "s3-secret-value-b81d22"


def conn_env(conn_id: str, **fields) -> tuple[str, str]:
    return f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(fields)


@pytest.fixture
def connections(monkeypatch):
    """lakefs_default, aws_default (S3-compatible endpoint) and spark_default (local[*])."""
    for key, value in (
        conn_env(
            "lakefs_default",
            conn_type="lakefs_gc",
            host="http://127.0.0.1:8000",
            login=LAKEFS_ACCESS,
            password=LAKEFS_SECRET,
        ),
        conn_env(
            "aws_default",
            conn_type="aws",
            login=S3_ACCESS,
            password=S3_SECRET,
            extra={"endpoint_url": "http://127.0.0.1:5000", "region_name": "us-east-1"},
        ),
        conn_env("spark_default", conn_type="spark", host="local[*]"),
    ):
        monkeypatch.setenv(key, value)


@pytest.fixture(scope="session")
def airflow_db():
    """A fresh Airflow metadata database (SQLite in the temporary AIRFLOW_HOME), once per session."""
    from airflow.utils import db

    db.resetdb()
