"""
``lakefs-gc``: command-line tools for people.

    lakefs-gc sst dump FILE [--props]

prints one JSON object per record of a lakeFS range, a metarange or a plain RocksDB table
(or, with ``--props``, its properties).

    lakefs-gc report NAMESPACE|SUMMARY_URI [--run ID] [--limit N] [--json]
                     [--local-root DIR] [--s3-endpoint URL] [--s3-region REGION]

lists a repository's recent GC marks (id, start, flow, success, counts, and their sweep-only runs)
so a ``sweep_only`` run can be given a mark id, or prints one run's report as a table (``--run``: a
mark id or an Airflow run id; a ``.../summary.json`` URI names the run itself). S3 keys come from
``LAKEFS_GC_S3_ACCESS_KEY_ID`` / ``LAKEFS_GC_S3_SECRET_ACCESS_KEY`` (else boto3's default chain),
as for a Spark step run by hand (Azure: ``LAKEFS_GC_AZURE_*``; GCS: ``LAKEFS_GC_GCS_*``);
``local://`` needs lakeFS's ``blockstore.local.path``.

    lakefs-gc restore NAMESPACE --run RUN_ID [--keys FILE] [--dry-run] [--restore-id ID]
                      [--local-root DIR] [--s3-endpoint URL] [--s3-region REGION]

brings back what one GC run deleted, where the store still keeps it (S3 versioning, Azure blob
soft delete, GCS soft delete, ``local://`` quarantine: ``lakefs_gc.sweeping.restore``), never over a
key written since; ``--keys``: only these keys (one per line, relative to the namespace or full
URIs). Prints one line per outcome and writes the restore's report under the mark
(``restores/<id>/``). Exit status 0 when every key asked for was restored (or would be, dry run)
or is present, 1 when some could not be, 2 on bad input.

    lakefs-gc explain NAMESPACE ADDRESS|PATH [--run RUN_ID] [--repository REPO --lakefs-endpoint URL]
                      [--ref REF] [--local-root DIR] [--s3-endpoint URL] [--s3-region REGION]

says what the GC decided about one physical address (or the one a logical path reads on ``--ref``,
default the repository's default branch) and why: from every mark's report (candidate, held back,
deleted by which sweep, restorable, restored; kept as committed or staged) and, with
``--repository``, from lakeFS now (branch HEADs, the commits the rules keep, tags, staged
entries). lakeFS's keys come from ``LAKEFS_GC_LAKEFS_ACCESS_KEY_ID`` /
``LAKEFS_GC_LAKEFS_SECRET_ACCESS_KEY`` (``lakefs_gc.explain``).

Bad input: one line on stderr saying what to fix, and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

from lakefs_gc.lakefs import graveler
from lakefs_gc.lakefs.sstable import SSTableError, SSTableReader

if TYPE_CHECKING:
    from lakefs_gc.config import GCConfig
    from lakefs_gc.lakefs.client import LakeFSClient
    from lakefs_gc.storage.base import Storage


def _text(b: bytes) -> str:
    """Bytes as text when they are UTF-8; otherwise a ``hex:`` string (never loses information)."""
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return "hex:" + b.hex()


def _rfc3339(seconds: int, nanos: int) -> str:
    base = datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{nanos:09d}Z"


def _dump(path: str, props: bool, out: TextIO) -> None:
    with SSTableReader(path) as reader:
        if props:
            clean = {k: (v if not isinstance(v, bytes) else "hex:" + v.hex()) for k, v in reader.properties.items()}
            out.write(json.dumps(clean, sort_keys=True) + "\n")
            return
        kind = graveler.table_type(reader)
        if kind == graveler.RANGES_TYPE:
            for rec in graveler.iter_range(reader):
                e = rec.entry
                out.write(json.dumps({
                    "key": _text(rec.key), "address": e.address,
                    "address_type": graveler.ADDRESS_TYPE_NAMES.get(e.address_type, str(e.address_type)),
                    "size": e.size, "etag": e.etag,
                    "last_modified": _rfc3339(e.last_modified_seconds, e.last_modified_nanos),
                    "identity": rec.identity.hex(),
                }) + "\n")
        elif kind == graveler.METARANGES_TYPE:
            for key, rng in graveler.iter_metarange(reader):
                out.write(json.dumps({
                    "key": _text(key), "range_id": rng.id, "min_key": _text(rng.min_key),
                    "max_key": _text(rng.max_key), "count": rng.count, "estimated_size": rng.estimated_size,
                }) + "\n")
        else:
            for key, value in reader:
                out.write(json.dumps({"key": _text(key), "value": _text(value)}) + "\n")


class UsageError(Exception):
    """Bad input to a command: its message says what is wrong and how to fix it."""


def _open_namespace(namespace: str, args: argparse.Namespace) -> Storage:
    import os
    from dataclasses import replace

    from lakefs_gc.storage import AzureOptions, GCSOptions, S3Options, open_storage

    if namespace.startswith("local://"):
        root = args.local_root or os.environ.get("LAKEFS_GC_LOCAL_ROOT")
        if not root:
            raise UsageError(f"{namespace} is a local:// namespace: give lakeFS's blockstore.local.path with "
                             f"--local-root DIR (or LAKEFS_GC_LOCAL_ROOT)")
        if not os.path.isdir(root):
            raise UsageError(f"--local-root {root}: no such directory (lakeFS's blockstore.local.path)")
        return open_storage(namespace, None, root)
    if namespace.startswith(("s3://", "s3a://")):
        s3 = S3Options.from_env()
        s3 = replace(s3, endpoint_url=args.s3_endpoint or s3.endpoint_url, region=args.s3_region or s3.region)
        return open_storage(namespace, s3)
    if namespace.startswith("gs://"):
        return open_storage(namespace, GCSOptions.from_env())  # LAKEFS_GC_GCS_* (none: ADC)
    if namespace.startswith(("https://", "http://")):
        from lakefs_gc.storage import parse_namespace

        try:
            host = parse_namespace(namespace).host
        except ValueError as e:
            raise UsageError(str(e)) from None
        # LAKEFS_GC_AZURE_* (ACCOUNT_URL for Azurite; a key, SAS or token; none: DefaultAzureCredential)
        return open_storage(namespace, AzureOptions.from_env(account_url=os.environ.get("LAKEFS_GC_AZURE_ACCOUNT_URL")
                                                            or f"https://{host}", account_name=host.split(".")[0]))
    raise UsageError(f"{namespace!r} is not a storage namespace: give s3://bucket/prefix, gs://bucket/prefix, "
                     f"https://<account>.blob.core.windows.net/<container>/prefix or local://path (the "
                     f"repository's storage namespace, as lakeFS shows it), or the URI of a summary.json")


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


def _count(summary: dict[str, Any], *keys: str) -> str:
    for k in keys:
        if summary.get(k) is not None:
            return f"{summary[k]:,}" if isinstance(summary[k], int) else str(summary[k])
    return "-"


def _mark_row(mark_id: str, s: dict[str, Any] | None, problem: str | None, indent: str = "") -> list[str]:
    if s is None:
        return [indent + mark_id, "-", "-", "UNREADABLE", "-", "-", "-", "-", "-", problem or ""]
    deleted = "-" if s.get("delete_skipped") else _count(s, "deleted")
    return [indent + mark_id, str(s.get("start_time", "-"))[:19] + "Z", str(s.get("mode", "-")) +
            (" (dry run)" if s.get("dry_run") else ""),
            "yes" if s.get("success") is True else "NO", _count(s, "listed_objects"), _count(s, "candidates"),
            _count(s, "num_deleted_objects"), deleted, _count(s, "held_back"), s.get("airflow_run_id", "")]


def _list_marks(storage: Storage, limit: int, out: TextIO) -> list[tuple[str, dict[str, Any] | None, str | None]]:
    from lakefs_gc.report.layout import UNIFIED
    from lakefs_gc.report.marks import iter_marks, iter_sweeps

    marks = list(iter_marks(storage))
    marks.sort(key=lambda m: str((m[1] or {}).get("start_time", "")), reverse=True)
    if not marks:
        out.write(f"no GC marks under {storage.full_uri(UNIFIED)}\n")
        return marks
    rows = [["mark id", "started (UTC)", "flow", "success", "listed", "candidates", "marked", "deleted",
             "held back", "airflow run"]]
    for mark_id, s, problem in marks[:limit]:
        rows.append(_mark_row(mark_id, s, problem))
        for sweep, ss, sp in sorted(iter_sweeps(storage, mark_id), key=lambda x: str((x[1] or {}).get("start_time"))):
            rows.append(_mark_row(f"sweep {sweep}", ss, sp, indent="  "))
    _table(rows, out)
    if len(marks) > limit:
        out.write(f"({len(marks) - limit} older mark(s) not shown; --limit N shows more)\n")
    out.write("marked: the addresses a mark listed for deletion (lakeFS's num_deleted_objects); a sweep_only run "
              "takes a mark id whose success is yes\n")
    return marks


def _find_run(storage: Storage, run: str) -> tuple[str, dict[str, Any]]:
    """Return the summary key and summary of mark ``run``, or of the mark or sweep an Airflow run ``run`` wrote."""
    from lakefs_gc.report.marks import find_run

    try:
        found = find_run(storage, run)
    except LookupError as e:
        raise UsageError(str(e)) from None
    return found.summary_key, found.summary


def _newest_with_space(storage: Storage, namespace: str) -> tuple[str, dict[str, Any]]:
    """Return the summary key and summary of the newest mark with a ``space.json``."""
    from lakefs_gc.report.layout import summary_key
    from lakefs_gc.report.marks import iter_marks

    runs = [(str(s.get("start_time", "")), m, s) for m, s, _ in iter_marks(storage) if s and s.get("space_file")]
    if runs:
        _, mark_id, summary = max(runs, key=lambda r: r[:2])
        return summary_key(mark_id), summary
    raise UsageError(f"no run of {namespace} has attributed its space yet: a clean run does (Param attribute_space); "
                     f"list the marks with: lakefs-gc report {namespace}")


def _space_of_run(storage: Storage, summary: dict[str, Any], key: str, args: argparse.Namespace, out: TextIO) -> int:
    """Print where the bytes went at one run (its ``space.json``)."""
    import json as _json

    from lakefs_gc.report.formats import read_space
    from lakefs_gc.space import run_space_lines

    space_file = summary.get("space_file")
    if not space_file:
        why = summary.get("space_skipped") or "it ran before the attribution existed, or did not reach attribute_space"
        raise UsageError(f"run {summary.get('run_id', '?')} ({storage.full_uri(key)}) has no attribution of space: "
                         f"{why}. `lakefs-gc report {args.target.split('/_lakefs/')[0]} --space` shows the newest "
                         f"run that has one")
    doc = read_space(storage, space_file)
    out.write((_json.dumps(doc, indent=2) if args.json else "\n".join(run_space_lines(doc))) + "\n")
    return 0


def _report(args: argparse.Namespace, out: TextIO) -> int:
    import json as _json

    from lakefs_gc.report.summary import summary_rows
    from lakefs_gc.storage import ObjectNotFound

    namespace, key = _split_report_uri(args.target)
    storage = _open_namespace(namespace, args)
    if key is not None:
        try:
            summary = _json.loads(storage.get(key))
        except ObjectNotFound:
            raise UsageError(f"no report at {args.target}; list the marks with: lakefs-gc report {namespace}") from None
        except ValueError as e:
            raise UsageError(f"{args.target} is not valid JSON ({e})") from None
    elif args.run:
        key, summary = _find_run(storage, args.run)
    elif args.space:
        key, summary = _newest_with_space(storage, namespace)
    else:
        if args.json:
            from lakefs_gc.report.marks import iter_marks

            out.write(_json.dumps([{"mark_id": m, "summary": s, "problem": p} for m, s, p in iter_marks(storage)])
                      + "\n")
        else:
            _list_marks(storage, args.limit, out)
        return 0
    if args.space:
        return _space_of_run(storage, summary, key, args, out)
    if args.json:
        out.write(_json.dumps(summary, indent=2) + "\n")
    else:
        _table([[label, value] for label, value in summary_rows(summary, storage.full_uri(key))], out)
    return 0


def _restore(args: argparse.Namespace, out: TextIO) -> int:
    from lakefs_gc.sweeping.restore import PRESENT, RESTORED, WOULD_RESTORE, restore_run

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
    for key, outcome, detail in report.rows[:args.limit] if args.limit else report.rows:
        out.write(f"{key.ljust(width)}  {outcome}: {detail}\n")
    if args.limit and len(report.rows) > args.limit:
        out.write(f"({len(report.rows) - args.limit} more in {report.report_uri.rsplit('/', 1)[0]}/outcomes.parquet)\n")
    counts = ", ".join(f"{n:,} {o}" for o, n in report.counts.items()) or "no keys"
    out.write(f"{'dry run: ' if report.dry_run else ''}mark {report.mark_id}, {len(report.rows):,} key(s): {counts}\n")
    out.write(f"report: {report.report_uri}\n")
    ok = {RESTORED, WOULD_RESTORE, PRESENT}
    return 0 if all(o in ok for _, o, _ in report.rows) else 1


def _lakefs_client(args: argparse.Namespace) -> LakeFSClient:
    """Return a client of lakeFS at ``--lakefs-endpoint`` (or the environment's), with the environment's keys."""
    import os

    from lakefs_gc.lakefs.client import LakeFSClient
    from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY

    endpoint = args.lakefs_endpoint or os.environ.get("LAKEFS_GC_LAKEFS_ENDPOINT")
    access, secret = os.environ.get(ENV_LAKEFS_ACCESS_KEY), os.environ.get(ENV_LAKEFS_SECRET_KEY)
    if not endpoint or not access or not secret:
        raise UsageError(f"--repository needs lakeFS: --lakefs-endpoint URL (or LAKEFS_GC_LAKEFS_ENDPOINT) and "
                         f"the keys in {ENV_LAKEFS_ACCESS_KEY} / {ENV_LAKEFS_SECRET_KEY}")
    return LakeFSClient(endpoint.rstrip("/") + ("" if endpoint.rstrip("/").endswith("/api/v1") else "/api/v1"),
                        access, secret)


def _space(args: argparse.Namespace, out: TextIO) -> int:
    """``lakefs-gc space`` and ``lakefs-gc whatif``: read now, nothing deleted."""
    from lakefs_gc import space

    return space.run(args, out, _open_namespace(args.namespace.rstrip("/"), args), _lakefs_client(args))


def _explain(args: argparse.Namespace, out: TextIO) -> int:
    import os

    from lakefs_gc.explain import explain, resolve
    from lakefs_gc.storage import parse_namespace

    namespace = args.namespace.rstrip("/")
    storage = _open_namespace(namespace, args)
    roots = parse_namespace(namespace, args.local_root or os.environ.get("LAKEFS_GC_LOCAL_ROOT")).roots()
    client = _lakefs_client(args) if args.repository else None
    try:
        address, path, note = resolve(roots, args.target, client, args.repository, args.ref)
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


def _read_config(path: str | None, command: str) -> GCConfig | None:
    """Return the repositories file as the DAG files read it; None after printing why it cannot be read at all."""
    from lakefs_gc.config import ConfigError, load_config

    try:
        return load_config(path, strict=False)
    except ConfigError as e:
        for line in str(e).splitlines():
            print(f"lakefs-gc config {command}: error: {line}", file=sys.stderr)
        return None


def _config_check(path: str | None, out: TextIO) -> int:
    """
    ``lakefs-gc config check``: every entry good or bad, as the DAG files will build them.

    0 when all are good, 2 otherwise (the file's own errors too).
    """
    cfg = _read_config(path, "check")
    if cfg is None:
        return 2
    for r in cfg.repositories:
        print(f"ok     {r.repository}: DAG {r.dag_id}, mode {r.mode}, schedule {r.schedule or 'none (manual runs)'}, "
              f"min age {r.min_age_seconds}s", file=out)
    problems = cfg.entry_problems
    for line in problems:
        print(f"error  {line}", file=out)
    print(f"{cfg.path}: {len(cfg.repositories)} good, {len(cfg.entry_errors)} bad"
          + (f" ({len(problems)} problem{'s' if len(problems) != 1 else ''})" if problems else ""), file=out)
    return 2 if cfg.entry_errors else 0


def _config_pools(path: str | None, out: TextIO) -> int:
    """``lakefs-gc config pools``: the file's pools as ``airflow pools import`` reads them (2: the file is bad)."""
    import json

    cfg = _read_config(path, "pools")
    if cfg is None:
        return 2
    out.write(json.dumps(cfg.pools_import(), indent=1, sort_keys=True) + "\n")
    return 0


def _storage_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the namespace's store is (the keys come from the environment: the module's doc)."""
    parser.add_argument("--local-root", help="local:// namespaces: lakeFS's blockstore.local.path "
                                             "(default: $LAKEFS_GC_LOCAL_ROOT)")
    parser.add_argument("--s3-endpoint",
                        help="S3-compatible endpoint URL (default: $LAKEFS_GC_S3_ENDPOINT_URL; none: AWS)")
    parser.add_argument("--s3-region", help="S3 region (default: $LAKEFS_GC_S3_REGION, else us-east-1)")


def main(argv: list[str] | None = None) -> int:
    from lakefs_gc import __version__

    parser = argparse.ArgumentParser(prog="lakefs-gc", description="lakeFS garbage collection tools")
    parser.add_argument("--version", action="version", version=f"lakefs-gc {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sst = sub.add_parser("sst", help="inspect lakeFS SSTables (ranges, metaranges)")
    sst_sub = sst.add_subparsers(dest="sst_command", required=True)
    dump = sst_sub.add_parser("dump", help="print one JSON object per record")
    dump.add_argument("file")
    dump.add_argument("--props", action="store_true", help="print the table's properties instead of its records")
    cfg = sub.add_parser("config", help="the GC configuration file")
    cfg_sub = cfg.add_subparsers(dest="config_command", required=True)
    check = cfg_sub.add_parser("check", help="validate it as the DAG files will; one line per repository")
    check.add_argument("file", nargs="?", help="default: $LAKEFS_GC_CONFIG, else config/gc_repositories.yaml")
    pools = cfg_sub.add_parser("pools", help="print its 'pools' as `airflow pools import FILE` reads them",
                               description="Print the Airflow pools the file names (pools: {name: slots}) as JSON "
                                           "for `airflow pools import FILE`: what the set-up and `make airflow` "
                                           "create. A Spark step in a pool Airflow does not have never starts.")
    pools.add_argument("file", nargs="?", help="default: $LAKEFS_GC_CONFIG, else config/gc_repositories.yaml")
    rep = sub.add_parser("report", help="list a repository's GC marks, or print one run's report",
                         description="List a repository's recent GC marks (newest first), or print one run's "
                                     "report as a table.")
    rep.add_argument("target", metavar="NAMESPACE|SUMMARY_URI",
                     help="the repository's storage namespace (s3://bucket/repo, gs://bucket/repo, "
                          "https://<account>.blob.core.windows.net/<container>/repo, local://repo), or a "
                          "summary.json URI")
    rep.add_argument("--run", help="a mark id, or the Airflow run id of a GC run: print its report")
    rep.add_argument("--limit", type=int, default=20, help="marks to list (default 20)")
    rep.add_argument("--json", action="store_true", help="print summary.json itself (or every mark's) as JSON")
    rep.add_argument("--space", action="store_true",
                     help="where the bytes go, as the run found the namespace (its space.json: HEADs, retention, "
                          "staging, tags, stale branches); without --run, the newest run that has one")
    _storage_arguments(rep)
    res = sub.add_parser("restore", help="bring back what one GC run deleted (where the store keeps it)",
                         description="Bring back what one GC run deleted, where the store still keeps it: S3 "
                                     "versioning, Azure blob soft delete, GCS soft delete, or the local:// "
                                     "quarantine (sweep setting quarantine_days). A key written again since "
                                     "the run is never replaced.")
    res.add_argument("namespace", metavar="NAMESPACE", help="the repository's storage namespace")
    res.add_argument("--run", required=True, help="the mark id, or the Airflow run id, of the run to undo "
                                                  "(lakefs-gc report NAMESPACE lists them)")
    res.add_argument("--keys", metavar="FILE", help="restore only these keys: one per line, relative to the "
                                                    "namespace (data/...) or full URIs")
    res.add_argument("--dry-run", action="store_true", help="say what would be restored, change nothing")
    res.add_argument("--restore-id", help="the name of the restore's report folder (default: restore-<UTC time>)")
    res.add_argument("--limit", type=int, default=50, help="keys to print (default 50; 0: all)")
    _storage_arguments(res)
    exp = sub.add_parser("explain", help="what the GC decided about one address (or path), and why",
                         description="Say what the GC decided about one physical address, or the address a "
                                     "logical path reads, and why: from every mark's report and, with "
                                     "--repository, from lakeFS now.")
    exp.add_argument("namespace", metavar="NAMESPACE", help="the repository's storage namespace")
    exp.add_argument("target", metavar="ADDRESS|PATH", help="a physical address (data/<slice>/<id>, or the full "
                                                            "URI), or a logical path (with --repository)")
    exp.add_argument("--run", help="only this mark (its id, or the Airflow run id of its GC run)")
    exp.add_argument("--repository", help="the lakeFS repository: also say what references it now")
    exp.add_argument("--lakefs-endpoint", help="lakeFS's URL (default: $LAKEFS_GC_LAKEFS_ENDPOINT)")
    exp.add_argument("--ref", help="the branch, tag or commit a PATH is read on (default: the default branch)")
    _storage_arguments(exp)
    from lakefs_gc import space

    space.add_parsers(sub, _storage_arguments)
    args = parser.parse_args(argv)

    if args.command == "config" and args.config_command == "pools":
        return _config_pools(args.file, sys.stdout)
    if args.command == "config":
        return _config_check(args.file, sys.stdout)
    if args.command in ("report", "restore", "explain", "space", "whatif"):
        from lakefs_gc.errors import LakeFSGCError, Unreachable
        from lakefs_gc.storage import StorageError

        try:
            return {"report": _report, "restore": _restore, "explain": _explain, "space": _space,
                    "whatif": _space}[args.command](args, sys.stdout)
        except (UsageError, ValueError, StorageError, Unreachable, LakeFSGCError) as exc:
            print(f"lakefs-gc {args.command}: error: {exc}", file=sys.stderr)
            return 2
        except BrokenPipeError:  # e.g. piped into head
            return 0
        except Exception as exc:  # botocore's: unreachable endpoint, no or wrong keys, no such bucket
            if not type(exc).__module__.startswith("botocore"):
                raise
            print(f"lakefs-gc {args.command}: error: cannot read {getattr(args, 'target', None) or args.namespace}: "
                  f"{exc} (check --s3-endpoint or "
                  f"LAKEFS_GC_S3_ENDPOINT_URL, and the keys in LAKEFS_GC_S3_ACCESS_KEY_ID / "
                  f"LAKEFS_GC_S3_SECRET_ACCESS_KEY)", file=sys.stderr)
            return 2
    if args.command == "sst" and args.sst_command == "dump":
        try:
            _dump(args.file, args.props, sys.stdout)
        except (SSTableError, OSError) as exc:
            print(f"lakefs-gc: error: {exc}", file=sys.stderr)
            return 2
        except BrokenPipeError:  # e.g. piped into head
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
