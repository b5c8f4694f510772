"""``lakefs-gc report`` (the installed console script) over reports written by the GC's own writer:
the marks a ``sweep_only`` user picks from, one run's report as a table, by mark id, by Airflow run
id and by summary URI, on ``local://`` and ``s3://`` (moto on 127.0.0.1); bad input names the fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lakefs_gc.contract import CandidatesResult, DeleteCounts, DeleteResult, MarkRef, SlicesResult, UncommittedResult
from lakefs_gc.report.layout import summary_key, sweep_dir
from lakefs_gc.report.summary import build_summary, summary_location, write_summary
from lakefs_gc.storage import open_storage
from tests.support.contract import inputs, make_context

EXE = shutil.which("lakefs-gc", path=str(Path(sys.executable).parent))


def run(*args, env: dict | None = None):
    assert EXE, "console script lakefs-gc is not installed in the venv (run scripts/setup.sh)"
    # none of the settings the command reads (lakefs_gc.credentials): only the test's
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LAKEFS_", "S3_", "AIRFLOW_CONN_"))}
    return subprocess.run(
        [EXE, "report", *args], capture_output=True, text=True, timeout=60, env={**clean, **(env or {})}, check=False
    )


def _write_runs(st, namespace: str) -> None:
    """Two marks (a mark_only with objects held back, then a mark_and_sweep) and a sweep_only run of
    the first, as save_report writes them; a folder whose summary is unreadable."""

    def ctx(start, **kw):
        return make_context(namespace, start=start, repository="repo1", **kw)

    slices = SlicesResult(
        listed_dir="l", first_slice="s", slices_listed=1, slices_skipped=0, listed_objects=20, listed_bytes=2048
    )
    first = inputs(
        ctx(
            datetime(2026, 11, 20, 3, tzinfo=UTC),
            mode="mark_only",
            airflow_run_id="scheduled__2026-11-20T03:00:00+00:00",
        ),
        mark_uncommitted=UncommittedResult(run_id="markA", locations=(), pages=1),
        list_slices=slices,
        compute_candidates=CandidatesResult(
            report_dir="d",
            uncommitted_files=0,
            candidates=7,
            candidate_bytes=70,
            to_delete=5,
            to_delete_bytes=50,
            held_back=2,
            confirm_after_seconds=86400,
            held_back_reason="not yet a candidate in mark m0",
        ),
        delete=DeleteResult(skipped="mark_only"),
    )
    second = inputs(
        ctx(datetime(2026, 11, 21, 3, tzinfo=UTC), airflow_run_id="scheduled__2026-11-21"),
        mark_uncommitted=UncommittedResult(run_id="markB", locations=(), pages=1),
        list_slices=slices,
        compute_candidates=CandidatesResult(
            report_dir="d",
            uncommitted_files=0,
            candidates=3,
            candidate_bytes=30,
            to_delete=3,
            to_delete_bytes=30,
            held_back=0,
            confirm_after_seconds=0,
        ),
        delete=DeleteResult(counts=DeleteCounts(keys=3, deleted=3, parts=1)),
    )
    sweep = inputs(
        ctx(
            datetime(2026, 11, 22, 9, tzinfo=UTC),
            mode="sweep_only",
            mark_id="markA",
            airflow_run_id="manual__2026-11-22T09:00:00+00:00",
            sweep_mark=MarkRef("markA", "2026-11-20T03:00:00.000000Z", "2026-11-19T03:00:00.000000Z", 20, 5),
        ),
        delete=DeleteResult(counts=DeleteCounts(keys=5, deleted=4, already_gone=1, parts=1)),
    )
    for i in (first, second, sweep):
        write_summary(st, summary_location(i), build_summary(i))
    st.put("_lakefs/retention/gc/unified/markC/summary.json", b"{not json")


@pytest.fixture
def local_ns(tmp_path):
    root = tmp_path / "block"
    st = open_storage("local://repo1", local_root=root)
    _write_runs(st, "local://repo1")
    return str(root)


def test_marks_are_listed_newest_first_with_their_sweeps_and_counts(local_ns):
    res = run("local://repo1", "--local-root", local_ns)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split() == [
        "mark",
        "id",
        "started",
        "(UTC)",
        "flow",
        "success",
        "listed",
        "candidates",
        "marked",
        "deleted",
        "held",
        "back",
        "airflow",
        "run",
    ]
    assert lines[1].split() == [
        "markB",
        "2026-11-21T03:00:00Z",
        "mark_and_sweep",
        "yes",
        "20",
        "3",
        "3",
        "3",
        "0",
        "scheduled__2026-11-21",
    ]
    assert lines[2].split() == [
        "markA",
        "2026-11-20T03:00:00Z",
        "mark_only",
        "yes",
        "20",
        "7",
        "5",
        "-",
        "2",
        "scheduled__2026-11-20T03:00:00+00:00",
    ]
    assert lines[3].split() == [
        "sweep",
        "manual__2026-11-22T09_00_00_00_00",
        "2026-11-22T09:00:00Z",
        "sweep_only",
        "yes",
        "20",
        "-",
        "5",
        "4",
        "-",
        "manual__2026-11-22T09:00:00+00:00",
    ]
    assert lines[4].split()[:2] == ["markC", "-"]
    assert "UNREADABLE" in lines[4]
    assert "not valid JSON" in lines[4]
    assert "sweep_only run takes a mark id" in lines[-1]
    limited = run("local://repo1", "--local-root", local_ns, "--limit", "1").stdout
    assert "markB" in limited
    assert "markA" not in limited
    assert "2 older mark(s) not shown" in limited


def test_one_run_as_a_table_by_mark_id_airflow_run_id_or_uri(local_ns):
    by_mark = run("local://repo1", "--run", "markA", "--local-root", local_ns)
    assert by_mark.returncode == 0, by_mark.stderr
    rows = {line[:12].strip(): line[12:].strip() for line in by_mark.stdout.splitlines()}
    assert rows["mode"] == "mark_only"
    assert rows["flow"] == "clean"
    assert rows["marked"].startswith("5 ")
    assert rows["listed"] == "20 objects, 2.0 KiB"
    assert rows["held back"].startswith("2; deletable by the first run that starts after 2026-11-21T03:00:00Z")
    assert rows["report"] == "local://repo1/" + summary_key("markA")
    by_airflow_run = run("local://repo1", "--run", "scheduled__2026-11-20T03:00:00+00:00", "--local-root", local_ns)
    assert by_airflow_run.stdout == by_mark.stdout
    sweep_uri = "local://repo1/" + sweep_dir("markA", "manual__2026-11-22T09:00:00+00:00") + "summary.json"
    by_uri = run(sweep_uri, "--local-root", local_ns)
    assert by_uri.returncode == 0, by_uri.stderr
    assert "mode          sweep_only of mark markA" in by_uri.stdout
    assert "deleted       4" in by_uri.stdout
    assert "already gone  1" in by_uri.stdout
    assert (
        run("local://repo1", "--run", "manual__2026-11-22T09:00:00+00:00", "--local-root", local_ns).stdout
        == by_uri.stdout
    )
    as_json = json.loads(run("local://repo1", "--run", "markB", "--json", "--local-root", local_ns).stdout)
    assert (as_json["run_id"], as_json["deleted"], as_json["already_gone"]) == ("markB", 3, 0)


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (
            ["local://repo1"],
            {},
            "give lakeFS's blockstore.local.path with --local-root DIR (or LAKEFS_GC_LOCAL_ROOT, or the lakeFS "
            "connection's extra local_blockstore_root: --conn-id)",
        ),
        (["local://repo1", "--local-root", "/nonexistent/x"], {}, "--local-root /nonexistent/x: no such directory"),
        (
            ["ftp://bucket/repo"],
            {},
            "is not a storage namespace: give s3://bucket/prefix, gs://bucket/prefix, https://",
        ),
        (["https://Acct.example.com/c/repo"], {}, "must read https://<account>.<domain>/<container>"),
        (["local://repo1", "--run", "nosuch"], "ROOT", "no GC run 'nosuch'"),
        (["local://repo1/_lakefs/retention/gc/unified/nosuch/summary.json"], "ROOT", "no report at"),
        (
            ["local://repo1/summary.json"],
            "ROOT",
            "a report's URI has _lakefs/retention/gc/unified/<mark id>/summary.json",
        ),
    ],
)
def test_bad_input_says_what_to_fix(local_ns, args, env, message):
    res = run(*args, env={"LAKEFS_GC_LOCAL_ROOT": local_ns} if env == "ROOT" else env)
    assert res.returncode == 2
    assert res.stdout == ""
    assert res.stderr.startswith("lakefs-gc report: error: "), res.stderr
    assert message in res.stderr, res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("kind", ["azure", "gcs"])
def test_azure_and_gcs_namespaces_with_settings_from_the_environment(kind, request):
    from lakefs_sandbox.cloud_servers import AZURITE_KEY

    server = request.getfixturevalue("azurite" if kind == "azure" else "fake_gcs")
    ns = server.namespace(server.create("cli-report"), "repo1")
    _write_runs(open_storage(ns, server.options()), ns)
    env = (
        {"LAKEFS_GC_AZURE_ACCOUNT_URL": server.account_url, "LAKEFS_GC_AZURE_ACCOUNT_KEY": AZURITE_KEY}
        if kind == "azure"
        else {"LAKEFS_GC_GCS_ENDPOINT_URL": server.endpoint_url, "LAKEFS_GC_GCS_ANONYMOUS": "1"}
    )
    res = run(ns, env=env)
    assert res.returncode == 0, res.stderr
    assert [line.split()[0] for line in res.stdout.splitlines()[1:5]] == ["markB", "markA", "sweep", "markC"]
    one = run(ns, "--run", "markB", env=env)
    assert one.stdout.splitlines()[-1].split() == ["report", f"{ns}/{summary_key('markB')}"]
    assert AZURITE_KEY not in one.stdout + res.stdout + one.stderr


def test_s3_namespace_with_keys_from_the_environment(moto_server):
    bucket = moto_server.create_bucket("cli-report")
    _write_runs(open_storage(f"s3://{bucket}/repo1", moto_server.s3_options()), f"s3://{bucket}/repo1")
    env = {
        "LAKEFS_GC_S3_ACCESS_KEY_ID": moto_server.access_key,
        "LAKEFS_GC_S3_SECRET_ACCESS_KEY": moto_server.secret_key,
    }
    res = run(f"s3://{bucket}/repo1", "--s3-endpoint", moto_server.endpoint_url, env=env)
    assert res.returncode == 0, res.stderr
    assert [line.split()[0] for line in res.stdout.splitlines()[1:5]] == ["markB", "markA", "sweep", "markC"]
    one = run(
        f"s3://{bucket}/repo1", "--run", "markB", env={**env, "LAKEFS_GC_S3_ENDPOINT_URL": moto_server.endpoint_url}
    )
    assert one.returncode == 0, one.stderr
    assert one.stdout.splitlines()[-1].split() == ["report", f"s3://{bucket}/repo1/{summary_key('markB')}"]
    assert moto_server.secret_key not in one.stdout + res.stdout

    wrong = run(
        f"s3://{bucket}/repo1",
        "--s3-endpoint",
        moto_server.endpoint_url,
        env={**env, "LAKEFS_GC_S3_SECRET_ACCESS_KEY": "not-the-secret"},
    )
    nobucket = run("s3://no-such-bucket-x/repo1", "--s3-endpoint", moto_server.endpoint_url, env=env)
    for res in (wrong, nobucket):  # moto accepts any key: a missing bucket stands for a refusal
        assert res.returncode in (0, 2)
        if res.returncode == 2:
            assert res.stderr.startswith("lakefs-gc report: error: cannot read s3://")
            assert "Traceback" not in res.stderr
    assert nobucket.returncode == 2
    assert "NoSuchBucket" in nobucket.stderr
