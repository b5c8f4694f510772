"""
The paged reads of lakeFS's refs and history: repositories, branches, commits, tags, objects, diffs.

What the retention walk, the staged listings, the holders and ``lakefs-gc explain`` read. A mixin of
:class:`~lakefs_gc.lakefs.client.LakeFSClient`: every call goes through the client's retries
(``call``) on the client's lakefs-sdk APIs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from lakefs_gc.errors import LakeFSGCError

if TYPE_CHECKING:
    import lakefs_sdk

T = TypeVar("T")


class LakeFSReads:
    """The reads, every page of each; the client that mixes them in sets the APIs and ``call``."""

    repositories: lakefs_sdk.RepositoriesApi
    branches_api: lakefs_sdk.BranchesApi
    refs_api: lakefs_sdk.RefsApi
    objects_api: lakefs_sdk.ObjectsApi
    commits_api: lakefs_sdk.CommitsApi
    tags_api: lakefs_sdk.TagsApi
    metadata: lakefs_sdk.MetadataApi

    if TYPE_CHECKING:

        def call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
            """Call ``fn`` retrying transient failures (:meth:`LakeFSClient.call`)."""
            ...

    # -- history (the documented retention walk, lakefs_gc.gc.retention) ----------------------
    def repository_ids(self, page: int = 1000) -> list[str]:
        """Every repository id this lakeFS lists (every page): what the discovery refresh matches."""
        out: list[str] = []
        after = ""
        while True:
            resp = self.call("listRepositories", self.repositories.list_repositories, after=after or None, amount=page)
            out.extend(r.id for r in resp.results)
            if not resp.pagination.has_more:
                return out
            after = resp.pagination.next_offset

    def repository_namespaces(self, page: int = 1000) -> dict[str, str]:
        """
        Every repository this lakeFS lists, with its storage namespace (every page, or an error).

        Never part of a listing: a failed call raises, and a page that says there is more without
        saying where it goes on raises too (what the orphaned-namespace check relies on).
        """
        out: dict[str, str] = {}
        after = ""
        while True:
            resp = self.call("listRepositories", self.repositories.list_repositories, after=after or None, amount=page)
            out.update((r.id, str(r.storage_namespace)) for r in resp.results)
            if not resp.pagination.has_more:
                return out
            if not resp.pagination.next_offset or resp.pagination.next_offset == after:
                raise LakeFSGCError(
                    f"listRepositories said there is more after {after!r} but gave no next offset: "
                    f"the listing is incomplete, so no repository is taken as gone"
                )
            after = resp.pagination.next_offset

    def branches(self, repo: str, page: int = 1000, show_hidden: bool = False) -> Iterator[tuple[str, str]]:
        """
        Yield (branch id, HEAD commit id) of every branch lakeFS lists.

        ``show_hidden``: also the hidden ones, e.g. import branches, as lakeFS's own uncommitted
        mark reads them.
        """
        after = ""
        while True:
            resp = self.call(
                "listBranches",
                self.branches_api.list_branches,
                repo,
                after=after or None,
                amount=page,
                show_hidden=show_hidden or None,
            )
            for ref in resp.results:
                yield ref.id, ref.commit_id
            if not resp.pagination.has_more:
                return
            after = resp.pagination.next_offset

    def first_parent_log(self, repo: str, ref: str, page: int = 1000) -> Iterator[Any]:
        """
        Yield the commits from ``ref`` along first parents, newest first.

        Each has ``id``, ``creation_date`` in Unix seconds, ``meta_range_id``.
        """
        return self.log(repo, ref, page, first_parent=True)

    def log(self, repo: str, ref: str, page: int = 1000, first_parent: bool = False) -> Iterator[Any]:
        """
        Yield every commit ``ref`` reaches (all parents; ``first_parent``: only along first parents).

        As lakeFS's log lists them, each with ``id``, ``parents``, ``creation_date`` in Unix seconds,
        ``meta_range_id``, ``version``.
        """
        after = ""
        while True:
            resp = self.call(
                "logCommits",
                self.refs_api.log_commits,
                repo,
                ref,
                after=after or None,
                amount=page,
                first_parent=first_parent or None,
            )
            yield from resp.results
            if not resp.pagination.has_more:
                return
            after = resp.pagination.next_offset

    def commit_node(self, repo: str, commit_id: str) -> Any:
        """Return a commit (``getCommit``) with its parents, creation date, metarange id and version."""
        return self.call("getCommit", self.commits_api.get_commit, repo, commit_id)

    # -- what every branch reads now (lakefs_gc.listing.uncommitted.api_staged) -----------------------
    def objects(self, repo: str, ref: str, page: int = 1000, prefix: str = "") -> Iterator[tuple[str, str]]:
        """
        Yield (path, physical address as lakeFS prints it) of every object ``ref`` reads, in path order.

        ``prefix``: only the paths that start with it.

        ``listObjects``, recursive, all pages. On a branch this is the staged view; on a
        commit id, the committed tree. A 404 propagates (the caller decides what a gone branch
        means); a page that does not advance is an error, never a short listing.
        """
        after = ""
        while True:
            resp = self.call(
                "listObjects",
                self.objects_api.list_objects,
                repo,
                ref,
                after=after or None,
                amount=page,
                prefix=prefix or None,
                user_metadata=False,
            )
            for o in resp.results:
                if o.path_type != "object":
                    raise LakeFSGCError(
                        f"listObjects of {repo}/{ref} answered a {o.path_type!r} entry "
                        f"({o.path!r}) without a delimiter; refusing to guess its objects"
                    )
                yield o.path, o.physical_address
            if not resp.pagination.has_more:
                return
            if not resp.pagination.next_offset or resp.pagination.next_offset <= after:
                raise LakeFSGCError(
                    f"listObjects of {repo}/{ref} did not advance past {after!r}; "
                    f"the objects it reads cannot be listed completely"
                )
            after = resp.pagination.next_offset

    # -- the staged check on the candidates (lakefs_gc.listing.staged) -------------------------------
    def commit(self, repo: str, commit_id: str) -> tuple[tuple[str, ...], str]:
        """(parents, metarange id) of a commit (``getCommit``)."""
        c = self.call("getCommit", self.commits_api.get_commit, repo, commit_id)
        return tuple(c.parents or ()), c.meta_range_id or ""

    def commit_metarange(self, repo: str, commit_id: str) -> str:
        return self.commit(repo, commit_id)[1]

    def tags(self, repo: str, page: int = 1000) -> Iterator[tuple[str, str]]:
        """(tag id, commit id) of every tag."""
        after = ""
        while True:
            resp = self.call("listTags", self.tags_api.list_tags, repo, after=after or None, amount=page)
            for ref in resp.results:
                yield ref.id, ref.commit_id
            if not resp.pagination.has_more:
                return
            after = resp.pagination.next_offset

    def stat_address(self, repo: str, ref: str, path: str) -> str | None:
        """
        Return the physical address ``ref`` reads at ``path`` (``statObject``, as lakeFS prints it).

        None when it reads nothing there (404). Other errors propagate.
        """
        from lakefs_sdk.exceptions import NotFoundException

        try:
            return self.call(
                "statObject", self.objects_api.stat_object, repo, ref, path, user_metadata=False
            ).physical_address
        except NotFoundException:
            return None

    def branch_changes(self, repo: str, branch: str, page: int = 1000) -> Iterator[tuple[str, int | None]]:
        """
        Yield (path, size) of every entry the branch adds or changes against its HEAD commit.

        ``diffBranch``; removals left out; in path order.
        """
        after = ""
        while True:
            resp = self.call(
                "diffBranch", self.branches_api.diff_branch, repo, branch, after=after or None, amount=page
            )
            for d in resp.results:
                if d.type in ("added", "changed") and d.path_type == "object":
                    yield d.path, d.size_bytes
            if not resp.pagination.has_more:
                return
            if not resp.pagination.next_offset or resp.pagination.next_offset <= after:
                raise LakeFSGCError(f"diffBranch of {repo}/{branch} did not advance past {after!r}")
            after = resp.pagination.next_offset

    def meta_range_location(self, repo: str, metarange_id: str) -> str:
        return self.call("getMetaRange", self.metadata.get_meta_range, repo, metarange_id).location

    def range_location(self, repo: str, range_id: str) -> str:
        return self.call("getRange", self.metadata.get_range, repo, range_id).location
