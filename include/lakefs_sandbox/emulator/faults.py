"""
Injected faults: make the emulator answer like a lakeFS in trouble, for the GC's fault tests.

``PUT /_emulator/faults`` with ``{"rules": [rule, ...]}`` replaces the rules (``[]`` clears them);
``GET /_emulator/faults`` shows them with how often each fired. A rule::

    {"method": "POST", "path": "/gc/prepare_uncommited$",  # regex searched in the request path
     "skip": 0,           # let this many matching requests through first (e.g. fail page k)
     "times": 2,          # then fault this many (-1: forever)
     "status": 503,       # answer this status with a lakeFS error body ...
     "body": null,        # ... or this JSON body instead (e.g. a task that never completes)
     "delay": 0.0,        # seconds to wait first (a slow server; the client's timeout fires)
     "drop": false,       # close the connection without an answer
     "through": false}    # after the delay, let the request through to the emulator (a slow
                          # answer that races what the test does meanwhile)

Rules apply in order; the first that matches and has faults left answers.
"""

from __future__ import annotations

import asyncio
import re
import threading
from dataclasses import dataclass, field

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response


@dataclass
class Rule:
    """One fault rule (the fields of the module docstring), with how often it matched and fired."""

    method: str
    path: str
    skip: int = 0
    times: int = 1
    status: int = 503
    body: dict | None = None
    delay: float = 0.0
    drop: bool = False
    through: bool = False
    seen: int = 0
    fired: int = 0
    _re: re.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._re = re.compile(self.path)

    def public(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}


class Faults:
    """The rules in force, in order."""

    def __init__(self) -> None:
        self.rules: list[Rule] = []
        self.lock = threading.Lock()

    def set(self, rules: list[dict]) -> None:
        allowed = {"method", "path", "skip", "times", "status", "body", "delay", "drop", "through"}
        parsed = []
        for r in rules:
            unknown = set(r) - allowed
            if unknown:
                raise ValueError(f"unknown fault rule field(s) {sorted(unknown)}")
            parsed.append(Rule(**r))
        with self.lock:
            self.rules = parsed

    def match(self, method: str, path: str) -> Rule | None:
        with self.lock:
            for rule in self.rules:
                if rule.method.upper() not in (method.upper(), "*") or not rule._re.search(path):
                    continue
                rule.seen += 1
                if rule.seen <= rule.skip:
                    continue
                if rule.times >= 0 and rule.fired >= rule.times:
                    continue
                rule.fired += 1
                return rule
        return None


class FaultMiddleware:
    """ASGI middleware answering API requests from the matching rule instead of the emulator."""

    def __init__(self, app, faults: Faults):
        self.app, self.faults = app, faults

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "")
        if scope["type"] != "http" or not path.startswith("/api/v1/") or path.endswith("/healthcheck"):
            return await self.app(scope, receive, send)
        rule = self.faults.match(scope["method"], path)
        if rule is None:
            return await self.app(scope, receive, send)
        if rule.delay:
            await asyncio.sleep(rule.delay)
        if rule.through:
            return await self.app(scope, receive, send)
        if rule.drop:  # promise a body, send half of it, give up: the client sees the connection break
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"100")],
                }
            )
            await send({"type": "http.response.body", "body": b'{"truncated": ', "more_body": True})
            raise ConnectionAbortedError(f"injected: connection dropped on {scope['method']} {path}")
        body = (
            rule.body
            if rule.body is not None
            else {"message": f"injected fault: {rule.status} on {scope['method']} {path}"}
        )
        await JSONResponse(body, status_code=rule.status)(scope, receive, send)


def install(app: FastAPI, check_auth) -> Faults:
    """Add the fault endpoints and the middleware to ``app``."""
    faults = Faults()
    router = APIRouter()

    @router.get("/_emulator/faults")
    def get_faults(request: Request):
        check_auth(request)
        with faults.lock:
            return {"rules": [r.public() for r in faults.rules]}

    @router.put("/_emulator/faults")
    async def put_faults(request: Request):
        check_auth(request)
        body = await request.json()
        try:
            faults.set(list(body.get("rules") or []))
        except (TypeError, ValueError) as e:
            return JSONResponse({"message": str(e)}, status_code=400)
        return Response(status_code=204)

    app.include_router(router)
    app.add_middleware(FaultMiddleware, faults=faults)
    return faults
