"""A fault-injecting HTTP proxy in front of moto server (127.0.0.1), for the deleter's fault tests.

Every request is forwarded unchanged except DeleteObjects (``POST /<bucket>?delete``), which, drawn
from a seeded RNG, is answered ``503 SlowDown`` or ``500 InternalError`` without reaching moto, or
is forwarded with some keys taken out and reported failed inside the 200 answer (``InternalError``,
retryable). Keys in ``deny`` always fail inside the 200 answer with ``AccessDenied`` (permanent).
``fail`` makes other operations fail: ``{"list": 2, "get": -1, "put": 1, "head": 0}`` answers the
next N requests of that kind (-1: all) ``500 InternalError``.
Runs in a thread of the test process (:class:`tests.support.faulty_http.FaultyProxy`); ``stop()`` shuts it down.
"""

from __future__ import annotations

import base64
import hashlib
import re
from xml.sax.saxutils import escape

from tests.support.faulty_http import FaultyProxy

KEY_RE = re.compile(rb"<Key>(.*?)</Key>", re.S)


class FaultyS3Proxy(FaultyProxy):
    def __init__(
        self,
        upstream: str,
        *,
        seed: int = 7,
        p_slowdown: float = 0.0,
        p_error: float = 0.0,
        p_key_error: float = 0.0,
        deny: frozenset[str] = frozenset(),
        fail: dict[str, int] | None = None,
    ):
        super().__init__(upstream, seed=seed)
        self.p_slowdown, self.p_error, self.p_key_error = p_slowdown, p_error, p_key_error
        self.deny = deny  # full object keys (bucket-relative)
        self.fail = dict(fail or {})

    def intercept(self, handler, body, headers) -> bool:
        if handler.command == "POST" and re.search(r"[?&]delete(=|&|$)", handler.path):
            self._delete_objects(handler, body or b"", headers)
            return True
        kind = {"GET": "list" if "list-type=" in handler.path else "get", "PUT": "put", "HEAD": "head"}.get(
            handler.command, ""
        )
        with self.lock:
            left = self.fail.get(kind, 0)
            if left:
                self.fail[kind] = left - 1 if left > 0 else left
                self.stats[f"failed_{kind}"] += 1
        if not left:
            return False
        handler.reply(500, {"Content-Type": "application/xml"}, _error_xml("InternalError", f"injected {kind} failure"))
        return True

    def _delete_objects(self, handler, body: bytes, headers: dict[str, str]) -> None:
        with self.lock:
            roll = self.rng.random()
            self.stats["requests"] += 1
            if roll < self.p_slowdown:
                self.stats["slowdown"] += 1
                return handler.reply(
                    503, {"Content-Type": "application/xml"}, _error_xml("SlowDown", "Please reduce your request rate.")
                )
            if roll < self.p_slowdown + self.p_error:
                self.stats["error500"] += 1
                return handler.reply(
                    500,
                    {"Content-Type": "application/xml"},
                    _error_xml("InternalError", "We encountered an internal error. Please try again."),
                )
            keys = [m.decode() for m in KEY_RE.findall(body)]
            failed: dict[str, tuple[str, str]] = {}
            for k in keys:
                if k in self.deny:
                    failed[k] = ("AccessDenied", "Access Denied")
                elif self.rng.random() < self.p_key_error:
                    failed[k] = ("InternalError", "injected per-key failure")
            self.stats["key_errors"] += sum(1 for c, _ in failed.values() if c == "InternalError")
            self.stats["denied"] += sum(1 for c, _ in failed.values() if c == "AccessDenied")
            forward = [k for k in keys if k not in failed]
            self.deleted_keys.extend(forward)
        if forward:
            new_body = (
                "<Delete>"
                + "".join(f"<Object><Key>{escape(k)}</Key></Object>" for k in forward)
                + "<Quiet>true</Quiet></Delete>"
            ).encode()
            headers = {
                k: v
                for k, v in headers.items()
                if not k.lower().startswith(("content-md5", "x-amz-checksum", "x-amz-sdk-checksum"))
            }
            headers["Content-MD5"] = base64.b64encode(hashlib.md5(new_body).digest()).decode()
            status, rheaders, rbody = handler.forward(new_body, headers)
            if status != 200:
                return handler.reply(status, rheaders, rbody)
        errors = "".join(
            f"<Error><Key>{escape(k)}</Key><Code>{c}</Code><Message>{escape(m)}</Message></Error>"
            for k, (c, m) in failed.items()
        )
        xml = (
            '<?xml version="1.0" encoding="UTF-8"?><DeleteResult '
            'xmlns="http://s3.amazonaws.com/doc/2006-03-01/">' + errors + "</DeleteResult>"
        ).encode()
        handler.reply(200, {"Content-Type": "application/xml"}, xml)


def _error_xml(code: str, message: str) -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{message}</Message>'
        f"<RequestId>injected</RequestId></Error>"
    ).encode()
