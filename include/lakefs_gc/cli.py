"""``lakefs-gc``: command-line tools for people.

    lakefs-gc sst dump FILE [--props]

prints one JSON object per record of a lakeFS range, a metarange or a plain RocksDB table
(or, with ``--props``, its properties). Bad input: one line on stderr and exit status 2.

    lakefs-gc airflow [--env-file config/airflow.env] [--state-dir var/airflow] [--port N]

starts an Airflow 3 of its own with the GC DAGs, on 127.0.0.1, until Ctrl-C
(``lakefs_gc_airflow.local_airflow``, imported only by this command: the rest of ``lakefs_gc``
knows nothing of Airflow).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone

from lakefs_gc.lakefs import graveler
from lakefs_gc.lakefs.sstable import SSTableError, SSTableReader


def _text(b: bytes) -> str:
    """Bytes as text when they are UTF-8; otherwise a ``hex:`` string (never loses information)."""
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return "hex:" + b.hex()


def _rfc3339(seconds: int, nanos: int) -> str:
    base = datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{nanos:09d}Z"


def _dump(path: str, props: bool, out) -> None:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lakefs-gc", description="lakeFS garbage collection tools")
    sub = parser.add_subparsers(dest="command", required=True)
    sst = sub.add_parser("sst", help="inspect lakeFS SSTables (ranges, metaranges)")
    sst_sub = sst.add_subparsers(dest="sst_command", required=True)
    dump = sst_sub.add_parser("dump", help="print one JSON object per record")
    dump.add_argument("file")
    dump.add_argument("--props", action="store_true", help="print the table's properties instead of its records")
    af = sub.add_parser("airflow", help="start Airflow 3 with the GC DAGs on 127.0.0.1 until Ctrl-C")
    af.add_argument("--env-file", default=None,
                    help="settings file (default: config/airflow.env, a copy of config/airflow.env.example "
                         "filled in); '' for the environment only")
    af.add_argument("--state-dir", default=None,
                    help="Airflow's home: database, logs, generated secrets (default: var/airflow)")
    af.add_argument("--port", type=int, default=None,
                    help="the UI's port on 127.0.0.1 (default: AIRFLOW_PORT, else 8080)")
    args = parser.parse_args(argv)

    if args.command == "airflow":
        from lakefs_gc_airflow.local_airflow import main

        return main(args.env_file, args.state_dir, args.port)

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
