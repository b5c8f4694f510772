"""
``lakefs-gc inventory check REPO``: whether a repository has a usable storage inventory, and if not, what to create.

The repository's entry in the repositories file gives its ``listing.inventory`` settings (the flags
``--location``, ``--source-prefix``, ``--name`` and ``--max-age-days`` stand in for them); lakeFS
gives its storage namespace. The check is the run's own (:func:`lakefs_gc.listing.inventory.source_of`,
:func:`lakefs_gc.inventory.newest_complete`, CSV or Parquet): the newest complete inventory that
verifies for the namespace now, with the reason each newer one was passed over. Where nothing is
configured, an S3 namespace's bucket is asked for its inventory configurations
(``ListBucketInventoryConfigurations``), and those whose filter covers the namespace's ``data/``
prefix are checked (their ``Filter.Prefix`` is the ``source_prefix``, as it is for a ``--location``
one of them delivers to).

Exit status 0: usable (its id, T_inv, age, data files, format, and rows where the manifest counts
them); 1: none is (the reason on one line, then the configuration to create:
:mod:`lakefs_gc.inventory.configure`); 2: bad input (one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TextIO

from lakefs_gc.cli_namespace import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable

    from lakefs_gc.config import RepoConfig
    from lakefs_gc.config.model import InventorySettings
    from lakefs_gc.inventory import ChosenInventory
    from lakefs_gc.inventory.configure import Plan
    from lakefs_gc.storage.namespace import NamespaceURI
    from lakefs_gc.storage.settings import StorageOptions

NAME = "lakefs-gc inventory check"


@dataclass(frozen=True)
class Target:
    """One place the repository's inventory may be delivered, and how it was found."""

    location: str
    source_prefix: str | None  # S3: the configuration's Filter Prefix ("" none; None: not known)
    name: str  # Azure: the rule's name; GCS: the report configuration's id ("" any)
    how: str


def add_parser(sub: Any, storage_arguments: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add ``inventory check`` to the ``lakefs-gc`` command's subparsers."""
    from lakefs_gc.inventory.configure import FORMATS

    inv = sub.add_parser("inventory", help="the store's inventory reports as a repository's listing")
    inv_sub = inv.add_subparsers(dest="inventory_command", required=True)
    chk = inv_sub.add_parser(
        "check",
        help="whether a repository has a usable inventory; if not, the configuration to create",
        description="Say whether the repository has a usable storage inventory (the newest complete one, or why "
        "each newer one was passed over), as a run would find it now; if none, print the inventory "
        "configuration to create for its store and the listing block of the repositories file. Exit "
        "status 0: usable, 1: not, 2: bad input. Nothing is changed.",
    )
    chk.add_argument("repository", metavar="REPO", help="the lakeFS repository")
    chk.add_argument("--config", metavar="FILE", help="the repositories file (default: $LAKEFS_GC_CONFIG, else "
                     "config/gc_repositories.yaml)")  # fmt: skip
    chk.add_argument("--location", help="check the inventory delivered here instead of the entry's listing.inventory")
    chk.add_argument("--source-prefix", help='S3: the configuration\'s Filter Prefix ("" for none)')
    chk.add_argument("--name", help="Azure: the inventory rule's name; GCS: the report configuration's id")
    chk.add_argument("--max-age-days", type=float, help="an older inventory is refused (default: the entry's, else 8)")
    chk.add_argument(
        "--destination",
        metavar="URI",
        help="where the printed configuration delivers its reports: s3://bucket[/prefix], gs://bucket[/path] or "
        "https://<account>.blob.core.windows.net/<container> (default: the location checked, else a placeholder)",
    )
    chk.add_argument(
        "--prefix",
        help="the prefix the printed configuration filters on (default: the namespace's data/ prefix; a shorter "
        "one serves every repository under it)",
    )
    chk.add_argument("--format", choices=FORMATS, default=FORMATS[0], help="of the printed configuration's reports")
    chk.add_argument("--lakefs-endpoint", help="lakeFS's URL (default: the lakeFS connection's, else the environment)")
    storage_arguments(chk)


def run(args: argparse.Namespace) -> int:
    """Run ``inventory check``; bad input and failures to read are one line on stderr and exit status 2."""
    from lakefs_gc.credentials import PRECEDENCE, resolver
    from lakefs_gc.errors import LakeFSGCError, Unreachable
    from lakefs_gc.storage import StorageError

    try:
        rc = check(args, sys.stdout)
    except (UsageError, ValueError, StorageError, Unreachable, LakeFSGCError) as exc:
        message = str(exc)
    except Exception as exc:  # lakefs-sdk's (a refused key) and botocore's (an unreachable endpoint, a denied read)
        if not type(exc).__module__.startswith(("lakefs_sdk", "botocore")):
            raise
        message = f"{type(exc).__name__}: {exc}"
    else:
        if args.verbose:
            print(f"{NAME}: settings: {resolver(args).sources()}", file=sys.stderr)
        return rc
    print(f"{NAME}: error: {' '.join(message.split())}", file=sys.stderr)
    if args.verbose:
        print(f"{NAME}: settings used ({PRECEDENCE}): {resolver(args).sources()}", file=sys.stderr)
    return 2


def check(args: argparse.Namespace, out: TextIO) -> int:
    """Print whether ``args.repository`` has a usable inventory (0) or not, and what to create (1)."""
    from lakefs_gc.config.model import InventorySettings
    from lakefs_gc.inventory import InventoryRefused
    from lakefs_gc.storage.namespace import LOCAL, parse_namespace, scheme_of

    repo = args.repository
    entry, where = _entry(args)
    inv = entry.listing.inventory if entry is not None else InventorySettings()
    max_age = timedelta(days=args.max_age_days if args.max_age_days is not None else inv.max_age_days)
    ns_uri = _namespace(args)
    out.write(f"{repo}: storage namespace {ns_uri}; {where}\n")
    if scheme_of(ns_uri) == LOCAL:
        out.write(
            f"{repo}: no usable inventory: {ns_uri} is local://: no store writes inventories of it (runs list it)\n"
        )
        return 1
    ns = parse_namespace(ns_uri)
    _check_flags(args, ns)
    options = _Options(args, ns_uri)
    targets, unmatched = _targets(args, inv, ns, options)
    now = datetime.now(UTC)
    reasons: list[str] = list(unmatched)
    for target in targets:
        try:
            chosen = _check(target, ns_uri, options.get(), now, max_age)
        except InventoryRefused as e:
            reasons.append(f"{target.how}: {e}")
            continue
        _usable(out, repo, chosen, target, now, max_age, entry)
        return 0
    if not targets:
        said = "its entry has no listing.inventory.location" if entry is not None else where
        reasons.insert(0, f"no inventory is configured ({said}, and no --location)")
    out.write(f"{repo}: no usable inventory: {'; '.join(reasons)}\n")
    _to_create(out, args, ns, targets, inv.name)
    return 1


class _Options:
    """The namespace's storage settings, looked up at first need (flags, Airflow's connection, the environment)."""

    def __init__(self, args: argparse.Namespace, ns_uri: str):
        self.args, self.ns_uri = args, ns_uri
        self._opts: StorageOptions | None = None
        self._looked = False

    def get(self) -> StorageOptions | None:
        if not self._looked:
            from lakefs_gc.credentials import resolver
            from lakefs_gc.storage import kind_named, parse_namespace

            kind = kind_named(self.ns_uri)
            if kind is None:  # lakeFS's namespaces are of a kind
                raise UsageError(f"lakeFS reports namespace {self.ns_uri!r}, of no kind the GC knows")
            self._opts = resolver(self.args).storage_options(kind, parse_namespace(self.ns_uri))
            self._looked = True
        return self._opts


def _entry(args: argparse.Namespace) -> tuple[RepoConfig | None, str]:
    """Return the repository's entry (None: it has none) and what to say of it; a bad entry is bad input."""
    from lakefs_gc.config import ConfigError, load_config

    try:
        cfg = load_config(args.config, strict=False)
    except ConfigError as e:
        if args.config:
            raise UsageError(f"{str(e).splitlines()[0]} (lakefs-gc config check {args.config} says why)") from None
        return None, f"no repositories file ({str(e).splitlines()[0]})"
    for entry in cfg.repositories:
        if entry.repository == args.repository:
            source = entry.listing.source
            return entry, f"its entry in {cfg.path}: listing.source {source}"
    bad = [p for p in cfg.problems if f"({args.repository})" in p.message]
    if bad:
        raise UsageError(
            f"the entry of {args.repository} is bad: {bad[0]} (lakefs-gc config check {cfg.path} lists all)"
        )
    return None, f"no entry in {cfg.path}"


def _namespace(args: argparse.Namespace) -> str:
    """Return the repository's storage namespace, as lakeFS reports it."""
    from lakefs_gc.cli_namespace import lakefs_client

    with lakefs_client(args, f"{NAME} (the repository's namespace is read from lakeFS)") as client:
        return str(client.get_repository(args.repository).storage_namespace).rstrip("/")


def _targets(
    args: argparse.Namespace, inv: InventorySettings, ns: NamespaceURI, options: _Options
) -> tuple[list[Target], list[str]]:
    """Return where to look (the flag's location, else the entry's, else an S3 bucket's configurations) and why others were not."""
    from lakefs_gc.storage.namespace import S3

    source_prefix = args.source_prefix if args.source_prefix is not None else inv.source_prefix
    name = (args.name if args.name is not None else inv.name) or ""
    location = (args.location or inv.location or "").strip().rstrip("/")
    how = "--location" if args.location else "listing.inventory.location"
    if location and (ns.scheme != S3 or source_prefix is not None):
        return [Target(location, source_prefix, name, f"{how} {location}")], []
    if ns.scheme != S3:
        return [], []
    found, problem = _s3_configurations(options.get(), ns.bucket)
    if problem:
        found = []
    if location:  # its Filter Prefix, from the configuration that delivers there
        match = [t for t in found if t.location == location]
        prefix = match[0].source_prefix if match else None
        target = Target(location, prefix, name, f"{how} {location}" + (f" ({match[0].how})" if match else ""))
        return [target], [problem] if problem else []
    from lakefs_gc.inventory.configure import needed_prefix

    need = needed_prefix(ns)
    covering = [t for t in found if need.startswith(t.source_prefix or "")]
    unmatched = [f"{t.how} filters on {t.source_prefix!r}, not covering {need!r}" for t in found if t not in covering]
    if problem:
        unmatched.append(problem)
    elif not found:
        unmatched.append(f"bucket {ns.bucket} has no S3 inventory configuration")
    return covering, unmatched


def _s3_configurations(options: StorageOptions | None, bucket: str) -> tuple[list[Target], str | None]:
    """Return the bucket's S3 inventory configurations as targets, or why they cannot be read."""
    from botocore.exceptions import ClientError

    from lakefs_gc.storage.s3 import make_s3_client
    from lakefs_gc.storage.settings import S3Options

    client = make_s3_client(options if isinstance(options, S3Options) else S3Options())
    targets: list[Target] = []
    kw: dict[str, str] = {"Bucket": bucket}
    try:
        while True:
            page = client.list_bucket_inventory_configurations(**kw)
            for c in page.get("InventoryConfigurationList", []):
                dest = c.get("Destination", {}).get("S3BucketDestination", {})
                path = "/".join(p for p in ((dest.get("Prefix") or "").strip("/"), bucket, c["Id"]) if p)
                prefix = (c.get("Filter") or {}).get("Prefix", "")
                off = "" if c.get("IsEnabled", True) else ", disabled"
                how = f"configuration {c['Id']!r} of bucket {bucket} ({dest.get('Format', '?')}{off})"
                targets.append(Target(f"s3://{str(dest.get('Bucket', '')).rpartition(':')[2]}/{path}", prefix, "", how))
            if not page.get("IsTruncated"):
                return targets, None
            kw["ContinuationToken"] = page["NextContinuationToken"]
    except ClientError as e:
        code = e.response.get("Error", {}).get("Code", "?")
        return targets, f"the inventory configurations of bucket {bucket} cannot be read ({code}): give --location"


def _check(
    target: Target, ns_uri: str, options: StorageOptions | None, now: datetime, max_age: timedelta
) -> ChosenInventory:
    """Return the newest inventory at ``target`` a run would use now (CSV or Parquet), or refuse."""
    from lakefs_gc.contract import RunSettings
    from lakefs_gc.inventory import newest_complete
    from lakefs_gc.inventory.manifest import refuse
    from lakefs_gc.inventory.rows import readable
    from lakefs_gc.listing.inventory import source_of
    from lakefs_gc.spark.runtime import StorageRef

    settings = RunSettings(
        inventory_location=target.location, inventory_name=target.name, inventory_source_prefix=target.source_prefix
    )
    source, _ = source_of(settings, StorageRef(ns_uri, options))
    chosen = newest_complete(source, ns_uri, now, max_age=max_age, source_prefix=target.source_prefix)
    m = chosen.inventory.manifest
    if readable(m) is not None:
        raise refuse(m.id, f"its {m.format} data files are not read yet: configure the inventory as CSV or Parquet")
    return chosen


def _age(span: timedelta) -> str:
    from lakefs_gc.words import plural

    seconds = span.total_seconds()
    if seconds < 3600:
        return plural(int(seconds // 60), "minute")
    if seconds < 48 * 3600:
        return plural(int(seconds // 3600), "hour")
    return f"{seconds / 86400:.1f} days"


def _usable(
    out: TextIO,
    repo: str,
    chosen: ChosenInventory,
    target: Target,
    now: datetime,
    max_age: timedelta,
    entry: RepoConfig | None,
) -> None:
    from lakefs_gc.inventory import SPECS
    from lakefs_gc.inventory.configure import listing_yaml
    from lakefs_gc.timestamps import iso
    from lakefs_gc.words import plural

    m = chosen.inventory.manifest
    sizes = [f.size for f in m.files]
    size = f", {sum(s for s in sizes if s is not None):,} bytes" if None not in sizes else ""
    rows = f", {plural(m.object_count, 'object')} (the manifest's count)" if m.object_count is not None else ""
    out.write(f"{repo}: usable: {SPECS[m.provider].title} {m.id}\n")
    out.write(
        f"  T_inv {iso(m.snapshot_time)}, {_age(now - m.snapshot_time)} old (max_age_days {max_age / timedelta(days=1):g})"
        f"; {plural(len(m.files), 'data file')}, {m.format}{size}{rows}\n"
    )
    out.write(f"  found at {target.how}\n")
    for _, reason in chosen.skipped:
        out.write(f"  passed over a newer one: {reason}\n")
    configured = entry is not None and target.how.startswith("listing.inventory")
    if configured and entry is not None and entry.listing.source == "inventory":
        out.write(f"  runs of {repo} list from it (listing.source: inventory)\n")
        return
    out.write(f"  runs of {repo} list with LIST until its entry in the repositories file says:\n\n")
    out.write(listing_yaml(target.location, target.source_prefix, target.name))


def _to_create(
    out: TextIO, args: argparse.Namespace, ns: NamespaceURI, targets: list[Target], name: str | None
) -> None:
    """Print the configuration to create for the namespace's store, and the listing block that names it."""
    from lakefs_gc.inventory import SPECS
    from lakefs_gc.inventory.configure import commands, listing_block, notes

    plan = _plan(args, ns, targets, name)
    under = f"objects under {plan.prefix!r}" if plan.prefix else "every object"
    what = f"(re)create the configuration delivering to {targets[0].location}" if targets else "create one"
    out.write(
        f"\nTo {what}: {SPECS[plan.kind].title} of {plan.account if plan.kind == 'azure' else plan.ns.bucket}, "
        f"daily, {'CSV' if plan.format == 'csv' else 'Parquet'}, current objects only, key, size, last-modified time and checksum, {under}:\n\n"
    )
    out.write("\n".join(commands(plan, datetime.now(UTC).date())) + "\n\n")
    out.write("\n".join(notes(plan)) + "\n")
    out.write(f"\nThen, in the entry of {args.repository} in the repositories file:\n\n")
    out.write(listing_block(plan))


def _check_flags(args: argparse.Namespace, ns: NamespaceURI) -> None:
    """Refuse a ``--prefix`` or ``--destination`` the printed configuration could not use (bad input)."""
    from lakefs_gc.inventory.configure import needed_prefix
    from lakefs_gc.storage.namespace import AZURE, GCS, parse_namespace, scheme_of

    need = needed_prefix(ns)
    if args.prefix is not None and ns.scheme == GCS:
        raise UsageError("--prefix: a GCS inventory report has no prefix filter (it covers the whole bucket)")
    if args.prefix is not None and not need.startswith(args.prefix):
        raise UsageError(f"--prefix {args.prefix!r} does not cover the namespace's {need!r}, which the GC needs")
    if args.destination:
        if scheme_of(args.destination) != ns.scheme:
            raise UsageError(f"--destination {args.destination}: the namespace is on {ns.scheme}; give one there")
        loc = parse_namespace(args.destination.rstrip("/"))
        if ns.scheme == AZURE and loc.host != ns.host:
            raise UsageError(f"--destination {args.destination}: Azure delivers to a container of {ns.host}")


def _plan(args: argparse.Namespace, ns: NamespaceURI, targets: list[Target], name: str | None) -> Plan:
    """Return the configuration to print: ``--destination``, else the location checked, else placeholders."""
    from lakefs_gc.inventory.configure import DESTINATION, Plan, default_name, needed_prefix
    from lakefs_gc.storage.namespace import AZURE, GCS, S3, parse_namespace, scheme_of

    need = needed_prefix(ns)
    target = next((t for t in targets if scheme_of(t.location) == ns.scheme), None)
    kept = target.source_prefix if target is not None else None
    kept = kept if kept is not None and need.startswith(kept) else None
    # the configuration delivering to the location checked keeps its filter, if it covers the namespace (a
    # fleet's inventory stays the fleet's)
    prefix = "" if ns.scheme == GCS else next(p for p in (args.prefix, kept, need) if p is not None)
    plan_name = (name if ns.scheme == AZURE and name else None) or default_name(ns.scheme, args.repository)
    dest, dest_prefix = DESTINATION[ns.scheme], ""
    given = args.destination or (target.location if target is not None else None)
    if given:
        loc = parse_namespace(given.rstrip("/"))
        dest, dest_prefix = loc.bucket, loc.prefix
        parts = loc.prefix.split("/")
        if ns.scheme == S3 and not args.destination and len(parts) >= 2 and parts[-2] == ns.bucket:
            dest_prefix, plan_name = "/".join(parts[:-2]), parts[-1]  # <prefix>/<source-bucket>/<config-ID>
    return Plan(ns, dest, "" if ns.scheme == AZURE else dest_prefix, plan_name, prefix, args.format)
