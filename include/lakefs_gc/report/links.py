"""The URLs a run's report links to: the report itself, and the repository in lakeFS's UI."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from lakefs_gc.storage.kinds import NAMESPACE_KINDS

if TYPE_CHECKING:
    from lakefs_gc.contract import StorageLocation


def lakefs_ui_url(endpoint: str, repository: str) -> str | None:
    """
    Return the repository's page in lakeFS's UI.

    The API endpoint without ``/api/v1``, then ``/repositories/<repo>``; None when the endpoint is
    not an http(s) URL.
    """
    if not endpoint.startswith(("http://", "https://")):
        return None
    base = endpoint.rstrip("/").removesuffix("/api/v1").rstrip("/")
    return f"{base}/repositories/{quote(repository, safe='')}"


def report_url(uri: str, storage: StorageLocation) -> str | None:
    """
    Return a URL a browser can open for a report written at ``uri``, or None when there is none.

    The kind whose URI it is says (``NamespaceKind.object_url``): ``s3://`` on AWS (no endpoint):
    the S3 console's object page. ``s3://`` on an S3-compatible endpoint: the object's path-style
    URL on that endpoint (it opens where the bucket can be read without signing, e.g. moto or a
    public bucket; MinIO's console is on another port we do not know). ``local://``: None, a browser
    does not open the server's files from a web page (the DAG-run summary and ``lakefs-gc report``
    show the path). No credential is ever part of it.
    """
    return next(
        (
            url
            for kind in NAMESPACE_KINDS.values()
            if (url := kind.object_url(uri, storage.endpoint_url, storage.s3_region)) is not None
        ),
        None,
    )
