"""A proxy in front of moto that counts the S3 requests it forwards, by the kind the GC counts them as
(``lakefs_gc.storage.requests``): the independent count the GC's own counts are checked against."""

from __future__ import annotations

from collections import Counter
from urllib.parse import parse_qs, urlsplit

from tests.support.faulty_http import FaultyProxy

# bucket sub-resources a GET reads (settings: not counted by the GC, see lakefs_gc.storage.requests)
SETTINGS = ("versioning", "lifecycle", "location", "policy", "acl", "tagging", "uploads")


def s3_kind(method: str, path: str) -> str:
    """Return what an S3 request is, as the GC counts it: LIST, HEAD, GET, PUT, DELETE, or SETTINGS."""
    query = parse_qs(urlsplit(path).query, keep_blank_values=True)
    if method == "HEAD":
        return "HEAD"
    if method == "GET":
        if "list-type" in query or "prefix" in query or "delimiter" in query:
            return "LIST"
        if any(k in query for k in SETTINGS):
            return "SETTINGS"
        return "GET"
    if method == "PUT":
        return "PUT"
    if method == "DELETE" or (method == "POST" and "delete" in query):
        return "DELETE"
    return f"{method} {path}"


class CountingS3Proxy(FaultyProxy):
    """Forward everything to moto; ``counts``: every request forwarded, by :func:`s3_kind`."""

    def __init__(self, upstream: str):
        super().__init__(upstream)
        self.counts: Counter[str] = Counter()
        self.log: list[tuple[str, str]] = []  # (kind, method and path) of every request, for a failure's message

    def intercept(self, handler, body, headers) -> bool:
        with self.lock:
            kind = s3_kind(handler.command, handler.path)
            self.counts[kind] += 1
            self.log.append((kind, f"{handler.command} {handler.path}"))
        return False

    def take(self) -> Counter[str]:
        """Return the counts so far and start again from zero."""
        with self.lock:
            out, self.counts = self.counts, Counter()
        return out


def azure_kind(method: str, path: str) -> str:
    """Return what an Azure Blob request is, as the GC counts it (a Blob Batch is one DELETE)."""
    query = parse_qs(urlsplit(path).query, keep_blank_values=True)
    comp = (query.get("comp") or [""])[0]
    if method == "HEAD":
        return "HEAD"
    if method == "GET":
        if comp == "list":
            return "LIST"
        return "SETTINGS" if comp or "restype" in query else "GET"
    if method == "PUT":
        return "PUT"
    if method == "DELETE" or (method == "POST" and comp == "batch"):
        return "DELETE"
    return f"{method} {path}"


def gcs_kind(method: str, path: str) -> str:
    """Return what a GCS request (JSON or XML API) is, as the GC counts it (an object's metadata: HEAD)."""
    parts = urlsplit(path)
    query = parse_qs(parts.query, keep_blank_values=True)
    segments = [s for s in parts.path.split("/") if s]
    if method == "HEAD":
        return "HEAD"
    if method == "GET":
        if segments[:2] == ["storage", "v1"]:
            if segments[-1] == "o":
                return "LIST"
            if "o" not in segments:
                return "SETTINGS"  # the bucket's metadata
            return "GET" if query.get("alt") == ["media"] else "HEAD"
        if segments[:1] == ["download"]:
            return "GET"
        return "LIST" if len(segments) == 1 else "GET"  # the XML API: a bucket's listing, an object
    if method == "POST" and segments[:1] == ["upload"]:
        return "PUT"
    if method == "PUT":
        return "PUT"
    if method == "DELETE":
        return "DELETE"
    return f"{method} {path}"


class CountingProxy(CountingS3Proxy):
    """Forward everything; ``counts`` by ``kind(method, path)`` (:func:`azure_kind`, :func:`gcs_kind`)."""

    def __init__(self, upstream: str, kind):
        super().__init__(upstream)
        self.kind = kind

    def intercept(self, handler, body, headers) -> bool:
        with self.lock:
            kind = self.kind(handler.command, handler.path)
            self.counts[kind] += 1
            self.log.append((kind, f"{handler.command} {handler.path}"))
        return False
