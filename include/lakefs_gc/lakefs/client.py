"""
lakeFS through the official SDK (`lakefs-sdk`), with the calls GC needs and safe retries.

Retries: 5xx, 429 and connection errors are retried with full-jitter exponential backoff; other
4xx are not (reference 8.1). The budget is the lakeFS connection's extras (``max_retries`` 5,
``backoff_base`` 0.5 s, ``backoff_max`` 20 s: at most 15.5 s of waiting between six attempts by
default), each attempt bounded by ``connect_timeout`` (10 s) and ``request_timeout`` (120 s). A
lakeFS that cannot be reached within the budget is :class:`LakeFSUnreachable`: one line naming the
endpoint, the connection and what to check; the traceback goes to DEBUG. Everything that would let
GC run on partial information raises ``LakeFSGCError`` with a message saying what is wrong and
what to do.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

import lakefs_sdk
import urllib3
from lakefs_sdk.exceptions import ApiException

from lakefs_gc.errors import LakeFSGCError, NoGCRulesError, Unreachable
from lakefs_gc.lakefs.reads import LakeFSReads

log = logging.getLogger(__name__)
T = TypeVar("T")

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
API_PATH = "/api/v1"


def api_endpoint(url: str) -> str:
    """
    Return lakeFS's API base: ``url`` without trailing ``/``, ending in ``/api/v1``.

    The one place that normalises it.
    """
    base = url.rstrip("/")
    return base if base.endswith(API_PATH) else base + API_PATH


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, ApiException):
        return exc.status in RETRY_STATUSES or exc.status in (None, 0)
    return isinstance(exc, (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError))


class LakeFSUnreachable(Unreachable):
    """lakeFS did not answer within the connection's retry budget (refused, reset, timed out)."""


def _connection_failure(exc: BaseException) -> str | None:
    """
    Tell why lakeFS could not be reached (``connection refused``, ``timed out``, ...).

    None when it answered (an HTTP status, even a 5xx).
    """
    if isinstance(exc, ApiException) and exc.status not in (None, 0):
        return None
    reason = getattr(exc, "reason", None) if isinstance(exc, urllib3.exceptions.MaxRetryError) else exc
    text = str(reason or exc)
    for needle, why in (
        ("Connection refused", "connection refused"),
        ("Name or service not known", "unknown host"),
        ("nodename nor servname", "unknown host"),
        ("Temporary failure in name resolution", "unknown host"),
        ("Connection reset", "connection reset"),
        ("RemoteDisconnected", "connection closed"),
        ("timed out", "timed out"),
    ):
        if needle in text:
            return why
    # (urllib3's NewConnectionError is a ConnectTimeoutError: the reasons above come first)
    if isinstance(reason, (urllib3.exceptions.ConnectTimeoutError, urllib3.exceptions.ReadTimeoutError, TimeoutError)):
        return "timed out"
    if isinstance(exc, (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError)):
        return f"{type(reason or exc).__name__}"
    return None


def _error_message(exc: BaseException) -> str:
    if isinstance(exc, ApiException):
        body = (exc.body or "").strip() if isinstance(exc.body, str) else exc.body
        return f"HTTP {exc.status} {exc.reason or ''}: {body}".strip()
    return f"{type(exc).__name__}: {exc}"


def prepare_commits_timeout(task_id: str, timeout_seconds: float) -> str:
    """Return why a wait for lakeFS's commits preparation gave up (in the task or in Airflow's triggerer)."""
    return (
        f"prepare_commits task {task_id} did not complete within {timeout_seconds:.0f}s; "
        f"raise the timeout or retry later"
    )


class LakeFSClient(LakeFSReads):
    """
    The lakeFS calls GC makes.

    ``endpoint`` is the API base, e.g. ``http://host:8000/api/v1`` (``/api/v1`` is appended when
    missing). The paged reads of refs and history (``branches``, ``log``, ``objects``, ``tags``, ...)
    come from :class:`~lakefs_gc.lakefs.reads.LakeFSReads`.
    """

    def __init__(
        self,
        endpoint: str,
        access_key: str,
        secret_key: str,
        *,
        max_retries: int = 5,
        backoff_base: float = 0.5,
        backoff_max: float = 20.0,
        request_timeout: float = 120.0,
        connect_timeout: float = 10.0,
        connection: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        endpoint = api_endpoint(endpoint)
        self.endpoint = endpoint
        cfg = lakefs_sdk.Configuration(host=endpoint, username=access_key, password=secret_key)
        # (lakefs-sdk's Configuration leaves retries typed as its default, None)
        cfg.retries = 0  # type: ignore[assignment]  # our own policy below; urllib3 must not retry POSTs behind our back
        self._api = lakefs_sdk.ApiClient(cfg)
        self._api.user_agent = "lakefs-gc-airflow/0.1 unified_gc"
        self.repositories = lakefs_sdk.RepositoriesApi(self._api)
        self.internal = lakefs_sdk.InternalApi(self._api)
        self.config = lakefs_sdk.ConfigApi(self._api)
        self.metadata = lakefs_sdk.MetadataApi(self._api)
        self.branches_api = lakefs_sdk.BranchesApi(self._api)
        self.refs_api = lakefs_sdk.RefsApi(self._api)
        self.objects_api = lakefs_sdk.ObjectsApi(self._api)
        self.commits_api = lakefs_sdk.CommitsApi(self._api)
        self.tags_api = lakefs_sdk.TagsApi(self._api)
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.request_timeout = request_timeout
        self.connect_timeout = connect_timeout
        self.connection = connection  # e.g. "lakeFS connection 'lakefs_default'", for messages
        self._sleep = sleep

    def close(self) -> None:
        self._api.close()  # type: ignore[no-untyped-call]  # lakefs-sdk leaves it unannotated

    def __enter__(self) -> LakeFSClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- retries -----------------------------------------------------------------------------
    def call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """
        Call ``fn`` retrying transient failures.

        Other errors propagate unchanged, except that a lakeFS still unreachable once the budget is
        spent is :class:`LakeFSUnreachable`.
        """
        kwargs.setdefault("_request_timeout", (self.connect_timeout, self.request_timeout))
        attempt = 0
        started = time.monotonic()
        last = ""
        while True:
            try:
                result = fn(*args, **kwargs)
                if attempt:  # the retries themselves went to DEBUG: one line that there were any
                    log.info(
                        "lakeFS %s succeeded after %d retr%s (last error: %s)",
                        what,
                        attempt,
                        "y" if attempt == 1 else "ies",
                        last,
                    )
                return result
            except Exception as exc:  # classified right below; non-transient ones re-raise
                if not _is_transient(exc):
                    raise
                if attempt >= self.max_retries:
                    why = _connection_failure(exc)
                    if why is None:
                        raise
                    log.debug("lakeFS %s: the last attempt's error", what, exc_info=True)
                    raise LakeFSUnreachable(
                        f"lakeFS at {self.endpoint} is unreachable ({why}) after {attempt + 1} attempt(s) over "
                        f"{time.monotonic() - started:.1f}s ({what}): check the endpoint of the "
                        f"{self.connection or 'lakeFS connection'}, that lakeFS is running and that this worker "
                        f"can reach it; the retry budget is the connection's extras max_retries, backoff_base, "
                        f"backoff_max, connect_timeout (now {self.max_retries}, {self.backoff_base}s, "
                        f"{self.backoff_max}s, {self.connect_timeout}s)"
                    ) from None
                delay = random.uniform(0, min(self.backoff_max, self.backoff_base * (2**attempt)))
                attempt += 1
                last = _connection_failure(exc) or _error_message(exc)
                log.debug("lakeFS %s failed (%s); retry %d/%d in %.1fs", what, last, attempt, self.max_retries, delay)
                self._sleep(delay)

    # -- repository and server facts -----------------------------------------------------------
    def get_repository(self, repo: str) -> lakefs_sdk.Repository:
        try:
            return self.call("getRepository", self.repositories.get_repository, repo)
        except ApiException as exc:
            if exc.status == 404:
                raise LakeFSGCError(
                    f"lakeFS repository {repo!r} not found at {self.endpoint}: check the repository "
                    f"name in the GC config"
                ) from None
            if exc.status == 401:
                raise LakeFSGCError(
                    f"lakeFS at {self.endpoint} refused the credentials (401): check the access key "
                    f"and secret of the lakeFS connection"
                ) from None
            raise

    def blockstore_type(self, storage_id: str | None = None) -> str:
        """Return the blockstore type serving ``storage_id`` (reference 1.1 getConfig)."""
        cfg = self.call("getConfig", self.config.get_config)
        candidates: list[lakefs_sdk.StorageConfig] = list(cfg.storage_config_list or [])
        if len(candidates) <= 1 and cfg.storage_config is not None:
            return cfg.storage_config.blockstore_type
        for sc in candidates:
            if (sc.blockstore_id or "") == (storage_id or ""):
                return sc.blockstore_type
        raise LakeFSGCError(f"lakeFS config lists no blockstore with id {storage_id!r}")

    def grace_period_seconds(self) -> int:
        """Return lakeFS's link-address grace period (``/config/garbage-collection``); 86400 if absent."""
        try:
            gc = self.call("getGarbageCollectionConfig", self.internal.get_garbage_collection_config)
        except ApiException as exc:
            if exc.status in (404, 501):
                return 86400  # older servers: the documented 24 h link window (reference 2.2)
            raise
        return int(gc.grace_period if gc.grace_period is not None else 86400)

    def require_gc_rules(self, repo: str) -> lakefs_sdk.GarbageCollectionRules:
        """
        Return the repository's GC rules; none is an error (hazard H1: never "every commit expired").

        Read raw: lakeFS answers ``"branches": null`` when no branch has its own rule, which
        lakefs-sdk's model refuses (a validation error), so the body is parsed here.
        """
        try:
            resp = self.call("getGCRules", self.repositories.get_gc_rules_with_http_info, repo, _preload_content=False)
        except ApiException as exc:
            if exc.status == 404:
                raise NoGCRulesError(self._no_rules_message(repo, _error_message(exc))) from None
            raise
        # raw_data: the body's bytes, which lakefs-sdk types Optional[Any]
        return parse_gc_rules(resp.raw_data, repo)  # type: ignore[arg-type]

    # -- uncommitted (reference 1.3, hazard H2) -------------------------------------------------
    def prepare_uncommitted_all(self, repo: str, max_pages: int = 100_000) -> tuple[str, list[str], int]:
        """
        Page ``prepare_uncommited`` to the end; return (run_id, every non-empty location, pages).

        lakeFS returns an empty location for a page that wrote no rows, even when earlier pages
        wrote files, so every page's location is kept, not only the last one (hazard H2).
        """
        token: str | None = None
        run_id: str | None = None
        locations: list[str] = []
        pages = 0
        while True:
            req = lakefs_sdk.PrepareGCUncommittedRequest(continuation_token=token) if token else None
            resp = self.call(
                "prepareGarbageCollectionUncommitted", self.internal.prepare_garbage_collection_uncommitted, repo, req
            )
            pages += 1
            if run_id is None:
                run_id = resp.run_id
            elif resp.run_id != run_id:
                raise LakeFSGCError(
                    f"prepare_uncommited changed run id mid-way ({run_id} -> {resp.run_id}); re-run the GC"
                )
            loc = resp.gc_uncommitted_location or ""
            if loc and loc not in locations:
                locations.append(loc)
            token = resp.continuation_token or None
            if not token:
                break
            if pages >= max_pages:
                raise LakeFSGCError(f"prepare_uncommited did not finish within {max_pages} pages")
        if not run_id:
            raise LakeFSGCError("prepare_uncommited returned no run id")
        return run_id, locations, pages

    # -- committed (reference 1.3, 4.3 step 4) --------------------------------------------------
    def prepare_commits(
        self, repo: str, timeout_seconds: float = 1200.0, poll_initial: float = 0.5, poll_max: float = 15.0
    ) -> dict[str, str]:
        """
        Ask lakeFS for the active commits. Returns {run_id, gc_commits_location}.

        Async task with polling (lakeFS >= 1.72), falling back to the synchronous call only when
        starting the task answers 500. No GC rules is an error, never "all commits active". The
        same two calls, one poll at a time, serve a task that waits in Airflow's triggerer
        (:meth:`start_prepare_commits`, :meth:`prepare_commits_status`).
        """
        started = self.start_prepare_commits(repo)
        if isinstance(started, dict):
            return started
        deadline = time.monotonic() + timeout_seconds
        delay = poll_initial
        while True:
            done = self.prepare_commits_status(repo, started)
            if done is not None:
                return done
            if time.monotonic() + delay > deadline:
                raise LakeFSGCError(prepare_commits_timeout(started, timeout_seconds))
            self._sleep(delay)
            delay = min(poll_max, delay * 2)

    def start_prepare_commits(self, repo: str) -> str | dict[str, str]:
        """
        Start lakeFS's async preparation of the active commits; return its task id.

        Or lakeFS's answer itself ({run_id, gc_commits_location}) when the synchronous call was
        made instead: the async start answered 500, or 404 (no GC rules, or a server without the
        async route: the synchronous call tells which, :class:`NoGCRulesError` for the first).
        """
        try:
            task = self.call(
                "prepareGarbageCollectionCommitsAsync", self.internal.prepare_garbage_collection_commits_async, repo
            )
        except ApiException as exc:
            if exc.status == 500:
                log.warning("async prepare_commits answered 500; falling back to the synchronous call")
                return self._prepare_commits_sync(repo)
            if exc.status == 404:
                # Either no GC rules or an old server without the async route. The Scala GC then
                # treats every commit as ... nothing (hazard H1). We ask the sync route to tell.
                return self._prepare_commits_sync(repo)
            raise
        return str(task.id)

    def prepare_commits_status(self, repo: str, task_id: str) -> dict[str, str] | None:
        """
        Look once at lakeFS's task ``task_id``: {run_id, gc_commits_location} once it completed, None while it runs.

        A task that failed, or completed without a location, raises (:class:`NoGCRulesError`
        for a repository without GC rules): fail closed.
        """
        try:
            st = self.call(
                "prepareGarbageCollectionCommitsStatus",
                self.internal.prepare_garbage_collection_commits_status,
                repo,
                task_id,
            )
        except ApiException as exc:
            if exc.status == 404:
                raise LakeFSGCError(f"prepare_commits task {task_id} not found on the server; re-run the GC") from None
            raise
        if not st.completed:
            return None
        if st.error is not None and st.error.message:
            msg = st.error.message
            if "not found" in msg.lower() and "rule" in msg.lower():
                raise NoGCRulesError(self._no_rules_message(repo, msg))
            raise LakeFSGCError(f"prepare_commits failed (task {task_id}): {msg}")
        if st.result is None or not st.result.gc_commits_location:
            raise LakeFSGCError(f"prepare_commits task {task_id} completed without a commits location")
        return {"run_id": st.result.run_id, "gc_commits_location": st.result.gc_commits_location}

    def _prepare_commits_sync(self, repo: str) -> dict[str, str]:
        try:
            resp = self.call("prepareGarbageCollectionCommits", self.internal.prepare_garbage_collection_commits, repo)
        except ApiException as exc:
            if exc.status == 404:
                raise NoGCRulesError(self._no_rules_message(repo, _error_message(exc))) from None
            raise
        return {"run_id": resp.run_id, "gc_commits_location": resp.gc_commits_location}

    @staticmethod
    def _no_rules_message(repo: str, detail: str) -> str:
        return (
            f"repository {repo!r} has no GC rules ({detail}); GC deletes nothing without them. Set rules "
            f"with lakectl gc set-config or the API (PUT /repositories/{repo}/settings/gc_rules)"
        )


def parse_gc_rules(raw: bytes | str, repo: str) -> lakefs_sdk.GarbageCollectionRules:
    """GC rules from lakeFS's JSON, ``"branches": null`` meaning none (as lakeFS writes it)."""
    import json

    try:
        doc = json.loads(raw)
        return lakefs_sdk.GarbageCollectionRules(
            default_retention_days=int(doc["default_retention_days"]),
            branches=[
                lakefs_sdk.GarbageCollectionRule(branch_id=str(b["branch_id"]), retention_days=int(b["retention_days"]))
                for b in doc.get("branches") or []
            ],
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise LakeFSGCError(f"repository {repo!r}: unreadable GC rules from lakeFS ({exc}): {raw[:200]!r}") from None
