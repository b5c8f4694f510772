"""
The least a GC run needs: the store's actions and lakeFS's, as ``lakefs-gc doctor REPO --policy`` prints them.

One table per side, each row an action, what in the run uses it, and the call the doctor tries for
it (:mod:`lakefs_gc.doctor.storage_checks`, :mod:`lakefs_gc.doctor.lakefs_checks`): a row added
here is printed in the policy and tried by the doctor, so the two cannot drift apart.

S3's actions come from every boto3 and obstore call of ``storage/s3.py``, ``storage/native.py`` and
the sweep, restore and report code: ListObjectsV2 (``s3:ListBucket``), GetObject and HeadObject
(``s3:GetObject``), PutObject, DeleteObjects and DeleteObject (``s3:DeleteObject``), the bucket's
versioning and lifecycle, ListObjectVersions and DeleteObject with a version id (a restore), and the
multipart listing, parts and abort of the sweep's incomplete uploads. lakeFS's come from lakeFS's own
controller (``pkg/api/controller.go``: the permission each API operation asks for).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from lakefs_gc.storage.namespace import AZURE, GCS, S3, NamespaceURI


@dataclass(frozen=True)
class Action:
    """One permission the run needs, what uses it, and the call that proves it."""

    name: str  # s3:GetObject, fs:ListBranches, ...
    scope: str  # S3: bucket | object; lakeFS: all | repository | branch | object
    used_by: str
    call: str  # the API operation the doctor tries (and the run makes)


S3_ACTIONS = (
    Action("s3:ListBucket", "bucket", "listing the namespace, its marks and reports", "ListObjectsV2"),
    Action("s3:GetBucketVersioning", "bucket", "what a sweep's deletes leave (the report)", "GetBucketVersioning"),
    Action(
        "s3:GetLifecycleConfiguration",
        "bucket",
        "when a deleted version expires (NoncurrentVersionExpiration)",
        "GetBucketLifecycleConfiguration",
    ),
    Action(
        "s3:ListBucketVersions", "bucket", "lakefs-gc restore: finding a sweep's delete marker", "ListObjectVersions"
    ),
    Action(
        "s3:ListBucketMultipartUploads", "bucket", "the sweep: incomplete multipart uploads", "ListMultipartUploads"
    ),
    Action("s3:PutObject", "object", "writing marks, reports and work parts", "PutObject"),
    Action("s3:GetObject", "object", "reading lakeFS's metadata and GC files, marks and reports", "GetObject"),
    Action("s3:DeleteObject", "object", "the sweep's deletes", "DeleteObjects"),
    Action(
        "s3:DeleteObjectVersion",
        "object",
        "lakefs-gc restore: removing the sweep's delete marker",
        "DeleteObject with a version id",
    ),
    Action("s3:ListMultipartUploadParts", "object", "the sweep: an incomplete upload's size", "ListParts"),
    Action(
        "s3:AbortMultipartUpload", "object", "the sweep: aborting incomplete multipart uploads", "AbortMultipartUpload"
    ),
)
S3_ACTION = {a.name: a for a in S3_ACTIONS}
# Rights only ``lakefs-gc restore`` uses (the undo of a sweep): a run without them works, its undo does not
UNDO_ONLY = frozenset(a.name for a in S3_ACTIONS if a.used_by.startswith("lakefs-gc restore"))

LAKEFS_ACTIONS = (
    Action("fs:ReadConfig", "all", "prepare_run: the blockstore's type", "getConfig"),
    Action("fs:ReadRepository", "repository", "prepare_run: the namespace; the committed listing", "getRepository"),
    Action("retention:GetGarbageCollectionRules", "repository", "prepare_run: the retention rules", "getGCRules"),
    Action("fs:ListBranches", "repository", "the uncommitted and committed listings", "listBranches"),
    Action("fs:ReadBranch", "branch", "the rules' retention window (commit logs)", "logCommits"),
    Action("fs:ReadCommit", "repository", "branch HEADs' metaranges", "getCommit"),
    Action("fs:ListTags", "repository", "tags hold commits", "listTags"),
    Action("fs:ListObjects", "repository", "staged objects; metarange and range locations", "listObjects"),
    Action("fs:ReadObject", "object", "a staged object's address", "statObject"),
    Action(
        "retention:PrepareGarbageCollectionCommits",
        "repository",
        "list_committed: lakeFS's expired-commits file",
        "prepareGarbageCollectionCommitsAsync",
    ),
    Action(
        "retention:PrepareGarbageCollectionUncommitted",
        "repository",
        "mark_uncommitted: lakeFS's uncommitted-objects file",
        "prepareGarbageCollectionUncommitted",
    ),
)
LAKEFS_ACTION = {a.name: a for a in LAKEFS_ACTIONS}
FLEET_ACTION = Action("fs:ListRepositories", "all", "the fleet's refresh (not a run)", "listRepositories")

AZURE_DATA_ACTIONS = (
    "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read",
    "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write",
    "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/delete",
)
AZURE_ACTIONS = ("Microsoft.Storage/storageAccounts/blobServices/read",)  # the account's soft delete setting
GCS_PERMISSIONS = (
    "storage.buckets.get",  # the bucket's soft delete policy
    "storage.objects.list",
    "storage.objects.get",
    "storage.objects.create",
    "storage.objects.delete",
    "storage.objects.restore",  # lakefs-gc restore
    "storage.multipartUploads.list",
    "storage.multipartUploads.listParts",
    "storage.multipartUploads.abort",
)


def s3_object_arn(ns: NamespaceURI) -> str:
    """Return the ARN of every key under the namespace (``arn:aws:s3:::bucket/prefix/*``)."""
    return f"arn:aws:s3:::{ns.bucket}/{ns.prefix.strip('/') + '/' if ns.prefix.strip('/') else ''}*"


def s3_policy(ns: NamespaceURI, inventory: NamespaceURI | None = None, without: str | None = None) -> dict[str, object]:
    """
    Return the IAM policy document a run on ``ns`` needs (``without``: one action left out, for tests).

    ``inventory``: where the namespace's inventory reports are delivered, read too.
    S3 authorizes DeleteObjects key by key against ``s3:DeleteObject`` on each object; some
    S3-compatible servers (moto) check it against the bucket, so the bucket's ARN is named for it
    too (on AWS it grants nothing more: the action has no bucket resource).
    """

    def names(scope: str) -> list[str]:
        return [a.name for a in S3_ACTIONS if a.scope == scope and a.name != without]

    statements: list[dict[str, object]] = [
        {
            "Sid": "LakeFSGCBucket",
            "Effect": "Allow",
            "Action": names("bucket"),
            "Resource": f"arn:aws:s3:::{ns.bucket}",
        },
        {"Sid": "LakeFSGCObjects", "Effect": "Allow", "Action": names("object"), "Resource": s3_object_arn(ns)},
    ]
    if without != "s3:DeleteObject":
        statements.append(
            {
                "Sid": "LakeFSGCBatchDelete",
                "Effect": "Allow",
                "Action": ["s3:DeleteObject"],
                "Resource": f"arn:aws:s3:::{ns.bucket}",
            }
        )
    if inventory is not None:
        statements.append(
            {
                "Sid": "LakeFSGCInventory",
                "Effect": "Allow",
                "Action": ["s3:ListBucket", "s3:GetObject"],
                "Resource": [f"arn:aws:s3:::{inventory.bucket}", s3_object_arn(inventory)],
            }
        )
    return {"Version": "2012-10-17", "Statement": statements}


def lakefs_policy(repository: str) -> dict[str, object]:
    """Return the lakeFS RBAC policy a run of ``repository`` needs (lakeFS's policy JSON)."""
    repo = f"arn:lakefs:fs:::repository/{repository}"
    resource = {"all": "*", "repository": repo, "branch": f"{repo}/branch/*", "object": f"{repo}/object/*"}
    statements = []
    for scope in ("all", "repository", "branch", "object"):
        actions = [a.name for a in LAKEFS_ACTIONS if a.scope == scope]
        statements.append({"action": actions, "effect": "allow", "resource": resource[scope]})
    return {"id": f"LakeFSGC-{repository}", "statement": statements}


def print_policy(ns_uri: str, ns: NamespaceURI | None, repository: str, inventory: NamespaceURI | None) -> str:
    """Return the text ``--policy`` prints: the store's policy or role for ``ns``, then lakeFS's."""
    out: list[str] = []
    if ns is None:
        out.append(f"# {ns_uri}: a local:// namespace needs no cloud policy: the worker reads and writes its files")
    elif ns.scheme == S3:
        out.append(f"# AWS IAM policy for {ns_uri}: attach it to the user or role of the storage connection")
        out.append(json.dumps(s3_policy(ns, inventory), indent=2))
        out.append(
            "# s3:ListBucket lists the whole bucket; to hold it to the namespace add the condition "
            f'{{"StringLike": {{"s3:prefix": ["{ns.prefix.strip("/")}/*"]}}}} to the first statement'
        )
        for a in S3_ACTIONS:
            out.append(f"#   {a.name}: {a.used_by} ({a.call})")
    elif ns.scheme == AZURE:
        scope = f"/subscriptions/<subscription>/resourceGroups/<group>/providers/Microsoft.Storage/storageAccounts/{ns.host.split('.')[0]}"
        out.append(f"# Azure role for {ns_uri}")
        out.append(
            f"# built-in: 'Storage Blob Data Contributor' on the container ({scope}/blobServices/default/containers/"
            f"{ns.bucket}), and reading the account's blob soft delete setting (Get Blob Service Properties) needs "
            f"the account key or Microsoft.Storage/storageAccounts/blobServices/read on the account; or this custom role:"
        )
        role = {
            "Name": "lakeFS GC",
            "IsCustom": True,
            "Actions": list(AZURE_ACTIONS),
            "DataActions": list(AZURE_DATA_ACTIONS),
            "AssignableScopes": [scope],
        }
        out.append(json.dumps(role, indent=2))
    elif ns.scheme == GCS:
        out.append(f"# GCS role for {ns_uri}")
        out.append(
            f"# built-in: roles/storage.objectAdmin on bucket {ns.bucket}, and storage.buckets.get (the soft delete "
            f"policy; e.g. roles/storage.legacyBucketReader); or this custom role's permissions:"
        )
        out.append(json.dumps({"title": "lakeFS GC", "includedPermissions": list(GCS_PERMISSIONS)}, indent=2))
    out.append(f"# lakeFS policy for repository {repository} (lakeFS with RBAC; open-source lakeFS has one admin)")
    out.append(json.dumps(lakefs_policy(repository), indent=2))
    out.append(
        f"# the fleet's refresh also needs {FLEET_ACTION.name} on *; getGarbageCollectionConfig needs any signed-in user"
    )
    return "\n".join(out) + "\n"
