"""
Is an inventory fit to list a namespace? The check, and the newest inventory that passes it.

:func:`verify` fails closed: the first thing wrong refuses the inventory with one line naming it
and what to change (:class:`~lakefs_gc.inventory.manifest.InventoryRefused`). In order:

1. the provider is the namespace's kind (an S3 Inventory for an ``s3://`` namespace...);
2. T_inv is not after ``now`` and not older than ``max_age`` (default 8 days);
3. the manifest itself does not rule it out (a run pending or failed, a partial GCS report, rows of
   object versions, a manifest version this module does not know);
4. the source is the namespace's bucket (Azure: its storage account), and the source prefixes
   cover the namespace's ``data/`` prefix with nothing under it excluded;
5. the schema has the key (or name), size and last-modified time, in a format the GC reads;
6. the manifest's checksum file is there and matches the manifest's MD5 (S3, Azure);
7. every data file the manifest names is there, with the size the manifest states and, where the
   manifest gives one and the store vouches for the file's MD5, that MD5.

Storage errors (an unreachable endpoint, a denied read) are not refusals: they propagate, so that
the task fails and is retried. :func:`newest_complete` walks a destination's inventories newest
first and returns the first that passes, with the reason each newer one was passed over.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from lakefs_gc.inventory import azure, gcs, s3
from lakefs_gc.inventory.manifest import InventoryManifest, InventoryRefused, ProviderSpec, normal_md5, refuse
from lakefs_gc.storage.base import ObjectNotFound, Storage
from lakefs_gc.storage.namespace import AZURE, LOCAL, NamespaceURI, parse_namespace, scheme_of
from lakefs_gc.timestamps import iso
from lakefs_gc.words import noun, plural

if TYPE_CHECKING:
    from collections.abc import Sequence

DEFAULT_MAX_AGE = timedelta(days=8)
SPECS: dict[str, ProviderSpec] = {spec.kind: spec for spec in (s3.SPEC, azure.SPEC, gcs.SPEC)}
MAX_SKIPPED_SHOWN = 5  # reasons a refusal of every candidate quotes (the rest are counted)


@dataclass(frozen=True)
class VerifiedInventory:
    """An inventory that passed :func:`verify` for a namespace."""

    manifest: InventoryManifest
    data_prefix: str  # the namespace's data/ prefix as the inventory names its objects
    unchecked_md5: tuple[str, ...] = ()  # data files whose MD5 the store does not vouch for (to hash when read)


@dataclass(frozen=True)
class InventorySource:
    """
    Where a provider delivers one inventory configuration's reports.

    ``storage`` is the destination's root (S3, GCS: the bucket; Azure: the rule's destination
    container). ``prefix``: S3 ``<destination-prefix>/<source-bucket>/<config-ID>``; GCS the
    destination path; Azure "" (the runs' date folders sit at the container's root). ``name``:
    Azure the rule's name (needed); GCS the report configuration's id ("" for any).
    """

    provider: str
    storage: Storage
    prefix: str = ""
    name: str = ""

    @property
    def spec(self) -> ProviderSpec:
        try:
            return SPECS[self.provider]
        except KeyError:
            raise ValueError(f"no inventory provider {self.provider!r} (one of {', '.join(SPECS)})") from None

    @property
    def where(self) -> str:
        return self.storage.full_uri(self.prefix.strip("/")) if self.prefix.strip("/") else self.storage.uri

    def candidates(self) -> Iterator[str]:
        """Yield the manifest keys of the destination's inventories, newest first."""
        return self.spec.candidates(self.storage, self.prefix, self.name)

    def load(self, key: str) -> InventoryManifest:
        """Read and parse the manifest at ``key``; a manifest gone since it was listed is refused."""
        uri = self.storage.full_uri(key)
        try:
            data = self.storage.get(key)
        except ObjectNotFound:
            raise refuse(uri, "the manifest is gone (removed since it was listed)") from None
        return self.spec.parse(data, key, uri)


@dataclass(frozen=True)
class ChosenInventory:
    """The newest inventory that verified, and why each newer one was passed over."""

    inventory: VerifiedInventory
    skipped: tuple[tuple[str, str], ...]  # (manifest URI, the reason), newest first

    def summary(self) -> str:
        """Return one line: which inventory, its T_inv, its files, and what was passed over."""
        m = self.inventory.manifest
        line = f"{SPECS[m.provider].title} {m.id} (T_inv {iso(m.snapshot_time)}, {plural(len(m.files), 'data file')})"
        if self.skipped:
            n = len(self.skipped)
            line += f"; passed over {plural(n, 'newer inventory', 'newer inventories')}: " + "; ".join(
                reason for _, reason in self.skipped
            )
        return line


def namespace_of(namespace: NamespaceURI | str) -> NamespaceURI:
    """Return the namespace parsed; a ``local://`` one is refused (no provider inventories it)."""
    scheme = scheme_of(namespace) if isinstance(namespace, str) else namespace.scheme
    if scheme == LOCAL:
        raise InventoryRefused(f"{namespace} is a local:// namespace: no provider writes inventories of one; list it")
    return parse_namespace(namespace) if isinstance(namespace, str) else namespace


def data_prefix(ns: NamespaceURI) -> str:
    """Return the namespace's ``data/`` prefix as its provider's inventory names objects (Azure: with the container)."""
    path = f"{ns.prefix}/data/" if ns.prefix else "data/"
    return f"{ns.bucket}/{path}" if ns.scheme == AZURE else path


def verify(
    manifest: InventoryManifest,
    storage: Storage,
    namespace: NamespaceURI | str,
    now: datetime,
    *,
    max_age: timedelta = DEFAULT_MAX_AGE,
    source_prefix: str | None = None,
) -> VerifiedInventory:
    """
    Return ``manifest`` verified as the listing of ``namespace`` at ``now``, or refuse it.

    ``storage`` is the destination's root (where the manifest's keys are). ``source_prefix``: the
    prefix the inventory's configuration filters on where the manifest does not say (S3 Inventory:
    the configuration's ``Filter.Prefix``, "" without one); a manifest that names its prefixes
    ignores it.
    """
    ns = namespace_of(namespace)
    spec = SPECS[manifest.provider]
    where = manifest.id
    if ns.scheme != manifest.provider:
        raise refuse(where, f"{ns} is not a namespace of the store this {spec.title} lists")
    check_age(manifest, now, max_age)
    if manifest.unusable:
        raise refuse(where, manifest.unusable[0])
    path = data_prefix(ns)
    _check_source(manifest, ns, path, source_prefix)
    _check_schema(manifest, spec)
    _check_checksum(manifest, storage)
    return VerifiedInventory(manifest, path, _check_files(manifest, storage))


def check_age(manifest: InventoryManifest, now: datetime, max_age: timedelta) -> None:
    """Refuse an inventory taken after ``now`` or more than ``max_age`` before it."""
    taken = manifest.snapshot_time
    if taken > now:
        raise refuse(
            manifest.id,
            f"its T_inv {iso(taken)} is after now ({iso(now)}): check the clocks of this worker and the store",
        )
    if now - taken > max_age:
        days = (now - taken) / timedelta(days=1)
        raise refuse(
            manifest.id,
            f"its T_inv {iso(taken)} is {days:.1f} days old, more than max_age ({_days(max_age)}): check that "
            "the inventory still runs, or raise max_age",
        )


def _days(span: timedelta) -> str:
    whole = span / timedelta(days=1)
    return plural(int(whole), "day") if whole == int(whole) else f"{whole:g} days"


def _check_source(manifest: InventoryManifest, ns: NamespaceURI, path: str, source_prefix: str | None) -> None:
    where = manifest.id
    if manifest.provider == AZURE:
        account = ns.host.partition(".")[0]
        if manifest.source_bucket != account:
            raise refuse(
                where,
                f"it lists storage account {manifest.source_bucket!r}, not the namespace's {account!r}: "
                f"use the inventory of account {account}",
            )
    elif not manifest.source_bucket:
        raise refuse(where, f"the manifest does not name its source bucket: it cannot be shown to list {ns.bucket}")
    elif manifest.source_bucket != ns.bucket:
        raise refuse(
            where,
            f"it lists bucket {manifest.source_bucket!r}, not the namespace's bucket {ns.bucket!r}: "
            f"use an inventory of bucket {ns.bucket}",
        )
    prefixes = manifest.source_prefixes
    if prefixes is None:
        if source_prefix is None:
            raise refuse(
                where,
                "the manifest does not say which prefix its inventory configuration filters on: give that "
                'prefix (the configuration\'s Filter Prefix, "" when it has none)',
            )
        prefixes = (source_prefix,)
    if not any(path.startswith(p) for p in prefixes):
        shown = ", ".join(repr(p) for p in prefixes)
        raise refuse(
            where,
            f"it covers {noun(len(prefixes), 'prefix', 'prefixes')} {shown} only, not the namespace's {path!r}: "
            f"widen the inventory's prefix filter to include {path!r}",
        )
    for excluded in manifest.excluded_prefixes:
        if excluded and (excluded.startswith(path) or path.startswith(excluded)):
            raise refuse(
                where, f"it excludes {excluded!r}, which overlaps the namespace's {path!r}: remove that exclusion"
            )


def _check_schema(manifest: InventoryManifest, spec: ProviderSpec) -> None:
    if manifest.format not in spec.formats:
        raise refuse(manifest.id, f"its format {manifest.format} is not one {spec.title} writes")
    missing = manifest.missing_fields
    if missing:
        names = ", ".join(spec.column_names[role] for role in missing)
        raise refuse(
            manifest.id,
            f"its schema lacks {names}, which the GC needs (it has {', '.join(manifest.columns)}): "
            f"add {names} to {spec.fields_setting}",
        )


def _check_checksum(manifest: InventoryManifest, storage: Storage) -> None:
    if manifest.checksum_key is None:
        return
    try:
        written = storage.get(manifest.checksum_key).decode("utf-8", "replace").strip()
    except ObjectNotFound:
        raise refuse(
            manifest.id,
            f"its checksum file {storage.full_uri(manifest.checksum_key)} is missing: the inventory is "
            "incomplete (the checksum is written last); wait for it or for the next inventory",
        ) from None
    if normal_md5(written) != manifest.manifest_md5:
        raise refuse(
            manifest.id,
            f"its checksum file says {written[:64]!r} but the manifest's MD5 is {manifest.manifest_md5}: the "
            "manifest was changed or half-written; wait for the next inventory",
        )


def _check_files(manifest: InventoryManifest, storage: Storage) -> tuple[str, ...]:
    """Check every data file the manifest names; return those whose MD5 the store cannot vouch for."""
    unchecked: list[str] = []
    for f in manifest.files:
        uri = storage.full_uri(f.key)
        info = storage.stat(f.key)
        if info is None:
            raise refuse(
                manifest.id,
                f"its data file {uri} is missing: the inventory is partial or its files were removed "
                "(a lifecycle rule on the destination?); wait for the next inventory",
            )
        if f.size is not None and info.size != f.size:
            raise refuse(
                manifest.id,
                f"its data file {uri} is {plural(info.size, 'byte')}, the manifest says "
                f"{plural(f.size, 'byte')}: the file was changed or cut short; wait for the next inventory",
            )
        if f.md5 is None:
            continue
        actual = storage.content_md5(f.key)
        if actual is None:
            unchecked.append(f.key)
        elif actual.lower() != f.md5:
            raise refuse(
                manifest.id,
                f"its data file {uri} has MD5 {actual.lower()}, the manifest says {f.md5}: the file was changed; "
                "wait for the next inventory",
            )
    return tuple(unchecked)


def newest_complete(
    source: InventorySource,
    namespace: NamespaceURI | str,
    now: datetime,
    *,
    max_age: timedelta = DEFAULT_MAX_AGE,
    source_prefix: str | None = None,
) -> ChosenInventory:
    """
    Return the newest inventory under ``source`` that verifies for ``namespace``, and why newer ones did not.

    Inventories are tried newest first; the first older than ``max_age`` ends the walk (every older
    one is older still). None verifies: :class:`InventoryRefused` quoting the reasons, newest first.
    """
    ns = namespace_of(namespace)
    skipped: list[tuple[str, str]] = []
    for key in source.candidates():
        try:
            manifest = source.load(key)
        except InventoryRefused as exc:
            skipped.append((source.storage.full_uri(key), str(exc)))
            continue
        try:
            verified = verify(manifest, source.storage, ns, now, max_age=max_age, source_prefix=source_prefix)
        except InventoryRefused as exc:
            skipped.append((manifest.id, str(exc)))
            if now - manifest.snapshot_time > max_age:
                break  # refused as stale: every older one is staler
            continue
        return ChosenInventory(verified, tuple(skipped))
    raise _none_usable(source, ns, skipped)


def _none_usable(source: InventorySource, ns: NamespaceURI, skipped: Sequence[tuple[str, str]]) -> InventoryRefused:
    title = source.spec.title
    if not skipped:
        return InventoryRefused(
            f"no {title} under {source.where}: check the inventory's destination (bucket, prefix"
            f"{', rule name' if source.provider == AZURE else ''}) and that its first report has been delivered"
        )
    shown = "; ".join(reason for _, reason in skipped[:MAX_SKIPPED_SHOWN])
    more = len(skipped) - MAX_SKIPPED_SHOWN
    return InventoryRefused(
        f"no usable {title} for {ns} under {source.where} ({plural(len(skipped), 'inventory', 'inventories')} "
        f"refused, newest first): {shown}" + (f"; and {more:,} more" if more > 0 else "")
    )
