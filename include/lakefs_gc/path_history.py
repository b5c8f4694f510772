"""
Where a logical path went: the newest commit of a ref that had it (``lakefs-gc explain PATH``).

A path a ref no longer reads (deleted, or overwritten by nothing) is looked for in the ref's
history through lakeFS: the commits ``logCommits`` lists from the ref, newest first, each asked
for the path (``statObject`` on the commit; commits with one metarange asked once), at most
``max_commits`` of them. The first that has it gives the physical address the GC then explains;
a commit walked before it of which it is a parent is the one that no longer had it. When none
has it, the answer says so (whether the search reached the first commit or stopped at its
bound), with the paths the ref has close to the one asked for.
"""

from __future__ import annotations

import difflib
import itertools
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lakefs_gc.words import plural

if TYPE_CHECKING:
    from lakefs_gc.lakefs.client import LakeFSClient

DEFAULT_MAX_COMMITS = 500
NEAR_PATHS = 1000  # paths listed beside the one asked for, to suggest close ones


class PathNeverOnRef(ValueError):
    """No commit of the ref (within the bound) had the path: the message says so and what to try."""


@dataclass(frozen=True)
class PathHistory:
    """What the walk found: the newest commit having the path (None: none), and how far it looked."""

    repository: str
    ref: str
    path: str
    walked: int  # commits listed by the log and looked at
    complete: bool  # the walk reached the ref's first commit (False: it stopped at the bound)
    commit: Any | None = None  # the newest commit that had the path (id, creation_date, message)
    physical: str | None = None  # the path's physical address in it, as lakeFS prints it
    removed_by: Any | None = None  # a commit walked before it, its child, without the path


def search(client: LakeFSClient, repo: str, ref: str, path: str, max_commits: int = DEFAULT_MAX_COMMITS) -> PathHistory:
    """Walk ``ref``'s history, newest first, for the newest commit having ``path`` (at most ``max_commits``)."""
    from lakefs_sdk.exceptions import NotFoundException

    if max_commits < 1:
        raise ValueError(f"the commits to search must be at least 1, got {max_commits}")
    by_metarange: dict[str, str | None] = {}
    lacking: list[Any] = []
    walked = 0
    try:
        for c in client.log(repo, ref, page=min(1000, max_commits + 1)):
            if walked == max_commits:
                return PathHistory(repo, ref, path, walked, complete=False)
            walked += 1
            metarange = c.meta_range_id or ""  # "" for the repository's first, empty, commit
            if metarange not in by_metarange:
                by_metarange[metarange] = client.stat_address(repo, c.id, path) if metarange else None
            physical = by_metarange[metarange]
            if physical is not None:
                child = next((x for x in lacking if c.id in (x.parents or ())), None)
                return PathHistory(repo, ref, path, walked, True, c, physical, child)
            lacking.append(c)
    except NotFoundException:
        raise PathNeverOnRef(f"{repo} has no ref {ref!r}: give a branch, a tag or a commit id") from None
    return PathHistory(repo, ref, path, walked, complete=True)


def _commit(c: Any) -> str:
    when = datetime.fromtimestamp(int(c.creation_date), UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    return f"{c.id[:12]} ({when}, {c.message!r})"


def found_note(h: PathHistory, ref_flag: str = "--ref") -> str:
    """Return the lines that say a path is gone from its ref, the commit that last had it, and how to ask there."""
    if h.commit is None:
        raise ValueError(f"no commit of {h.ref} searched had {h.path!r}")
    searched = plural(h.walked, "commit") + f" of {h.ref} searched"
    return "\n".join(
        [
            f"{h.repository}@{h.ref} has no object at {h.path!r} now. The newest commit of {h.ref} that had "
            f"it: {_commit(h.commit)}, where it read {h.physical}"
            + (f"; {_commit(h.removed_by)} no longer has it" if h.removed_by is not None else "")
            + f" ({searched}).",
            f"Below: what the GC did with that address. To ask about the path on that commit: {ref_flag} {h.commit.id}",
        ]
    )


def never_message(
    client: LakeFSClient, h: PathHistory, ref_flag: str = "--ref", bound_flag: str = "--max-commits"
) -> str:
    """Say that no commit searched had the path, how far the search went, and what to try instead."""
    if h.complete:
        head = (
            f"{h.repository}@{h.ref} has no object at {h.path!r}, and no commit of {h.ref} ever had one "
            f"({plural(h.walked, 'commit')} searched, back to the first): it never existed on {h.ref}"
        )
    else:
        head = (
            f"{h.repository}@{h.ref} has no object at {h.path!r}, and no commit among the newest "
            f"{plural(h.walked, 'commit')} of {h.ref} had one; the search stopped there (a larger "
            f"{bound_flag} searches further back)"
        )
    near = near_paths(client, h.repository, h.ref, h.path)
    return (
        head
        + f". Try another {ref_flag} (a branch, tag or commit that had it)"
        + (f", or a path {h.ref} has near it: {', '.join(repr(p) for p in near)}" if near else "")
    )


def near_paths(client: LakeFSClient, repo: str, ref: str, path: str, n: int = 3) -> list[str]:
    """
    Up to ``n`` paths ``ref`` reads close to ``path``: under it when it is a folder, else in its folder, else anywhere.

    Close: :func:`difflib.get_close_matches` among the first :data:`NEAR_PATHS` paths of the folder.
    """
    from lakefs_sdk.exceptions import ApiException

    folder = path.rstrip("/").rpartition("/")[0]
    under = [path] if path.endswith("/") else []
    for prefix in dict.fromkeys([*under, folder + "/" if folder else "", ""]):
        try:
            listed = client.objects(repo, ref, page=NEAR_PATHS, prefix=prefix)
            paths = [p for p, _ in itertools.islice(listed, NEAR_PATHS)]
        except ApiException:
            return []
        close = paths[:n] if prefix in under else difflib.get_close_matches(path, paths, n=n, cutoff=0.75)
        if close:
            return close
    return []
