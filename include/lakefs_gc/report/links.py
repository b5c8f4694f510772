"""The URLs a run's report links to: the report itself, and the repository in lakeFS's UI."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

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

    ``s3://`` on AWS (no endpoint): the S3 console's object page. ``s3://`` on an S3-compatible
    endpoint: the object's path-style URL on that endpoint (it opens where the bucket can be read
    without signing, e.g. moto or a public bucket; MinIO's console is on another port we do not
    know). ``local://``: None, a browser does not open the server's files from a web page (the
    DAG-run summary and ``lakefs-gc report`` show the path). No credential is ever part of it.
    """
    parts = urlsplit(uri)
    if parts.scheme not in ("s3", "s3a") or not parts.netloc:
        return None
    bucket, key = parts.netloc, parts.path.lstrip("/")
    if not storage.endpoint_url:
        region = storage.s3_region or "us-east-1"
        return (f"https://s3.console.aws.amazon.com/s3/object/{quote(bucket, safe='')}"
                f"?region={quote(region, safe='')}&prefix={quote(key, safe='')}")
    endpoint = urlsplit(storage.endpoint_url)
    if endpoint.scheme not in ("http", "https"):
        return None
    base = f"{endpoint.scheme}://{endpoint.hostname}" + (f":{endpoint.port}" if endpoint.port else "")
    return f"{base}/{quote(bucket, safe='')}/{quote(key)}"

