"""
``lakefs-gc``: command-line tools for people.

    lakefs-gc sst dump FILE [--props]

prints one JSON object per record of a lakeFS range, a metarange or a plain RocksDB table
(or, with ``--props``, its properties).

    lakefs-gc report NAMESPACE|SUMMARY_URI [--run ID] [--limit N] [--json]
                     [--local-root DIR] [--s3-endpoint URL] [--s3-region REGION]

lists a repository's recent GC marks (id, start, flow, success, counts, and their sweep-only runs)
so a ``sweep_only`` run can be given a mark id, or prints one run's report as a table (``--run``: a
mark id or an Airflow run id; a ``.../summary.json`` URI names the run itself). ``local://`` needs
lakeFS's ``blockstore.local.path``.

    lakefs-gc restore NAMESPACE --run RUN_ID [--keys FILE] [--dry-run] [--restore-id ID]
                      [--local-root DIR] [--s3-endpoint URL] [--s3-region REGION]

brings back what one GC run deleted, where the store still keeps it (S3 versioning, Azure blob
soft delete, GCS soft delete, ``local://`` quarantine: ``lakefs_gc.sweeping.restore``), never over a
key written since; ``--keys``: only these keys (one per line, relative to the namespace or full
URIs). Prints one line per outcome and writes the restore's report under the mark
(``restores/<id>/``; a dry run writes nothing); a key an earlier restore brought back is "already
restored by <its id>". Exit status 0 when every key asked for was restored (or would be, dry run),
already restored or present, 1 when some could not be, 2 on bad input.

    lakefs-gc explain NAMESPACE ADDRESS|PATH [--run RUN_ID] [--repository REPO --lakefs-endpoint URL]
                      [--ref REF] [--max-commits N] [--local-root DIR] [--s3-endpoint URL]
                      [--s3-region REGION]

says what the GC decided about one physical address (or the one a logical path reads on ``--ref``,
default the repository's default branch; for a path the ref no longer reads, the one it had in the
newest commit of the ref that had it, at most ``--max-commits`` searched, or that none had it) and
why: from every mark's report (candidate, held back, deleted by which sweep, restorable,
restored; kept as committed or staged) and, with ``--repository``, from lakeFS now (branch HEADs,
the commits the rules keep, tags, staged entries).

    lakefs-gc inventory check REPO [--config FILE] [--location URI] [--destination URI] [--format csv|parquet]

says whether the repository has a usable storage inventory (the newest complete one: its id, T_inv,
age, files; or why each newer one was passed over) and, if not, prints the inventory configuration
to create for its store and the ``listing:`` block of the repositories file
(``lakefs_gc.cli_inventory``). Exit status 0 when usable, 1 when not, 2 on bad input.

    lakefs-gc reclaim-namespace NAMESPACE [--config FILE] [--confirm NAMESPACE] [--grace-days N]
                                [--quarantine-days N] [--dry-run]

deletes the storage namespace a deleted repository left, once the discovery refresh has recorded it
orphaned for the grace period (default 30 days), ``--confirm`` repeats it, and a fresh listing of
every configured lakeFS finds no repository on it, above it or under it; ``local://`` through a
quarantine (``lakefs_gc.cli_reclaim``). Exit status 0 when deleted, 1 when refused, 2 on bad input.

    lakefs-gc doctor REPO [--policy] [--no-prepare] [--spark-master URL] [--config FILE]

checks everything a GC run of the repository needs, deleting nothing: one line per check, PASS, FAIL
or WARN, with its fix (``lakefs_gc.cli_doctor``); ``--policy`` prints the least the run needs (the
IAM policy, Azure role or GCS role of its namespace, and the lakeFS policy). Exit status 0 when all
passed (warnings allowed), 1 when some failed, 2 on bad input.

Where these commands find lakeFS and the store (``lakefs_gc.credentials``), setting by setting:
flags (``--lakefs-endpoint``, ``--local-root``, ``--s3-endpoint``, ``--s3-region``), then, where
Airflow is installed, its connections (``--conn-id`` for lakeFS, ``--storage-conn-id`` for the store;
default the GC config's, else ``lakefs_default`` and ``aws_default``), then environment variables
(``LAKEFS_GC_LAKEFS_*``, ``LAKEFS_GC_S3_*``, ``LAKEFS_GC_AZURE_*``, ``LAKEFS_GC_GCS_*``,
``LAKEFS_GC_LOCAL_ROOT``, else ``make airflow``'s ``LAKEFS_ENDPOINT``, ``LAKEFS_ACCESS_KEY_ID``,
``LAKEFS_SECRET_ACCESS_KEY``, ``LAKEFS_LOCAL_BLOCKSTORE_ROOT``, ``S3_*``). ``-v`` says on stderr
where each came from, as an error does after a refused key; a secret is never printed.

Bad input: one line on stderr saying what to fix, and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TextIO

from lakefs_gc.cli_namespace import namespace_command
from lakefs_gc.lakefs import graveler
from lakefs_gc.lakefs.sstable import SSTableError, SSTableReader

if TYPE_CHECKING:
    from lakefs_gc.config import GCConfig


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
                out.write(
                    json.dumps(
                        {
                            "key": _text(rec.key),
                            "address": e.address,
                            "address_type": graveler.ADDRESS_TYPE_NAMES.get(e.address_type, str(e.address_type)),
                            "size": e.size,
                            "etag": e.etag,
                            "last_modified": _rfc3339(e.last_modified_seconds, e.last_modified_nanos),
                            "identity": rec.identity.hex(),
                        }
                    )
                    + "\n"
                )
        elif kind == graveler.METARANGES_TYPE:
            for key, rng in graveler.iter_metarange(reader):
                out.write(
                    json.dumps(
                        {
                            "key": _text(key),
                            "range_id": rng.id,
                            "min_key": _text(rng.min_key),
                            "max_key": _text(rng.max_key),
                            "count": rng.count,
                            "estimated_size": rng.estimated_size,
                        }
                    )
                    + "\n"
                )
        else:
            for key, value in reader:
                out.write(json.dumps({"key": _text(key), "value": _text(value)}) + "\n")


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
    ``lakefs-gc config check``: every good entry as the DAG files will build it, then every problem.

    A good entry: ``ok     <repository>: DAG ...``; a problem, the way linters print them, in the
    file's order: ``FILE:LINE: error: <block>: <what is wrong>`` (every bad field of every entry, of
    ``defaults`` and of the other blocks; a duplicate repository, even of a bad entry); then a count.
    0 when all is good, 2 otherwise.
    """
    from lakefs_gc.config import ConfigError, check_config
    from lakefs_gc.words import plural, verb

    try:
        checked = check_config(path)
    except ConfigError as e:  # not readable, not YAML
        for line in str(e).splitlines():
            print(f"lakefs-gc config check: error: {line}", file=sys.stderr)
        return 2
    cfg = checked.config
    for r in cfg.repositories:
        print(
            f"ok     {r.repository}: DAG {r.dag_id}, mode {r.mode}, schedule {r.schedule or 'none (manual runs)'}, "
            f"min age {r.min_age_seconds}s",
            file=out,
        )
    problems = checked.problems
    for problem in problems:
        where = f"{problem.path}:{problem.line}" if problem.line is not None else str(problem.path)
        print(f"{where}: error: {problem.message}", file=out)
    whole = len(checked.file_problems)
    print(
        f"{cfg.path}: {len(cfg.repositories)} good, {len(cfg.entry_errors)} bad"
        + (f" ({plural(len(problems), 'problem')})" if problems else "")
        + (
            f"; {plural(whole, 'problem')} of the file as a whole: no GC DAG is built until "
            f"{verb(whole, 'it is', 'they are')} fixed"
            if whole
            else ""
        ),
        file=out,
    )
    return 2 if problems else 0


def _config_pools(path: str | None, out: TextIO) -> int:
    """``lakefs-gc config pools``: the file's pools as ``airflow pools import`` reads them (2: the file is bad)."""
    import json

    cfg = _read_config(path, "pools")
    if cfg is None:
        return 2
    pools = cfg.pools_import()
    if not pools:  # still valid input for `airflow pools import`; said where a person reads it
        print(f"{cfg.path} names no pools (pools: {{name: slots}}): nothing to create", file=sys.stderr)
    out.write(json.dumps(pools, indent=1, sort_keys=True) + "\n")
    return 0


def _storage_arguments(parser: argparse.ArgumentParser) -> None:
    """Where lakeFS and the namespace's store are: flags, then Airflow's connections, then the environment."""
    parser.add_argument(
        "--local-root",
        help="local:// namespaces: lakeFS's blockstore.local.path (default: the lakeFS connection's "
        "local_blockstore_root, else $LAKEFS_GC_LOCAL_ROOT, else $LAKEFS_LOCAL_BLOCKSTORE_ROOT)",
    )
    parser.add_argument(
        "--s3-endpoint",
        help="S3-compatible endpoint URL (default: the storage connection's, else $LAKEFS_GC_S3_ENDPOINT_URL "
        "or $S3_ENDPOINT_URL; none: AWS)",
    )
    parser.add_argument(
        "--s3-region",
        help="S3 region (default: the storage connection's, else $LAKEFS_GC_S3_REGION or $S3_REGION, else us-east-1)",
    )
    parser.add_argument(
        "--conn-id",
        metavar="ID",
        help="the Airflow connection of lakeFS, where Airflow is installed (default: the GC config's "
        "lakefs_conn_id, else lakefs_default; one Airflow does not know: the environment's settings)",
    )
    parser.add_argument(
        "--storage-conn-id",
        metavar="ID",
        help="the Airflow connection of the namespace's store (default: the GC config's storage_conn_id, else "
        "aws_default, wasb_default or google_cloud_default by the namespace's kind)",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="say on stderr where lakeFS's and the store's settings came from"
    )


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
    pools = cfg_sub.add_parser(
        "pools",
        help="print its 'pools' as `airflow pools import FILE` reads them",
        description="Print the Airflow pools the file names (pools: {name: slots}) as JSON "
        "for `airflow pools import FILE`: what the set-up and `make airflow` "
        "create. A Spark step in a pool Airflow does not have never starts.",
    )
    pools.add_argument("file", nargs="?", help="default: $LAKEFS_GC_CONFIG, else config/gc_repositories.yaml")
    rep = sub.add_parser(
        "report",
        help="list a repository's GC marks, or print one run's report",
        description="List a repository's recent GC marks (newest first), or print one run's report as a table.",
    )
    rep.add_argument(
        "target",
        metavar="NAMESPACE|SUMMARY_URI",
        help="the repository's storage namespace (s3://bucket/repo, gs://bucket/repo, "
        "https://<account>.blob.core.windows.net/<container>/repo, local://repo), or a "
        "summary.json URI",
    )
    rep.add_argument("--run", help="a mark id, or the Airflow run id of a GC run: print its report")
    rep.add_argument("--limit", type=int, default=20, help="marks to list (default 20)")
    rep.add_argument("--json", action="store_true", help="print summary.json itself (or every mark's) as JSON")
    rep.add_argument(
        "--space",
        action="store_true",
        help="where the bytes go, as the run found the namespace (its space.json: HEADs, retention, "
        "staging, tags, stale branches); without --run, the newest run that has one",
    )
    _storage_arguments(rep)
    res = sub.add_parser(
        "restore",
        help="bring back what one GC run deleted (where the store keeps it)",
        description="Bring back what one GC run deleted, where the store still keeps it: S3 "
        "versioning, Azure blob soft delete, GCS soft delete, or the local:// "
        "quarantine (sweep setting quarantine_days). A key written again since "
        "the run is never replaced.",
    )
    res.add_argument("namespace", metavar="NAMESPACE", help="the repository's storage namespace")
    res.add_argument(
        "--run",
        required=True,
        help="the mark id, or the Airflow run id, of the run to undo (lakefs-gc report NAMESPACE lists them)",
    )
    res.add_argument(
        "--keys",
        metavar="FILE",
        help="restore only these keys: one per line, relative to the namespace (data/...) or full URIs",
    )
    res.add_argument("--dry-run", action="store_true", help="say what would be restored, change nothing")
    res.add_argument("--restore-id", help="the name of the restore's report folder (default: restore-<UTC time>)")
    res.add_argument("--limit", type=int, default=50, help="keys to print (default 50; 0: all)")
    _storage_arguments(res)
    exp = sub.add_parser(
        "explain",
        help="what the GC decided about one address (or path), and why",
        description="Say what the GC decided about one physical address, or the address a "
        "logical path reads, and why: from every mark's report and, with "
        "--repository, from lakeFS now.",
    )
    exp.add_argument("namespace", metavar="NAMESPACE", help="the repository's storage namespace")
    exp.add_argument(
        "target",
        metavar="ADDRESS|PATH",
        help="a physical address (data/<slice>/<id>, or the full URI), or a logical path (with --repository)",
    )
    exp.add_argument("--run", help="only this mark (its id, or the Airflow run id of its GC run)")
    exp.add_argument("--repository", help="the lakeFS repository: also say what references it now")
    exp.add_argument(
        "--lakefs-endpoint",
        help="lakeFS's URL (default: the lakeFS connection's, else $LAKEFS_GC_LAKEFS_ENDPOINT or $LAKEFS_ENDPOINT)",
    )
    exp.add_argument("--ref", help="the branch, tag or commit a PATH is read on (default: the default branch)")
    from lakefs_gc.path_history import DEFAULT_MAX_COMMITS

    exp.add_argument(
        "--max-commits",
        type=int,
        default=DEFAULT_MAX_COMMITS,
        help="a PATH the ref no longer reads: the commits of its history searched for it, newest first "
        f"(default {DEFAULT_MAX_COMMITS})",
    )
    _storage_arguments(exp)
    from lakefs_gc import cli_doctor, cli_inventory, space

    space.add_parsers(sub, _storage_arguments)
    cli_inventory.add_parser(sub, _storage_arguments)
    cli_doctor.add_parser(sub, _storage_arguments)
    from lakefs_gc import cli_reclaim

    cli_reclaim.add_parser(sub, _storage_arguments)
    args = parser.parse_args(argv)
    try:
        rc = _run(args)
        sys.stdout.flush()  # a reader gone early shows here, not as a traceback when Python exits
    except BrokenPipeError:  # the reader stopped reading (| head): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return rc


def _run(args: argparse.Namespace) -> int:
    """Run the command ``args`` names; return its exit status."""
    if args.command == "config" and args.config_command == "pools":
        return _config_pools(args.file, sys.stdout)
    if args.command == "config":
        return _config_check(args.file, sys.stdout)
    if args.command in ("report", "restore", "explain", "space", "whatif"):
        return namespace_command(args)
    if args.command == "inventory":
        from lakefs_gc.cli_inventory import run

        return run(args)
    if args.command == "doctor":
        from lakefs_gc.cli_doctor import run as doctor

        return doctor(args)
    if args.command == "reclaim-namespace":
        from lakefs_gc import cli_reclaim

        return cli_reclaim.run(args)
    if args.command == "sst" and args.sst_command == "dump":
        try:
            _dump(args.file, args.props, sys.stdout)
        except BrokenPipeError:
            raise  # main stops quietly
        except (SSTableError, OSError) as exc:
            print(f"lakefs-gc: error: {exc}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
