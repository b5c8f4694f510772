"""
The inventory configuration to create for a namespace's store, as each provider's own tools take it.

``lakefs-gc inventory check`` prints these when a repository has no usable inventory
(docs/inventory.md, "Setting one up"): what to give AWS, Azure or Google so that the store delivers
an inventory the GC can list the namespace from, and the ``listing:`` block of the repositories
file that points the GC at it. Each asks for what :func:`~lakefs_gc.inventory.verify` checks:
the key (or name), size and last-modified time, and the checksum the listing records (S3's ETag,
Azure's Content-MD5, GCS's md5Hash); current objects only (no versions, snapshots or deleted
blobs); a daily schedule (a run refuses an inventory older than ``max_age_days``, 8 by default);
CSV or Parquet (the formats all three write; S3's ORC is read too); a prefix that covers the
namespace's ``data/`` prefix (a shorter one serves every repository under it; GCS reports always
cover the whole bucket).

The shapes are the providers' own:

- S3: the ``InventoryConfiguration`` of ``PutBucketInventoryConfiguration`` (botocore's model; the
  JSON ``aws s3api put-bucket-inventory-configuration --inventory-configuration`` takes);
- Azure: the blob inventory policy (``BlobInventoryPolicySchema``: ``enabled``, ``type``
  ``Inventory``, ``rules``) that ``az storage account blob-inventory-policy create --policy`` takes;
- GCS: ``gcloud storage insights inventory-reports create`` and the Storage Insights API's
  ``ReportConfig`` (``frequencyOptions``, ``csvOptions`` or ``parquetOptions``,
  ``objectMetadataReportOptions``).

Pure Python: nothing here reads or writes a store.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from datetime import date, timedelta

import yaml  # type: ignore[import-untyped, unused-ignore]

from lakefs_gc.inventory.verify import data_prefix
from lakefs_gc.storage.namespace import AZURE, GCS, S3, NamespaceURI

CSV, PARQUET = "csv", "parquet"
FORMATS = (CSV, PARQUET)
# what stands where the person must fill in a name (none given, none configured): invalid as a
# bucket or container name on purpose, so that a command run as printed fails instead of guessing
DESTINATION = {S3: "<destination-bucket>", AZURE: "<destination-container>", GCS: "<destination-bucket>"}
RESOURCE_GROUP = "<resource-group>"
S3_FIELDS = ("Size", "LastModifiedDate", "ETag")  # OptionalFields (Bucket and Key are always there)
AZURE_FIELDS = ("Name", "Content-Length", "Last-Modified", "Content-MD5")
GCS_FIELDS = ("project", "bucket", "name", "size", "updated", "md5Hash")  # gcloud requires project, bucket, name
S3_ID_MAX = 64


@dataclass(frozen=True)
class Plan:
    """
    One inventory configuration to create for a namespace, and where its reports will arrive.

    ``destination``: S3 and GCS the destination bucket, Azure the destination container (in the
    namespace's storage account); ``destination_prefix``: S3 the destination ``Prefix``, GCS the
    destination path, Azure none. ``name``: S3 the configuration's ``Id``, Azure the rule's name,
    GCS the report configuration's display name (Google assigns its id). ``prefix``: the prefix the
    inventory filters on (Azure: ``<container>/<path>``, as Azure names blobs; GCS: none, a report
    covers the whole bucket).
    """

    ns: NamespaceURI
    destination: str
    destination_prefix: str
    name: str
    prefix: str
    format: str = CSV

    @property
    def kind(self) -> str:
        return self.ns.scheme

    @property
    def account(self) -> str:
        """Azure: the namespace's storage account."""
        return self.ns.host.partition(".")[0]

    def location(self) -> str:
        """Return where the reports arrive, as ``listing.inventory.location`` names it."""
        if self.kind == S3:  # <destination-prefix>/<source-bucket>/<config-ID>
            path = "/".join(p for p in (self.destination_prefix.strip("/"), self.ns.bucket, self.name) if p)
            return f"s3://{self.destination}/{path}"
        if self.kind == AZURE:
            return f"https://{self.ns.host}/{self.destination}"
        path = self.destination_prefix.strip("/")
        return f"gs://{self.destination}/{path}" if path else f"gs://{self.destination}"


def default_name(kind: str, repository: str) -> str:
    """Return the configuration's name for one repository: S3 ``lakefs-gc-<repo>``, Azure ``lakefsgc<repo>``."""
    if kind == AZURE:  # a rule's name: letters and digits
        return "lakefsgc" + re.sub(r"[^A-Za-z0-9]", "", repository)
    return f"lakefs-gc-{repository}"[:S3_ID_MAX]


def needed_prefix(ns: NamespaceURI) -> str:
    """Return the prefix an inventory of ``ns`` must cover: its ``data/`` prefix as the provider names objects."""
    return data_prefix(ns)


def s3_configuration(plan: Plan) -> dict[str, object]:
    """Return the ``InventoryConfiguration`` of ``PutBucketInventoryConfiguration`` (AWS's S3 API reference)."""
    destination: dict[str, object] = {
        "Bucket": f"arn:aws:s3:::{plan.destination}",
        "Format": "CSV" if plan.format == CSV else "Parquet",
    }
    if plan.destination_prefix.strip("/"):
        destination["Prefix"] = plan.destination_prefix.strip("/")
    doc: dict[str, object] = {
        "Destination": {"S3BucketDestination": destination},
        "IsEnabled": True,
        "Id": plan.name,
        "IncludedObjectVersions": "Current",
        "OptionalFields": list(S3_FIELDS),
        "Schedule": {"Frequency": "Daily"},
    }
    if plan.prefix:  # none: every object of the bucket (a Filter needs a Prefix)
        doc["Filter"] = {"Prefix": plan.prefix}
    return doc


def azure_policy(plan: Plan) -> dict[str, object]:
    """Return the blob inventory policy with one rule (``BlobInventoryPolicySchema``, Azure's Storage RP API)."""
    return {
        "enabled": True,
        "type": "Inventory",
        "rules": [
            {
                "enabled": True,
                "name": plan.name,
                "destination": plan.destination,
                "definition": {
                    "filters": {
                        "blobTypes": ["blockBlob"],
                        **({"prefixMatch": [plan.prefix]} if plan.prefix else {}),  # none: every blob
                        "includeSnapshots": False,
                        "includeBlobVersions": False,
                        "includeDeleted": False,
                    },
                    "format": "Csv" if plan.format == CSV else "Parquet",
                    "schedule": "Daily",
                    "objectType": "Blob",
                    "schemaFields": list(AZURE_FIELDS),
                },
            }
        ],
    }


def gcs_report_config(plan: Plan, start: date) -> dict[str, object]:
    """Return the Storage Insights ``ReportConfig`` (its REST resource), daily from ``start`` for a year."""

    def day(d: date) -> dict[str, int]:
        return {"year": d.year, "month": d.month, "day": d.day}

    doc: dict[str, object] = {
        "displayName": plan.name,
        "frequencyOptions": {"frequency": "DAILY", "startDate": day(start), "endDate": day(_year_after(start))},
    }
    if plan.format == CSV:
        doc["csvOptions"] = {"recordSeparator": "\n", "delimiter": ",", "headerRequired": True}
    else:
        doc["parquetOptions"] = {}
    doc["objectMetadataReportOptions"] = {
        "metadataFields": list(GCS_FIELDS),
        "storageFilters": {"bucket": plan.ns.bucket},
        "storageDestinationOptions": {
            "bucket": plan.destination,
            "destinationPath": plan.destination_prefix.strip("/"),
        },
    }
    return doc


def _year_after(d: date) -> date:
    return d + timedelta(days=365)


def _json(doc: object) -> str:
    return json.dumps(doc, indent=2)


def commands(plan: Plan, today: date) -> list[str]:
    """Return the provider's command (and document) that creates the configuration, as lines to print."""
    if plan.kind == S3:
        return [
            f"aws s3api put-bucket-inventory-configuration --bucket {shlex.quote(plan.ns.bucket)} "
            f"--id {shlex.quote(plan.name)} --inventory-configuration {shlex.quote(_json(s3_configuration(plan)))}"
        ]
    if plan.kind == AZURE:
        return [
            "policy.json:",
            _json(azure_policy(plan)),
            "",
            f"az storage account blob-inventory-policy create --account-name {shlex.quote(plan.account)} "
            f"--resource-group {RESOURCE_GROUP} --policy @policy.json",
        ]
    start = today + timedelta(days=1)  # gcloud: tomorrow or later, in UTC
    csv = "--csv-header --csv-delimiter=, --csv-separator='\\n'" if plan.format == CSV else "--parquet"
    return [
        f"gcloud storage insights inventory-reports create gs://{plan.ns.bucket} "
        f"--destination={shlex.quote(plan.location() + '/')} --display-name={shlex.quote(plan.name)} "
        f"--metadata-fields={','.join(GCS_FIELDS)} --schedule-repeats=daily --schedule-starts={start.isoformat()} "
        f"--schedule-repeats-until={_year_after(start).isoformat()} {csv}",
        "",
        "or, through the Storage Insights API (POST https://storageinsights.googleapis.com/v1/projects/<project>/"
        "locations/<the bucket's location>/reportConfigs), this ReportConfig:",
        _json(gcs_report_config(plan, start)),
    ]


def notes(plan: Plan) -> list[str]:
    """Return where the reports arrive and what else the provider needs, one line each."""
    where = plan.location()
    if plan.kind == S3:
        return [
            f"Reports arrive under {where}/<YYYY-MM-DDTHH-MMZ>/ (manifest.json, manifest.checksum; the data "
            "files under its data/): the first within 48 hours, then daily.",
            f"The destination bucket must be in the region of {plan.ns.bucket}, outside every lakeFS namespace "
            "(a GC of that namespace would collect the reports), and its bucket policy must let "
            "s3.amazonaws.com PutObject there (AWS: 'Granting permissions for S3 Inventory').",
        ]
    if plan.kind == AZURE:
        return [
            f"Reports arrive in {where}/<YYYY>/<MM>/<DD>/<HH-MM-SS>/{plan.name}/ ({plan.name}-manifest.json, "
            f"{plan.name}-manifest.checksum, the data files) after each daily run.",
            f"The destination container must exist in storage account {plan.account}, outside every lakeFS "
            "namespace (a GC of that namespace would collect the reports). "
            "An account has one inventory policy: if it has one already (az storage account "
            "blob-inventory-policy show), add this rule to its rules instead of replacing it.",
        ]
    return [
        f"Reports arrive under {where}/ (<config-id>_<snapshot>_manifest.json beside its shards) daily; "
        "Google assigns the configuration's id (a UUID) when it is created.",
        f"A report covers the whole bucket {plan.ns.bucket}: one serves every repository in it. The destination "
        "bucket must be in the source bucket's project and location, outside every lakeFS namespace, and the "
        "Storage Insights service agent needs to read the source and write the destination (Google: 'Create "
        "and manage inventory reports'). The schedule ends a year after it starts: renew it before then.",
    ]


def listing_block(plan: Plan) -> str:
    """Return the ``listing:`` block of the repositories file that points a repository at the planned reports."""
    text = listing_yaml(
        plan.location(), plan.prefix if plan.kind == S3 else None, plan.name if plan.kind == AZURE else None
    )
    if plan.kind == GCS:
        text += "    # name: <the configuration's id>   (optional: only its reports, if others share the path)\n"
    return text


def listing_yaml(location: str, source_prefix: str | None, name: str | None) -> str:
    """Return the ``listing:`` block naming the reports at ``location`` (S3: with the ``source_prefix`` it filters on)."""
    inventory: dict[str, object] = {"location": location}
    if source_prefix is not None:
        inventory["source_prefix"] = source_prefix
    if name:
        inventory["name"] = name
    text: str = yaml.safe_dump({"listing": {"source": "inventory", "inventory": inventory}}, sort_keys=False)
    return text
