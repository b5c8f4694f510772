"""
The ``lakefs-gc`` commands that read a repository's storage namespace: report, restore, explain, space, whatif.

Each takes the parsed arguments and the stream to print on, and returns the exit status;
:func:`lakefs_gc.cli.main` parses, dispatches and turns the errors they raise into one line
(its module's doc says what each command does and where the keys come from).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from lakefs_gc.lakefs.client import LakeFSClient
    from lakefs_gc.report.run_summary import RunSummary
    from lakefs_gc.storage.base import Storage


class UsageError(Exception):
    """Bad input to a command: its message says what is wrong and how to fix it."""


def _open_namespace(namespace: str, args: argparse.Namespace) -> Storage:
    """Open the namespace's storage: settings from the flags, Airflow's connections or the environment."""
    import os

    from lakefs_gc.credentials import resolver
    from lakefs_gc.storage import kind_named, open_storage, parse_namespace

    kind = kind_named(namespace)
    if kind is None:
        raise UsageError(
            f"{namespace!r} is not a storage namespace: give s3://bucket/prefix, gs://bucket/prefix, "
            f"https://<account>.blob.core.windows.net/<container>/prefix or local://path (the "
            f"repository's storage namespace, as lakeFS shows it), or the URI of a summary.json"
        )
    if kind.needs_local_root:
        root, source = resolver(args).local_root()
        if not root:
            raise UsageError(
                f"{namespace} is a local:// namespace: give lakeFS's blockstore.local.path with "
                f"--local-root DIR (or LAKEFS_GC_LOCAL_ROOT, or the lakeFS connection's extra "
                f"local_blockstore_root: --conn-id)"
            )
        if not os.path.isdir(root):
            raise UsageError(f"{source} {root}: no such directory (lakeFS's blockstore.local.path)")
        args.local_root = root  # explain and space read it from here
        resolver(args).notes.append(f"local root {root}: {source}")
        return open_storage(namespace, None, root)
    try:
        ns = parse_namespace(namespace)
    except ValueError as e:
        raise UsageError(str(e)) from None
    # no keys anywhere: the SDK's default chain, ADC, DefaultAzureCredential
    return open_storage(namespace, resolver(args).storage_options(kind, ns))


def _split_report_uri(target: str) -> tuple[str, str | None]:
    """(namespace, key of a summary.json or None) of the command's argument."""
    from lakefs_gc.report.layout import UNIFIED

    target = target.rstrip("/")
    marker = "/" + UNIFIED
    if target.endswith("/summary.json"):
        if marker not in target:
            raise UsageError(f"{target}: a report's URI has {UNIFIED}<mark id>/summary.json after the namespace")
        ns, _, rest = target.partition(marker)
        return ns, UNIFIED + rest
    return target, None


def _table(rows: list[list[str]], out: TextIO) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() + "\n")


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _started(s: RunSummary | None) -> str:
    return "" if s is None or s.start_time is None else s.start_time


def _mark_row(mark_id: str, s: RunSummary | None, problem: str | None, indent: str = "") -> list[str]:
    if s is None:
        return [indent + mark_id, "-", "-", "UNREADABLE", "-", "-", "-", "-", "-", problem or ""]
    deleted = "-" if s.delete_skipped else _count(s.deleted)
    return [
        indent + mark_id,
        (s.start_time if s.start_time is not None else "-")[:19] + "Z",
        (s.mode if s.mode is not None else "-") + (" (dry run)" if s.dry_run else ""),
        "yes" if s.success is True else "NO",
        _count(s.listed_objects),
        _count(s.candidates),
        _count(s.num_deleted_objects),
        deleted,
        _count(s.held_back),
        s.airflow_run_id or "",
    ]


def _list_marks(storage: Storage, limit: int, out: TextIO) -> list[tuple[str, RunSummary | None, str | None]]:
    from lakefs_gc.report.layout import UNIFIED
    from lakefs_gc.report.marks import iter_marks, iter_sweeps

    marks = list(iter_marks(storage))
    marks.sort(key=lambda m: _started(m[1]), reverse=True)
    if not marks:
        out.write(f"no GC marks under {storage.full_uri(UNIFIED)}\n")
        return marks
    rows = [
        [
            "mark id",
            "started (UTC)",
            "flow",
            "success",
            "listed",
            "candidates",
            "marked",
            "deleted",
            "held back",
            "airflow run",
        ]
    ]
    for mark_id, s, problem in marks[:limit]:
        rows.append(_mark_row(mark_id, s, problem))
        sweeps = sorted(iter_sweeps(storage, mark_id), key=lambda x: str(x[1].start_time if x[1] else None))
        for sweep, ss, sp in sweeps:
            rows.append(_mark_row(f"sweep {sweep}", ss, sp, indent="  "))
    _table(rows, out)
    if len(marks) > limit:
        out.write(f"({len(marks) - limit} older mark(s) not shown; --limit N shows more)\n")
    out.write(
        "marked: the addresses a mark listed for deletion (lakeFS's num_deleted_objects); a sweep_only run "
        "takes a mark id whose success is yes\n"
    )
    return marks


def _find_run(storage: Storage, run: str) -> tuple[str, RunSummary]:
    """Return the summary key and summary of mark ``run``, or of the mark or sweep an Airflow run ``run`` wrote."""
    from lakefs_gc.report.marks import find_run

    try:
        found = find_run(storage, run)
    except LookupError as e:
        raise UsageError(str(e)) from None
    return found.summary_key, found.summary


def _newest_with_space(storage: Storage, namespace: str) -> tuple[str, RunSummary]:
    """Return the summary key and summary of the newest mark with a ``space.json``."""
    from lakefs_gc.report.layout import summary_key
    from lakefs_gc.report.marks import iter_marks

    runs = [(_started(s), m, s) for m, s, _ in iter_marks(storage) if s and s.space_file]
    if runs:
        _, mark_id, summary = max(runs, key=lambda r: r[:2])
        return summary_key(mark_id), summary
    raise UsageError(
        f"no run of {namespace} has attributed its space yet: a clean run does (Param attribute_space); "
        f"list the marks with: lakefs-gc report {namespace}"
    )


def _space_of_run(storage: Storage, summary: RunSummary, key: str, args: argparse.Namespace, out: TextIO) -> int:
    """Print where the bytes went at one run (its ``space.json``)."""
    import json as _json

    from lakefs_gc.report.formats import read_space
    from lakefs_gc.space import run_space_lines

    space_file = summary.space_file
    if not space_file:
        why = summary.space_skipped or "it ran before the attribution existed, or did not reach attribute_space"
        raise UsageError(
            f"run {summary.run_id if summary.run_id is not None else '?'} ({storage.full_uri(key)}) "
            f"has no attribution of space: "
            f"{why}. `lakefs-gc report {args.target.split('/_lakefs/')[0]} --space` shows the newest "
            f"run that has one"
        )
    doc = read_space(storage, space_file)
    out.write((_json.dumps(doc, indent=2) if args.json else "\n".join(run_space_lines(doc))) + "\n")
    return 0


def report_command(args: argparse.Namespace, out: TextIO) -> int:
    import json as _json

    from lakefs_gc.errors import ContractError
    from lakefs_gc.report.render import summary_rows
    from lakefs_gc.report.run_summary import RunSummary
    from lakefs_gc.storage import ObjectNotFound

    namespace, key = _split_report_uri(args.target)
    storage = _open_namespace(namespace, args)
    if key is not None:
        try:
            summary = RunSummary.from_doc(_json.loads(storage.get(key)))
        except ObjectNotFound:
            raise UsageError(f"no report at {args.target}; list the marks with: lakefs-gc report {namespace}") from None
        except ValueError as e:
            raise UsageError(f"{args.target} is not valid JSON ({e})") from None
        except ContractError as e:
            raise UsageError(f"{args.target} is not a summary of a GC run ({e})") from None
    elif args.run:
        key, summary = _find_run(storage, args.run)
    elif args.space:
        key, summary = _newest_with_space(storage, namespace)
    else:
        if args.json:
            from lakefs_gc.report.marks import iter_marks

            out.write(
                _json.dumps(
                    [
                        {"mark_id": m, "summary": s.to_doc() if s else None, "problem": p}
                        for m, s, p in iter_marks(storage)
                    ]
                )
                + "\n"
            )
        else:
            _list_marks(storage, args.limit, out)
        return 0
    if args.space:
        return _space_of_run(storage, summary, key, args, out)
    if args.json:
        out.write(_json.dumps(summary.to_doc(), indent=2) + "\n")
    else:
        _table([[label, value] for label, value in summary_rows(summary, storage.full_uri(key))], out)
    return 0


def restore_command(args: argparse.Namespace, out: TextIO) -> int:
    from lakefs_gc.sweeping.restore import DONE, restore_run

    storage = _open_namespace(args.namespace.rstrip("/"), args)
    keys: list[str] | None = None
    if args.keys:
        try:
            with open(args.keys, encoding="utf-8") as f:
                keys = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
        except OSError as e:
            raise UsageError(f"--keys {args.keys}: {e.strerror or e}") from None
    report = restore_run(storage, args.run, keys=keys, dry_run=args.dry_run, restore_id=args.restore_id)
    width = max((len(k) for k, _, _ in report.rows), default=0)
    for key, outcome, detail in report.rows[: args.limit] if args.limit else report.rows:
        out.write(f"{key.ljust(width)}  {outcome}: {detail}\n")
    if args.limit and len(report.rows) > args.limit:
        where = (
            f"in {report.report_uri.rsplit('/', 1)[0]}/outcomes.parquet"
            if report.report_uri
            else "not shown: a dry run writes no report; --limit 0 shows every key"
        )
        out.write(f"({len(report.rows) - args.limit} more {where})\n")
    out.write(report.line() + "\n")
    out.write(f"report: {report.report_uri or 'none (a dry run writes nothing)'}\n")
    return 0 if all(o in DONE for _, o, _ in report.rows) else 1


def lakefs_client(args: argparse.Namespace, needed_by: str = "--repository") -> LakeFSClient:
    """
    Return a client of lakeFS: ``--lakefs-endpoint``, the lakeFS connection, the environment (``lakefs_gc.credentials``).

    ``needed_by``: what needs lakeFS, named in the :class:`UsageError` when its URL or keys are missing.
    """
    from lakefs_gc.credentials import LAKEFS_ENV, resolver
    from lakefs_gc.lakefs.client import LakeFSClient

    access = resolver(args).lakefs()
    if not access.endpoint or not access.access_key_id or not access.secret_access_key:
        (endpoint, key, secret), (endpoint2, key2, secret2) = LAKEFS_ENV
        missing = " and ".join(
            what for what, v in (("its URL", access.endpoint), ("its keys", access.access_key_id)) if not v
        )
        raise UsageError(
            f"{needed_by} needs lakeFS, and {missing} {'were' if ' and ' in missing else 'was'} not found: "
            f"--conn-id ID (an Airflow connection; default lakefs_default), or --lakefs-endpoint URL "
            f"(or {endpoint}, or {endpoint2}) with the keys in {key} / {secret} (or {key2} / {secret2})"
        )
    return LakeFSClient(
        access.endpoint, access.access_key_id, access.secret_access_key, connection=access.connection, **access.retries
    )


def space_command(args: argparse.Namespace, out: TextIO) -> int:
    """``lakefs-gc space`` and ``lakefs-gc whatif``: read now, nothing deleted."""
    from lakefs_gc import space

    return space.run(args, out, _open_namespace(args.namespace.rstrip("/"), args), lakefs_client(args))


def explain_command(args: argparse.Namespace, out: TextIO) -> int:
    import os

    from lakefs_gc.explain import explain, resolve
    from lakefs_gc.storage import parse_namespace

    namespace = args.namespace.rstrip("/")
    storage = _open_namespace(namespace, args)
    roots = parse_namespace(namespace, args.local_root or os.environ.get("LAKEFS_GC_LOCAL_ROOT")).roots()
    client = lakefs_client(args) if args.repository else None
    try:
        address, path, note = resolve(roots, args.target, client, args.repository, args.ref, args.max_commits)
    except ValueError as e:
        if client is not None:
            client.close()
        raise UsageError(str(e)) from None
    if note:
        out.write(note + "\n")
    try:
        ex = explain(storage, address, roots, client, args.repository, args.run, path=path)
    finally:
        if client is not None:
            client.close()
    out.write("\n".join(ex.lines()) + "\n")
    return 0


# what a refused key reads like, from lakeFS and the stores: the error then says where the keys came from
_AUTH_WORDS = "401 403 credentials AccessDenied InvalidAccessKeyId SignatureDoesNotMatch Forbidden Unauthorized".split()
_AUTH_WORDS += ["AuthenticationFailed", "InvalidClientTokenId", "ExpiredToken", "AuthorizationFailure"]


def namespace_command(args: argparse.Namespace) -> int:
    """
    Run report, restore, explain, space or whatif; one line on stderr for what went wrong (exit 2).

    With ``--verbose``, and after a refusal of the keys, also where lakeFS's and the store's
    settings came from (``lakefs_gc.credentials``: flags, then Airflow's connections, then the
    environment; no secret).
    """
    from lakefs_gc.credentials import PRECEDENCE, resolver
    from lakefs_gc.errors import LakeFSGCError, Unreachable
    from lakefs_gc.storage import StorageError

    name = f"lakefs-gc {args.command}"
    command = {
        "report": report_command,
        "restore": restore_command,
        "explain": explain_command,
        "space": space_command,
        "whatif": space_command,
    }[args.command]
    try:
        rc = command(args, sys.stdout)
    except (UsageError, ValueError, StorageError, Unreachable, LakeFSGCError) as exc:
        message = str(exc)
    except Exception as exc:  # botocore's: unreachable endpoint, no or wrong keys, no such bucket; lakefs-sdk's
        module = type(exc).__module__
        if module.startswith("lakefs_sdk"):
            status, reason = getattr(exc, "status", "?"), getattr(exc, "reason", "") or ""
            where = f"lakeFS at {resolver(args).lakefs().endpoint}"
            message = (
                f"{where} refused the keys (HTTP {status} {reason}): check the access key id and secret"
                if status in (401, 403)
                else f"{where} answered HTTP {status} {reason}".rstrip()
            )
        elif module.startswith("botocore"):
            message = (
                f"cannot read {getattr(args, 'target', None) or args.namespace}: {exc} (check --s3-endpoint, "
                f"the storage connection (--storage-conn-id) or LAKEFS_GC_S3_ENDPOINT_URL, and its keys)"
            )
        else:
            raise
    else:
        if args.verbose:
            print(f"{name}: settings: {resolver(args).sources()}", file=sys.stderr)
        return rc
    print(f"{name}: error: {message}", file=sys.stderr)
    if args.verbose or any(w in message for w in _AUTH_WORDS):
        print(f"{name}: settings used ({PRECEDENCE}): {resolver(args).sources()}", file=sys.stderr)
    return 2
