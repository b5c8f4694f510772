"""A writer's lost races against lakeFS 1.84 are not faults: a revert racing a merge into ``main``."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import lakefs_sdk
import pytest

from lakefs_sandbox.chaos.writers import Writer


def _writer(revert_error: Exception) -> Writer:
    def revert_branch(*args, **kwargs):
        raise revert_error

    client = SimpleNamespace(
        branches_api=SimpleNamespace(
            get_branch=lambda *a, **k: SimpleNamespace(commit_id="c2"), revert_branch=revert_branch
        ),
        commits_api=SimpleNamespace(get_commit=lambda *a, **k: SimpleNamespace(parents=["c1"])),
    )
    return Writer("w", client, "repo", None, "bucket", seed=1, stop=threading.Event(), pace=0)


def _api_error(status: int, message: str) -> lakefs_sdk.exceptions.ApiException:
    # what lakeFS answers when the revert's branch update loses to a concurrent merge (it does not retry it)
    e = lakefs_sdk.exceptions.ApiException(status=status, reason="x")
    e.body = f'{{"message":"{message}"}}\n'.encode()  # the SDK keeps the response's bytes
    return e


def test_a_revert_that_loses_the_race_to_a_merge_is_not_a_fault():
    assert _writer(_api_error(500, "update branch: predicate failed")).op_revert() is False
    assert _writer(_api_error(409, "conflict found")).op_revert() is False


def test_any_other_server_error_on_a_revert_is_a_fault():
    with pytest.raises(lakefs_sdk.exceptions.ApiException):
        _writer(_api_error(500, "connection refused")).op_revert()
