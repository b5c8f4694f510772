"""The errors the catalog raises: lakeFS's status codes and messages, which the HTTP layer answers."""

from __future__ import annotations


class APIError(Exception):
    """An error lakeFS answers: its HTTP status and its message (the body's ``message``)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def not_found(what: str = "") -> APIError:
    """
    Return lakeFS's 404 for a missing ``what``.

    Graveler's ``ErrRepositoryNotFound`` ("repository not found"), ``ErrBranchNotFound``,
    ``ErrCommitNotFound``, ``ErrTagNotFound``, else ``ErrNotFound`` ("not found", e.g. a missing
    object or an unresolvable ref).
    """
    return APIError(404, f"{what} not found" if what else "not found")


class ImportFailed(APIError):
    """
    An import that lakeFS starts (202) and then fails.

    Its status reports ``completed: false`` and the error (``import error: <message>``);
    ``ingested`` objects were listed before it failed.
    """

    def __init__(self, message: str, ingested: int):
        super().__init__(400, message)
        self.ingested = ingested


class MergeConflict(APIError):
    """lakeFS's ``ErrConflictFound`` from a three-way merge (409)."""

    def __init__(self):
        super().__init__(409, "conflict found")
