"""
``lakefs-gc doctor REPO``: whether a GC run of ``REPO`` has everything it needs, checked without deleting anything.

One line per check (``PASS``, ``FAIL`` or ``WARN``, what, and the fix; :mod:`lakefs_gc.doctor`):
lakeFS (reachable, its version, the repository, its GC rules, each call a run makes with its key,
the grace period against the entry's ``min_age_seconds``), the store (each right of the storage
credentials tried on a scratch key under the namespace, removed after; versioning, lifecycle and
soft delete: what a sweep's deletes mean for the bill and for undo), pyspark and pyspark-client,
Java and the cluster's Spark, and the inventory when the entry lists from one
(:func:`lakefs_gc.cli_inventory.check`). Credentials are found as every command finds them
(:mod:`lakefs_gc.credentials`).

``--policy`` prints instead the least the run needs: the IAM policy of the namespace's bucket and
prefix (or the Azure role, the GCS role) and the lakeFS policy (:mod:`lakefs_gc.doctor.policy`).

Exit status 0: every check passed (warnings allowed); 1: some check failed; 2: bad input (one line
on stderr).
"""

from __future__ import annotations

import argparse
import io
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

from lakefs_gc.cli_namespace import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable

    from lakefs_gc.config import RepoConfig
    from lakefs_gc.doctor import Report
    from lakefs_gc.storage.namespace import NamespaceURI

NAME = "lakefs-gc doctor"


def add_parser(sub: Any, storage_arguments: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add ``doctor`` to the ``lakefs-gc`` command's subparsers."""
    doc = sub.add_parser(
        "doctor",
        help="check everything a GC run of a repository needs, deleting nothing; or print the least it needs",
        description="Check, before any run, everything a GC run of REPO needs: lakeFS (version, GC rules, each "
        "call with the run's key), the store (each right tried on a scratch key under the namespace, then "
        "removed; what deletes leave), pyspark, Java, the cluster's Spark, the grace period, the inventory. "
        "One line per check: PASS, FAIL or WARN, what, and the fix. Exit status 0: all passed (warnings "
        "allowed), 1: some failed, 2: bad input. --policy: print the least the run needs instead.",
    )
    doc.add_argument("repository", metavar="REPO", help="the lakeFS repository")
    doc.add_argument("--config", metavar="FILE", help="the repositories file (default: $LAKEFS_GC_CONFIG, else "
                     "config/gc_repositories.yaml)")  # fmt: skip
    doc.add_argument(
        "--policy",
        action="store_true",
        help="print the IAM policy (or Azure role, GCS role) of the namespace and the lakeFS policy the run needs",
    )
    doc.add_argument("--namespace", metavar="URI", help="--policy: this namespace, without asking lakeFS for it")
    doc.add_argument(
        "--no-prepare",
        action="store_true",
        help="do not call lakeFS's two prepare calls (they only write lakeFS's own GC files under _lakefs/)",
    )
    doc.add_argument(
        "--prepare-timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="seconds lakeFS's prepare_commits may take (600)",
    )
    doc.add_argument(
        "--spark-master", metavar="URL", help="the cluster's master (default: the entry's Spark connection's)"
    )
    doc.add_argument(
        "--lakefs-endpoint", metavar="URL", help="lakeFS's URL (default: the lakeFS connection's, else the environment)"
    )
    storage_arguments(doc)


def run(args: argparse.Namespace) -> int:
    """Run ``doctor``; bad input is one line on stderr and exit status 2."""
    from lakefs_sdk.exceptions import ApiException

    from lakefs_gc.credentials import PRECEDENCE, CredentialsError, resolver
    from lakefs_gc.errors import LakeFSGCError

    try:
        rc = policy(args, sys.stdout) if args.policy else doctor(args, sys.stdout)
    except (UsageError, CredentialsError, LakeFSGCError, ApiException) as exc:  # the last two: --policy's lakeFS
        print(f"{NAME}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        rc = 2
    if args.verbose:
        print(f"{NAME}: settings used ({PRECEDENCE}): {resolver(args).sources()}", file=sys.stderr)
    return rc


def _entry(args: argparse.Namespace) -> tuple[RepoConfig | None, str]:
    from lakefs_gc.cli_inventory import _entry as entry_of

    return entry_of(args)


def _client(args: argparse.Namespace) -> Any:
    """Return a client of lakeFS and where its settings came from (``lakefs_gc.credentials``)."""
    from lakefs_gc.cli_namespace import lakefs_client
    from lakefs_gc.credentials import resolver

    return lakefs_client(args, NAME), resolver(args).lakefs()


def policy(args: argparse.Namespace, out: TextIO) -> int:
    """Print the least a run of the repository needs (``--policy``)."""
    from lakefs_gc.doctor.policy import print_policy
    from lakefs_gc.storage.namespace import LOCAL, S3, parse_namespace, scheme_of

    ns_uri = args.namespace
    if not ns_uri:
        client, _ = _client(args)
        with client:
            ns_uri = str(client.get_repository(args.repository).storage_namespace)
    ns_uri = ns_uri.rstrip("/")
    if scheme_of(ns_uri) is None:
        raise UsageError(f"{ns_uri!r} is no storage namespace (s3://, gs://, https://<account>.blob..., local://)")
    ns = None if scheme_of(ns_uri) == LOCAL else parse_namespace(ns_uri)
    inventory: NamespaceURI | None = None
    entry, _ = _entry(args)
    location = entry.listing.inventory.location if entry is not None else None
    if ns is not None and ns.scheme == S3 and location and scheme_of(location) == S3:
        inventory = parse_namespace(location.rstrip("/"))
    out.write(print_policy(ns_uri, ns, args.repository, inventory))
    return 0


def doctor(args: argparse.Namespace, out: TextIO) -> int:
    """Run every check; 1 when any failed."""
    from lakefs_gc.credentials import masked
    from lakefs_gc.doctor import Report
    from lakefs_gc.doctor.lakefs_checks import check_calls, check_repository, check_server

    entry, where = _entry(args)
    client, access = _client(args)
    report = Report(out)
    out.write(f"{NAME} {args.repository}: lakeFS {access.endpoint} ({access.source}); {where}\n")
    ns = commits = None
    with client:
        if check_server(report, client, masked(access.access_key_id), access.connection or access.source):
            got = check_repository(report, client, args.repository)
            if got is not None:
                repo, _ = got
                ns = str(repo.storage_namespace).rstrip("/")
                grace, commits = check_calls(
                    report, client, args.repository, repo.default_branch, not args.no_prepare, args.prepare_timeout
                )
                _grace(report, grace, entry)
    if ns is not None:
        _storage(args, report, ns, entry, commits)
    else:
        report.warn("storage", "not checked: lakeFS did not give the repository's namespace (above)")
    _runtime(args, report, entry)
    _inventory(args, report, entry)
    out.write(report.summary() + "\n")
    return 1 if report.failed() else 0


def _grace(report: Report, grace: int | None, entry: RepoConfig | None) -> None:
    from lakefs_gc.contract import RunSettings
    from lakefs_gc.words import plural

    if grace is None:
        return
    min_age = entry.min_age_seconds if entry is not None else RunSettings.min_age_seconds
    said = "the entry's" if entry is not None else "the default"
    found = f"lakeFS's grace period {plural(grace, 'second')}, {said} min_age_seconds {min_age}"
    if min_age < grace:
        report.fail(
            "grace period",
            f"{found}: a run is refused (objects younger than the grace period may be about to be linked)",
            f"set min_age_seconds to {grace} or more in the repository's entry",
        )
    else:
        report.ok("grace period", f"{found}: objects younger than {plural(min_age, 'second')} are kept")


def _storage(args: argparse.Namespace, report: Report, ns: str, entry: RepoConfig | None, commits: str | None) -> None:
    from lakefs_gc.credentials import resolver
    from lakefs_gc.doctor.storage_checks import check_storage
    from lakefs_gc.storage import kind_named, open_storage, parse_namespace

    kind = kind_named(ns)
    if kind is None:
        report.fail("storage", f"lakeFS's namespace {ns!r} is of no kind the GC knows", "see docs/compatibility.md")
        return
    root = None
    if kind.needs_local_root:
        root, _ = resolver(args).local_root()
        if not root:
            report.fail("storage", f"{ns} is local:// and lakeFS's blockstore.local.path is not known", "--local-root")
            return
        opts = None
    else:
        opts = resolver(args).storage_options(kind, parse_namespace(ns))
    try:
        storage = open_storage(ns, opts, root)
    except ValueError as exc:
        report.fail("storage", str(exc), "check the storage connection (--storage-conn-id)")
        return
    quarantine = entry.sweep.quarantine_days if entry is not None else 0
    check_storage(report, storage, args.repository, datetime.now(UTC), quarantine, commits)


def _runtime(args: argparse.Namespace, report: Report, entry: RepoConfig | None) -> None:
    from lakefs_gc.doctor.runtime_checks import check_cluster, check_java, check_pyspark

    task_spark = check_pyspark(report)
    check_java(report)
    master, where = args.spark_master, "--spark-master"
    if not master:
        conn_id = entry.spark_conn_id if entry is not None else "spark_default"
        master, where = _spark_master(conn_id)
    check_cluster(report, master, where, task_spark)


def _spark_master(conn_id: str) -> tuple[str | None, str]:
    """Return the master of Airflow's Spark connection ``conn_id`` (None: not known here) and what to say of it."""
    from lakefs_gc.credentials import _airflow_lookups, airflow_installed

    if not airflow_installed():
        return None, "Airflow is not installed here"
    with _airflow_lookups():
        from airflow.sdk import BaseHook
        from airflow.sdk.exceptions import AirflowNotFoundException

        try:
            conn = BaseHook.get_connection(conn_id)
        except AirflowNotFoundException:
            return None, f"no Airflow connection {conn_id!r}"
    host = str(conn.host or "")
    master = f"{host}:{conn.port}" if conn.port and host.startswith("spark://") else host
    return master or None, f"Airflow connection {conn_id!r}"


def _inventory(args: argparse.Namespace, report: Report, entry: RepoConfig | None) -> None:
    """Check the entry's inventory as ``lakefs-gc inventory check`` does (when the entry configures one)."""
    from lakefs_gc.cli_inventory import check

    inv = entry.listing.inventory if entry is not None else None
    if entry is None or inv is None or (entry.listing.source != "inventory" and not inv.location):
        report.ok("inventory", "none configured: clean runs list the namespace (LIST calls)")
        return
    shown = argparse.Namespace(**vars(args))
    for name in ("location", "source_prefix", "name", "max_age_days", "destination", "prefix"):
        setattr(shown, name, None)
    shown.format = "csv"
    buf = io.StringIO()
    try:
        rc = check(shown, buf)
    except Exception as exc:
        rc, buf = 1, io.StringIO(f"{type(exc).__name__}: {exc}")
    said = buf.getvalue().strip().splitlines()
    line = next((s for s in said if ": usable" in s or ": no usable" in s), said[-1] if said else "no answer")
    if rc == 0:
        report.ok("inventory", line)
    elif entry.listing.source == "inventory" and inv.fallback != "list":
        report.fail(
            "inventory", f"{line}; listing.source is inventory: a clean run is refused", "lakefs-gc inventory check"
        )
    else:
        report.warn("inventory", f"{line}: clean runs list instead", f"lakefs-gc inventory check {args.repository}")
