"""
The doctor's lakeFS checks: reachable, its version, the repository, its GC rules, every call a run makes.

Each read a run makes is made once with the run's key (a page of one, or an id lakeFS will not
find: lakeFS checks the permission before it looks, so "not found" means "allowed"). The two
prepare calls are made too: lakeFS's controller (``PrepareGarbageCollectionCommitsAsync``,
``PrepareGarbageCollectionUncommitted`` in ``pkg/api/controller.go``, ``pkg/catalog/catalog.go``)
only writes its own GC files under the namespace's ``_lakefs/retention/gc/`` (the expired-commits
CSV, the uncommitted objects' Parquet) and an expiring task record, and changes no branch, commit or
object: what every GC run of lakeFS's (ours and lakeFS's Spark GC) does first. ``--no-prepare``
leaves them out (one WARN line each).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakefs_sdk.exceptions import ApiException

from lakefs_gc.doctor.policy import LAKEFS_ACTION
from lakefs_gc.errors import LakeFSGCError, NoGCRulesError, Unreachable

if TYPE_CHECKING:
    from collections.abc import Callable

    from lakefs_gc.doctor import Report
    from lakefs_gc.lakefs.client import LakeFSClient

SUPPORTED = (1, 84)  # docs/compatibility.md: the lakeFS every test runs
NO_SUCH_ID = "0" * 64  # a metarange lakeFS has not: its answer (404) says only whether the call is allowed
POLICY_FIX = "lakefs-gc doctor {repo} --policy prints the policy"


@dataclass
class LakeFSFacts:
    """What the later checks need from lakeFS."""

    namespace: str
    storage_id: str
    grace_seconds: int | None = None
    commits_location: str | None = None  # the expired-commits CSV prepare_commits wrote (the store's check reads it)


def _status(exc: BaseException) -> int | None:
    return exc.status if isinstance(exc, ApiException) else None


def _said(exc: BaseException) -> str:
    if isinstance(exc, ApiException):
        body = " ".join(str(exc.body or "").split())[:160]
        return f"HTTP {exc.status} {exc.reason or ''} {body}".strip()
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def _version(text: str) -> tuple[int, int] | None:
    m = re.match(r"v?(\d+)\.(\d+)", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def check_server(report: Report, client: LakeFSClient, key: str, where: str) -> bool:
    """Check lakeFS answers and takes the key, and its version; False: nothing more can be asked of it."""
    import lakefs_sdk

    endpoint = client.endpoint
    try:
        user = client.call("getCurrentUser", lakefs_sdk.AuthApi(client._api).get_current_user)
    except Unreachable as exc:
        report.fail("lakeFS reachable", str(exc), f"the endpoint in {where}")
        return False
    except Exception as exc:
        if _status(exc) in (401, 403):
            report.fail(
                "lakeFS key",
                f"lakeFS at {endpoint} refused access key {key} ({_said(exc)})",
                f"give the access key and secret of a lakeFS user: {where}",
            )
            return False
        report.fail("lakeFS reachable", f"{endpoint} answered {_said(exc)}", f"check that {endpoint} is lakeFS's API")
        return False
    who = getattr(getattr(user, "user", None), "id", "?")
    try:
        cfg = client.call("getConfig", client.config.get_config)
    except Exception as exc:
        _denied_or(report, exc, "fs:ReadConfig", "getConfig", "*", who)
        report.ok("lakeFS reachable", f"{endpoint} as user {who}; version not read")
        return True
    version = str(getattr(getattr(cfg, "version_config", None), "version", "") or "")
    found = f"{endpoint} as user {who}, lakeFS {version or '(no version)'}"
    got = _version(version)
    want = ".".join(map(str, SUPPORTED))
    if got is None:
        report.warn("lakeFS version", f"{found}: the version could not be read", f"the GC is tested on lakeFS {want}")
    elif got < (1, 72):
        report.fail(
            "lakeFS version",
            f"{found}: older than 1.72, which lacks prepareGarbageCollectionCommitsAsync",
            f"upgrade lakeFS to {want} (docs/compatibility.md)",
        )
    elif got != SUPPORTED:
        report.warn(
            "lakeFS version", f"{found}: the GC is tested on lakeFS {want} only", "docs/compatibility.md; or upgrade"
        )
    else:
        report.ok("lakeFS reachable", found)
    return True


def _denied_or(report: Report, exc: BaseException, action: str, call: str, resource: str, repo: str) -> None:
    """Report a failed call: denied (401/403) is the key's policy; anything else as it came."""
    if _status(exc) in (401, 403):
        used = LAKEFS_ACTION[action].used_by if action in LAKEFS_ACTION else ""
        report.fail(
            f"lakeFS {action}",
            f"{call} denied for this key ({_said(exc)}); a run needs it for {used}",
            f"allow {action} on {resource} in the key's lakeFS policy ({POLICY_FIX.format(repo=repo)})",
        )
    else:
        report.fail(f"lakeFS {action}", f"{call} failed: {_said(exc)}", "see lakeFS's log for the error")


def check_repository(report: Report, client: LakeFSClient, repo: str) -> tuple[Any, bool] | None:
    """Check the repository exists and has GC rules; return it (None: it cannot be read) and whether rules are set."""
    try:
        r = client.get_repository(repo)
    except LakeFSGCError as exc:
        report.fail("lakeFS repository", str(exc), f"check the repository's name ({repo!r}); lakectl repo list")
        return None
    except Exception as exc:
        _denied_or(report, exc, "fs:ReadRepository", "getRepository", f"arn:lakefs:fs:::repository/{repo}", repo)
        return None
    ro = ", read-only: lakeFS refuses to prepare GC for it" if getattr(r, "read_only", False) else ""
    line = f"{repo}: storage namespace {r.storage_namespace}, default branch {r.default_branch}{ro}"
    if ro:
        report.fail("lakeFS repository", line, f"make {repo} writable (lakectl repo ... --read-only=false)")
    else:
        report.ok("lakeFS repository", line)
    try:
        rules = client.require_gc_rules(repo)
    except NoGCRulesError as exc:
        report.fail("GC rules", str(exc).split(";")[0], f"lakectl gc set-config lakefs://{repo} -f rules.json")
        return r, False
    except Exception as exc:
        _denied_or(report, exc, "retention:GetGarbageCollectionRules", "getGCRules", f"repository/{repo}", repo)
        return r, False
    from lakefs_gc.words import plural

    branches = ", ".join(f"{b.branch_id} {b.retention_days}d" for b in rules.branches or ())
    found = f"default retention {plural(rules.default_retention_days, 'day')}" + (f"; {branches}" if branches else "")
    report.ok("GC rules", found)
    return r, True


def check_calls(
    report: Report, client: LakeFSClient, repo: str, branch: str, prepare: bool, timeout: float
) -> tuple[int | None, str | None]:
    """Make each call a run makes once; return lakeFS's grace period (None: unread) and the commits file written."""
    check_reads(report, client, repo, branch)
    grace = _grace(report, client)
    location = _prepare(report, client, repo, timeout) if prepare else None
    if not prepare:
        for action in ("retention:PrepareGarbageCollectionCommits", "retention:PrepareGarbageCollectionUncommitted"):
            report.warn(f"lakeFS {action}", "not called (--no-prepare)", "run the doctor without --no-prepare")
    _fleet(report, client)
    return grace, location


def check_reads(report: Report, client: LakeFSClient, repo: str, branch: str) -> None:
    """Make each read a run makes of the repository once (a page of one, or an id lakeFS has not)."""
    head: list[Any] = []  # the default branch's HEAD commit, from logCommits

    def log() -> str:
        page = client.call("logCommits", client.refs_api.log_commits, repo, branch, amount=1)
        head.extend(page.results[:1])
        return f"{branch}'s HEAD {page.results[0].id[:12]}" if page.results else f"{branch} has no commit"

    def commit() -> str:
        if not head:
            return "no commit to read"
        client.call("getCommit", client.commits_api.get_commit, repo, head[0].id)
        return f"commit {head[0].id[:12]}"

    def metarange() -> str:
        mr = (head[0].meta_range_id if head else "") or NO_SUCH_ID
        return _allowed_if_missing(lambda: client.call("getMetaRange", client.metadata.get_meta_range, repo, mr))

    def stat() -> str:
        return _allowed_if_missing(
            lambda: client.call("statObject", client.objects_api.stat_object, repo, branch, "_lakefs_gc_doctor/none")
        )

    probes: list[tuple[str, str, str, Callable[[], str]]] = [
        ("fs:ListBranches", "listBranches", "", lambda: _one(client.call("listBranches", client.branches_api.list_branches, repo, amount=1))),
        ("fs:ReadBranch", "logCommits", f"/branch/{branch}", log),
        ("fs:ReadCommit", "getCommit", "", commit),
        ("fs:ListTags", "listTags", "", lambda: _one(client.call("listTags", client.tags_api.list_tags, repo, amount=1))),
        ("fs:ListObjects", "listObjects", "", lambda: _one(client.call("listObjects", client.objects_api.list_objects, repo, branch, amount=1))),
        ("fs:ListObjects", "diffBranch", "", lambda: _one(client.call("diffBranch", client.branches_api.diff_branch, repo, branch, amount=1))),
        ("fs:ListObjects", "getMetaRange", "", metarange),
        ("fs:ReadObject", "statObject", "/object/*", stat),
    ]  # fmt: skip
    for action, call, sub, probe in probes:
        resource = f"arn:lakefs:fs:::repository/{repo}{sub}"
        try:
            report.ok(f"lakeFS {action}", f"{call} allowed: {probe()}")
        except Exception as exc:
            _denied_or(report, exc, action, call, resource, repo)


def _one(page: Any) -> str:
    from lakefs_gc.words import plural

    return f"answered ({plural(len(getattr(page, 'results', []) or []), 'entry', 'entries')} of a page of 1)"


def _allowed_if_missing(call: Callable[[], object]) -> str:
    """Make a call on an id lakeFS has not; 404 after the permission check means allowed."""
    try:
        call()
    except ApiException as exc:
        if exc.status == 404:
            return "allowed (asked of an id lakeFS has not: 404 comes after the permission check)"
        raise
    return "answered"


def _grace(report: Report, client: LakeFSClient) -> int | None:
    try:
        grace = client.grace_period_seconds()
    except Exception as exc:
        report.fail("lakeFS grace period", f"getGarbageCollectionConfig failed: {_said(exc)}", "see lakeFS's log")
        return None
    return grace


def _prepare(report: Report, client: LakeFSClient, repo: str, timeout: float) -> str | None:
    """Call the two prepare calls (they write lakeFS's own files under _lakefs/retention/gc/ only)."""
    harmless = "harmless: lakeFS writes its own GC file under _lakefs/retention/gc/ and changes nothing else"
    location = None
    action = "retention:PrepareGarbageCollectionCommits"
    try:
        prep = client.prepare_commits(repo, timeout_seconds=timeout)
        location = prep["gc_commits_location"]
        report.ok(f"lakeFS {action}", f"prepareGarbageCollectionCommitsAsync called ({harmless}): {location}")
    except NoGCRulesError:
        report.fail(f"lakeFS {action}", "lakeFS refused: no GC rules", "set the repository's GC rules (above)")
    except Exception as exc:
        _denied_or(report, exc, action, "prepareGarbageCollectionCommitsAsync", f"repository/{repo}", repo)
    action = "retention:PrepareGarbageCollectionUncommitted"
    try:
        call = client.internal.prepare_garbage_collection_uncommitted
        page = client.call("prepareGarbageCollectionUncommitted", call, repo, None)
        wrote = page.gc_uncommitted_location or "no staged objects on its first page"
        report.ok(f"lakeFS {action}", f"prepareGarbageCollectionUncommitted called (one page; {harmless}): {wrote}")
    except Exception as exc:
        _denied_or(report, exc, action, "prepareGarbageCollectionUncommitted", f"repository/{repo}", repo)
    return location


def _fleet(report: Report, client: LakeFSClient) -> None:
    try:
        client.call("listRepositories", client.repositories.list_repositories, amount=1)
    except Exception as exc:
        if _status(exc) in (401, 403):
            report.warn(
                "lakeFS fs:ListRepositories",
                "listRepositories denied: a run does not need it; the fleet's refresh does",
                "allow fs:ListRepositories on * where the fleet's refresh runs with this key",
            )
            return
        report.warn("lakeFS fs:ListRepositories", f"listRepositories failed: {_said(exc)}")
        return
    report.ok("lakeFS fs:ListRepositories", "listRepositories allowed (the fleet's refresh)")
