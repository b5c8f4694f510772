"""The lakeFS connection type as Airflow 3 shows it (provider metadata: labels, help texts, extra
fields) and the hook's ``test_connection`` (the form's Test button) against the lakeFS emulator.

The form in a real browser: ``test_forms.py``; the provider installed from its wheel:
``test_wheel.py``.
"""

from __future__ import annotations

import warnings

import pytest

from lakefs_sandbox.emulator.launcher import free_port
from tests.airflow.conftest import conn_env

LABELS = {"host": "lakeFS endpoint", "login": "Access key ID", "password": "Secret access key"}
EXTRA_LABELS = {
    "local_blockstore_root": "Local blockstore root",
    "max_retries": "Max retries",
    "backoff_base": "Backoff base (seconds)",
    "backoff_max": "Backoff max (seconds)",
    "connect_timeout": "Connect timeout (seconds)",
}


def test_the_connection_form_is_provider_metadata_not_deprecated_hook_methods():
    from airflow.api_fastapi.core_api.services.ui.connections import HookMetaService
    from airflow.providers_manager import ProvidersManager

    from lakefs_gc_airflow.hooks import LakeFSHook

    pm = ProvidersManager()
    assert "lakefs-gc" in pm.providers
    with warnings.catch_warnings(record=True) as caught:  # the UI side still reads ProvidersManager.hooks
        warnings.simplefilter("always")
        info = pm.hooks["lakefs_gc"]
    assert info.hook_class_name == "lakefs_gc_airflow.hooks.LakeFSHook"
    assert info.connection_id_attribute_name == "lakefs_conn_id"
    assert not [w for w in caught if "LakeFSHook" in str(w.message)], [str(w.message) for w in caught]
    assert "get_ui_field_behaviour" not in LakeFSHook.__dict__

    # what the api-server hands the UI's connection form (GET /ui/connections/hook_meta)
    meta = {m.connection_type: m for m in HookMetaService.hook_meta_data()}["lakefs_gc"]
    assert meta.hook_name == "lakeFS (garbage collection)"
    std = meta.standard_fields
    assert {k: getattr(std, k).title for k in LABELS} == LABELS
    assert std.url_schema.hidden
    assert not std.host.hidden
    assert not std.port.hidden  # Port: see get_provider_info
    assert "/api/v1 is appended" in std.host.placeholder
    extra = meta.extra_fields
    assert {k: v["schema"]["title"] for k, v in extra.items()} == EXTRA_LABELS
    assert all(v["description"] for v in extra.values())
    assert "local://" in extra["local_blockstore_root"]["description"]
    assert "Empty: 5" in extra["max_retries"]["description"]
    assert all(v["value"] is None for v in extra.values()), "a blank form must leave the extras unset"


def test_blank_extra_fields_mean_the_defaults(monkeypatch):
    """The form saves a field left blank as "" or null: the client's defaults apply."""
    from lakefs_gc_airflow.hooks import LakeFSHook

    monkeypatch.setenv(
        *conn_env(
            "lakefs_blank",
            conn_type="lakefs_gc",
            host="http://127.0.0.1:8000",
            login="a",
            password="b",
            extra={"max_retries": "", "backoff_base": None, "backoff_max": "3", "local_blockstore_root": ""},
        )
    )
    hook = LakeFSHook(lakefs_conn_id="lakefs_blank")
    assert hook.retries() == {"backoff_max": 3.0}
    assert hook.local_blockstore_root() is None


@pytest.fixture
def lakefs_conns(lakefs_emulator, monkeypatch):
    emu = lakefs_emulator
    conns = {
        "lakefs_ok": dict(host=emu.url, login=emu.access_key, password=emu.secret_key),
        "lakefs_ok_root": dict(
            host=emu.url + "/api/v1",
            login=emu.access_key,
            password=emu.secret_key,
            extra={"local_blockstore_root": str(emu.root)},
        ),
        "lakefs_badkey": dict(host=emu.url, login=emu.access_key, password="not-the-secret"),
        "lakefs_down": dict(host=f"http://127.0.0.1:{free_port()}", login="a", password="b"),
        "lakefs_notlakefs": dict(host=emu.url + "/somewhere-else", login=emu.access_key, password=emu.secret_key),
        "lakefs_nokeys": dict(host=emu.url),
    }
    for conn_id, fields in conns.items():
        monkeypatch.setenv(*conn_env(conn_id, conn_type="lakefs_gc", **fields))
    return emu


@pytest.mark.parametrize(
    ("conn_id", "ok", "message"),
    [
        (
            "lakefs_ok",
            True,
            r"lakeFS \S+ at http://127\.0\.0\.1:\d+/api/v1 accepted the keys \(blockstore: local\); "
            r"set Local blockstore root to collect its local:// repositories",
        ),
        ("lakefs_ok_root", True, r"accepted the keys \(blockstore: local\)$"),
        ("lakefs_badkey", False, r"refused the keys \(HTTP 401\): check Access key ID and Secret access key"),
        (
            "lakefs_down",
            False,
            r"cannot reach lakeFS at http://127\.0\.0\.1:\d+/api/v1: NewConnectionError: "
            r"Failed to establish a new connection: \[Errno 111\] Connection refused\. Check the lakeFS endpoint",
        ),
        (
            "lakefs_notlakefs",
            False,
            r"/somewhere-else/api/v1/config answered HTTP (404|501) .*: no lakeFS API at this "
            r"address\? Give the lakeFS server's URL",
        ),
        ("lakefs_nokeys", False, r"'lakefs_nokeys' needs login \(access key id\) and password"),
    ],
)
def test_the_test_button_calls_lakefs_and_says_what_failed(lakefs_conns, conn_id, ok, message):
    import re
    import time

    from lakefs_gc_airflow.hooks import LakeFSHook

    t0 = time.monotonic()
    result = LakeFSHook(lakefs_conn_id=conn_id).test_connection()
    assert time.monotonic() - t0 < 10, "the Test button must answer at once: no retries"
    assert result[0] is ok, result
    assert re.search(message, result[1]), result
    assert "Traceback" not in result[1]
    assert "\n" not in result[1]
    assert "not-the-secret" not in result[1]


# ---------------------------------------------------------------------------------------------
# The storage connection, resolved by the official providers' hooks (storage_options)


@pytest.fixture
def masked(monkeypatch):
    import lakefs_gc_airflow.hooks as hooks

    seen: list[str] = []
    real = hooks.mask_secret
    monkeypatch.setattr(hooks, "mask_secret", lambda secret, *a, **kw: (seen.append(secret), real(secret, *a, **kw)))
    return seen


def test_a_wasb_connection_string_reaches_azurite_through_wasbhook(azurite, monkeypatch, masked):
    from lakefs_gc.storage import open_storage
    from lakefs_gc_airflow.hooks import storage_options
    from lakefs_sandbox.cloud_servers import AZURITE_KEY

    monkeypatch.setenv(
        *conn_env("azure_storage", conn_type="wasb", extra={"connection_string": azurite.connection_string})
    )
    options = storage_options("azure_storage")
    assert (options.account_url, options.account_name, options.account_key) == (
        azurite.account_url,
        "devstoreaccount1",
        AZURITE_KEY,
    )
    assert masked == [AZURITE_KEY]
    assert AZURITE_KEY not in repr(options)
    st = open_storage(azurite.namespace(azurite.create("hookcheck"), "repo"), options)
    st.put("_lakefs/dummy", b"")
    assert [o.key for o in st.list()] == ["_lakefs/dummy"]


@pytest.mark.parametrize(
    ("extra", "expect"),
    [
        ({"shared_access_key": "a2V5a2V5"}, ("account_key", "a2V5a2V5")),
        ({"sas_token": "sv=2024-11-04&ss=b&sig=c2lnbmF0dXJl"}, ("sas_token", "sv=2024-11-04&ss=b&sig=c2lnbmF0dXJl")),
    ],
)
def test_wasb_keys_and_sas_tokens_are_taken_as_wasbhook_builds_them(monkeypatch, masked, extra, expect):
    """WasbHook's own rules: a dot-less host is the account (``<login>.blob.core.windows.net``)."""
    from lakefs_gc_airflow.hooks import storage_options

    monkeypatch.setenv(*conn_env("azure_storage", conn_type="wasb", login="myaccount", extra=extra))
    options = storage_options("azure_storage")
    assert options.account_url == "https://myaccount.blob.core.windows.net"
    assert options.account_name == "myaccount"
    assert getattr(options, expect[0]) == expect[1]
    assert masked == [expect[1]]
    assert expect[1] not in repr(options)


def test_an_anonymous_gcp_connection_uses_the_emulator_host_as_the_google_provider_does(fake_gcs, monkeypatch, masked):
    from lakefs_gc_airflow.hooks import storage_options

    monkeypatch.setenv("STORAGE_EMULATOR_HOST", fake_gcs.endpoint_url)
    monkeypatch.setenv(
        *conn_env("gcs_storage", conn_type="google_cloud_platform", extra={"is_anonymous": True, "project": "test"})
    )
    options = storage_options("gcs_storage")
    assert (options.endpoint_url, options.project, options.anonymous, options.access_token) == (
        fake_gcs.endpoint_url,
        "test",
        True,
        None,
    )
    assert masked == []


def test_a_gcp_key_json_becomes_a_masked_access_token(monkeypatch, masked):
    """A service-account key JSON resolved by GCSHook, its token fetched from the key's token_uri
    (a token endpoint on 127.0.0.1 here, as Google's would answer)."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from lakefs_gc_airflow.hooks import storage_options

    class Token(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.dumps(
                {"access_token": "ya29.from-the-token-endpoint", "expires_in": 3600, "token_type": "Bearer"}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    server = HTTPServer(("127.0.0.1", 0), Token)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        pem = (
            rsa.generate_private_key(public_exponent=65537, key_size=2048)
            .private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
            .decode()
        )
        key = {
            "type": "service_account",
            "project_id": "proj",
            "private_key_id": "k1",
            "private_key": pem,
            "client_email": "gc@proj.iam.gserviceaccount.com",
            "client_id": "1",
            "token_uri": f"http://127.0.0.1:{server.server_address[1]}/token",
        }
        monkeypatch.setenv(
            *conn_env(
                "gcs_storage",
                conn_type="google_cloud_platform",
                extra={"keyfile_dict": json.dumps(key), "project": "proj"},
            )
        )
        options = storage_options("gcs_storage")
    finally:
        server.shutdown()
        server.server_close()
    assert (options.access_token, options.project, options.anonymous) == ("ya29.from-the-token-endpoint", "proj", False)
    assert masked == ["ya29.from-the-token-endpoint"]
    assert "ya29" not in repr(options)
