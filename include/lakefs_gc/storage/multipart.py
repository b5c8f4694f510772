"""
Incomplete multipart uploads under a namespace, per store: list them, size them, abort them.

Beside the adapters, not in them: each class here holds the adapter it reads through (its client,
bucket and key prefix), so the adapters keep only the calls every step makes.

- S3: ListMultipartUploads with the namespace's key prefix (paginated), ListParts for the sizes,
  AbortMultipartUpload. lakeFS's S3 gateway and its presigned multipart uploads are these.
- GCS: the same calls of the XML API (``GET /<bucket>?uploads``, ``GET /<bucket>/<key>?uploadId=``,
  ``DELETE /<bucket>/<key>?uploadId=``), at the storage connection's endpoint. lakeFS itself never
  makes one on GCS: its ``gs`` adapter keeps an upload's parts as ordinary objects
  (``<address>.part_<n>``, ``<address>.multipart``) that the GC lists like any other; other clients
  writing under the namespace may. An endpoint that does not answer ListMultipartUploads
  (fake-gcs-server) is :class:`Unsupported`.
- Azure: a blob with uncommitted blocks only (its upload never committed) is listed with
  ``include=["uncommittedblobs"]`` at size 0, its blocks by ``get_block_list``. Azure has no abort:
  the service discards uncommitted blocks after 7 days, so they are reported, never deleted.
- ``local://``: none. lakeFS's local blockstore writes an upload's parts as ordinary files
  (``<upload id>-<part>`` at the namespace root), listed like any other by clean runs.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote, urlencode

if TYPE_CHECKING:
    from lakefs_gc.storage.azure import AzureStorage
    from lakefs_gc.storage.gcs import GCSStorage
    from lakefs_gc.storage.s3 import S3Storage

GCS_XML_ENDPOINT = "https://storage.googleapis.com"


class Unsupported(Exception):
    """The store's endpoint does not answer the multipart calls (an emulator that does not model them)."""


class UploadGone(Exception):
    """The upload is no longer there (completed or aborted since it was listed)."""


@dataclass(frozen=True)
class PendingUpload:
    """An incomplete upload: its namespace-relative key, the store's upload id, when it was initiated."""

    key: str
    upload_id: str
    initiated: datetime


class MultipartUploads(Protocol):
    """A store's incomplete multipart uploads under the namespace."""

    how: str

    def list(self) -> Iterator[PendingUpload]: ...
    def size(self, upload: PendingUpload) -> int: ...
    def abort(self, upload: PendingUpload) -> None:
        """Abort ``upload``; :class:`UploadGone` when the store no longer has it."""
        ...


def _utc(t: datetime) -> datetime:
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


class S3Uploads:
    """S3's multipart uploads under the namespace's prefix."""

    how = "s3 multipart"

    def __init__(self, storage: S3Storage):
        self.st = storage

    def list(self) -> Iterator[PendingUpload]:
        st, strip = self.st, len(self.st._base)
        pages = st.client.get_paginator("list_multipart_uploads").paginate(Bucket=st.bucket, Prefix=st._base)
        try:
            for page in pages:
                for u in page.get("Uploads", ()):
                    if u["Key"].startswith(st._base):
                        yield PendingUpload(u["Key"][strip:], u["UploadId"], _utc(u["Initiated"]))
        except st.client.exceptions.ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in ("NotImplemented", "501"):  # an S3-compatible store without the call
                raise Unsupported(f"{st.options.endpoint_url or 'S3'} answered ListMultipartUploads: {code}") from None
            raise

    def size(self, upload: PendingUpload) -> int:
        st = self.st
        pages = st.client.get_paginator("list_parts").paginate(
            Bucket=st.bucket, Key=st._name(upload.key), UploadId=upload.upload_id
        )
        try:
            return sum(int(p["Size"]) for page in pages for p in page.get("Parts", ()))
        except st.client.exceptions.NoSuchUpload:
            raise UploadGone(upload.upload_id) from None

    def abort(self, upload: PendingUpload) -> None:
        st = self.st
        try:
            st.client.abort_multipart_upload(Bucket=st.bucket, Key=st._name(upload.key), UploadId=upload.upload_id)
        except st.client.exceptions.NoSuchUpload:
            raise UploadGone(upload.upload_id) from None


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _children(el: ET.Element, name: str) -> list[ET.Element]:
    return [c for c in el if _local(c.tag) == name]


def _text(el: ET.Element, name: str) -> str:
    found = _children(el, name)
    return (found[0].text or "") if found else ""


class GCSUploads:
    """GCS's XML API multipart uploads under the namespace's prefix (the documented S3-compatible calls)."""

    how = "gcs multipart"

    def __init__(self, storage: GCSStorage):
        self.st = storage
        self.endpoint = (storage.options.endpoint_url or GCS_XML_ENDPOINT).rstrip("/")
        self.http: Any = storage.client._http  # the client's authorized session: its credentials, its token

    def _call(self, method: str, path: str, query: str) -> tuple[int, ET.Element | None]:
        r = self.http.request(method, f"{self.endpoint}/{path}?{query}", timeout=60)
        if r.status_code == 404 and b"NoSuchUpload" in r.content:
            raise UploadGone(query)
        if r.status_code >= 400:
            raise RuntimeError(f"GCS XML API {method} /{path}?{query}: HTTP {r.status_code}: {r.text[:300]}")
        return r.status_code, ET.fromstring(r.content) if r.content.strip() else None

    def list(self) -> Iterator[PendingUpload]:
        st, strip = self.st, len(self.st._base)
        markers: dict[str, str] = {}
        while True:
            query = "uploads&" + urlencode({"prefix": st._base, **markers})
            _, root = self._call("GET", quote(st.bucket_name), query)
            if root is None or _local(root.tag) != "ListMultipartUploadsResult":
                raise Unsupported(
                    f"{self.endpoint} answered ListMultipartUploads with "
                    f"{'nothing' if root is None else _local(root.tag)}, not ListMultipartUploadsResult"
                )
            for u in _children(root, "Upload"):
                key = _text(u, "Key")
                if key.startswith(st._base):
                    initiated = datetime.fromisoformat(_text(u, "Initiated").replace("Z", "+00:00"))
                    yield PendingUpload(key[strip:], _text(u, "UploadId"), _utc(initiated))
            if _text(root, "IsTruncated").lower() != "true":
                return
            markers = {
                "key-marker": _text(root, "NextKeyMarker"),
                "upload-id-marker": _text(root, "NextUploadIdMarker"),
            }

    def _object(self, upload: PendingUpload) -> str:
        return f"{quote(self.st.bucket_name)}/{quote(self.st._name(upload.key))}"

    def size(self, upload: PendingUpload) -> int:
        total, marker = 0, ""
        while True:
            query = urlencode({"uploadId": upload.upload_id, **({"part-number-marker": marker} if marker else {})})
            _, root = self._call("GET", self._object(upload), query)
            if root is None:
                return total
            total += sum(int(_text(p, "Size") or 0) for p in _children(root, "Part"))
            if _text(root, "IsTruncated").lower() != "true":
                return total
            marker = _text(root, "NextPartNumberMarker")

    def abort(self, upload: PendingUpload) -> None:
        self._call("DELETE", self._object(upload), urlencode({"uploadId": upload.upload_id}))


@dataclass(frozen=True)
class UncommittedBlob:
    """A blob of uncommitted blocks only: its key, its blocks' bytes, when it was created."""

    key: str
    bytes: int
    created: datetime


class AzureUncommitted:
    """Azure blobs under the namespace that hold uncommitted blocks only (reported: Azure has no abort)."""

    how = "azure uncommitted blocks"

    def __init__(self, storage: AzureStorage):
        self.st = storage

    def list(self) -> Iterator[UncommittedBlob]:
        """
        Every blob listed only with ``include=["uncommittedblobs"]`` (size 0) whose block list has uncommitted blocks.

        Uncommitted blocks staged on a committed blob (an upload over it that never committed) are
        not listed by Azure; they are not counted.
        """
        st, strip = self.st, len(self.st._base)
        for b in st.client.list_blobs(name_starts_with=st._base, include=["uncommittedblobs"]):
            if b.size:
                continue
            _, uncommitted = st.client.get_blob_client(b.name).get_block_list("uncommitted")
            if uncommitted:
                created = b.creation_time or b.last_modified
                yield UncommittedBlob(b.name[strip:], sum(int(x.size) for x in uncommitted), _utc(created))


def uploads_of(storage: object) -> MultipartUploads | AzureUncommitted | None:
    """Return the incomplete uploads of ``storage``'s kind; None for a store without them (``local://``)."""
    from lakefs_gc.storage.azure import AzureStorage
    from lakefs_gc.storage.gcs import GCSStorage
    from lakefs_gc.storage.s3 import S3Storage

    if isinstance(storage, S3Storage):
        return S3Uploads(storage)
    if isinstance(storage, GCSStorage):
        return GCSUploads(storage)
    if isinstance(storage, AzureStorage):
        return AzureUncommitted(storage)
    return None
