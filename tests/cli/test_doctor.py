"""``lakefs-gc doctor``'s parts that need no lakeFS: ``--policy`` for each kind of namespace (given with
``--namespace``), bad input (exit status 2), and the runtime checks against a fake ``java`` and a fake
standalone master's REST server. The checks against lakeFS itself: ``tests/real_lakefs/test_doctor.py``."""

from __future__ import annotations

import io
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from lakefs_gc.cli import main as cli
from lakefs_gc.doctor import Report
from lakefs_gc.doctor.policy import AZURE_DATA_ACTIONS, GCS_PERMISSIONS, LAKEFS_ACTIONS, S3_ACTIONS
from lakefs_gc.doctor.runtime_checks import check_cluster, check_java


@pytest.fixture(autouse=True)
def no_config(monkeypatch):
    """No repositories file: the commands' defaults."""
    monkeypatch.setenv("LAKEFS_GC_CONFIG", "/nonexistent/gc.yaml")


def policy(capsys, namespace: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli(["doctor", "repo1", "--policy", "--namespace", namespace])
    out, err = capsys.readouterr()
    return rc, out, err


def blocks(out: str) -> list[dict]:
    """The JSON documents of the printout (each starts a line; the comments around them start with #), in order."""
    decoder = json.JSONDecoder()
    found, offset = [], 0
    for line in out.splitlines(keepends=True):
        if line.startswith("{"):
            found.append(decoder.raw_decode(out[offset:])[0])
        offset += len(line)
    return found


def test_the_s3_policy_names_each_action_on_the_bucket_or_the_namespace_prefix(capsys):
    rc, out, err = policy(capsys, "s3://bkt/some/ns/")
    assert rc == 0, err
    iam, lakefs = blocks(out)
    by_sid = {s["Sid"]: s for s in iam["Statement"]}
    assert by_sid["LakeFSGCBucket"]["Resource"] == "arn:aws:s3:::bkt"
    assert by_sid["LakeFSGCObjects"]["Resource"] == "arn:aws:s3:::bkt/some/ns/*"
    named = {a for s in iam["Statement"] for a in s["Action"]}
    assert named == {a.name for a in S3_ACTIONS}
    assert by_sid["LakeFSGCBucket"]["Action"] == [a.name for a in S3_ACTIONS if a.scope == "bucket"]
    assert {a for s in lakefs["statement"] for a in s["action"]} == {a.name for a in LAKEFS_ACTIONS}
    resources = {s["resource"] for s in lakefs["statement"]}
    assert resources == {"*", "arn:lakefs:fs:::repository/repo1", "arn:lakefs:fs:::repository/repo1/branch/*",
                         "arn:lakefs:fs:::repository/repo1/object/*"}  # fmt: skip


def test_azure_and_gcs_get_their_roles(capsys):
    rc, out, _ = policy(capsys, "https://acct.blob.core.windows.net/container/ns")
    assert rc == 0
    role = blocks(out)[0]
    assert role["DataActions"] == list(AZURE_DATA_ACTIONS)
    assert "'Storage Blob Data Contributor' on the container" in out
    rc, out, _ = policy(capsys, "gs://bucket/ns")
    assert rc == 0
    assert blocks(out)[0]["includedPermissions"] == list(GCS_PERMISSIONS)
    assert "roles/storage.objectAdmin on bucket bucket" in out


def test_a_local_namespace_needs_no_cloud_policy(capsys):
    rc, out, _ = policy(capsys, "local://repo1")
    assert rc == 0
    assert out.startswith("# local://repo1: a local:// namespace needs no cloud policy")
    assert len(blocks(out)) == 1  # lakeFS's


def test_bad_input_is_one_line_and_exit_2(capsys, monkeypatch):
    rc, _, err = policy(capsys, "ftp://nowhere/x")
    assert rc == 2
    assert (
        err
        == "lakefs-gc doctor: error: 'ftp://nowhere/x' is no storage namespace (s3://, gs://, https://<account>.blob..., local://)\n"
    )
    for name in (
        "LAKEFS_GC_LAKEFS_ENDPOINT",
        "LAKEFS_ENDPOINT",
        "LAKEFS_GC_LAKEFS_ACCESS_KEY_ID",
        "LAKEFS_ACCESS_KEY_ID",
    ):
        monkeypatch.delenv(name, raising=False)
    rc = cli(["doctor", "repo1", "--conn-id", "lakefs_gc_test_none"])
    _, err = capsys.readouterr()
    assert rc == 2
    assert err.startswith("lakefs-gc doctor: error: lakeFS connection 'lakefs_gc_test_none' is not defined"), err
    assert err.count("\n") == 1


def test_an_old_java_fails_and_a_new_one_passes(tmp_path):
    for printed, status in (('openjdk version "11.0.2" 2019-01-15', "FAIL"), ('openjdk version "17.0.9"', "PASS"),
                            ('java version "1.8.0_392"', "FAIL")):  # fmt: skip
        java = tmp_path / "java"
        java.write_text(f"#!/bin/sh\necho '{printed}' >&2\n")
        java.chmod(0o755)
        report = Report(io.StringIO())
        check_java(report, str(java))
        (line,) = report.lines
        assert line.status == status, (printed, line)
    report = Report(io.StringIO())
    check_java(report, str(tmp_path / "no-java"))
    assert report.lines[0].status == "FAIL"
    assert "install Java 17 or newer" in report.lines[0].text()


@pytest.fixture
def master():
    """A standalone master's REST submission server that runs Spark 3.5.1 (its answer to a status call)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"action": "SubmissionStatusResponse", "serverSparkVersion": "3.5.1", "success": False})
            self.send_response(404)
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()


def test_the_cluster_spark_is_read_from_a_standalone_master(master, monkeypatch):
    from lakefs_gc.doctor import runtime_checks

    monkeypatch.setattr(runtime_checks, "REST_PORT", master)
    report = Report(io.StringIO())
    check_cluster(report, "spark://127.0.0.1:7077", "--spark-master", "4.2.0")
    (line,) = report.lines
    assert line.text() == (
        "FAIL  Spark on the cluster: master spark://127.0.0.1:7077 runs Spark 3.5.1, the task pyspark 4.2.0; "
        "fix: install pyspark==3.5.1 and pyspark-client==3.5.1 on the task, or run Spark 4.2.0"
    )
    report = Report(io.StringIO())
    check_cluster(report, "spark://127.0.0.1:7077", "--spark-master", "3.5.0")
    assert report.lines[0].status == "PASS"
    monkeypatch.setattr(runtime_checks, "REST_PORT", 1)  # nothing answers there
    report = Report(io.StringIO())
    check_cluster(report, "spark://127.0.0.1:7077", "--spark-master", "4.2.0")
    assert report.lines[0].text().startswith("WARN  Spark on the cluster: not checked: master spark://127.0.0.1:7077's")
