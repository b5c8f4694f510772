"""list_committed's wait for lakeFS's commits preparation, deferred to Airflow's triggerer.

The trigger (``lakefs_gc_airflow.triggers.LakeFSPrepareCommitsTrigger``) runs its ``run()`` in
asyncio against the lakeFS emulator: a slow preparation (the emulator's ``--prepare-commits-delay``),
a failed task, no GC rules, a task never done (a timeout), a task lakeFS does not know. The operator
(``GCSparkSubmitOperator``, deferrable) defers when lakeFS is slow, and its ``execute_complete``
hands lakeFS's answer to the step's job (a fake spark-submit records its input file), fails closed
on an error event, and a fast lakeFS is answered in the task without deferring. The emulator runs
with the test connection's keys, so that no secret is seen in the trigger's arguments or events.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import time
import uuid

import lakefs_sdk
import pytest

from lakefs_gc import contract
from lakefs_gc.lakefs.client import LakeFSClient
from lakefs_gc_airflow.triggers import LakeFSPrepareCommitsTrigger
from tests.airflow.conftest import LAKEFS_ACCESS, LAKEFS_SECRET, conn_env
from tests.airflow.helpers import context, fake_spark_submit
from tests.airflow.operators.support import UNCOMMITTED, wire
from tests.conftest import ns_rel, ns_storage, start_emulator, stop_process

DELAY = 2.5  # seconds the slow emulator's async preparation reports completed=false (the task's own wait: 1.5 s)
NOT_DONE = {"task_id": "t1", "completed": False, "update_time": "2026-11-23T00:00:00Z"}
STATUS = {"method": "GET", "path": r"/gc/prepare_commits/status$", "times": -1, "status": 200}


@pytest.fixture(scope="module")
def slow_emu(tmp_path_factory):
    """An emulator whose async prepare_commits tasks take DELAY seconds, with the test connection's keys."""
    emu = start_emulator(
        tmp_path_factory.mktemp("slow_emu"),
        "--prepare-commits-delay",
        str(DELAY),
        access_key=LAKEFS_ACCESS,
        secret_key=LAKEFS_SECRET,
    )
    try:
        yield emu
    finally:
        stop_process(emu.proc)


@pytest.fixture
def lakefs_conn(monkeypatch, slow_emu):
    """lakefs_default pointing at the slow emulator (few retries: a failure is seen at once)."""
    monkeypatch.setenv(
        *conn_env(
            "lakefs_default",
            conn_type="lakefs_gc",
            host=slow_emu.url,
            login=LAKEFS_ACCESS,
            password=LAKEFS_SECRET,
            extra={"local_blockstore_root": slow_emu.local_root, "max_retries": 1, "backoff_base": 0.01},
        )
    )
    monkeypatch.setenv(*conn_env("spark_default", conn_type="spark", host="local[*]"))
    return slow_emu


def _repo(emu, rules: bool = True) -> tuple[str, str, str]:
    """A repository with one commit on main (and GC rules): (name, namespace, commit id)."""
    client = emu.client()
    name = "wait-" + uuid.uuid4().hex[:8]
    ns = emu.namespace(name)
    client.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=name, storage_namespace=ns, default_branch="main")
    )
    client.objects_api.upload_object(name, "main", "a", content=b"1")
    commit = client.commits_api.commit(name, "main", lakefs_sdk.CommitCreation(message="c1")).id
    if rules:
        client.repositories_api.set_gc_rules(
            name, lakefs_sdk.GarbageCollectionRules(default_retention_days=7, branches=[])
        )
    return name, ns, commit


def _client(emu) -> LakeFSClient:
    return LakeFSClient(emu.api_url, LAKEFS_ACCESS, LAKEFS_SECRET, max_retries=1, backoff_base=0.01)


def _trigger(repo: str, task_id: str, timeout: float = 60.0, **kw) -> LakeFSPrepareCommitsTrigger:
    return LakeFSPrepareCommitsTrigger(
        lakefs_conn_id="lakefs_default",
        repository=repo,
        lakefs_task_id=task_id,
        deadline=time.time() + timeout,
        timeout_seconds=timeout,
        poll_initial=0.2,
        **kw,
    )


def _first_event(trigger) -> tuple[dict, float, int]:
    """Run ``trigger.run()`` in asyncio to its first event; (payload, seconds, ticks of a 20 ms ticker beside it)."""

    async def go():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.02)
                ticks += 1

        t = asyncio.create_task(ticker())
        t0 = time.monotonic()
        event = await anext(trigger.run())
        took = time.monotonic() - t0
        t.cancel()
        return event.payload, took, ticks

    return asyncio.run(go())


def test_the_trigger_waits_for_a_slow_preparation_without_blocking_its_loop(lakefs_conn):
    emu = lakefs_conn
    repo, ns, commit = _repo(emu)
    task_id = _client(emu).start_prepare_commits(repo)
    assert isinstance(task_id, str)
    # the trigger is rebuilt from what it serializes (as the triggerer does): no secret in it
    classpath, kwargs = _trigger(repo, task_id).serialize()
    assert classpath == "lakefs_gc_airflow.triggers.LakeFSPrepareCommitsTrigger"
    assert not any(s in json.dumps(kwargs) for s in (LAKEFS_ACCESS, LAKEFS_SECRET))
    module, _, name = classpath.rpartition(".")
    trigger = getattr(importlib.import_module(module), name)(**kwargs)
    # the triggerer gives the trigger its task instance, and BaseTrigger then sets its task_id to the
    # Airflow task's: lakeFS's task id must not be read from there (it was, and a real triggerer failed)
    from types import SimpleNamespace

    trigger.task_instance = SimpleNamespace(task_id="list_committed")
    payload, took, ticks = _first_event(trigger)
    assert payload["status"] == "success", payload
    assert payload["task_id"] == task_id
    assert took >= DELAY - 0.5  # it waited for lakeFS ...
    assert ticks >= took / 0.02 * 0.5  # ... and the event loop ran meanwhile (no blocking call in it)
    loc = payload["gc_commits_location"]
    assert f"run_id={payload['run_id']}/commits.csv" in loc
    csv = ns_storage(ns).get(ns_rel(ns, loc)).decode()
    assert commit in csv
    assert LAKEFS_SECRET not in json.dumps(payload)


def test_no_gc_rules_is_a_refusal_with_the_clients_message(lakefs_conn):
    repo, _, _ = _repo(lakefs_conn, rules=False)
    task_id = _client(lakefs_conn).start_prepare_commits(repo)  # lakeFS's async start does not check the rules
    payload, _, _ = _first_event(_trigger(repo, task_id))
    assert (payload["status"], payload["kind"]) == ("error", "refused"), payload
    assert payload["type"] == "NoGCRulesError"
    assert payload["message"] == (
        f"repository '{repo}' has no GC rules (get gc rules: not found); GC deletes nothing without them. Set rules "
        f"with lakectl gc set-config or the API (PUT /repositories/{repo}/settings/gc_rules)"
    )


def test_a_failed_task_an_unknown_task_and_a_timeout_fail_with_the_clients_messages(lakefs_conn):
    emu = lakefs_conn
    repo, _, _ = _repo(emu)
    task_id = _client(emu).start_prepare_commits(repo)
    failed = {**NOT_DONE, "completed": True, "error": {"message": "internal error: out of memory"}}
    try:
        emu.set_faults({**STATUS, "body": failed})
        payload, _, _ = _first_event(_trigger(repo, task_id))
        assert payload == {
            "status": "error",
            "kind": "failed",
            "type": "LakeFSGCError",
            "message": f"prepare_commits failed (task {task_id}): internal error: out of memory",
        }
        emu.set_faults({**STATUS, "body": {**NOT_DONE, "completed": True}})
        payload, _, _ = _first_event(_trigger(repo, task_id))
        assert payload["message"] == f"prepare_commits task {task_id} completed without a commits location"
        emu.set_faults({**STATUS, "body": NOT_DONE})  # never done
        payload, took, _ = _first_event(_trigger(repo, task_id, timeout=1.0))
        assert payload["message"] == (
            f"prepare_commits task {task_id} did not complete within 1s; raise the timeout or retry later"
        )
        assert payload["kind"] == "failed"
        assert 0.9 <= took < 10
    finally:
        emu.set_faults()
    payload, _, _ = _first_event(_trigger(repo, "GCPCunknown"))
    assert payload["message"] == "prepare_commits task GCPCunknown not found on the server; re-run the GC"


def test_a_connection_the_triggerer_cannot_read_fails_the_wait(lakefs_conn):
    payload, _, _ = _first_event(
        LakeFSPrepareCommitsTrigger(
            lakefs_conn_id="no_such_conn",
            repository="r",
            lakefs_task_id="GCPCx",
            deadline=time.time() + 5,
            timeout_seconds=5,
        )
    )
    assert payload["status"] == "error"
    assert "no_such_conn" in payload["message"]


# ---------------------------------------------------------------------------------------------
# the operator: defers when lakeFS is slow, resumes with its answer, answers a fast lakeFS itself


def _operator(tmp_path, deferrable: bool = True):
    from lakefs_gc_airflow.spark_submit import GCSparkSubmitOperator

    return GCSparkSubmitOperator(
        task_id="list_committed",
        step="list_committed",
        spark_binary=str(fake_spark_submit(tmp_path)),
        storage_conn_id=None,
        fast_start=False,
        deferrable=deferrable,
    )


def _context(tmp_path, emu, repo: str, ns: str) -> dict:
    from tests.support.contract import make_context

    ctx = make_context(
        ns,
        repository=repo,
        work_dir=str(tmp_path / "work"),
        lakefs_endpoint=emu.api_url,
        local_root=emu.local_root,
        prepare_commits_timeout_seconds=120,
    )
    return context(wire(ctx, mark_uncommitted=UNCOMMITTED))


def _job_input(tmp_path) -> contract.StepInputs:
    return contract.inputs_from_wire(json.loads((tmp_path / "work/_control/list_committed.input.json").read_text()))


def test_a_slow_lakefs_defers_the_task_and_its_answer_reaches_the_step(lakefs_conn, tmp_path, capfd):
    from airflow.sdk.exceptions import TaskDeferred
    from airflow.sdk.serde import deserialize, serialize

    repo, ns, _ = _repo(lakefs_conn)
    op = _operator(tmp_path)
    ctx = _context(tmp_path, lakefs_conn, repo, ns)
    t0 = time.monotonic()
    with pytest.raises(TaskDeferred) as d:
        op.execute(ctx)
    assert time.monotonic() - t0 < DELAY  # a short wait in the task, then the triggerer's
    assert d.value.method_name == "execute_complete"
    assert d.value.timeout is not None
    assert d.value.timeout.total_seconds() >= 120
    assert not (tmp_path / "fake-job-seen.json").exists()  # the step has not run
    # what the task runner hands the triggerer, and what the triggerer rebuilds
    classpath, kwargs = d.value.trigger.serialize()
    kwargs = deserialize(serialize(kwargs))
    assert (kwargs["repository"], kwargs["timeout_seconds"]) == (repo, 120)
    assert not any(s in json.dumps(kwargs) for s in (LAKEFS_ACCESS, LAKEFS_SECRET))
    payload, _, _ = _first_event(type(d.value.trigger)(**kwargs))
    assert payload["status"] == "success"
    # execute_complete in a new operator (a new process): the inputs from XCom, lakeFS's answer from the event
    result = _operator(tmp_path).execute_complete(ctx, event=deserialize(serialize(payload)))
    assert result == fake_results_of("list_committed")
    handed = _job_input(tmp_path).prepared_commits
    assert handed == contract.PreparedCommits(payload["run_id"], payload["gc_commits_location"])
    assert "deferring to the triggerer" in "".join(capfd.readouterr())
    # a retry starts over (Airflow clears next_method): a new lakeFS task, deferred again
    with pytest.raises(TaskDeferred) as retry:
        _operator(tmp_path).execute(ctx)
    assert retry.value.trigger.lakefs_task_id != kwargs["lakefs_task_id"]


def fake_results_of(step: str) -> dict:
    from tests.airflow.helpers import fake_results

    return fake_results()[step]


def test_a_fast_lakefs_is_answered_in_the_task_without_deferring(lakefs_conn, tmp_path):
    repo, ns, _ = _repo(lakefs_conn)
    ctx = _context(tmp_path, lakefs_conn, repo, ns)
    lakefs_conn.set_faults(
        {**STATUS, "times": 1, "body": {**NOT_DONE, "completed": True, "result": _sync_answer(lakefs_conn, repo)}}
    )
    try:
        result = _operator(tmp_path).execute(ctx)  # no TaskDeferred
    finally:
        lakefs_conn.set_faults()
    assert result == fake_results_of("list_committed")
    assert _job_input(tmp_path).prepared_commits is not None


def _sync_answer(emu, repo: str) -> dict:
    """lakeFS's synchronous answer (a completed task's result)."""
    return emu.client().internal_api.prepare_garbage_collection_commits(repo).to_dict()


def test_not_deferrable_the_step_asks_lakefs_itself(lakefs_conn, tmp_path):
    repo, ns, _ = _repo(lakefs_conn)
    result = _operator(tmp_path, deferrable=False).execute(_context(tmp_path, lakefs_conn, repo, ns))
    assert result == fake_results_of("list_committed")
    assert _job_input(tmp_path).prepared_commits is None  # the job's step prepares the commits


def test_an_error_event_fails_the_task_as_the_steps_own_wait_would(tmp_path, connections):
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    op = _operator(tmp_path)
    refused = {
        "status": "error",
        "kind": "refused",
        "type": "NoGCRulesError",
        "message": "repository 'r' has no GC rules",
    }
    with pytest.raises(AirflowFailException, match="^list_committed refused: repository 'r' has no GC rules$"):
        op.execute_complete({}, event=refused)
    failed = {"status": "error", "kind": "failed", "type": "LakeFSGCError", "message": "did not complete within 9s"}
    with pytest.raises(AirflowException) as e:
        op.execute_complete({}, event=failed)
    assert not isinstance(e.value, AirflowFailException)
    assert str(e.value) == "list_committed failed: LakeFSGCError: did not complete within 9s"
    for odd in (None, {"status": "success"}, {"status": "success", "gc_commits_location": ""}):
        with pytest.raises(AirflowException, match="no commits location|not an object"):
            op.execute_complete({}, event=odd)


def test_deferrable_defaults_to_airflows_default_deferrable(monkeypatch, tmp_path):
    monkeypatch.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", "True")
    assert _operator(tmp_path, deferrable=None).deferrable is True
    monkeypatch.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", "False")
    assert _operator(tmp_path, deferrable=None).deferrable is False
    assert _operator(tmp_path, deferrable=True).deferrable is True


# ---------------------------------------------------------------------------------------------
# lakeFS itself


@pytest.mark.real_lakefs
def test_on_lakefs_itself_the_trigger_gets_what_the_client_gets(real_lakefs, monkeypatch):
    """lakeFS 1.84's async preparation, waited for by the trigger, answers as the client's own wait:
    the same location (but for the run id) and the same commits; no GC rules is the same refusal."""
    server = real_lakefs("local")
    monkeypatch.setenv(
        *conn_env(
            "lakefs_default",
            conn_type="lakefs_gc",
            host=server.url,
            login=server.access_key,
            password=server.secret_key,
            extra={"local_blockstore_root": server.local_root},
        )
    )
    repo, ns, commit = _repo(server)
    client = LakeFSClient(server.api_url, server.access_key, server.secret_key)
    task_id = client.start_prepare_commits(repo)
    assert isinstance(task_id, str)
    payload, _, _ = _first_event(_trigger(repo, task_id))
    assert payload["status"] == "success", payload
    mine = client.prepare_commits(repo)
    theirs = payload["gc_commits_location"]
    assert theirs.replace(payload["run_id"], mine["run_id"]) == mine["gc_commits_location"]
    st = ns_storage(ns)

    def rows(loc: str) -> list[str]:
        return sorted(st.get(ns_rel(ns, loc)).decode().splitlines())

    assert rows(theirs) == rows(mine["gc_commits_location"])
    assert any(r.startswith(commit) for r in rows(theirs))
    norules, _, _ = _repo(server, rules=False)
    payload, _, _ = _first_event(_trigger(norules, client.start_prepare_commits(norules)))
    assert (payload["kind"], payload["type"]) == ("refused", "NoGCRulesError")
    from lakefs_gc.errors import NoGCRulesError

    with pytest.raises(NoGCRulesError) as e:
        client.prepare_commits(norules)
    assert payload["message"] == str(e.value)
