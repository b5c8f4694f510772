"""End to end on an Azure Blob namespace (Azurite) and a ``gs://`` one (fake-gcs-server), both on
127.0.0.1: a full run of the real GC DAG (``dag.test()``) with fresh garbage, the storage
connection resolved by the official providers' hooks (``wasb`` with Azurite's connection string;
``google_cloud_platform``, anonymous, with ``STORAGE_EMULATOR_HOST``). The set-up and the checks are
``tests/airflow/test_e2e.py``'s: exactly the expected garbage gone, everything live and the sibling
namespace left, the report in lakeFS's layout, no secret in logs, XCom or argv.
"""

from __future__ import annotations

import pytest

from lakefs_sandbox.cloud_servers import AZURITE_KEY
from lakefs_sandbox.seed import DELETED
from tests.airflow.test_e2e import PAGES, TARGET, _assert_no_secrets, _fresh_garbage_then_sweep, _seed_env

pytestmark = [pytest.mark.spark, pytest.mark.e2e,
              pytest.mark.skipif(TARGET is not None, reason="the emulator's azure and gs blockstores")]


@pytest.mark.parametrize("kind", ["azure", "gcs"])
def test_cloud_namespace_full_run(kind, lakefs_emulator_factory, request, monkeypatch, tmp_path, airflow_db, capfd):
    cloud = request.getfixturevalue("azurite" if kind == "azure" else "fake_gcs")
    env = _seed_env(lakefs_emulator_factory, monkeypatch, tmp_path, f"e2e-{kind}", cloud=cloud)
    env.wait_until_old()
    summary = _fresh_garbage_then_sweep(env)
    n = len(env.manifest.expected(DELETED))
    assert summary["deleted"] == summary["num_deleted_objects"] == n and n > 0
    assert summary["storage_namespace"].startswith("https://devstoreaccount1.azurite.test/" if kind == "azure"
                                                   else "gs://")
    assert summary["uncommitted_pages"] == PAGES and summary["mode"] == "mark_and_sweep"
    assert summary["active_commits"] >= 3
    out, err = capfd.readouterr()
    secrets = [env.lakefs_conn["login"], env.lakefs_conn["password"]] + ([AZURITE_KEY] if kind == "azure" else [])
    _assert_no_secrets(secrets, env.last_tis, out + err, tmp_path)
