"""End to end with list_committed deferred: the GC DAG (``dag.test()``, which runs a deferred task's
trigger in line, as the triggerer would) on an emulator whose async commits preparation is slow
(``--prepare-commits-delay``), with Airflow's ``[operators] default_deferrable`` on. The task
starts lakeFS's preparation, waits a moment, defers to ``LakeFSPrepareCommitsTrigger`` and resumes
in ``execute_complete``; the run sweeps exactly the seeded garbage, as the non-deferred runs of
``test_e2e.py`` do, and leaks no secret. The set-up and checks are ``test_e2e.py``'s.
"""

from __future__ import annotations

import pytest

from lakefs_sandbox.seed import DELETED
from tests.airflow.e2e.test_e2e import _assert_no_secrets, _fresh_garbage_then_sweep, _seed_env

pytestmark = [pytest.mark.spark, pytest.mark.e2e]

DELAY = 8  # seconds lakeFS's async preparation takes here: past the task's own short wait (1.5 s)


def test_list_committed_defers_while_lakefs_prepares_and_the_run_sweeps_the_garbage(
    lakefs_emulator_factory, monkeypatch, tmp_path, airflow_db, capfd, caplog
):
    def slow(*flags, **kw):
        return lakefs_emulator_factory(*flags, "--prepare-commits-delay", str(DELAY), **kw)

    monkeypatch.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", "True")
    caplog.set_level("INFO", logger="airflow.sdk.definitions.dag")
    env = _seed_env(slow, monkeypatch, tmp_path, "e2e-deferred")
    assert env.dag.get_task("list_committed").deferrable is True
    env.wait_until_old()
    summary = _fresh_garbage_then_sweep(env)
    n = len(env.manifest.expected(DELETED))
    assert summary["deleted"] == n
    assert n > 0
    out, err = capfd.readouterr()
    log = out + err
    # the task deferred once, its trigger ran (dag.test()'s triggerer in line), and it resumed
    assert log.count("deferring to the triggerer") == 1, log[-4000:]
    assert caplog.text.count("[DAG TEST] running trigger in line") == 1
    assert f"lakeFS prepared the commits of {env.manifest.repository}" in log
    assert "in the triggerer" in log
    assert "lakeFS prepared the commits (" in log  # execute_complete, with the trigger's answer
    committed = env.last_tis["list_committed"]
    assert committed.try_number == 1  # resumed, not retried
    assert committed.next_method is None  # cleared once it succeeded
    result = committed.xcom_pull(task_ids="list_committed")
    assert "/_lakefs/retention/gc/commits/run_id=" in result["commits_csv"]
    assert result["active_commits"] == summary["active_commits"] > 0
    _assert_no_secrets([env.lakefs_conn["login"], env.lakefs_conn["password"]], env.last_tis, log, tmp_path)
    # the same mark without deferring (lakeFS's wait in the task): list_committed keeps the same
    env.dag.get_task("list_committed").deferrable = False
    dr, tis = env.run(mode="mark_only", flow="clean")
    assert dr.state == "success"
    again = tis["list_committed"].xcom_pull(task_ids="list_committed")
    assert "deferring to the triggerer" not in "".join(capfd.readouterr())
    same = (
        "active_commits",
        "metaranges",
        "ranges",
        "committed_addresses",
        "documented_commits",
        "commits_lakefs_lacked",
    )
    assert {k: again[k] for k in same} == {k: result[k] for k in same}
    assert again["committed_addresses"] > 0
