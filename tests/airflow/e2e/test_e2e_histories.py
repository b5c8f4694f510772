"""A sample of the model-based histories (``tests/runs/test_random_histories.py``) through the real GC
DAG (``dag.test()``, real spark-submit jobs) against the lakeFS emulator, with
``tests/airflow/e2e/test_e2e.py``'s set-up. A file of its own so that the test runners spread the long
end-to-end tests.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.airflow.e2e.test_e2e import GRACE, MIN_AGE, TARGET, TASKS, _load_dag, _states
from tests.conftest import ns_storage

pytestmark = [pytest.mark.spark, pytest.mark.e2e]


@pytest.mark.skipif(TARGET is not None, reason="uses the emulator's private endpoints")
def test_random_histories_through_the_dag(lakefs_emulator_factory, monkeypatch, tmp_path, airflow_db):
    """A sample of the model-based histories (tests/runs/test_random_histories.py) through the real DAG:
    Airflow, spark-submit, the report. Nothing the oracle says to keep is lost; every object it says
    must go is gone."""
    from lakefs_gc.storage import parse_namespace
    from tests.support import history

    emu = lakefs_emulator_factory("--grace-period", str(GRACE))
    client = emu.client()
    repo = "e2e-histories"
    ns = emu.namespace(repo)
    roots = parse_namespace(ns, emu.local_root).roots()
    history.create(client, repo, ns)
    outside = str(Path(emu.local_root) / "outside")  # objects imported from here are never the GC's
    histories = [
        history.apply(client, repo, ns, roots, history.ops(seed, 24), prefix=f"h{seed}-", outside=outside)
        for seed in (1001, 1002, 1003, 1004)
    ]
    history.set_rules(client, repo, histories)
    # every object written, and every slice made, older than the run's minimum age (slice ids carry
    # their creation time: backdating the files alone would not do)
    time.sleep(MIN_AGE + 3)
    lakefs = {
        "conn_type": "lakefs",
        "host": emu.url,
        "login": emu.access_key,
        "password": emu.secret_key,
        "extra": {"local_blockstore_root": emu.local_root},
    }
    dag = _load_dag(monkeypatch, tmp_path, repo, lakefs, None)
    dr = dag.test(run_conf={"mode": "mark_and_sweep"})
    tis = {ti.task_id: ti for ti in dr.get_task_instances()}
    assert dr.state == "success", _states(tis)
    assert _states(tis) == dict.fromkeys(TASKS, "success"), _states(tis)
    # the oracle's clock after the run: its retention windows end no earlier than the run's
    keep, go = history.oracle(client, repo, histories, roots, time.time())
    after = {o.key for o in ns_storage(ns).list("data/", recursive=True)}
    assert keep <= after, f"live objects lost: {sorted(keep - after)}"
    assert not go & after, f"garbage left: {sorted(go & after)}"
    assert go, "the histories must leave garbage to collect"
    assert all(Path(f).exists() for h in histories for f in h.outside)
