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
EXTRA_LABELS = {"local_blockstore_root": "Local blockstore root", "max_retries": "Max retries",
                "backoff_base": "Backoff base (seconds)", "backoff_max": "Backoff max (seconds)",
                "connect_timeout": "Connect timeout (seconds)"}


def test_the_connection_form_is_provider_metadata_not_deprecated_hook_methods():
    from airflow.api_fastapi.core_api.services.ui.connections import HookMetaService
    from airflow.providers_manager import ProvidersManager

    from lakefs_gc_airflow.hooks import LakeFSHook

    pm = ProvidersManager()
    assert "lakefs-gc" in pm.providers
    with warnings.catch_warnings(record=True) as caught:  # the UI side still reads ProvidersManager.hooks
        warnings.simplefilter("always")
        info = pm.hooks["lakefs"]
    assert info.hook_class_name == "lakefs_gc_airflow.hooks.LakeFSHook"
    assert info.connection_id_attribute_name == "lakefs_conn_id"
    assert not [w for w in caught if "LakeFSHook" in str(w.message)], [str(w.message) for w in caught]
    assert "get_ui_field_behaviour" not in LakeFSHook.__dict__

    # what the api-server hands the UI's connection form (GET /ui/connections/hook_meta)
    meta = {m.connection_type: m for m in HookMetaService.hook_meta_data()}["lakefs"]
    assert meta.hook_name == "lakeFS"
    std = meta.standard_fields
    assert {k: getattr(std, k).title for k in LABELS} == LABELS
    assert std.url_schema.hidden and not std.host.hidden and not std.port.hidden  # Port: see get_provider_info
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

    monkeypatch.setenv(*conn_env("lakefs_blank", conn_type="lakefs", host="http://127.0.0.1:8000", login="a",
                                 password="b", extra={"max_retries": "", "backoff_base": None, "backoff_max": "3",
                                                      "local_blockstore_root": ""}))
    hook = LakeFSHook(lakefs_conn_id="lakefs_blank")
    assert hook.retries() == {"backoff_max": 3.0}
    assert hook.local_blockstore_root() is None


@pytest.fixture
def lakefs_conns(lakefs_emulator, monkeypatch):
    emu = lakefs_emulator
    conns = {
        "lakefs_ok": dict(host=emu.url, login=emu.access_key, password=emu.secret_key),
        "lakefs_ok_root": dict(host=emu.url + "/api/v1", login=emu.access_key, password=emu.secret_key,
                               extra={"local_blockstore_root": str(emu.root)}),
        "lakefs_badkey": dict(host=emu.url, login=emu.access_key, password="not-the-secret"),
        "lakefs_down": dict(host=f"http://127.0.0.1:{free_port()}", login="a", password="b"),
        "lakefs_notlakefs": dict(host=emu.url + "/somewhere-else", login=emu.access_key, password=emu.secret_key),
        "lakefs_nokeys": dict(host=emu.url),
    }
    for conn_id, fields in conns.items():
        monkeypatch.setenv(*conn_env(conn_id, conn_type="lakefs", **fields))
    return emu


@pytest.mark.parametrize("conn_id, ok, message", [
    ("lakefs_ok", True, r"lakeFS \S+ at http://127\.0\.0\.1:\d+/api/v1 accepted the keys \(blockstore: local\); "
                        r"set Local blockstore root to collect its local:// repositories"),
    ("lakefs_ok_root", True, r"accepted the keys \(blockstore: local\)$"),
    ("lakefs_badkey", False, r"refused the keys \(HTTP 401\): check Access key ID and Secret access key"),
    ("lakefs_down", False, r"cannot reach lakeFS at http://127\.0\.0\.1:\d+/api/v1: NewConnectionError: "
                           r"Failed to establish a new connection: \[Errno 111\] Connection refused\. Check the lakeFS endpoint"),
    ("lakefs_notlakefs", False, r"/somewhere-else/api/v1/config answered HTTP (404|501) .*: no lakeFS API at this "
                                r"address\? Give the lakeFS server's URL"),
    ("lakefs_nokeys", False, r"'lakefs_nokeys' needs login \(access key id\) and password"),
])
def test_the_test_button_calls_lakefs_and_says_what_failed(lakefs_conns, conn_id, ok, message):
    import re
    import time

    from lakefs_gc_airflow.hooks import LakeFSHook

    t0 = time.monotonic()
    result = LakeFSHook(lakefs_conn_id=conn_id).test_connection()
    assert time.monotonic() - t0 < 10, "the Test button must answer at once: no retries"
    assert result[0] is ok and re.search(message, result[1]), result
    assert "Traceback" not in result[1] and "\n" not in result[1]
    assert "not-the-secret" not in result[1]
