"""
The doctor's store checks: each right of the storage credentials tried on a scratch key, then what deletes leave.

The scratch key is ``<namespace>/_lakefs_gc/doctor/<uuid>/object``: nothing of the user's is
touched. On S3 each action of :data:`lakefs_gc.doctor.policy.S3_ACTIONS` is tried by the call a
run makes with it (a ``FAIL`` names the action and the ARN to allow): PutObject, GetObject and
HeadObject, ListObjectsV2 (boto3's and the native client's), the bucket's versioning and lifecycle,
the multipart listing and an abort (of an upload the doctor starts on its scratch key), DeleteObjects,
ListObjectVersions and, on a versioned bucket, the restore path (the delete marker removed, the
object current again). Every version the doctor wrote is removed at the end; what could not be is
said (``WARN``). On Azure, GCS and ``local://``: write, read, list and delete through the adapter.
Then :meth:`~lakefs_gc.storage.base.Storage.restorability` says what a sweep's deletes mean for the
bill and for undo.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lakefs_gc.doctor.policy import S3_ACTION, s3_object_arn
from lakefs_gc.storage.namespace import parse_namespace, relative_to

if TYPE_CHECKING:
    from collections.abc import Callable

    from lakefs_gc.doctor import Report
    from lakefs_gc.storage.base import Storage
    from lakefs_gc.storage.s3 import S3Storage

BODY = b"lakefs-gc doctor: a scratch object, removed by the doctor\n"
POLICY = "lakefs-gc doctor {repo} --policy prints the least the run needs"


def scratch_dir() -> str:
    """Return a fresh scratch folder under the namespace (relative)."""
    return f"_lakefs_gc/doctor/{uuid.uuid4().hex}/"


def check_storage(
    report: Report, storage: Storage, repo: str, now: datetime, quarantine_days: int, commits: str | None
) -> None:
    """Try the credentials' rights on a scratch key, read lakeFS's GC file, then say what deletes leave."""
    from lakefs_gc.storage.s3 import S3Storage

    if isinstance(storage, S3Storage):
        _S3Probe(report, storage, repo).run()
    else:
        _generic(report, storage, repo)
    if commits:
        _read_lakefs_file(report, storage, commits, repo)
    bill_and_undo(report, storage, now, quarantine_days)


def _code(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        err = response.get("Error", {})
        return f"{err.get('Code', '?')}: {err.get('Message', '')}".strip(": ")
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:200]


class _S3Probe:
    """Each S3 action of the run, tried once on the scratch key."""

    def __init__(self, report: Report, storage: S3Storage, repo: str):
        self.report, self.st, self.repo = report, storage, repo
        self.c, self.bucket = storage.client, storage.bucket
        self.dir = scratch_dir()
        self.key = storage._name(self.dir + "object")
        self.ns = parse_namespace(storage.uri)
        self.versions: set[str] = set()  # every version id the doctor made (the object's, delete markers)
        self.versioning = "unknown"
        self.uploads: list[str] = []  # the doctor's multipart upload, until aborted

    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.key}"

    def tried(self, action: str, what: str, call: Callable[[], str]) -> bool:
        """Run ``call``; PASS with what it says, else FAIL naming ``action`` and the ARN to allow."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            found = call()
        except (ClientError, BotoCoreError, OSError, ValueError) as exc:
            scope = S3_ACTION[action].scope if action in S3_ACTION else "object"
            arn = f"arn:aws:s3:::{self.bucket}" if scope == "bucket" else s3_object_arn(self.ns)
            self.report.fail(
                action,
                f"{what} refused ({_code(exc)}); a run needs it for {S3_ACTION[action].used_by}",
                f"allow {action} on {arn} for the storage connection's key ({POLICY.format(repo=self.repo)})",
            )
            return False
        self.report.ok(action, found)
        return True

    def not_tried(self, action: str, why: str) -> None:
        self.report.warn(action, f"not tried: {why}")

    def run(self) -> None:
        from botocore.exceptions import ClientError, EndpointConnectionError

        try:
            self.c.head_bucket(Bucket=self.bucket)
        except EndpointConnectionError as exc:
            self.report.fail("S3 reachable", str(exc), "endpoint_url in the storage connection's extra")
            return
        except ClientError:  # it answered: HeadBucket's right is s3:ListBucket's, whose own line says
            pass
        written = self.tried("s3:PutObject", f"PutObject {self.uri()}", self._put)
        if written:
            self.tried("s3:GetObject", f"GetObject and HeadObject {self.uri()}", self._get)
            self.tried("s3:ListBucket", f"ListObjectsV2 under {self.key}", self._list)
        else:
            self.not_tried("s3:GetObject", "the scratch object could not be written")
            self.tried("s3:ListBucket", f"ListObjectsV2 under {self.key}", self._list)
        self.tried("s3:GetBucketVersioning", f"GetBucketVersioning {self.bucket}", self._versioning)
        self.tried("s3:GetLifecycleConfiguration", f"GetBucketLifecycleConfiguration {self.bucket}", self._lifecycle)
        self.tried("s3:ListBucketMultipartUploads", f"ListMultipartUploads under {self.key}", self._uploads)
        upload = self.uploads
        if written and self.tried(
            "s3:PutObject", "CreateMultipartUpload (a part of PutObject's)", lambda: self._start(upload)
        ):
            self.tried("s3:ListMultipartUploadParts", f"ListParts {self.uri()}.part", lambda: self._parts(upload[0]))
            self.tried(
                "s3:AbortMultipartUpload", f"AbortMultipartUpload {self.uri()}.part", lambda: self._abort(upload)
            )
        else:
            for action in ("s3:ListMultipartUploadParts", "s3:AbortMultipartUpload"):
                self.not_tried(action, "no multipart upload could be started")
        marker: list[str] = []
        if written:
            self.tried("s3:DeleteObject", f"DeleteObjects {self.uri()}", lambda: self._delete(marker))
        else:
            self.not_tried("s3:DeleteObject", "the scratch object could not be written")
        self.tried("s3:ListBucketVersions", f"ListObjectVersions under {self.key}", self._list_versions)
        if marker:
            self.tried("s3:DeleteObjectVersion", f"the restore path on {self.uri()}", lambda: self._restore(marker[0]))
        elif self.versioning == "Enabled":
            self.not_tried("s3:DeleteObjectVersion", "the sweep's delete left no delete marker to remove")
        else:
            self.not_tried(
                "s3:DeleteObjectVersion",
                f"bucket versioning is {self.versioning.lower()}: a restore has nothing to bring back",
            )
        self._clean()

    def _put(self) -> str:
        r = self.c.put_object(Bucket=self.bucket, Key=self.key, Body=BODY)
        if r.get("VersionId") and r["VersionId"] != "null":
            self.versions.add(r["VersionId"])
        return f"PutObject {self.uri()} (the scratch object)"

    def _get(self) -> str:
        body = self.c.get_object(Bucket=self.bucket, Key=self.key)["Body"].read()
        self.c.head_object(Bucket=self.bucket, Key=self.key)
        if body != BODY:
            raise ValueError(f"GetObject answered {len(body)} bytes, not the {len(BODY)} written")
        return f"GetObject and HeadObject {self.uri()}"

    def _list(self) -> str:
        from lakefs_gc.storage import native

        page = self.c.list_objects_v2(Bucket=self.bucket, Prefix=self.key)
        keys = [o["Key"] for o in page.get("Contents", ())]
        how = "ListObjectsV2"
        if native.enabled():
            rows = sum(b.num_rows for b in self.st.list_batches(self.dir))
            how += f" and the native client's listing ({rows} under the scratch folder)"
        return f"{how} under {self.key}: {'finds the scratch object' if self.key in keys else 'answered'}"

    def _versioning(self) -> str:
        self.versioning = self.c.get_bucket_versioning(Bucket=self.bucket).get("Status") or "Off"
        return f"bucket {self.bucket}: versioning {self.versioning.lower()}"

    def _lifecycle(self) -> str:
        from botocore.exceptions import ClientError

        try:
            rules = self.c.get_bucket_lifecycle_configuration(Bucket=self.bucket).get("Rules", [])
        except ClientError as exc:
            if "NoSuchLifecycleConfiguration" in str(exc):
                return f"bucket {self.bucket} has no lifecycle configuration"
            raise
        from lakefs_gc.words import plural

        return f"bucket {self.bucket}: {plural(len(rules), 'lifecycle rule')}"

    def _uploads(self) -> str:
        page = self.c.list_multipart_uploads(Bucket=self.bucket, Prefix=self.key)
        return f"ListMultipartUploads under {self.key}: {len(page.get('Uploads', []))} (the doctor's own)"

    def _start(self, upload: list[str]) -> str:
        upload.append(self.c.create_multipart_upload(Bucket=self.bucket, Key=self.key + ".part")["UploadId"])
        return f"CreateMultipartUpload {self.uri()}.part (aborted below)"

    def _parts(self, upload: str) -> str:
        page = self.c.list_parts(Bucket=self.bucket, Key=self.key + ".part", UploadId=upload)
        return f"ListParts of the doctor's upload on {self.uri()}.part: {len(page.get('Parts', []))} parts"

    def _abort(self, upload: list[str]) -> str:
        self.c.abort_multipart_upload(Bucket=self.bucket, Key=self.key + ".part", UploadId=upload.pop())
        return f"AbortMultipartUpload of the doctor's upload on {self.uri()}.part"

    def _delete(self, marker: list[str]) -> str:
        r = self.c.delete_objects(Bucket=self.bucket, Delete={"Objects": [{"Key": self.key}], "Quiet": False})
        errors = r.get("Errors", [])
        if errors:
            from botocore.exceptions import ClientError

            raise ClientError(
                {"Error": {"Code": errors[0].get("Code"), "Message": errors[0].get("Message")}}, "DeleteObjects"
            )
        for d in r.get("Deleted", []):
            if d.get("DeleteMarkerVersionId"):
                marker.append(d["DeleteMarkerVersionId"])
                self.versions.add(d["DeleteMarkerVersionId"])
        left = f"; it left delete marker {marker[0]}" if marker else ""
        return f"DeleteObjects {self.uri()} (the sweep's call){left}"

    def _list_versions(self) -> str:
        page = self.c.list_object_versions(Bucket=self.bucket, Prefix=self.key)
        found = [v for v in page.get("Versions", []) + page.get("DeleteMarkers", []) if v["Key"] == self.key]
        self.versions |= {v["VersionId"] for v in found if v.get("VersionId") not in (None, "null")}
        return f"ListObjectVersions under {self.key}: {len(found)} versions and markers (the doctor's)"

    def _restore(self, marker: str) -> str:
        self.c.delete_object(Bucket=self.bucket, Key=self.key, VersionId=marker)
        self.versions.discard(marker)
        self.c.head_object(Bucket=self.bucket, Key=self.key)
        return f"the restore path: delete marker {marker} removed, the scratch object is current again"

    def _clean(self) -> None:
        """Remove every version the doctor made; say what is left."""
        left: list[str] = []
        for upload in self.uploads:
            try:
                self.c.abort_multipart_upload(Bucket=self.bucket, Key=self.key + ".part", UploadId=upload)
            except Exception as exc:
                left.append(f"multipart upload {upload} ({_code(exc)})")
        for vid in sorted(self.versions):
            try:
                self.c.delete_object(Bucket=self.bucket, Key=self.key, VersionId=vid)
            except Exception as exc:
                left.append(f"version {vid} ({_code(exc)})")
        try:
            self.c.delete_object(Bucket=self.bucket, Key=self.key)  # unversioned, or the restore made it current
            if self.versioning == "Enabled":  # that left a marker: remove what is there now
                page = self.c.list_object_versions(Bucket=self.bucket, Prefix=self.key)
                for v in page.get("Versions", []) + page.get("DeleteMarkers", []):
                    if v["Key"] == self.key:
                        self.c.delete_object(Bucket=self.bucket, Key=self.key, VersionId=v["VersionId"])
        except Exception as exc:
            left.append(f"the object ({_code(exc)})")
        if left:
            self.report.warn(
                "scratch key",
                f"left under {self.uri()}: {', '.join(left)}",
                "delete it with a key that may (aws s3api delete-object --version-id ...)",
            )
        else:
            self.report.ok("scratch key", f"{self.uri()} and each version of it removed")


def _generic(report: Report, st: Storage, repo: str) -> None:
    """Write, read, list and delete a scratch key through the adapter (Azure, GCS, local://)."""
    d = scratch_dir()
    key = d + "object"
    fix = f"give the storage connection's identity the rights a run needs ({POLICY.format(repo=repo)})"
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("write", lambda: st.put(key, BODY)),
        ("read", lambda: _same(st.get(key))),
        ("list", lambda: _listed(st, d, key)),
        ("delete", lambda: _deleted(st, key)),
    ]
    for what, step in steps:
        try:
            step()
        except Exception as exc:
            report.fail(f"storage {what}", f"{what} {st.full_uri(key)} refused ({_code(exc)})", fix)
            if what == "write":
                report.warn("storage read, list, delete", "not tried: the scratch object could not be written")
                return
            continue
        report.ok(f"storage {what}", f"{what} {st.full_uri(key)}")
    report.warn("storage restore path", f"not tried on {st.uri.split(':')[0]}:// (tried on S3 only)")


def _same(body: bytes) -> None:
    if body != BODY:
        raise ValueError(f"read {len(body)} bytes, not the {len(BODY)} written")


def _listed(st: Storage, d: str, key: str) -> None:
    if key not in [o.key for o in st.list(d)]:
        raise ValueError("the listing does not show the object written")


def _deleted(st: Storage, key: str) -> None:
    failed = st.delete_batch([key])
    if failed:
        raise ValueError(f"{failed[0][1]}: {failed[0][2]}")


def _read_lakefs_file(report: Report, st: Storage, location: str, repo: str) -> None:
    """Read the expired-commits file lakeFS just wrote, as list_committed will."""
    key = relative_to(st.uri, location.rstrip("/"))
    if key is None:
        report.warn("lakeFS's GC files", f"{location} is outside the namespace {st.uri}: not read")
        return
    try:
        if st.stat(key) is None:  # a folder (one file per part): its listing reads it
            next(iter(st.list(key.rstrip("/") + "/")), None)
        else:
            st.get(key)
    except Exception as exc:
        action = "s3:GetObject" if st.uri.startswith("s3://") else "storage read"
        report.fail(
            action,
            f"reading lakeFS's expired-commits file {location} refused ({_code(exc)}); list_committed reads it",
            f"allow reading the namespace's _lakefs/ keys for the storage connection ({POLICY.format(repo=repo)})",
        )
        return
    report.ok("lakeFS's GC files", f"the storage key reads {location} (written by lakeFS just now)")


def bill_and_undo(report: Report, st: Storage, now: datetime, quarantine_days: int) -> None:
    """Say what a sweep's deletes mean for the bill and for undo, from the store's own settings."""
    r = st.restorability(now, quarantine_days)
    what = f"bill and undo ({r.how})"
    if r.restorable is None:
        report.warn(what, f"unknown: {r.detail}", "let the storage key read the bucket's settings")
    elif r.restorable and r.until is None:
        report.warn(
            what,
            f"{r.detail}: a sweep's deletes can be undone, and every deleted byte stays billed until someone deletes it",
            "add a rule that expires deleted versions (S3: a lifecycle rule's NoncurrentVersionExpiration; Azure, "
            "GCS: a soft delete retention): undo works until then, and the bytes are freed then",
        )
    elif r.restorable:
        report.ok(
            what, f"{r.detail}: a sweep's deletes can be undone, and stay billed, until {r.until} for a sweep run now"
        )
    else:
        report.ok(what, f"{r.detail}: a sweep frees the bytes at once and cannot be undone (lakefs-gc restore)")
