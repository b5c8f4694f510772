"""Fault-injecting HTTP proxies in front of the cloud stand-ins (127.0.0.1), for the deleter's fault
tests: :class:`FaultyProxy` forwards every request unchanged unless a subclass's ``intercept``
answers it; :class:`FaultyAzureProxy` (Azurite) and :class:`FaultyGCSProxy` (fake-gcs-server)
fault the delete calls the way those clouds fail them. The S3 one is in ``faulty_s3``.
Each runs in a thread of the test process; ``stop()`` shuts it down.
"""

from __future__ import annotations

import json
import random
import re
import threading
import urllib.error
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

HOP_BY_HOP = ("host", "content-length", "expect", "transfer-encoding", "connection")


class FaultyProxy:
    """Forward to ``upstream``; ``intercept(handler, body, headers)`` may answer a request itself
    (return True) using ``handler.forward`` and ``handler.reply``."""

    def __init__(self, upstream: str, *, seed: int = 7):
        self.upstream = upstream.rstrip("/")
        self.rng = random.Random(seed)
        self.stats: Counter[str] = Counter()
        self.deleted_keys: list[str] = []  # what was forwarded upstream for deletion
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def forward(self, body: bytes | None, headers: dict[str, str]):
                if body is not None and not any(k.lower() == "content-type" for k in headers):
                    # else urllib sends a form content type and moto's Flask consumes the body as a form
                    headers = {**headers, "Content-Type": "application/octet-stream"}
                req = urllib.request.Request(
                    proxy.upstream + self.path, data=body, method=self.command, headers=headers
                )
                try:
                    with urllib.request.urlopen(req, timeout=30) as r:
                        return r.status, dict(r.headers), r.read()
                except urllib.error.HTTPError as e:
                    return e.code, dict(e.headers), e.read()

            def reply(self, status: int, headers: dict[str, str], body: bytes, reason: str | None = None):
                self.send_response(status, reason)
                for k, v in headers.items():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                if not proxy.intercept(self, body, headers):
                    self.reply(*self.forward(body, headers))

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def intercept(self, handler, body: bytes | None, headers: dict[str, str]) -> bool:
        return False

    def start(self):
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


class FaultyAzureProxy(FaultyProxy):
    """Azure Blob Batch faults: a whole batch answered ``503 ServerBusy`` (``p_busy``) or ``500
    InternalError`` (``p_error``) without reaching Azurite; or forwarded, with some sub-responses
    turned into ``503 ServerBusy`` (``p_key_error``; Azurite did delete those blobs, so a retry finds
    them gone). Permanent per-key failures come from Azurite itself (e.g. a leased blob: 412)."""

    def __init__(self, upstream: str, *, p_busy: float = 0.0, p_error: float = 0.0, p_key_error: float = 0.0, **kw):
        super().__init__(upstream, **kw)
        self.p_busy, self.p_error, self.p_key_error = p_busy, p_error, p_key_error

    def intercept(self, handler, body, headers) -> bool:
        if not (handler.command == "POST" and "comp=batch" in handler.path):
            return False
        with self.lock:
            self.stats["requests"] += 1
            roll = self.rng.random()
        if roll < self.p_busy + self.p_error:
            busy = roll < self.p_busy
            code, status, text = (
                ("ServerBusy", 503, "The server is busy.")
                if busy
                else ("InternalError", 500, "The server encountered an internal error.")
            )
            with self.lock:
                self.stats["busy" if busy else "error500"] += 1
            handler.reply(
                status,
                {"Content-Type": "application/xml", "x-ms-error-code": code},
                f'<?xml version="1.0" encoding="utf-8"?><Error><Code>{code}</Code><Message>{text}'
                f"</Message></Error>".encode(),
                text,
            )
            return True
        paths = [unquote(urlsplit(p.decode()).path) for p in re.findall(rb"DELETE (\S+) HTTP/1.1", body or b"")]
        status, rheaders, rbody = handler.forward(body, headers)
        with self.lock:
            self.deleted_keys.extend(paths)
            if status == 202:
                rbody = self._fail_some(rheaders, rbody)
        handler.reply(status, rheaders, rbody)
        return True

    def _fail_some(self, headers: dict[str, str], body: bytes) -> bytes:
        ctype = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
        boundary = ctype.partition("boundary=")[2].strip('"').encode()
        if not boundary:
            return body
        parts = body.split(b"--" + boundary)
        for i, part in enumerate(parts):
            if b"HTTP/1.1 202" in part and self.rng.random() < self.p_key_error:
                parts[i] = re.sub(
                    rb"HTTP/1.1 202 [^\r\n]*",
                    b"HTTP/1.1 503 The server is busy.\r\nx-ms-error-code: ServerBusy",
                    part,
                    count=1,
                )
                self.stats["key_errors"] += 1
        return (b"--" + boundary).join(parts)


class FaultyGCSProxy(FaultyProxy):
    """GCS delete faults: ``objects.delete`` answered ``429`` (``p_busy``) or ``503`` (``p_error``)
    without reaching the server; names in ``deny`` (bucket-relative) always ``403``. Both of GCS's
    delete forms: the JSON API's (the library's) and the XML API's ``DELETE /bucket/object`` (obstore's)."""

    DELETE = re.compile(r"^/storage/v1/b/([^/]+)/o/([^?]+)|^/(?!storage/|upload/|batch/)([^/?]+)/([^?]+)")

    def __init__(
        self, upstream: str, *, p_busy: float = 0.0, p_error: float = 0.0, deny: frozenset[str] = frozenset(), **kw
    ):
        super().__init__(upstream, **kw)
        self.p_busy, self.p_error, self.deny = p_busy, p_error, deny

    def intercept(self, handler, body, headers) -> bool:
        m = self.DELETE.match(handler.path) if handler.command == "DELETE" else None
        if m is None:
            return False
        name = unquote(m.group(2) or m.group(4))
        with self.lock:
            self.stats["requests"] += 1
            roll = self.rng.random()
            if name in self.deny:
                status, why = 403, "denied"
            elif roll < self.p_busy:
                status, why = 429, "busy"
            elif roll < self.p_busy + self.p_error:
                status, why = 503, "error503"
            else:
                status, why = 0, ""
                self.deleted_keys.append(name)
            if why:
                self.stats[why] += 1
        if not status:
            return False
        message = {403: "Forbidden", 429: "rateLimitExceeded", 503: "backendError"}[status]
        handler.reply(
            status,
            {"Content-Type": "application/json"},
            json.dumps({"error": {"code": status, "message": message, "errors": [{"reason": message}]}}).encode(),
        )
        return True
