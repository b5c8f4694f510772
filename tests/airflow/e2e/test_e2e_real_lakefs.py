"""The GC DAG end to end on lakeFS itself (1.84.0, built by ``scripts/setup.sh``), on every
blockstore it runs on here: local, S3 (moto), Azure Blob (Azurite, through lakeFS's
``blockstore.azure.test_endpoint_url``) and GCS (fake-gcs-server, through ``STORAGE_EMULATOR_HOST``).
The set-up and the checks are ``tests/airflow/e2e/test_e2e.py``'s: the sample repository seeded through
lakefs-sdk with commits dated back through the commit API (``CommitCreation.date``), a full
``dag.test()`` run with real spark-submit jobs and fresh garbage newer than the cutoff, exactly the
expected garbage gone, everything live and the sibling prefix left, the report in lakeFS's layout,
no secret in logs, XCom or files. Runs set ``unsafe_min_age_override``: lakeFS's grace period is a
day, the test's minimum age seconds.
"""

from __future__ import annotations

import pytest

from lakefs_sandbox.cloud_servers import AZURITE_KEY
from lakefs_sandbox.seed import DELETED
from tests.airflow.e2e.test_e2e import _assert_no_secrets, _fresh_garbage_then_sweep, _seed_env

pytestmark = [pytest.mark.spark, pytest.mark.e2e, pytest.mark.real_lakefs]
PREFIX = {"local": "local://", "s3": "s3://", "azure": "https://devstoreaccount1.azurite.test/", "gs": "gs://"}


@pytest.mark.parametrize("kind", ["local", "s3", "azure", "gs"])
def test_the_gc_dag_on_lakefs_itself(kind, real_lakefs, monkeypatch, tmp_path, airflow_db, capfd):
    server = real_lakefs(kind)
    env = _seed_env(None, monkeypatch, tmp_path, f"real-{kind}", server=server)
    env.wait_until_old()
    summary = _fresh_garbage_then_sweep(env)
    n = len(env.manifest.expected(DELETED))
    assert summary["deleted"] == summary["num_deleted_objects"] == n
    assert n > 0
    assert summary["storage_namespace"].startswith(PREFIX[kind])
    assert summary["mode"] == "mark_and_sweep"
    assert summary["unsafe_min_age_override"] is True
    assert summary["active_commits"] >= 3  # main's HEAD and the two commits within retention on `recent`
    out, err = capfd.readouterr()
    # a tiny repository: every Spark step ran in its task's own process (in_process_max_keys), no spark-submit
    for step in ("list_slices", "list_committed", "compute_candidates", "attribute_space", "delete"):
        assert f"{step}: run in this task's process, without Spark" in out + err, step
    secrets = [env.lakefs_conn["login"], env.lakefs_conn["password"]]
    if env.aws_conn and env.aws_conn.get("password"):
        secrets.append(env.aws_conn["password"])
    if kind == "azure":
        secrets.append(AZURITE_KEY)
    _assert_no_secrets(secrets, env.last_tis, out + err, tmp_path)
