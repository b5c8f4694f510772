"""
The shared delete rate across processes: a small HTTP server in the Spark driver, leased from by executors.

:class:`RateServer` serves one :class:`lakefs_gc.sweeping.shared_rate.AdaptiveRate` from a thread of
the driver, bound to the driver's host (127.0.0.1 in local mode; ``spark.driver.bindAddress`` or
``spark.driver.host`` on a cluster), on a free port. Every request carries a random token (made per
sweep; it travels to the executors inside the task, never in a log): ``POST /lease`` books keys and
answers the seconds to wait (with the keys deleted since the last lease, for the increase);
``POST /throttled`` reports a throttle. It stops when the sweep ends.

:class:`RateLease` (picklable) is what the executors get; :meth:`RateLease.open` makes a
:class:`RemoteRate`. An executor that cannot reach the server (or is refused) falls back, for the
rest of its task, to a rate of its own at ``fallback`` keys/s (the run's rate split evenly across
the tasks at once: the deleter before the shared rate, backing off alone), and logs it once: the
rate server never fails a sweep.
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lakefs_gc.sweeping.shared_rate import AdaptiveRate, RateSource

log = logging.getLogger(__name__)

TOKEN_HEADER = "X-Lakefs-Gc-Rate-Token"
TIMEOUT = 5.0  # seconds an executor waits for the server before falling back


@dataclass(frozen=True)
class RateLease:
    """Where an executor's deleters lease their keys: the driver's server, and the rate to fall back to."""

    url: str
    token: str
    fallback: float  # keys/s of a task that cannot reach the server (0: unlimited)

    def __repr__(self) -> str:  # the token stays out of logs
        return f"RateLease(url={self.url!r}, fallback={self.fallback:g})"

    def open(self) -> RemoteRate:
        return RemoteRate(self)


@dataclass(frozen=True)
class OwnShare:
    """Where the tasks lease when the driver could not serve the rate: each its own, at ``fallback`` keys/s."""

    fallback: float

    def open(self) -> AdaptiveRate:
        return AdaptiveRate(self.fallback)


def serve(
    rate: AdaptiveRate, host: str, fallback: float, advertise: str | None = None
) -> AbstractContextManager[RateSource]:
    """Return :class:`RateServer`'s context; one that yields :class:`OwnShare` when it cannot listen (logged)."""
    try:
        return RateServer(rate, host, fallback, advertise)
    except OSError as exc:
        log.warning(
            "cannot serve the shared delete rate on %s (%s): each delete task deletes at its even share of the "
            "run's rate, backing off alone",
            host,
            exc,
        )
        return nullcontext(OwnShare(fallback))


class RemoteRate:
    """A :class:`lakefs_gc.sweeping.shared_rate.Rate` leased from a :class:`RateServer`; its own rate when it cannot be."""

    def __init__(self, lease: RateLease, sleep: Callable[[float], None] = time.sleep):
        self.lease, self.sleep = lease, sleep
        self.local: AdaptiveRate | None = None  # set once the server could not be reached
        self._ok = 0  # keys deleted since the last lease, sent with the next one
        self._lock = threading.Lock()

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """Return the server's answer; None (and from now on the fallback rate) when there is none."""
        import urllib.request

        if self.local is not None:
            return None
        req = urllib.request.Request(
            self.lease.url + path,
            data=json.dumps(body).encode(),
            method="POST",
            headers={TOKEN_HEADER: self.lease.token, "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
                answer = json.loads(r.read())
            if not isinstance(answer, dict):
                raise ValueError(f"expected an object, got {type(answer).__name__}")
            return answer
        except Exception as exc:
            self._own(exc)
            return None

    def _own(self, why: object = None) -> AdaptiveRate:
        """Return this task's own rate (made, and logged, the first time: the server could not be reached)."""
        with self._lock:
            if self.local is None:
                self.local = AdaptiveRate(self.lease.fallback, sleep=self.sleep)
                log.warning(
                    "the shared delete rate at %s cannot be reached (%s): this task deletes at a rate of its own, "
                    "at most %s keys/s (the run's rate split evenly across its tasks), backing off alone",
                    self.lease.url,
                    why,
                    f"{self.lease.fallback:g}" if self.lease.fallback else "unlimited",
                )
            return self.local

    def acquire(self, n: int) -> None:
        with self._lock:
            ok, self._ok = self._ok, 0
        answer = self._post("/lease", {"n": n, "ok": ok})
        if answer is None:
            self._own().acquire(n)
            return
        wait = float(answer.get("wait", 0.0))
        if wait > 0:
            self.sleep(wait)

    def succeeded(self, n: int) -> None:
        if self.local is not None:
            self.local.succeeded(n)
            return
        with self._lock:
            self._ok += n

    def throttled(self) -> None:
        if self._post("/throttled", {}) is None:
            self._own().throttled()


class RateServer:
    """Serve ``rate`` on ``host`` (a free port) from a thread, until :meth:`stop` (or the ``with`` block ends)."""

    def __init__(self, rate: AdaptiveRate, host: str, fallback: float, advertise: str | None = None):
        """``host``: the address to bind; ``advertise``: the one executors reach it at (default ``host``)."""
        self.rate = rate
        self.token = secrets.token_urlsafe(24)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet: a request per batch
                return None

            def do_POST(self) -> None:
                given = self.headers.get(TOKEN_HEADER) or ""
                if not hmac.compare_digest(given.encode(), server.token.encode()):
                    return self._answer(403, {"error": "wrong token"})
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                    if self.path == "/lease":
                        if int(body.get("ok", 0)) > 0:
                            server.rate.succeeded(int(body["ok"]))
                        return self._answer(200, {"wait": server.rate.lease(int(body["n"]))})
                    if self.path == "/throttled":
                        server.rate.throttled()
                        return self._answer(200, {})
                except (ValueError, KeyError, TypeError) as exc:
                    return self._answer(400, {"error": str(exc)})
                return self._answer(404, {"error": f"no {self.path}"})

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer((host, 0), Handler)
        self.httpd.daemon_threads = True
        port = self.httpd.server_address[1]
        self.lease = RateLease(f"http://{_url_host(advertise or host)}:{port}", self.token, fallback)
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="delete-rate", daemon=True)

    def start(self) -> RateServer:
        self._thread.start()
        log.info("the shared delete rate is served at %s", self.lease.url)
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> RateLease:
        self.start()
        return self.lease

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
