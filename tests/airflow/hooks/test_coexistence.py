"""Our provider beside Treeverse's ``airflow-provider-lakefs`` (0.48), both installed in this venv
(requirements.txt), as many lakeFS users have them.

- Each registers its own connection type (theirs ``lakefs``, ours ``lakefs_gc``): no "already
  registered" warning, and ``lakefs`` maps to their hook, ``lakefs_gc`` to ours.
- One connection serves both: their ``LakeFSHook`` writes to lakeFS (the emulator) through a
  ``lakefs`` connection, and our GC's hook reads the same connection and sees what they wrote; the
  same with their other shape, an ``http`` connection with the keys as extras.
- A DAG run of ours through a ``lakefs`` connection: ``tests/airflow/e2e/test_backfill.py`` and
  ``test_e2e_histories.py`` give theirs; the connection form with both installed:
  ``test_forms.py``.

Their operators and sensors do not import on Airflow 3 (``airflow.utils.decorators.apply_defaults``
is gone), with or without our provider: only their hook is exercised here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid

import pytest

from tests.airflow.conftest import conn_env

pytestmark = [pytest.mark.e2e]


def test_both_providers_register_their_own_connection_type_without_a_clash(tmp_path):
    """In a fresh process, as the api-server starts: every provider's metadata read, the hooks mapped."""
    probe = textwrap.dedent("""
        import json, warnings
        warnings.simplefilter("ignore")
        from airflow.providers_manager import ProvidersManager
        pm = ProvidersManager()
        hooks = pm.hooks
        print(json.dumps({"providers": sorted(p for p in pm.providers if "lakefs" in p),
                          "lakefs": hooks["lakefs"].hook_class_name,
                          "lakefs_gc": hooks["lakefs_gc"].hook_class_name,
                          "lakefs_gc_name": hooks["lakefs_gc"].hook_name}))
    """)
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    said = out.stdout + out.stderr
    assert "already registered" not in said, said[-3000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found == {
        "providers": ["airflow-provider-lakefs", "lakefs-gc"],
        "lakefs": "lakefs_provider.hooks.lakefs_hook.LakeFSHook",
        "lakefs_gc": "lakefs_gc_airflow.hooks.LakeFSHook",
        "lakefs_gc_name": "lakeFS (garbage collection)",
    }, found


@pytest.fixture
def repo(lakefs_emulator):
    import lakefs_sdk

    emu = lakefs_emulator
    name = f"both-{uuid.uuid4().hex[:8]}"
    emu.client().repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=name, storage_namespace=f"local://{name}", default_branch="main")
    )
    return name


@pytest.mark.parametrize("shape", ["lakefs", "http"])
def test_their_hook_writes_and_our_gc_reads_through_one_connection(lakefs_emulator, repo, monkeypatch, shape):
    from lakefs_provider.hooks.lakefs_hook import LakeFSHook as TheirHook

    from lakefs_gc_airflow.hooks import LakeFSHook as OurHook

    emu = lakefs_emulator
    if shape == "lakefs":  # their documented form: host is what lakefs-sdk is given, /api/v1 included
        fields = dict(conn_type="lakefs", host=emu.url + "/api/v1", login=emu.access_key, password=emu.secret_key)
    else:  # their other form: an http connection with the keys as extras
        fields = dict(
            conn_type="http",
            host=emu.url + "/api/v1",
            extra={"access_key_id": emu.access_key, "secret_access_key": emu.secret_key},
        )
    monkeypatch.setenv(*conn_env("lakefs_shared", **fields))

    theirs = TheirHook(lakefs_conn_id="lakefs_shared")
    theirs.create_branch(repo, "ingest", "main")
    theirs.upload(repo, "ingest", "a/b.txt", b"both providers")
    commit_id = theirs.commit(repo, "ingest", "written through airflow-provider-lakefs")
    assert theirs.get_branch_commit_id(repo, "ingest") == commit_id

    ours = OurHook(lakefs_conn_id="lakefs_shared")
    assert ours.endpoint == emu.url + "/api/v1"
    assert ours.credentials() == (emu.access_key, emu.secret_key)
    ok, message = ours.test_connection()
    assert ok, message
    client = ours.get_conn()
    try:
        branches = dict(client.branches(repo))
    finally:
        client.close()
    assert branches.get("ingest") == commit_id, branches


def test_an_http_connection_with_a_bare_host_takes_its_scheme_from_schema(monkeypatch):
    """Airflow's HTTP connections keep the scheme in ``schema``; ours reads it there for ``http``."""
    from lakefs_gc_airflow.hooks import LakeFSHook

    monkeypatch.setenv(
        *conn_env(
            "lakefs_http",
            conn_type="http",
            host="lakefs.example.com",
            schema="https",
            port=8443,
            login="key",
            password="secret",
        )
    )
    assert LakeFSHook(lakefs_conn_id="lakefs_http").endpoint == "https://lakefs.example.com:8443/api/v1"


def test_a_connection_of_another_type_is_refused_by_name(monkeypatch):
    from lakefs_gc_airflow.hooks import LakeFSHook

    monkeypatch.setenv(*conn_env("not_lakefs", conn_type="aws", login="key", password="secret"))
    with pytest.raises(
        ValueError,
        match=r"connection 'not_lakefs' has type 'aws', not a lakeFS connection: give "
        r"it type 'lakefs_gc'",
    ):
        LakeFSHook(lakefs_conn_id="not_lakefs").endpoint
