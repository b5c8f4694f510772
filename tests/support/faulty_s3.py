"""A fault-injecting HTTP proxy in front of moto server (127.0.0.1), for the deleter's fault tests.

Every request is forwarded unchanged except DeleteObjects (``POST /<bucket>?delete``), which, drawn
from a seeded RNG, is answered ``503 SlowDown`` or ``500 InternalError`` without reaching moto, or
is forwarded with some keys taken out and reported failed inside the 200 answer (``InternalError``,
retryable). Keys in ``deny`` always fail inside the 200 answer with ``AccessDenied`` (permanent).
A SlowDown storm (``storm_share``): from the first DeleteObjects on, that share of them is answered
``503 SlowDown`` for ``storm_seconds`` (or the first ``storm_requests`` DeleteObjects), then none;
with ``storm_capacity`` (keys/s) the storm also throttles, as S3 does, the DeleteObjects that would
take the keys forwarded in the last second past it;
``deleted_at`` records when each forwarded key count reached moto (the bench's throughput).
``fail`` makes other operations fail: ``{"list": 2, "get": -1, "put": 1, "head": 0}`` answers the
next N requests of that kind (-1: all) ``500 InternalError``.
Runs in a thread of the test process (:class:`tests.support.faulty_http.FaultyProxy`); ``stop()`` shuts it down.
"""

from __future__ import annotations

import base64
import hashlib
import re
import time
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
        storm_share: float = 0.0,
        storm_seconds: float | None = None,
        storm_requests: int | None = None,
        storm_capacity: float | None = None,
    ):
        super().__init__(upstream, seed=seed)
        self.p_slowdown, self.p_error, self.p_key_error = p_slowdown, p_error, p_key_error
        self.storm_share, self.storm_seconds, self.storm_requests = storm_share, storm_seconds, storm_requests
        self.storm_capacity = storm_capacity
        self.storm_started: float | None = None  # time.monotonic() of the first DeleteObjects
        self.deleted_at: list[tuple[float, int]] = []  # (time.monotonic(), keys forwarded to moto)
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

    def in_storm(self, now: float) -> bool:
        """Whether the storm blows at ``now`` (time.monotonic()); call with the lock held."""
        if not (self.storm_share or self.storm_capacity is not None) or self.storm_started is None:
            return False
        if self.storm_seconds is not None and now - self.storm_started >= self.storm_seconds:
            return False
        return self.storm_requests is None or self.stats["requests"] <= self.storm_requests

    def _storm_throttles(self, now: float, body: bytes) -> bool:
        """Whether the storm throttles this DeleteObjects (its share, or past its capacity); lock held."""
        if self.storm_share and self.rng.random() < self.storm_share:
            return True
        if self.storm_capacity is None:
            return False
        recent = sum(n for t, n in self.deleted_at if t > now - 1.0)
        return recent + len(KEY_RE.findall(body)) > self.storm_capacity

    def _delete_objects(self, handler, body: bytes, headers: dict[str, str]) -> None:
        with self.lock:
            now = time.monotonic()
            if (self.storm_share or self.storm_capacity is not None) and self.storm_started is None:
                self.storm_started = now
            roll = self.rng.random()
            self.stats["requests"] += 1
            if self.in_storm(now) and self._storm_throttles(now, body):
                self.stats["slowdown"] += 1
                self.stats["storm_slowdown"] += 1
                return handler.reply(
                    503, {"Content-Type": "application/xml"}, _error_xml("SlowDown", "Please reduce your request rate.")
                )
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
            with self.lock:
                self.deleted_at.append((time.monotonic(), len(forward)))
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
