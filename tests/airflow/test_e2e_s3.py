"""End to end on an ``s3://`` namespace (moto server on 127.0.0.1): a full run of the real GC DAG
(``dag.test()``) with fresh garbage, then, with the emulator, the same run opened in Airflow's UI in
a real browser (``tests/airflow/run_page.py``). The set-up and the checks are
``tests/airflow/test_e2e.py``'s (conformance mode too: with ``LAKEFS_GC_TARGET_*`` set, against
that real lakeFS). A file of its own so that the test runners spread the long end-to-end tests.
"""

from __future__ import annotations

import pytest

from lakefs_sandbox.seed import DELETED, KEPT
from tests.airflow.test_e2e import PAGES, TARGET, _assert_no_secrets, _fresh_garbage_then_sweep, _seed_env, needs

pytestmark = [pytest.mark.spark, pytest.mark.e2e]


@needs("s3")
def test_s3_namespace_on_moto_and_the_run_as_the_ui_shows_it(lakefs_emulator_factory, request, monkeypatch, tmp_path,
                                                              airflow_db, capfd):
    """A full run on s3:// with fresh garbage (kept: newer than the cutoff); with the emulator, the
    same run is then opened in Airflow's UI in a real browser (``tests/airflow/run_page.py``)."""
    moto = request.getfixturevalue("moto_server") if TARGET is None else None
    env = _seed_env(lakefs_emulator_factory, monkeypatch, tmp_path, "e2e-s3", moto=moto)
    env.wait_until_old()
    summary = _fresh_garbage_then_sweep(env)
    n = len(env.manifest.expected(DELETED))
    assert summary["deleted"] == summary["num_deleted_objects"] == n
    assert summary["storage_namespace"].startswith("s3://") and summary["mode"] == "mark_and_sweep"
    assert summary["uncommitted_pages"] == PAGES
    assert summary["active_commits"] >= 3  # main's HEAD and the two commits within retention on `recent`
    assert summary["first_slice"] and summary["listed_objects"] >= len(env.manifest.expected(KEPT)) - 1
    out, err = capfd.readouterr()
    secrets = [env.lakefs_conn["login"], env.lakefs_conn["password"], env.aws_conn["login"], env.aws_conn["password"]]
    _assert_no_secrets(secrets, env.last_tis, out + err, tmp_path)
    if TARGET is not None:
        return
    from airflow.configuration import conf

    from tests.airflow import run_page

    conns = {"lakefs_default": env.lakefs_conn, "aws_default": env.aws_conn,
             "spark_default": {"conn_type": "spark", "host": "local[2]"}}
    with run_page.api_server(tmp_path / "ui-home", conf.get("database", "sql_alchemy_conn"),
                             tmp_path / "gc.yaml", conns) as (base, password):
        run_page.check_run_page(base, password, env.dag.dag_id, env.manifest.repository, n, moto,
                                summary["storage_namespace"], secrets, tmp_path / "chromium-profile")
