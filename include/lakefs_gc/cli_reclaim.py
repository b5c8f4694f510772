"""
``lakefs-gc reclaim-namespace NAMESPACE``: delete what a deleted repository left in the store.

The namespace must be one the discovery refresh recorded as orphaned (:mod:`lakefs_gc.listing.orphans`:
its repository gone from a complete listing of its lakeFS, no listed repository on it, above it or
under it). Its objects are deleted only when, in this order:

1. it has been recorded orphaned for at least the grace period (``--grace-days``, default 30);
2. ``--confirm`` repeats the namespace exactly (no prompt: the command runs from Airflow and CI too);
3. a fresh listing of every lakeFS the repositories file names (each ``lakefs_conn_id`` of its
   entries and ``discover`` sources, the one the namespace was recorded under, and the command's
   own, ``--conn-id`` or the default) finds no repository on the namespace, above it or under it.
   A lakeFS that cannot be listed, every page, refuses the command.

Then every object under the namespace goes: on ``local://`` into a quarantine beside the
namespaces (``<blockstore root>/_lakefs_gc/reclaimed/<id>/quarantine/<namespace path>/``, for
``--quarantine-days``, default 7, recorded as a sweep records its quarantine:
:func:`lakefs_gc.sweeping.restore.start_quarantine`; a later reclaim purges ended ones), elsewhere
by the store's batch delete, after which the store keeps what its versioning or soft delete keeps
(said after the delete: S3 versioning leaves noncurrent versions, billed until a lifecycle rule
expires them). ``--dry-run`` checks 1 and 3 and prints what would go. The orphan is then no longer
recorded.

Exit status 0: deleted (dry run: would be); 1: refused (the line says what is wrong and how to fix
it) or some objects could not be deleted; 2: bad input.
"""

from __future__ import annotations

import argparse
import copy
import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TextIO

from lakefs_gc.cli_namespace import UsageError
from lakefs_gc.listing.orphans import DEFAULT_GRACE_DAYS, normal, overlapping
from lakefs_gc.words import noun, plural

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from lakefs_gc.config import GCConfig
    from lakefs_gc.listing.orphans import Orphan
    from lakefs_gc.storage.base import Storage

NAME = "lakefs-gc reclaim-namespace"
DEFAULT_QUARANTINE_DAYS = 7
RECLAIMED = "_lakefs_gc/reclaimed/"  # under a local blockstore's root: the reclaims' quarantines


class Refused(Exception):
    """The namespace is not deleted: the message says why and how to fix it (exit status 1)."""


def add_parser(sub: Any, storage_arguments: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add ``reclaim-namespace`` to the ``lakefs-gc`` command's subparsers."""
    p = sub.add_parser(
        "reclaim-namespace",
        help="delete the storage namespace a deleted repository left (orphaned for the grace period)",
        description="Delete every object of a storage namespace the discovery refresh recorded as orphaned (its "
        "repository gone from lakeFS), once it has been for --grace-days, --confirm repeats it, and no repository "
        "of any configured lakeFS uses it, a namespace above it or one under it. local://: through a quarantine. "
        "Exit status 0: deleted; 1: refused or not all deleted; 2: bad input.",
    )
    p.add_argument("namespace", metavar="NAMESPACE", help="the orphaned namespace, as the refresh recorded it")
    p.add_argument("--config", metavar="FILE", help="the repositories file whose discovery refresh recorded it "
                   "(default: $LAKEFS_GC_CONFIG, else config/gc_repositories.yaml)")  # fmt: skip
    p.add_argument("--confirm", metavar="NAMESPACE", help="the namespace again, exactly: nothing is deleted without it")
    p.add_argument(
        "--grace-days",
        type=float,
        default=DEFAULT_GRACE_DAYS,
        help=f"refuse a namespace orphaned for less (default {DEFAULT_GRACE_DAYS})",
    )
    p.add_argument(
        "--quarantine-days",
        type=int,
        default=DEFAULT_QUARANTINE_DAYS,
        help=f"local://: keep the files in the quarantine this long (default {DEFAULT_QUARANTINE_DAYS}; 0: delete)",
    )
    p.add_argument("--dry-run", action="store_true", help="check, and print what would be deleted; change nothing")
    p.add_argument("--limit", type=int, default=20, help="keys to print (default 20; 0: none)")
    p.add_argument("--lakefs-endpoint", help="lakeFS's URL (default: the lakeFS connection's, else the environment)")
    storage_arguments(p)


def run(args: argparse.Namespace, now: datetime | None = None) -> int:
    """Run ``reclaim-namespace``: 0 done, 1 refused or incomplete, 2 bad input (one line on stderr each)."""
    from lakefs_gc.credentials import CredentialsError
    from lakefs_gc.storage import StorageError

    try:
        return reclaim(args, sys.stdout, now or datetime.now(UTC))
    except UsageError as e:
        print(f"{NAME}: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    except (Refused, CredentialsError, StorageError) as e:
        print(f"{NAME}: refused: {' '.join(str(e).split())}", file=sys.stderr)
        return 1


def reclaim(args: argparse.Namespace, out: TextIO, now: datetime) -> int:
    """Check the namespace (the module's doc, 1 to 3), then delete it or say what would go."""
    from lakefs_gc.cli_namespace import _open_namespace
    from lakefs_gc.config.discovered import read_discovered

    ns = normal(args.namespace)
    if args.grace_days < 0 or args.quarantine_days < 0:
        raise UsageError("--grace-days and --quarantine-days take a number of days, 0 or more")
    cfg = _config(args)
    if cfg.discovery is None:
        raise UsageError(
            f"{cfg.path} has no 'discover' section: no refresh records the repositories' namespaces, so none is "
            f"known orphaned (docs/fleet.md, 'Orphaned namespaces')"
        )
    state = cfg.discovery.state_file
    orphan = next((o for o in read_discovered(state).orphans if o.namespace == ns), None)
    if orphan is None:
        raise Refused(
            f"{ns} is not recorded as orphaned in {state}: only a namespace whose repository the discovery refresh "
            f"saw and then found gone is reclaimed; run the DAG lakefs_gc_discover (its log lists the orphaned ones)"
        )
    if not orphan.orphaned:
        raise Refused(
            f"{ns} is not orphaned: its repository {orphan.repository} is gone, but {orphan.held_by} is above it or "
            f"under it (the last refresh found); delete that repository first, or leave the namespace"
        )
    _check_grace(orphan, args.grace_days, now)
    from lakefs_gc.credentials import airflow_installed

    if not args.conn_id and airflow_installed():  # its lakeFS's connection: a local:// namespace's root is there
        args.conn_id = orphan.lakefs_conn_id
    if not args.dry_run and normal(args.confirm or "") != ns:
        said = f"--confirm {args.confirm} is not it" if args.confirm else "no --confirm"
        raise Refused(f"{said}: give --confirm {ns} (the namespace again, exactly) to delete it")
    checked = _check_unused(args, cfg, orphan)
    out.write(f"{ns}: orphaned since {orphan.orphaned_at} (repository {orphan.repository}, {orphan.lakefs_conn_id}); "
              f"no repository uses it ({checked})\n")  # fmt: skip
    storage = _open_namespace(ns, args)
    listed = _Listed(storage, max(args.limit, 0), out)
    if args.dry_run:
        for _ in listed:
            pass
        out.write(f"dry run: would delete {listed.what()} of {ns}; nothing was changed (to delete: --confirm {ns})\n")
        return 0
    failed = _delete(storage, listed, args, now, out)
    what = listed.what()
    if failed:
        out.write(f"{ns}: {plural(len(failed), 'object')} of {listed.objects:,} could not be deleted, e.g. "
                  f"{failed[0]}; run the command again\n")  # fmt: skip
        return 1
    from lakefs_gc.config.discovered import forget_orphan

    forget_orphan(state, ns)
    out.write(f"{ns}: reclaimed {what}; no longer recorded as orphaned\n")
    return 0


class _Listed:
    """The namespace's keys, listed once as they are iterated (never all held, but for a quarantine), counted and sized."""

    def __init__(self, storage: Storage, sample: int, out: TextIO) -> None:
        self.storage, self.sample, self.out = storage, sample, out
        self.objects = self.bytes = 0

    def __iter__(self) -> Iterator[str]:
        for info in self.storage.list(""):
            if self.objects < self.sample:
                self.out.write(f"  {self.storage.full_uri(info.key)}\n")
            self.objects += 1
            self.bytes += info.size
            yield info.key

    def what(self) -> str:
        more = self.objects - self.sample
        shown = f" (the first {self.sample:,} above)" if self.sample and more > 0 else ""
        return f"{plural(self.objects, 'object')} ({plural(self.bytes, 'byte')}){shown}"


def _batches(keys: Iterable[str], size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for k in keys:
        batch.append(k)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _config(args: argparse.Namespace) -> GCConfig:
    from lakefs_gc.config import ConfigError, load_config

    try:
        return load_config(args.config, strict=False)
    except ConfigError as e:
        raise UsageError(
            f"{str(e).splitlines()[0]}: the orphaned namespaces are recorded by the discovery refresh of the "
            f"repositories file (--config FILE)"
        ) from None


def _check_grace(orphan: Orphan, grace_days: float, now: datetime) -> None:
    since = datetime.fromisoformat(orphan.orphaned_at)
    ready = since + timedelta(days=grace_days)
    if now < ready:
        age = (now - since).total_seconds() / 86400
        raise Refused(
            f"{orphan.namespace} has been orphaned for {age:.1f} {noun(round(age, 1), 'day')} (since {since.isoformat()}), "
            f"less than the grace period of {grace_days:g} {noun(grace_days, 'day')}: it can be reclaimed from "
            f"{ready.isoformat()} (--grace-days N sets another period)"
        )


def _lakefs_ids(cfg: GCConfig, orphan: Orphan) -> set[str]:
    """Return every lakeFS connection the repositories file names, and the one the orphan was recorded under."""
    ids = {r.lakefs_conn_id for r in cfg.repositories} | {orphan.lakefs_conn_id}
    ids |= {r.lakefs_conn_id for r in cfg.removed}
    if cfg.discovery is not None:
        ids |= {s.lakefs_conn_id for s in cfg.discovery.sources}
    return ids


def _check_unused(args: argparse.Namespace, cfg: GCConfig, orphan: Orphan) -> str:
    """List every configured lakeFS afresh; refuse when one cannot be, or when a repository is on, above or under it."""
    from lakefs_gc.credentials import resolver

    default = resolver(args)
    default_id = default.lakefs_conn_id()[0]
    accesses = {f"lakeFS connection {default_id!r}" if args.conn_id else "the command's lakeFS": default}
    for conn in sorted(_lakefs_ids(cfg, orphan) - {default_id}):
        one = copy.copy(args)
        one.conn_id, one.lakefs_endpoint, one._resolver = conn, None, None  # named: it must exist
        accesses[f"lakeFS connection {conn!r}"] = resolver(one)
    used: list[tuple[str, str, str]] = []
    endpoints: set[str] = set()
    for what, res in accesses.items():
        access = res.lakefs()
        if not access.endpoint or not access.access_key_id or not access.secret_access_key:
            raise Refused(
                f"{what}: its URL or keys were not found ({access.source}), so its repositories cannot be checked; "
                f"every lakeFS the repositories file names is checked before a namespace is deleted: define the "
                f"connection where this runs (or --lakefs-endpoint with LAKEFS_GC_LAKEFS_* for the default one)"
            )
        if access.endpoint in endpoints:
            continue
        endpoints.add(access.endpoint)
        used += [(f"{what} ({access.endpoint})", r, n) for r, n in _namespaces(what, access).items()]
    users = overlapping(orphan.namespace, used)
    if users:
        where, repo, ns = users[0]
        more = f" (and {plural(len(users) - 1, 'more repository', 'more repositories')})" if len(users) > 1 else ""
        raise Refused(
            f"{orphan.namespace} is in use: repository {repo} of {where} has namespace {ns}{more}; it is not "
            f"orphaned while a repository is on it, above it or under it (delete that repository first, or leave it)"
        )
    return f"{plural(len(endpoints), 'lakeFS', 'lakeFS')} listed: {', '.join(sorted(endpoints))}"


def _namespaces(what: str, access: Any) -> dict[str, str]:
    from lakefs_gc.lakefs.client import LakeFSClient

    try:
        with LakeFSClient(
            access.endpoint,
            access.access_key_id,
            access.secret_access_key,
            connection=access.connection,
            **access.retries,
        ) as client:
            return client.repository_namespaces()
    except Exception as e:  # whatever it is, this lakeFS was not checked: nothing is deleted
        raise Refused(
            f"{what} ({access.endpoint}) did not list its repositories ({type(e).__name__}: {e}); nothing is "
            f"deleted while a configured lakeFS cannot be checked: try again when it answers"
        ) from None


def _delete(storage: Storage, keys: Iterable[str], args: argparse.Namespace, now: datetime, out: TextIO) -> list[str]:
    """
    Delete (local:// with quarantine days: move into the quarantine) every key; return those that failed.

    A store's keys are deleted a batch at a time as they are listed; a local namespace's are listed
    whole first (files are moved out of the folders the listing walks).
    """
    batch = storage.max_delete_batch
    failed: list[str] = []
    if storage.quarantines:
        from lakefs_gc.storage.local import LocalStorage

        purged = purge_reclaimed(LocalStorage(args.local_root), now)
        if purged:
            out.write(f"purged {plural(purged, 'file')} of earlier reclaims whose quarantine ended\n")
    if storage.quarantines and args.quarantine_days > 0:
        every = list(keys)
        root, rel, sdir = _quarantine(storage, args, now, out)
        for part in _batches(every, batch):
            moved = root.move_batch([f"{rel}/{k}" for k in part], _layout().quarantine_dir(sdir))
            failed += [k for k, code, _ in moved if code != "NoSuchKey"]
        return failed
    if storage.quarantines:
        keys = list(keys)
    for part in _batches(keys, batch):
        failed += [k for k, code, _ in storage.delete_batch(part) if code != "NoSuchKey"]
    kept = storage.restorability(now)
    if kept.restorable:
        until = f" until {kept.until}" if kept.until else ", with no end the GC knows of"
        out.write(f"the store keeps what was deleted ({kept.how}: {kept.detail}): those bytes are still billed{until}"
                  + (" (noncurrent versions: a lifecycle rule with NoncurrentVersionExpiration frees them)"
                     if kept.how == "s3 versioning" else "") + "\n")  # fmt: skip
    elif kept.restorable is None:
        out.write(f"whether the store keeps deleted objects is not known ({kept.detail})\n")
    else:
        out.write(f"the store keeps nothing of what was deleted ({kept.detail}): the bytes are freed now\n")
    return failed


def _layout() -> Any:
    from lakefs_gc.report import layout

    return layout


def _quarantine(storage: Storage, args: argparse.Namespace, now: datetime, out: TextIO) -> tuple[Any, str, str]:
    """Open the blockstore root and record this reclaim's quarantine; (root, namespace path, folder)."""
    from pathlib import Path

    from lakefs_gc.storage.local import LocalStorage
    from lakefs_gc.sweeping.restore import start_quarantine
    from lakefs_gc.timestamps import iso

    if not isinstance(storage, LocalStorage):
        raise TypeError(f"only local:// namespaces are quarantined, not {storage.uri}")
    root = LocalStorage(args.local_root)
    rel = storage.root.resolve().relative_to(Path(args.local_root).resolve()).as_posix()
    sdir = f"{RECLAIMED}{iso(now).replace(':', '')}/"
    until = start_quarantine(root, sdir, args.quarantine_days, now)
    out.write(
        f"quarantine: the files move to {root.full_uri(_layout().quarantine_dir(sdir) + rel)} until {until} "
        f"(undo: move them back); a later reclaim-namespace deletes them after that\n"
    )
    return root, rel, sdir


def purge_reclaimed(root: Storage, now: datetime) -> int:
    """Delete the files of every reclaim whose quarantine has ended; return how many (a folder without a record stays)."""
    from lakefs_gc.report import formats
    from lakefs_gc.timestamps import parse_iso

    purged = 0
    for sdir in root.list_prefixes(RECLAIMED):
        record = formats.read_quarantine(root, _layout().quarantine_file(sdir))
        if record is None or parse_iso(str(record["until"])) > now:
            continue
        keys = [o.key for o in root.list(sdir)]
        for i in range(0, len(keys), root.max_delete_batch):
            root.delete_batch(keys[i : i + root.max_delete_batch])
        purged += sum(1 for k in keys if k.startswith(_layout().quarantine_dir(sdir)))
    return purged
