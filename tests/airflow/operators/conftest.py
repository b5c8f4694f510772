"""The operators' tests' fixtures: lakeFS's client stood in for where a test is about the task around it."""

from __future__ import annotations

import pytest

from tests.airflow.operators.support import StoodInClient


@pytest.fixture
def fake_client(monkeypatch, connections):
    import lakefs_gc.doctor.preflight as doctor
    import lakefs_gc.lakefs.client as api

    monkeypatch.setattr(api, "LakeFSClient", StoodInClient)
    # the stand-in makes none of the reads of lakefs-gc doctor's checks, nor is its store there: those
    # checks run against lakeFS itself (tests/real_lakefs/test_doctor.py)
    monkeypatch.setattr(doctor, "preflight", lambda *args, **kwargs: [])
