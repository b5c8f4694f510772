"""
What a delete now does to the bill, from a store's own settings: freed now, on a date, or not until someone acts.

Each adapter reads its settings (``Storage.freeing``) and asks these pure functions; they answer a
:class:`~lakefs_gc.contract.Freeing` for the keys under one prefix of the bucket (the namespace's
``data/``). A rule counts as freeing only when it provably applies to every such key; a rule
with a condition the GC cannot prove (a tag, an object size, a narrower prefix, a suffix, a
storage class) does not count, and the answer says so: a bill figure errs towards "still billed".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, time, timedelta
from typing import Any

from lakefs_gc.contract import FREED_LATER, FREED_NOW, STILL_BILLED, Freeing
from lakefs_gc.timestamps import iso
from lakefs_gc.words import plural

__all__ = ["gcs_freeing", "azure_freeing", "s3_expiry", "s3_freeing", "s3_rule_days"]


def _soonest(
    rules: Iterable[Mapping[str, Any]],
    key_prefix: str,
    rule_days: Callable[[Mapping[str, Any], str], tuple[int | None, str]],
) -> tuple[tuple[int, str] | None, list[str]]:
    """Return the soonest (days, why) of the rules that free ``key_prefix``'s deleted versions, and why the others do not."""
    counted: list[tuple[int, str]] = []
    skipped: list[str] = []
    for rule in rules:
        days, why = rule_days(rule, key_prefix)
        if days is not None:
            counted.append((days, why))
        elif why:
            skipped.append(why)
    return (min(counted) if counted else None), skipped


def _notes(skipped: list[str]) -> str:
    return f"; not counted: {'; '.join(skipped)}" if skipped else ""


# ---------------------------------------------------------------------------------------------
# S3: bucket versioning and NoncurrentVersionExpiration rules
# ---------------------------------------------------------------------------------------------


def s3_expiry(noncurrent_since: datetime, days: int) -> datetime:
    """
    Return when S3 expires a version that became noncurrent at ``noncurrent_since``, under ``NoncurrentDays`` = ``days``.

    AWS's rule (S3 User Guide, "Lifecycle configuration elements", how S3 calculates how long an
    object has been noncurrent: https://docs.aws.amazon.com/AmazonS3/latest/userguide/intro-lifecycle-rules.html):
    S3 adds the days to the time the successor version (here the sweep's delete marker) was made
    and rounds the result to the next day's midnight UTC.
    """
    due = noncurrent_since + timedelta(days=days)
    return datetime.combine(due.date() + timedelta(days=1), time(0), tzinfo=due.tzinfo)


def _s3_prefix(rule: Mapping[str, Any]) -> tuple[str | None, str]:
    """Return the prefix a rule's filter is only a prefix of, or None and the condition that cannot be proven."""
    if "Filter" not in rule:
        return str(rule.get("Prefix") or ""), ""  # the legacy rule: a Prefix beside the rule's fields
    f = rule.get("Filter") or {}
    if "And" in f:
        f = f["And"] or {}
        if f.get("Tags"):
            return None, "it has a tag condition"
    if f.get("Tag"):
        return None, "it has a tag condition"
    if f.get("ObjectSizeGreaterThan") is not None or f.get("ObjectSizeLessThan") is not None:
        return None, "it has an object size condition"
    return str(f.get("Prefix") or ""), ""


def s3_rule_days(rule: Mapping[str, Any], key_prefix: str) -> tuple[int | None, str]:
    """
    Return the NoncurrentDays after which ``rule`` expires the noncurrent versions of every key under ``key_prefix``.

    None, and why, when it does not provably do so: disabled, no NoncurrentVersionExpiration, a
    NewerNoncurrentVersions (it keeps the newest noncurrent versions: a swept key's is its newest),
    a prefix that does not cover ``key_prefix``, a tag or size condition.
    """
    name = f"rule {rule.get('ID') or '(no ID)'}"
    expiration = rule.get("NoncurrentVersionExpiration") or {}
    if not expiration.get("NoncurrentDays"):
        return None, ""  # not a rule about noncurrent versions: nothing to say
    if rule.get("Status") != "Enabled":
        return None, f"{name} is disabled"
    if expiration.get("NewerNoncurrentVersions"):
        return None, f"{name} keeps the {expiration['NewerNoncurrentVersions']} newest noncurrent versions"
    prefix, why = _s3_prefix(rule)
    if prefix is None:
        return None, f"{name}: {why}"
    if not key_prefix.startswith(prefix):
        return None, f"{name}'s prefix {prefix!r} does not cover {key_prefix!r}"
    return int(expiration["NoncurrentDays"]), name


def s3_freeing(status: str | None, rules: Iterable[Mapping[str, Any]], key_prefix: str, now: datetime) -> Freeing:
    """
    Return what a DeleteObjects at ``now`` does to the bill of keys under ``key_prefix``.

    ``status``: the bucket's versioning (``Enabled``, ``Suspended``, None: never enabled);
    ``rules``: its lifecycle rules.
    """
    if status not in ("Enabled", "Suspended"):
        return Freeing(FREED_NOW, None, "none", "bucket versioning is off: a delete removes the object")
    kept = (
        "bucket versioning keeps each deleted object as a noncurrent version, billed as before"
        if status == "Enabled"
        else "bucket versioning is suspended: an object written while it was enabled stays as a noncurrent "
        "version, billed as before"
    )
    markers = "; each key gets a delete marker (it holds no object bytes)"
    best, skipped = _soonest(rules, key_prefix, s3_rule_days)
    if best is None:
        return Freeing(
            STILL_BILLED,
            None,
            "s3 versioning",
            f"{kept}, and no enabled lifecycle rule covering {key_prefix!r} expires noncurrent versions: billed "
            f"until someone acts (a NoncurrentVersionExpiration rule)" + markers + _notes(skipped),
        )
    days, name = best
    return Freeing(
        FREED_LATER,
        iso(s3_expiry(now, days)),
        "s3 versioning",
        f"{kept} until lifecycle {name} expires it {plural(days, 'day')} after the delete (S3 rounds to the next "
        f"midnight UTC)" + markers + _notes(skipped),
    )


# ---------------------------------------------------------------------------------------------
# GCS: soft delete, object versioning and lifecycle Delete rules
# ---------------------------------------------------------------------------------------------

# conditions of a GCS lifecycle rule the GC cannot prove of a swept object's noncurrent generation
_GCS_UNPROVEN = (
    "matchesSuffix",
    "matchesStorageClass",
    "createdBefore",
    "customTimeBefore",
    "daysSinceCustomTime",
    "noncurrentTimeBefore",
)


def _gcs_rule_days(rule: Mapping[str, Any], key_prefix: str) -> tuple[int | None, str]:
    """Return the days after a delete by which ``rule`` deletes the noncurrent generation (None and why: it does not, provably)."""
    if (rule.get("action") or {}).get("type") != "Delete":
        return None, ""
    cond = rule.get("condition") or {}
    name = f"a Delete rule {dict(cond)}"
    if cond.get("isLive") is True:
        return None, ""  # live objects only
    unproven = [c for c in _GCS_UNPROVEN if cond.get(c) not in (None, [], "")]
    if unproven:
        return None, f"{name}: its {', '.join(unproven)} cannot be proven"
    if cond.get("numNewerVersions"):
        return None, f"{name}: numNewerVersions (a swept object's generation is its newest)"
    prefixes = cond.get("matchesPrefix") or []
    if prefixes and not any(key_prefix.startswith(p) for p in prefixes):
        return None, f"{name}: matchesPrefix does not cover {key_prefix!r}"
    bounds = [int(cond[c]) for c in ("daysSinceNoncurrentTime", "age") if cond.get(c) is not None]
    if not bounds and cond.get("isLive") is not False:
        return None, ""  # no condition about noncurrent objects (not a rule GCS accepts)
    return max(bounds, default=0), name  # age is since creation: at the latest this many days from now


def gcs_freeing(
    versioning: bool,
    soft_delete_seconds: int,
    rules: Iterable[Mapping[str, Any]],
    key_prefix: str,
    now: datetime,
) -> Freeing:
    """
    Return what a delete at ``now`` does to the bill of objects under ``key_prefix`` of a GCS bucket.

    With object versioning the live object becomes noncurrent (billed) until a lifecycle Delete
    rule removes it; a deletion (the sweep's, or the rule's) then keeps the object soft-deleted
    (billed) for the soft delete policy's ``retentionDurationSeconds``.
    """
    soft = timedelta(seconds=soft_delete_seconds)
    soft_note = (
        f"; soft delete then keeps it {plural(soft_delete_seconds // 86400, 'day')}" if soft_delete_seconds else ""
    )
    if not versioning:
        if not soft_delete_seconds:
            return Freeing(
                FREED_NOW, None, "none", "no object versioning and no soft delete: a delete removes the object"
            )
        return Freeing(
            FREED_LATER,
            iso(now + soft),
            "gcs soft delete",
            f"soft delete keeps deleted objects {plural(soft_delete_seconds // 86400, 'day')}, billed",
        )
    best, skipped = _soonest(rules, key_prefix, _gcs_rule_days)
    kept = "object versioning keeps each deleted object as a noncurrent version, billed"
    if best is None:
        return Freeing(
            STILL_BILLED,
            None,
            "gcs versioning",
            f"{kept}, and no lifecycle Delete rule covering {key_prefix!r} removes noncurrent versions: billed "
            f"until someone acts" + _notes(skipped),
        )
    days, name = best
    return Freeing(
        FREED_LATER,
        iso(now + timedelta(days=days) + soft),
        "gcs versioning",
        f"{kept}, until {name} deletes it within {plural(days, 'day')} (GCS acts on it asynchronously, "
        f"up to a day late){soft_note}" + _notes(skipped),
    )


# ---------------------------------------------------------------------------------------------
# Azure Blob: blob soft delete and blob versioning
# ---------------------------------------------------------------------------------------------


def azure_freeing(soft_delete_days: int | None, versioning: bool | None, now: datetime) -> Freeing:
    """
    Return what a delete at ``now`` does to the bill of a storage account's blobs.

    ``soft_delete_days`` (0: off) and ``versioning`` as read, None where they could not be. With
    versioning a delete turns the current version into a previous version, billed until a
    lifecycle management rule on versions deletes it; that policy lives in Azure Resource Manager,
    which the storage credentials cannot read, so it is never counted.
    """
    if versioning:
        return Freeing(
            STILL_BILLED,
            None,
            "azure versioning",
            "blob versioning keeps each deleted blob as a previous version, billed until a lifecycle management "
            "rule on versions deletes it (the GC cannot read that policy with storage credentials: not counted)",
        )
    if soft_delete_days is None or versioning is None:
        what = "blob soft delete" if soft_delete_days is None else "blob versioning"
        return Freeing(
            STILL_BILLED, None, "unknown", f"the account's {what} could not be read: counted as still billed"
        )
    if not soft_delete_days:
        return Freeing(FREED_NOW, None, "none", "no blob soft delete and no versioning: a delete removes the blob")
    return Freeing(
        FREED_LATER,
        iso(now + timedelta(days=soft_delete_days)),
        "azure soft delete",
        f"blob soft delete keeps deleted blobs {plural(soft_delete_days, 'day')}, billed",
    )
