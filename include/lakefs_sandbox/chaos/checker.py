"""
The chaos bench's checker: lakeFS's own view against what is in the object store.

It never uses the GC's code to decide what is live. From lakeFS's API: every object a branch shows
(staged or committed), every object a tag shows (the chaos repository keeps tags: ``keep.tags_days``),
and every object of every commit a branch reaches (the writers' commits are all new, inside the
retention, so lakeFS keeps each of them). From the object store (the bucket has versioning on, so
every delete leaves a delete marker with its time): what is there now, readable, and every key a
delete hit.

- **lost**: a live object that is not in the store or cannot be read (must be 0);
- **outside**: a key a delete hit (a delete marker under ``data/``) that no mark of the GC listed
  among its confirmed candidates (``unified/<mark>/deleted/``; must be 0);
- **forgotten**: a confirmed candidate of a mark a successful run swept that is still in the store
  (must be 0; a key deleted twice, by a retried part, is counted apart: "already gone" the second time);
- **garbage left** (after the quiet run): a ``data/`` object older than that run's cutoff that
  nothing in lakeFS references, counting also every commit the writers ever made, dangling or not
  (must be 0).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import lakefs_sdk

from lakefs_gc.report import formats, layout, marks
from lakefs_sandbox.chaos.writers import TIMEOUT

if TYPE_CHECKING:
    from lakefs_gc.storage import Storage


@dataclass
class Check:
    """One check's figures (names of keys: relative to the namespace, ``data/...``)."""

    live: int = 0
    lost: list[str] = field(default_factory=list)
    delete_markers: int = 0
    outside: list[str] = field(default_factory=list)
    garbage_left: list[str] = field(default_factory=list)
    data_objects: int = 0
    forgotten: list[str] = field(default_factory=list)  # the swept mark's candidates still in the store
    deleted_twice: int = 0  # keys with more than one delete marker (a retried part: "already gone")


class Checker:
    """
    Reads ``repo`` through ``client`` (lakefs-sdk) and its namespace ``s3://bucket/prefix`` through ``s3`` (boto3).

    ``storage``: the same namespace opened by the GC (:func:`lakefs_gc.storage.open_storage`), only
    to read what the GC wrote in its own formats (the marks' ``deleted/`` lists).
    """

    def __init__(self, client: Any, repo: str, s3: Any, bucket: str, prefix: str, storage: Storage):
        self.client, self.repo, self.s3, self.bucket, self.storage = client, repo, s3, bucket, storage
        self.prefix = prefix.rstrip("/") + "/"
        self.root = f"s3://{bucket}/{self.prefix}"
        self._by_commit: dict[str, set[str]] = {}  # commit id -> its keys (commits never change)

    # -- lakeFS's view --------------------------------------------------------------------------
    def _list(self, ref: str) -> set[str]:
        out, after = set(), ""
        while True:
            page = self.client.objects_api.list_objects(
                self.repo, ref, after=after, amount=1000, _request_timeout=TIMEOUT
            )
            for o in page.results:
                if o.physical_address.startswith(self.root):
                    out.add(o.physical_address[len(self.root) :])
            if not page.pagination.has_more:
                return out
            after = page.pagination.next_offset

    def _commit_keys(self, commit_id: str) -> set[str]:
        if commit_id not in self._by_commit:
            try:
                self._by_commit[commit_id] = self._list(commit_id)
            except lakefs_sdk.exceptions.NotFoundException:  # a commit lakeFS no longer has
                self._by_commit[commit_id] = set()
        return self._by_commit[commit_id]

    def _paged(self, call, *args) -> list:
        out, after = [], ""
        while True:
            page = call(self.repo, *args, after=after, amount=1000, _request_timeout=TIMEOUT)
            out += page.results
            if not page.pagination.has_more:
                return out
            after = page.pagination.next_offset

    def live(self) -> set[str]:
        """Every key a branch, a tag or a commit a branch reaches references, now."""
        keys: set[str] = set()
        for b in self._paged(self.client.branches_api.list_branches):
            try:
                keys |= self._list(b.id)  # staged and committed
            except lakefs_sdk.exceptions.NotFoundException:  # a writer deleted it meanwhile: nothing to keep
                continue
            for c in self._paged(self.client.refs_api.log_commits, b.commit_id):
                keys |= self._commit_keys(c.id)
        for t in self._paged(self.client.tags_api.list_tags):
            keys |= self._commit_keys(t.commit_id)
        return keys

    # -- the store's view -----------------------------------------------------------------------
    def stored(self) -> dict[str, datetime]:
        """Return the ``data/`` keys in the store now, with their LastModified."""
        out = {}
        for pg in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.prefix + "data/"):
            for o in pg.get("Contents", []):
                out[o["Key"][len(self.prefix) :]] = o["LastModified"]
        return out

    def delete_markers(self) -> list[tuple[str, datetime]]:
        out = []
        for pg in self.s3.get_paginator("list_object_versions").paginate(
            Bucket=self.bucket, Prefix=self.prefix + "data/"
        ):
            out += [(m["Key"][len(self.prefix) :], m["LastModified"]) for m in pg.get("DeleteMarkers", [])]
        return out

    def confirmed_candidates(self, mark_id: str = "") -> set[str]:
        """Every key any mark's ``deleted/`` list names (read by the GC's own reader); ``mark_id``: that mark's only."""
        out: set[str] = set()
        ids = [mark_id] if mark_id else list(marks.mark_ids(self.storage))
        for m in ids:
            for part in marks.parquet_parts(self.storage, layout.deleted_dir(m)):
                for a in formats.read_addresses(self.storage, part):
                    if a:
                        out.add(a[len(self.root) :] if a.startswith(self.root) else a)
        return out

    def readable(self, key: str) -> bool:
        try:
            self.s3.get_object(Bucket=self.bucket, Key=self.prefix + key)["Body"].read()
            return True
        except Exception:
            return False

    # -- the checks -----------------------------------------------------------------------------
    def check(
        self, quiet_cutoff: datetime | None = None, ever_committed: Iterable[str] = (), swept_mark: str = ""
    ) -> Check:
        """
        Check the store against lakeFS now (no GC run may be running: nothing deletes meanwhile).

        ``swept_mark``: a mark a run swept and succeeded: any of its candidates still stored is
        forgotten. ``quiet_cutoff``: after the quiet run, the objects older than its cutoff that nothing
        references (``ever_committed``: every commit the writers made, dangling or not, counts as
        referencing) are garbage left.
        """
        live = self.live()
        stored = self.stored()
        out = Check(live=len(live), data_objects=len(stored))
        out.lost = sorted(k for k in live if k not in stored or not self.readable(k))
        markers = self.delete_markers()
        out.delete_markers = len(markers)
        out.deleted_twice = sum(1 for n in Counter(k for k, _ in markers).values() if n > 1)
        if swept_mark:  # a run that swept it and succeeded: each of its candidates is gone
            out.forgotten = sorted(k for k in self.confirmed_candidates(swept_mark) if k in stored)
        if markers:
            confirmed = self.confirmed_candidates()
            out.outside = sorted({k for k, _ in markers if k not in confirmed})
        if quiet_cutoff is not None:
            referenced = set(live)
            for cid in ever_committed:
                referenced |= self._commit_keys(cid)
            out.garbage_left = sorted(k for k, t in stored.items() if t < quiet_cutoff and k not in referenced)
        return out
