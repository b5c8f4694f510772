"""lakefs_gc.lakefs.client: the retry budget, and a lakeFS that cannot be reached."""

from __future__ import annotations

import logging
import socket

import pytest

from lakefs_gc.errors import LakeFSGCError
from lakefs_gc.lakefs.client import LakeFSClient, LakeFSUnreachable


def closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_lakefs_fails_after_the_budget_with_one_line_naming_what_to_check(caplog):
    port, slept = closed_port(), []
    client = LakeFSClient(
        f"http://127.0.0.1:{port}",
        "AKIA",
        "secret",
        max_retries=2,
        backoff_base=0.01,
        connection="lakeFS connection 'lakefs_prod'",
        sleep=slept.append,
    )
    with caplog.at_level(logging.DEBUG, logger="lakefs_gc.lakefs.client"):
        with pytest.raises(LakeFSUnreachable) as err:
            client.get_repository("repo")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(
        f"lakeFS at http://127.0.0.1:{port}/api/v1 is unreachable (connection refused) after 3 attempt(s)"
    )
    assert "(getRepository)" in message
    assert "lakeFS connection 'lakefs_prod'" in message
    assert "max_retries, backoff_base, backoff_max, connect_timeout (now 2, 0.01s, 20.0s, 10.0s)" in message
    assert isinstance(err.value, LakeFSGCError)
    assert err.value.__cause__ is None
    assert err.value.__suppress_context__
    assert len(slept) == 2  # the budget: two retries, then the one line
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # the one line says it all
    retries = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG and "retry" in r.getMessage()]
    assert len(retries) == 2
    assert all("failed (connection refused); retry" in m for m in retries)  # short, at DEBUG
    # the traceback of the last attempt is kept, at DEBUG only
    debug = [r for r in caplog.records if r.levelno == logging.DEBUG and r.exc_info]
    assert len(debug) == 1
    assert "getRepository" in debug[0].getMessage()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_an_unknown_host_is_named_as_such():
    client = LakeFSClient("http://lakefs.invalid:8000", "AKIA", "secret", max_retries=0, sleep=lambda s: None)
    with pytest.raises(LakeFSUnreachable, match=r"lakefs.invalid:8000/api/v1 is unreachable \(unknown host\)"):
        client.get_repository("repo")


def test_a_call_that_succeeds_after_retries_says_so_once(lakefs_emulator, caplog):
    emu = lakefs_emulator
    emu.set_faults({"method": "GET", "path": r"/api/v1/config$", "times": 2, "status": 503})
    try:
        with caplog.at_level(logging.DEBUG, logger="lakefs_gc.lakefs.client"):
            with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key, max_retries=3, backoff_base=0.01) as client:
                client.blockstore_type()
    finally:
        emu.set_faults()
    info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert len(info) == 1, info
    assert "succeeded after 2 retries (last error: " in info[0], info
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_answers_are_not_unreachable(lakefs_emulator):
    """An HTTP answer, even a 5xx after the budget, is lakeFS's answer: it propagates as it is."""
    from lakefs_sdk.exceptions import ApiException

    emu = lakefs_emulator
    emu.set_faults({"method": "GET", "path": r"/api/v1/config$", "times": -1, "status": 503})
    try:
        with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key, max_retries=1, backoff_base=0.01) as client:
            with pytest.raises(ApiException) as err:
                client.blockstore_type()
    finally:
        emu.set_faults()
    assert err.value.status == 503
    assert not isinstance(err.value, LakeFSUnreachable)
