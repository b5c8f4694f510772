"""What a Spark job records when it fails (``lakefs_gc.spark.shell``): a refusal in each step is
``{"failure": {"kind": "refused", ...}}`` with its message, anything else ``failed``; the jobs'
secrets file. In-process on the shared SparkSession (the job's process is the point of one test,
``tests/airflow/operators/test_spark_tasks.py``, which runs the delete job through spark-submit)."""

from __future__ import annotations

import io
import json
import os
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakefs_gc import contract
from lakefs_gc.contract import DeleteResult, SlicesResult, StepInputs, UncommittedResult
from lakefs_gc.errors import Refusal
from lakefs_gc.spark import shell
from lakefs_gc.spark.runtime import (
    ENV_LAKEFS_ACCESS_KEY,
    ENV_LAKEFS_SECRET_KEY,
    job_environ,
    read_secrets,
    remove_secrets,
    write_secrets,
)
from lakefs_gc.steps import run_on_spark
from lakefs_gc.storage import LocalStorage
from lakefs_gc.storage.base import StorageError
from tests.support.contract import make_context

pytestmark = pytest.mark.spark
MARK = "fj0000000000000000mk"

# each Spark step as its job runs it (lakefs_gc/jobs/gc_step.py <step>)
JOB = {step: partial(run_on_spark, step) for step in ("list_committed", "list_slices", "compute_candidates", "delete")}


def _failure(result_path: Path) -> contract.StepFailure:
    doc = json.loads(result_path.read_text())
    assert set(doc) == {"failure"}, doc
    return contract.read_failure(doc)


def _run(spark, step, fn, inputs, environ, tmp_path, capfd) -> tuple[contract.StepFailure, str]:
    result_path = tmp_path / f"{step}.result.json"
    assert shell.run_step(step, fn, spark, inputs, environ, str(result_path)) == 1
    return _failure(result_path), "".join(capfd.readouterr())


def test_list_committed_refuses_a_repository_without_gc_rules(
    spark, lakefs_client, lakefs_emulator, tmp_path, capfd, caplog
):
    import lakefs_sdk

    emu = lakefs_emulator
    repo = "no-rules"
    lakefs_client.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=emu.namespace(repo), default_branch="main")
    )
    ctx = make_context(
        emu.namespace(repo),
        local_root=emu.local_root,
        lakefs_endpoint=emu.api_url,
        repository=repo,
        work_dir=str(tmp_path / "work"),
    )
    inputs = StepInputs(ctx, {"mark_uncommitted": UncommittedResult(run_id=MARK, locations=(), pages=1)})
    env = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
    failure, out = _run(spark, "list_committed", JOB["list_committed"], inputs, env, tmp_path, capfd)
    assert (failure.kind, failure.type) == ("refused", "NoGCRulesError")
    assert "has no GC rules" in failure.message
    assert f"lakefs-gc list_committed: REFUSED: NoGCRulesError: {failure.message}" in out
    assert not [
        r for r in caplog.records if r.name == "lakefs_gc.list_committed"
    ]  # no traceback: the message says it all


def test_list_slices_refuses_an_input_from_another_version_of_the_contract(tmp_path, capfd):
    """Refused before any Spark session starts (the whole job, through its argv)."""
    doc = contract.inputs_to_wire(StepInputs(make_context(work_dir=str(tmp_path)), {}))
    doc["context"]["settings"]["a_param_of_a_newer_version"] = 1
    (tmp_path / "in.json").write_text(json.dumps(doc))
    rc = shell.run(
        "list_slices",
        JOB["list_slices"],
        ["--input", str(tmp_path / "in.json"), "--result", str(tmp_path / "out.json")],
    )
    assert rc == 1
    failure = _failure(tmp_path / "out.json")
    assert (failure.kind, failure.type) == ("refused", "ContractError")
    assert failure.message.startswith(f"unreadable input {tmp_path / 'in.json'}: ")
    assert "unknown field(s) ['a_param_of_a_newer_version']" in failure.message
    assert "lakefs-gc list_slices: REFUSED: unreadable input" in "".join(capfd.readouterr())


def test_compute_candidates_refuses_without_the_mark_it_needs(spark, tmp_path, capfd):
    ctx = make_context("local://ns/repo", local_root=str(tmp_path), work_dir=str(tmp_path / "work"))
    inputs = StepInputs(ctx, {"list_committed": None, "list_slices": None, "mark_uncommitted": None})
    failure, out = _run(spark, "compute_candidates", JOB["compute_candidates"], inputs, {}, tmp_path, capfd)
    assert (failure.kind, failure.type) == ("refused", "ContractError")
    assert "the result of task 'mark_uncommitted' is missing" in failure.message


def _mark(root: Path, candidates: list[str]) -> None:
    st = LocalStorage(root)
    buf = io.BytesIO()
    pq.write_table(pa.table({"address": pa.array(candidates, pa.string())}), buf)
    st.put(f"_lakefs/retention/gc/unified/{MARK}/deleted/part-00000.parquet", buf.getvalue())
    st.put(f"_lakefs/retention/gc/unified/{MARK}/summary.json", json.dumps({"run_id": MARK, "success": False}).encode())
    for k in candidates:
        st.put(k, b"x")


def delete_inputs(tmp_path: Path, listed: int, **settings) -> StepInputs:
    """A mark of three candidates under local://ns/repo (root ``tmp_path``); ``listed`` objects listed."""
    _mark(tmp_path / "ns" / "repo", [f"data/s1/c{i}" for i in range(3)])
    ctx = make_context(
        "local://ns/repo",
        local_root=str(tmp_path),
        work_dir=str(tmp_path / "work"),
        airflow_run_id="manual__refused",
        **settings,
    )
    return StepInputs(
        ctx,
        {
            "mark_uncommitted": UncommittedResult(run_id=MARK, locations=(), pages=1),
            "list_slices": SlicesResult(
                listed_dir="", first_slice="", slices_listed=1, slices_skipped=0, listed_objects=listed, listed_bytes=0
            ),
            "compute_candidates": None,
        },
    )


def test_delete_refuses_past_the_blast_radius_and_deletes_nothing(spark, tmp_path, capfd):
    inputs = delete_inputs(tmp_path, listed=4, max_delete_share=0.5)
    failure, out = _run(spark, "delete", JOB["delete"], inputs, {}, tmp_path, capfd)
    assert (failure.kind, failure.type) == ("refused", "SweepRefused")
    assert "3 objects to delete are 75.0% of 4 listed objects, above max_delete_share=0.5" in failure.message
    assert all((tmp_path / "ns" / "repo" / f"data/s1/c{i}").exists() for i in range(3))


def test_delete_of_a_mark_without_summary_is_refused(spark, tmp_path, capfd):
    inputs = delete_inputs(tmp_path, listed=100)
    os.remove(tmp_path / "ns" / "repo" / f"_lakefs/retention/gc/unified/{MARK}/summary.json")
    failure, _ = _run(spark, "delete", JOB["delete"], inputs, {}, tmp_path, capfd)
    assert (failure.kind, failure.type) == ("refused", "SweepRefused")
    assert "has no summary.json" in failure.message


def test_failures_that_may_pass_on_retry_are_recorded_as_failed(spark, tmp_path, capfd, caplog):
    """A storage error, and a result that records work left undone (dead letters): retried."""
    inputs = StepInputs(make_context(work_dir=str(tmp_path)), {})

    def storage_down(spark, inputs, environ):
        raise StorageError("s3://bucket/repo/data/: 503 SlowDown after 5 attempts")

    failure, out = _run(spark, "list_slices", storage_down, inputs, {}, tmp_path, capfd)
    assert (failure.kind, failure.type, failure.message) == (
        "failed",
        "StorageError",
        "s3://bucket/repo/data/: 503 SlowDown after 5 attempts",
    )
    assert "lakefs-gc list_slices: FAILED: StorageError" in out
    [logged] = [r for r in caplog.records if r.name == "lakefs_gc.list_slices"]
    assert logged.levelname == "ERROR"
    assert logged.exc_info[0] is StorageError  # its traceback, in the task log

    def dead_letters(spark, inputs, environ):
        return DeleteResult(incomplete="2 keys could not be deleted after retries; dead letters at x")

    failure, _ = _run(spark, "delete", dead_letters, inputs, {}, tmp_path, capfd)
    assert (failure.kind, failure.type) == ("failed", "StepFailed")
    assert failure.message == "2 keys could not be deleted after retries; dead letters at x"


def test_a_result_is_written_as_its_type_when_the_step_succeeds(spark, tmp_path, capfd):
    inputs = StepInputs(make_context(work_dir=str(tmp_path)), {})
    res = DeleteResult(skipped="mark_only")
    assert shell.run_step("delete", lambda s, i, e: res, spark, inputs, {}, str(tmp_path / "r.json")) == 0
    raw = json.loads((tmp_path / "r.json").read_text())
    assert contract.read_failure(raw) is None
    assert contract.read_result("delete", raw).skipped == "mark_only"
    assert raw["incomplete"] is None


def test_the_secrets_file_is_owner_only_and_read_over_the_environment(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    path = write_secrets({ENV_LAKEFS_ACCESS_KEY: "AKIAFROMFILE", ENV_LAKEFS_SECRET_KEY: "secret-from-file"})
    assert path.parent.parent == tmp_path
    assert (path.stat().st_mode & 0o777, path.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    env = job_environ(path, {ENV_LAKEFS_SECRET_KEY: "from-env", "OTHER": "kept"})
    assert env == {ENV_LAKEFS_ACCESS_KEY: "AKIAFROMFILE", ENV_LAKEFS_SECRET_KEY: "secret-from-file", "OTHER": "kept"}
    assert job_environ(None, {"OTHER": "kept"}) == {"OTHER": "kept"}  # by hand: the environment
    path.chmod(0o644)
    with pytest.raises(Refusal, match="has mode 644: others may read it"):
        read_secrets(path)
    path.chmod(0o600)
    path.write_text(json.dumps({"PATH": "/bin"}))
    with pytest.raises(Refusal, match="must be a JSON object of strings keyed by LAKEFS_GC_"):
        read_secrets(path)
    with pytest.raises(ValueError, match="not secrets of a GC job"):
        write_secrets({"PATH": "/bin"})
    remove_secrets(path)
    assert not path.exists()
    assert not path.parent.exists()
    remove_secrets(path)  # already gone: nothing
