"""lakefs_gc.storage.s3: an S3 endpoint that cannot be reached."""

from __future__ import annotations

import socket

import pytest

from lakefs_gc.errors import Unreachable
from lakefs_gc.storage import S3Storage
from lakefs_gc.storage.base import StorageUnreachable
from lakefs_gc.storage.s3 import make_s3_client
from lakefs_gc.storage.settings import S3Options


@pytest.fixture
def unreachable_storage():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    options = S3Options(endpoint_url=f"http://127.0.0.1:{port}", access_key_id="AKIA", secret_access_key="s")
    return S3Storage("bucket", "repos/r", options, client=make_s3_client(options, max_attempts=2)), port


@pytest.mark.parametrize("call", ["list", "get", "exists", "put"])
def test_an_unreachable_s3_endpoint_fails_with_one_line_naming_it(unreachable_storage, call):
    storage, port = unreachable_storage
    run = {"list": lambda: list(storage.list("data/")), "get": lambda: storage.get("_lakefs/dummy"),
           "exists": lambda: storage.exists("_lakefs/dummy"), "put": lambda: storage.put("x", b"x")}[call]
    with pytest.raises(StorageUnreachable) as err:
        run()
    message = str(err.value)
    assert message.startswith(f"S3 endpoint http://127.0.0.1:{port} is unreachable (connection")
    assert f"({call} s3://bucket/repos/r" in message and "endpoint_url and region_name" in message
    assert "\n" not in message and isinstance(err.value, Unreachable)
    assert err.value.__cause__ is None and err.value.__suppress_context__
