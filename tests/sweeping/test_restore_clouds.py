"""The restore's calls on Azure Blob (soft delete) and GCS (soft delete), as their client libraries
send them, to a small HTTP server on 127.0.0.1 that answers as the services document.

Why not the emulators: Azurite answers the soft-delete policy calls but deletes for good and
answers ``undelete`` with ``APINotImplemented`` (Azure/Azurite#417, #2383); fake-gcs-server keeps
no soft-delete policy, lists no soft-deleted generation and refuses the restore call's body. So
these tests pin the request shapes (method, path, query) and our reading of the answers; what
the services do with them is not tested here."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from lakefs_gc.storage import AzureOptions, GCSOptions, open_storage
from lakefs_gc.sweeping import restore

NOW = datetime.now(UTC)
IN_SWEEP = NOW - timedelta(minutes=1)


class Stub:
    """A threaded HTTP server whose handler is ``answer(method, path, query, body) -> (status,
    headers, body)``; every request is recorded."""

    def __init__(self, answer):
        self.requests: list[tuple[str, str, dict]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _do(self):
                u = urlsplit(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                query = {k: v[0] for k, v in parse_qs(u.query, keep_blank_values=True).items()}
                stub.requests.append((self.command, unquote(u.path), query))
                status, headers, out = answer(self.command, unquote(u.path), query, body)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                if "Content-Length" not in headers:
                    self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(out)

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _do

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def _window() -> restore.SweptRun:
    keys = {"data/s/deleted", "data/s/again", "data/s/older"}
    return restore.SweptRun("m1", {}, keys, [], NOW - timedelta(minutes=5), NOW)


def _gcs_answer(method, path, query, body):
    j = {"Content-Type": "application/json"}
    if method == "GET" and path == "/storage/v1/b/bkt":
        return 200, j, json.dumps({"name": "bkt", "softDeletePolicy": {"retentionDurationSeconds": "604800"}}).encode()
    if method == "GET" and path == "/storage/v1/b/bkt/o" and query.get("softDeleted", "").lower() == "true":
        name = query["prefix"]
        when = {
            "repo/data/s/deleted": IN_SWEEP,
            "repo/data/s/again": IN_SWEEP,
            "repo/data/s/older": NOW - timedelta(days=3),
        }[name]
        items = [
            {
                "kind": "storage#object",
                "bucket": "bkt",
                "name": name,
                "generation": "1700000000000001",
                "softDeleteTime": when.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            }
        ]
        return 200, j, json.dumps({"kind": "storage#objects", "items": items}).encode()
    if method == "GET" and path.startswith("/storage/v1/b/bkt/o/"):
        name = path[len("/storage/v1/b/bkt/o/") :]
        if name == "repo/data/s/again":  # written again since the sweep
            return (
                200,
                j,
                json.dumps(
                    {
                        "bucket": "bkt",
                        "name": name,
                        "generation": "1700000000000009",
                        "size": "3",
                        "updated": NOW.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                    }
                ).encode(),
            )
        return 404, j, json.dumps({"error": {"code": 404, "message": "No such object"}}).encode()
    if method == "POST" and path.endswith("/restore"):
        name = path[len("/storage/v1/b/bkt/o/") : -len("/restore")]
        return 200, j, json.dumps({"bucket": "bkt", "name": name, "generation": query.get("generation")}).encode()
    return 400, j, b"{}"


def test_gcs_soft_delete_restore_sends_the_restore_call_with_its_generation_and_never_over_an_object():
    stub = Stub(_gcs_answer)
    try:
        st = open_storage("gs://bkt/repo", GCSOptions(endpoint_url=stub.url, project="p", anonymous=True))
        r = restore.restorability(st, NOW)
        assert r.how == "gcs soft delete"
        assert r.restorable
        assert "7 days" in r.detail
        run = _window()
        assert st.restore_key("data/s/deleted", run, False, NOW)[0] == restore.RESTORED
        assert st.restore_key("data/s/again", run, False, NOW)[0] == restore.WRITTEN_SINCE
        assert st.restore_key("data/s/older", run, False, NOW)[0] == restore.DELETED_AGAIN
        assert st.restore_key("data/s/deleted", run, True, NOW)[0] == restore.WOULD_RESTORE
    finally:
        stub.stop()
    posts = [(p, q) for m, p, q in stub.requests if m == "POST"]
    # one restore: the deleted generation, only if no live object has the name (GCS refuses it otherwise)
    assert posts == [
        (
            "/storage/v1/b/bkt/o/repo/data/s/deleted/restore",
            {"generation": "1700000000000001", "ifGenerationMatch": "0", "prettyPrint": "false"},
        )
    ]
    lists = [q for m, p, q in stub.requests if m == "GET" and p == "/storage/v1/b/bkt/o"]
    assert all(q["softDeleted"] == "True" and q["prefix"].startswith("repo/data/s/") for q in lists)


def _azure_answer(method, path, query, body):
    x = {"Content-Type": "application/xml", "x-ms-version": "2021-08-06"}
    if method == "GET" and query.get("comp") == "properties" and query.get("restype") == "service":
        return (
            200,
            x,
            (
                b'<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><DeleteRetentionPolicy>'
                b"<Enabled>true</Enabled><Days>14</Days></DeleteRetentionPolicy></StorageServiceProperties>"
            ),
        )
    if method == "GET" and query.get("comp") == "list":
        name = query["prefix"]
        when = {"repo/data/s/deleted": IN_SWEEP, "repo/data/s/older": NOW - timedelta(days=3)}.get(name)
        blobs = (
            ""
            if when is None
            else (
                f"<Blob><Name>{name}</Name><Deleted>true</Deleted><Properties>"
                f"<Last-Modified>{(when - timedelta(days=1)).strftime('%a, %d %b %Y %H:%M:%S GMT')}</Last-Modified>"
                f"<Content-Length>3</Content-Length><BlobType>BlockBlob</BlobType>"
                f"<DeletedTime>{when.strftime('%a, %d %b %Y %H:%M:%S GMT')}</DeletedTime>"
                f"<RemainingRetentionDays>13</RemainingRetentionDays></Properties></Blob>"
            )
        )
        return (
            200,
            x,
            (
                f'<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="x" '
                f'ContainerName="ctr"><Prefix>{name}</Prefix><Blobs>{blobs}</Blobs><NextMarker />'
                f"</EnumerationResults>"
            ).encode(),
        )
    if method == "HEAD":
        if path.endswith("/repo/data/s/again"):
            return (
                200,
                {
                    **x,
                    "Content-Length": "3",
                    "x-ms-blob-type": "BlockBlob",
                    "Last-Modified": NOW.strftime("%a, %d %b %Y %H:%M:%S GMT"),
                },
                b"",
            )
        return 404, {**x, "x-ms-error-code": "BlobNotFound"}, b""
    if method == "PUT" and query.get("comp") == "undelete":
        return 200, x, b""
    return 400, {**x, "x-ms-error-code": "InvalidQueryParameterValue"}, b""


def test_azure_soft_delete_restore_undeletes_only_a_blob_deleted_in_the_sweep():
    stub = Stub(_azure_answer)
    try:
        opts = AzureOptions(
            account_url=f"{stub.url}/acct",
            account_name="acct",
            account_key="a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5",
        )
        st = open_storage("https://acct.blob.core.windows.net/ctr/repo", opts)
        r = restore.restorability(st, NOW)
        assert r.how == "azure soft delete"
        assert r.restorable
        assert "14 days" in r.detail
        run = _window()
        assert st.restore_key("data/s/deleted", run, False, NOW)[0] == restore.RESTORED
        assert st.restore_key("data/s/again", run, False, NOW)[0] == restore.WRITTEN_SINCE
        assert st.restore_key("data/s/older", run, False, NOW)[0] == restore.DELETED_AGAIN
        assert st.restore_key("data/s/never", run, False, NOW)[0] == restore.NO_VERSION
    finally:
        stub.stop()
    puts = [(p, q) for m, p, q in stub.requests if m == "PUT"]
    assert puts == [("/acct/ctr/repo/data/s/deleted", {"comp": "undelete"})]
    lists = [q for m, p, q in stub.requests if m == "GET" and q.get("comp") == "list"]
    assert lists
    assert all(q["include"] == "deleted" and q["restype"] == "container" for q in lists)


@pytest.mark.parametrize("kind", ["gcs", "azure"])
def test_a_store_that_cannot_say_is_unknown_not_restorable(kind):
    stub = Stub(
        lambda *a: (
            403,
            {"Content-Type": "application/json", "x-ms-error-code": "AuthorizationFailure"},
            b'{"error": {"code": 403, "message": "denied"}}',
        )
    )
    try:
        st = (
            open_storage("gs://bkt/repo", GCSOptions(endpoint_url=stub.url, project="p", anonymous=True))
            if kind == "gcs"
            else open_storage(
                "https://acct.blob.core.windows.net/ctr/repo",
                AzureOptions(
                    account_url=f"{stub.url}/acct",
                    account_name="acct",
                    account_key="a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5",
                ),
            )
        )
        r = restore.restorability(st, NOW)
        assert r.restorable is None
        assert r.until is None
    finally:
        stub.stop()
