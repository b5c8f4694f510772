"""The doctor's checks at the start of a run (``lakefs_gc.doctor.preflight``): a right only ``lakefs-gc restore``
needs (the undo of a sweep on a versioned bucket) is warned of, never a refusal of the run; any other
failed check refuses it, naming every failed line."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

import lakefs_gc.doctor.lakefs_checks as lakefs_checks
import lakefs_gc.doctor.runtime_checks as runtime_checks
import lakefs_gc.doctor.storage_checks as storage_checks
from lakefs_gc.doctor.policy import S3_ACTIONS, UNDO_ONLY
from lakefs_gc.doctor.preflight import PreflightFailed, preflight


class _Store:
    uri = "s3://bucket/repo"


def _checks(monkeypatch, *failing: str) -> None:
    monkeypatch.setattr(lakefs_checks, "check_reads", lambda report, *a: report.ok("fs:ListBranches", "allowed"))

    def storage(report, *a):
        for action in S3_ACTIONS:
            if action.name in failing:
                report.fail(action.name, f"{action.call} refused (AccessDenied)", f"allow {action.name}")
            else:
                report.ok(action.name, action.call)

    monkeypatch.setattr(storage_checks, "check_storage", storage)
    monkeypatch.setattr(runtime_checks, "check_pyspark", lambda report: report.ok("pyspark", "4.2.0"))


def test_the_undo_only_rights_are_the_restore_s(monkeypatch):
    assert {"s3:ListBucketVersions", "s3:DeleteObjectVersion"} == UNDO_ONLY


def test_a_missing_undo_right_is_warned_of_and_the_run_goes_on(monkeypatch, caplog):
    _checks(monkeypatch, "s3:ListBucketVersions", "s3:DeleteObjectVersion")
    with caplog.at_level(logging.WARNING, logger="lakefs_gc.doctor.preflight"):
        lines = preflight(None, "repo", "main", _Store(), datetime.now(UTC), 0)  # type: ignore[arg-type]
    assert [line.what for line in lines if line.status == "FAIL"] == ["s3:ListBucketVersions", "s3:DeleteObjectVersion"]
    warned = [r.getMessage() for r in caplog.records]
    assert any(
        "lakefs-gc restore cannot undo this run's sweep" in w and "s3:ListBucketVersions" in w for w in warned
    ), warned


def test_a_missing_run_right_refuses_the_run_with_every_failed_line(monkeypatch):
    _checks(monkeypatch, "s3:DeleteObject", "s3:DeleteObjectVersion")
    with pytest.raises(PreflightFailed, match=r"1 check of lakefs-gc doctor failed .*FAIL  s3:DeleteObject: ") as err:
        preflight(None, "repo", "main", _Store(), datetime.now(UTC), 0)  # type: ignore[arg-type]
    assert "s3:DeleteObjectVersion" not in str(err.value)
