"""
The emulator's catalog: repositories, branches, commits, staging, GC preparation.

State (repositories, branches, commits, staging, rules, tasks) lives in SQLite (a file under
``--state`` or in memory); trees live where lakeFS keeps them: ranges and metaranges written as
graveler SSTables into the storage namespace under ``_lakefs/<id>``. Every public method runs
under one lock, so the HTTP layer may call from any thread.

:class:`Catalog` is assembled from the rooms of ``catalog/``, each of which builds on the one below:
``store`` (SQLite, the clock, the blockstore, rows and refs), ``trees`` (ranges and metaranges
read, written and merged), ``staging`` (uncommitted changes, and moving a branch to a new
commit); over those, side by side, ``repositories`` (and branches, tags, the log), ``objects``,
``links`` (link addresses), ``commits`` (and imports, merges, reverts, cherry-picks), ``diffs``
and ``gc``.
"""

from __future__ import annotations

from .catalog.commits import Commits
from .catalog.diffs import Diffs
from .catalog.gc import NANOID_ALPHABET, RULES_KEY, GarbageCollection
from .catalog.links import RAW_URL_B64, Links
from .catalog.objects import DELETE_OBJECTS_MAX, Objects
from .catalog.repositories import BRANCH_NAME_RE, DUMMY_CONTENT, DUMMY_KEY, REPO_NAME_RE, Repositories
from .catalog.staging import entry_from_json, entry_mtime, entry_to_json
from .catalog.store import _now_iso
from .errors import APIError, ImportFailed, MergeConflict, not_found
from .settings import Settings

__all__ = [
    "BRANCH_NAME_RE",
    "DELETE_OBJECTS_MAX",
    "DUMMY_CONTENT",
    "DUMMY_KEY",
    "NANOID_ALPHABET",
    "RAW_URL_B64",
    "REPO_NAME_RE",
    "RULES_KEY",
    "APIError",
    "Catalog",
    "ImportFailed",
    "MergeConflict",
    "Settings",
    "_now_iso",
    "entry_from_json",
    "entry_mtime",
    "entry_to_json",
    "not_found",
]


class Catalog(Repositories, Objects, Links, Commits, Diffs, GarbageCollection):
    """The lakeFS catalog the HTTP layer serves (``Catalog(settings)``; see the module docstring)."""
