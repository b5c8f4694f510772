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
    run = {
        "list": lambda: list(storage.list("data/")),
        "get": lambda: storage.get("_lakefs/dummy"),
        "exists": lambda: storage.exists("_lakefs/dummy"),
        "put": lambda: storage.put("x", b"x"),
    }[call]
    with pytest.raises(StorageUnreachable) as err:
        run()
    message = str(err.value)
    assert message.startswith(f"S3 endpoint http://127.0.0.1:{port} is unreachable (connection")
    assert f"({call} s3://bucket/repos/r" in message
    assert "endpoint_url and region_name" in message
    assert "\n" not in message
    assert isinstance(err.value, Unreachable)
    assert err.value.__cause__ is None
    assert err.value.__suppress_context__


def test_clients_with_keys_share_one_session_per_process_and_the_default_chain_gets_its_own():
    from lakefs_gc.storage import s3

    keyed = S3Options(endpoint_url="http://127.0.0.1:1", access_key_id="AKIAONE", secret_access_key="one")
    other = S3Options(endpoint_url="http://127.0.0.1:2", access_key_id="AKIATWO", secret_access_key="two")
    a, b = make_s3_client(keyed), make_s3_client(other, max_attempts=1)
    assert a is not b
    assert s3._shared_session is not None
    # each client keeps its own endpoint, keys and retries
    assert (a.meta.endpoint_url, b.meta.endpoint_url) == ("http://127.0.0.1:1", "http://127.0.0.1:2")
    assert a._request_signer._credentials.access_key == "AKIAONE"
    assert b._request_signer._credentials.access_key == "AKIATWO"
    assert b.meta.config.retries["total_max_attempts"] == 1
    shared = s3._shared_session
    make_s3_client(S3Options(endpoint_url="http://127.0.0.1:3", access_key_id="AKIATHREE", secret_access_key="x"))
    assert s3._shared_session is shared
