"""
People using lakeFS while the chaos bench breaks the stack: threads that change a repository all along.

Each writer works on branches of its own (``<name>-b<n>``, made from ``main`` or a tag) and, drawn
from its seed: uploads, writes through the staging link flow (``getPhysicalAddress``, the client's
own PUT to the object store, ``linkPhysicalAddress``; some written and never linked), stages a
committed object again with its committed identity (a copy onto itself, the same bytes uploaded
again), deletes, commits, merges into ``main`` (conflicts: the source wins), reverts ``main``'s
HEAD, resets a branch's staged changes, tags ``main`` and deletes its branches. Every commit is
new (no back-dating): within the retention the chaos repository's rules give, so lakeFS keeps every
commit a branch reaches and nothing a writer does makes garbage live again.

A fault makes calls fail or hang: every call has a timeout, a failure is counted by operation and
the writer goes on (what lakeFS did is read back from lakeFS by the checker, never assumed).
"""

from __future__ import annotations

import contextlib
import hashlib
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import lakefs_sdk

TIMEOUT = (5, 30)  # connect, read: a paused lakeFS or store must not hang a writer
PATHS = 8
OPS = {  # operation -> weight
    "upload": 24,
    "link": 8,
    "restage": 6,
    "delete": 8,
    "commit": 16,
    "branch": 6,
    "merge": 8,
    "revert": 2,
    "reset": 2,
    "tag": 3,
    "drop": 3,
}
MAX_BRANCHES = 4


@dataclass
class WriterStats:
    """What a writer did: operations that took effect, and failed ones by operation."""

    ok: Counter = field(default_factory=Counter)
    failed: Counter = field(default_factory=Counter)
    commits: list[str] = field(default_factory=list)  # every commit id lakeFS answered
    last_error: str = ""


class Writer(threading.Thread):
    """One person writing to ``repo`` until ``stop`` is set."""

    def __init__(
        self, name: str, client: Any, repo: str, s3: Any, bucket: str, seed: int, stop: threading.Event, pace: float
    ):
        super().__init__(name=f"writer-{name}", daemon=True)
        self.tag = name
        self.client, self.repo, self.s3, self.bucket = client, repo, s3, bucket
        self.rng = random.Random(seed)
        self.stop = stop
        self.pace = pace
        self.stats = WriterStats()
        self.branches: list[str] = []
        self.serial = 0

    # -- the loop -------------------------------------------------------------------------------
    def run(self) -> None:
        ops, weights = list(OPS), list(OPS.values())
        while not self.stop.is_set():
            op = self.rng.choices(ops, weights)[0]
            try:
                if getattr(self, "op_" + op)():
                    self.stats.ok[op] += 1
            except Exception as e:  # a fault: counted, the writer goes on
                self.stats.failed[op] += 1
                self.stats.last_error = f"{op}: {type(e).__name__}: {str(e)[:200]}"
                with contextlib.suppress(Exception):
                    self._refresh()
            self.stop.wait(self.pace * self.rng.uniform(0.5, 1.5))

    def _refresh(self) -> None:
        """Read this writer's branches back from lakeFS (a failed call may still have taken effect)."""
        page = self.client.branches_api.list_branches(
            self.repo, prefix=f"{self.tag}-", amount=1000, _request_timeout=TIMEOUT
        )
        self.branches = [b.id for b in page.results]

    def _branch(self) -> str | None:
        return self.rng.choice(self.branches) if self.branches else None

    def _path(self) -> str:
        return f"{self.tag}/obj/{self.rng.randrange(PATHS)}.bin"

    def _content(self, what: str) -> bytes:
        self.serial += 1
        return f"{self.repo} {self.tag} {self.serial} {what} {self.rng.random()}".encode() * self.rng.randint(1, 8)

    # -- operations: True when it took effect ----------------------------------------------------
    def op_branch(self) -> bool:
        if len(self.branches) >= MAX_BRANCHES:
            return False
        source = "main"
        if self.rng.random() < 0.2:
            tags = self.client.tags_api.list_tags(self.repo, amount=100, _request_timeout=TIMEOUT).results
            if tags:
                source = self.rng.choice(tags).id
        self.serial += 1
        name = f"{self.tag}-b{self.serial}"
        self.client.branches_api.create_branch(
            self.repo,
            lakefs_sdk.BranchCreation(name=name, source=source),  # type: ignore[call-arg]
            _request_timeout=TIMEOUT,
        )
        self.branches.append(name)
        return True

    def op_upload(self) -> bool:
        if (b := self._branch()) is None:
            return self.op_branch()
        self.client.objects_api.upload_object(
            self.repo, b, self._path(), content=self._content("upload"), _request_timeout=TIMEOUT
        )
        return True

    def op_link(self) -> bool:
        if (b := self._branch()) is None:
            return False
        path = self._path()
        loc = self.client.staging_api.get_physical_address(self.repo, b, path, _request_timeout=TIMEOUT)
        data = self._content("linked")
        address = loc.physical_address  # s3://bucket/<namespace>/data/...
        bucket, _, key = address[len("s3://") :].partition("/")
        self.s3.put_object(Bucket=bucket, Key=key, Body=data)
        if self.rng.random() < 0.15:  # written, never linked: garbage once old enough
            return True
        self.client.staging_api.link_physical_address(
            self.repo,
            b,
            path,
            lakefs_sdk.StagingMetadata(staging=loc, checksum=hashlib.md5(data).hexdigest(), size_bytes=len(data)),  # type: ignore[call-arg]
            _request_timeout=TIMEOUT,
        )
        return True

    def op_restage(self) -> bool:
        """Stage a committed object again with its committed identity (lakeFS leaves such entries out of its mark)."""
        if (b := self._branch()) is None:
            return False
        path = self._path()
        head = self.client.branches_api.get_branch(self.repo, b, _request_timeout=TIMEOUT).commit_id
        try:
            self.client.objects_api.stat_object(self.repo, head, path, _request_timeout=TIMEOUT)
        except lakefs_sdk.exceptions.NotFoundException:
            return False
        if self.rng.random() < 0.5:
            self.client.objects_api.copy_object(
                self.repo,
                b,
                path,
                lakefs_sdk.ObjectCopyCreation(src_path=path, src_ref=head),  # type: ignore[call-arg]
                _request_timeout=TIMEOUT,
            )
        else:
            data = bytes(self.client.objects_api.get_object(self.repo, head, path, _request_timeout=TIMEOUT))
            self.client.objects_api.upload_object(self.repo, b, path, content=data, _request_timeout=TIMEOUT)
        return True

    def op_delete(self) -> bool:
        if (b := self._branch()) is None:
            return False
        try:
            self.client.objects_api.delete_object(self.repo, b, self._path(), _request_timeout=TIMEOUT)
        except lakefs_sdk.exceptions.NotFoundException:
            return False
        return True

    def _commit(self, branch: str) -> bool:
        try:
            c = self.client.commits_api.commit(
                self.repo,
                branch,
                lakefs_sdk.CommitCreation(message=f"{self.tag} {self.serial}"),  # type: ignore[call-arg]
                _request_timeout=TIMEOUT,
            )
        except lakefs_sdk.exceptions.ApiException as e:
            if e.status == 400:  # no changes
                return False
            raise
        self.stats.commits.append(c.id)
        return True

    def op_commit(self) -> bool:
        return (b := self._branch()) is not None and self._commit(b)

    def op_merge(self) -> bool:
        if (b := self._branch()) is None:
            return False
        self._commit(b)
        try:
            ref = self.client.refs_api.merge_into_branch(
                self.repo,
                b,
                "main",
                merge=lakefs_sdk.Merge(strategy="source-wins"),  # type: ignore[call-arg]
                _request_timeout=TIMEOUT,
            ).reference
        except lakefs_sdk.exceptions.ApiException as e:
            if e.status in (400, 409, 412):  # nothing to merge, a concurrent merge moved main
                return False
            raise
        self.stats.commits.append(ref)
        return True

    def op_revert(self) -> bool:
        head = self.client.branches_api.get_branch(self.repo, "main", _request_timeout=TIMEOUT).commit_id
        c = self.client.commits_api.get_commit(self.repo, head, _request_timeout=TIMEOUT)
        if not c.parents or len(c.parents) > 2:
            return False
        try:
            self.client.branches_api.revert_branch(
                self.repo,
                "main",
                lakefs_sdk.RevertCreation(ref=head, parent_number=1 if len(c.parents) == 2 else 0),  # type: ignore[call-arg]
                _request_timeout=TIMEOUT,
            )
        except lakefs_sdk.exceptions.ApiException as e:
            # lakeFS 1.84 reverts without retrying its branch update: a merge into main between its
            # read and its write is a 500 "predicate failed" (its Merge retries that race)
            if e.status in (400, 409, 412) or (e.status == 500 and "predicate failed" in str(e.body)):
                return False
            raise
        return True

    def op_reset(self) -> bool:
        if (b := self._branch()) is None:
            return False
        self.client.branches_api.reset_branch(
            self.repo, b, lakefs_sdk.ResetCreation(type="reset"), _request_timeout=TIMEOUT
        )
        return True

    def op_tag(self) -> bool:
        self.serial += 1
        self.client.tags_api.create_tag(
            self.repo, lakefs_sdk.TagCreation(id=f"{self.tag}-t{self.serial}", ref="main"), _request_timeout=TIMEOUT
        )
        return True

    def op_drop(self) -> bool:
        if len(self.branches) < 2:
            return False
        b = self.branches.pop(self.rng.randrange(len(self.branches)))
        self.client.branches_api.delete_branch(self.repo, b, _request_timeout=TIMEOUT)
        return True


class Writers:
    """``n`` writers on ``repo``, started and stopped together; their figures summed."""

    def __init__(self, n: int, client: Any, repo: str, s3: Any, bucket: str, seed: int, pace: float = 0.4):
        self.stop_event = threading.Event()
        self.threads = [
            Writer(f"w{i}", client, repo, s3, bucket, seed * 1000 + i, self.stop_event, pace) for i in range(n)
        ]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def stop(self, timeout: float = 90) -> None:
        self.stop_event.set()
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.1, deadline - time.monotonic()))
        alive = [t.name for t in self.threads if t.is_alive()]
        if alive:
            raise RuntimeError(f"writers still running {timeout:.0f} s after stop: {alive}")

    def totals(self) -> tuple[Counter, Counter, list[str]]:
        ok: Counter = Counter()
        failed: Counter = Counter()
        commits: list[str] = []
        for t in self.threads:
            ok.update(t.stats.ok)
            failed.update(t.stats.failed)
            commits += t.stats.commits
        return ok, failed, commits
