"""A fault-injecting HTTP proxy in front of moto server (127.0.0.1), for the deleter's fault tests.

Every request is forwarded unchanged except DeleteObjects (``POST /<bucket>?delete``), which, drawn
from a seeded RNG, is answered ``503 SlowDown`` or ``500 InternalError`` without reaching moto, or
is forwarded with some keys taken out and reported failed inside the 200 answer (``InternalError``,
retryable). Keys in ``deny`` always fail inside the 200 answer with ``AccessDenied`` (permanent).
``fail`` makes other operations fail: ``{"list": 2, "get": -1, "put": 1, "head": 0}`` answers the
next N requests of that kind (-1: all) ``500 InternalError``.
Runs in a thread of the test process; ``stop()`` shuts it down.
"""

from __future__ import annotations

import base64
import hashlib
import random
import re
import threading
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xml.sax.saxutils import escape

KEY_RE = re.compile(rb"<Key>(.*?)</Key>", re.S)


class FaultyS3Proxy:
    def __init__(self, upstream: str, *, seed: int = 7, p_slowdown: float = 0.0, p_error: float = 0.0,
                 p_key_error: float = 0.0, deny: frozenset[str] = frozenset(), fail: dict[str, int] | None = None):
        self.upstream = upstream.rstrip("/")
        self.rng = random.Random(seed)
        self.p_slowdown, self.p_error, self.p_key_error = p_slowdown, p_error, p_key_error
        self.deny = deny  # full object keys (bucket-relative)
        self.fail = dict(fail or {})
        self.stats: Counter[str] = Counter()
        self.deleted_keys: list[str] = []  # what was forwarded to moto for deletion
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def _forward(self, body: bytes | None, headers: dict[str, str]):
                if body is not None and not any(k.lower() == "content-type" for k in headers):
                    # else urllib sends a form content type and moto's Flask consumes the body as a form
                    headers = {**headers, "Content-Type": "application/octet-stream"}
                req = urllib.request.Request(proxy.upstream + self.path, data=body, method=self.command,
                                             headers=headers)
                try:
                    with urllib.request.urlopen(req, timeout=30) as r:
                        return r.status, dict(r.headers), r.read()
                except urllib.error.HTTPError as e:
                    return e.code, dict(e.headers), e.read()

            def _reply(self, status: int, headers: dict[str, str], body: bytes):
                self.send_response(status)
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
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "content-length", "expect", "transfer-encoding", "connection")}
                if self.command == "POST" and re.search(r"[?&]delete(=|&|$)", self.path):
                    return self._delete_objects(body or b"", headers)
                kind = {"GET": "list" if "list-type=" in self.path else "get", "PUT": "put",
                        "HEAD": "head"}.get(self.command, "")
                with proxy.lock:
                    left = proxy.fail.get(kind, 0)
                    if left:
                        proxy.fail[kind] = left - 1 if left > 0 else left
                        proxy.stats[f"failed_{kind}"] += 1
                if left:
                    return self._reply(500, {"Content-Type": "application/xml"}, _error_xml(
                        "InternalError", f"injected {kind} failure"))
                self._reply(*self._forward(body, headers))

            def _delete_objects(self, body: bytes, headers: dict[str, str]):
                with proxy.lock:
                    roll = proxy.rng.random()
                    proxy.stats["requests"] += 1
                    if roll < proxy.p_slowdown:
                        proxy.stats["slowdown"] += 1
                        return self._reply(503, {"Content-Type": "application/xml"}, _error_xml(
                            "SlowDown", "Please reduce your request rate."))
                    if roll < proxy.p_slowdown + proxy.p_error:
                        proxy.stats["error500"] += 1
                        return self._reply(500, {"Content-Type": "application/xml"}, _error_xml(
                            "InternalError", "We encountered an internal error. Please try again."))
                    keys = [m.decode() for m in KEY_RE.findall(body)]
                    failed: dict[str, tuple[str, str]] = {}
                    for k in keys:
                        if k in proxy.deny:
                            failed[k] = ("AccessDenied", "Access Denied")
                        elif proxy.rng.random() < proxy.p_key_error:
                            failed[k] = ("InternalError", "injected per-key failure")
                    proxy.stats["key_errors"] += sum(1 for c, _ in failed.values() if c == "InternalError")
                    proxy.stats["denied"] += sum(1 for c, _ in failed.values() if c == "AccessDenied")
                    forward = [k for k in keys if k not in failed]
                    proxy.deleted_keys.extend(forward)
                if forward:
                    new_body = ("<Delete>" + "".join(f"<Object><Key>{escape(k)}</Key></Object>" for k in forward)
                                + "<Quiet>true</Quiet></Delete>").encode()
                    headers = {k: v for k, v in headers.items()
                               if not k.lower().startswith(("content-md5", "x-amz-checksum", "x-amz-sdk-checksum"))}
                    headers["Content-MD5"] = base64.b64encode(hashlib.md5(new_body).digest()).decode()
                    status, rheaders, rbody = self._forward(new_body, headers)
                    if status != 200:
                        return self._reply(status, rheaders, rbody)
                errors = "".join(f"<Error><Key>{escape(k)}</Key><Code>{c}</Code><Message>{escape(m)}</Message></Error>"
                                 for k, (c, m) in failed.items())
                xml = ('<?xml version="1.0" encoding="UTF-8"?><DeleteResult '
                       'xmlns="http://s3.amazonaws.com/doc/2006-03-01/">' + errors + "</DeleteResult>").encode()
                self._reply(200, {"Content-Type": "application/xml"}, xml)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> FaultyS3Proxy:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def _error_xml(code: str, message: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{message}</Message>'
            f"<RequestId>injected</RequestId></Error>").encode()
