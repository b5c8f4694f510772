"""``python -m lakefs_sandbox.emulator``: run the lakeFS API emulator with uvicorn."""

from __future__ import annotations

import argparse
import os
import sys

from lakefs_gc.storage import AzureOptions, GCSOptions, S3Options

from .core import Settings


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, Settings]:
    env = os.environ.get
    clock_offset = env("LAKEFS_EMULATOR_CLOCK_OFFSET")
    p = argparse.ArgumentParser(prog="python -m lakefs_sandbox.emulator", description=__doc__)
    p.add_argument("--listen", default="127.0.0.1:8000", help="host:port (default 127.0.0.1:8000)")
    p.add_argument(
        "--state",
        default=env("LAKEFS_EMULATOR_STATE"),
        help="directory for persistent state (SQLite); in memory when omitted",
    )
    p.add_argument("--access-key", default=env("LAKEFS_EMULATOR_ACCESS_KEY", "AKIAIOSFOLEMULATOR"))
    p.add_argument("--secret-key", default=env("LAKEFS_EMULATOR_SECRET_KEY", "emulator-secret"))
    p.add_argument(
        "--blockstore-type",
        choices=["local", "s3", "azure", "gs"],
        default=None,
        help="blockstore type reported by /config and required of namespaces "
        "(default: s3 when --s3-endpoint is given, azure with --azure-account-url, gs with "
        "--gcs-endpoint, else local)",
    )
    p.add_argument(
        "--local-path",
        default=env("LAKEFS_EMULATOR_LOCAL_PATH", "~/lakefs/data/block"),
        help="blockstore.local.path: local://<ns> is kept at <local-path>/<ns> (lakeFS's default ~/lakefs/data/block)",
    )
    p.add_argument("--s3-endpoint", default=env("LAKEFS_EMULATOR_S3_ENDPOINT"), help="S3 endpoint URL (e.g. moto)")
    p.add_argument("--s3-access-key", default=env("LAKEFS_EMULATOR_S3_ACCESS_KEY") or env("AWS_ACCESS_KEY_ID"))
    p.add_argument("--s3-secret-key", default=env("LAKEFS_EMULATOR_S3_SECRET_KEY") or env("AWS_SECRET_ACCESS_KEY"))
    p.add_argument("--s3-region", default=env("LAKEFS_EMULATOR_S3_REGION", "us-east-1"))
    p.add_argument(
        "--azure-account-url",
        default=env("LAKEFS_EMULATOR_AZURE_ACCOUNT_URL"),
        help="Azure Blob account URL (e.g. Azurite's http://127.0.0.1:10000/devstoreaccount1); namespaces "
        "read https://<account>.azurite.test/<container>/<path> as with lakeFS's test endpoint",
    )
    p.add_argument(
        "--azure-account-key",
        default=env("LAKEFS_EMULATOR_AZURE_ACCOUNT_KEY"),
        help="its account key (or the environment variable LAKEFS_EMULATOR_AZURE_ACCOUNT_KEY)",
    )
    p.add_argument(
        "--gcs-endpoint",
        default=env("LAKEFS_EMULATOR_GCS_ENDPOINT"),
        help="GCS JSON API endpoint of an emulator (anonymous, e.g. fake-gcs-server)",
    )
    p.add_argument("--grace-period", type=int, default=86400, help="link-address validity, seconds")
    p.add_argument("--slice-size", type=int, default=50_000, help="data slice roll-over by object count")
    p.add_argument("--slice-interval", type=int, default=3600, help="data slice roll-over by age, seconds")
    p.add_argument("--min-range-size", type=int, default=0, help="bytes (committed.permanent.min_range_size_bytes)")
    p.add_argument("--max-range-size", type=int, default=20 << 20, help="bytes (max_range_size_bytes)")
    p.add_argument("--range-raggedness", type=int, default=50_000, help="range_raggedness_entries")
    p.add_argument(
        "--uncommitted-page-size",
        type=int,
        default=100_000,
        help="rows per prepare_uncommited call (one parquet file per call)",
    )
    p.add_argument(
        "--prepare-commits-delay",
        type=float,
        default=0.0,
        help="seconds an async prepare_commits task reports completed=false",
    )
    p.add_argument(
        "--clock-offset",
        type=float,
        default=float(clock_offset) if clock_offset else None,
        help="seconds added to the real clock (persisted with --state)",
    )
    p.add_argument("--log-level", default="warning")
    a = p.parse_args(argv)
    azure = gcs = None
    if a.azure_account_url:
        account = a.azure_account_url.rstrip("/").rpartition("/")[2]  # Azurite: http://host:port/<account>
        if "." in account or ":" in account:  # https://<account>.blob.core.windows.net
            account = a.azure_account_url.split("//", 1)[1].split(".", 1)[0]
        azure = AzureOptions(
            account_url=a.azure_account_url.rstrip("/"), account_name=account, account_key=a.azure_account_key
        )
    if a.gcs_endpoint:
        gcs = GCSOptions(endpoint_url=a.gcs_endpoint, project="emulator", anonymous=True)
    default_type = "s3" if a.s3_endpoint else "azure" if azure else "gs" if gcs else "local"
    s = Settings(
        access_key=a.access_key,
        secret_key=a.secret_key,
        state_dir=a.state,
        blockstore_type=a.blockstore_type or default_type,
        azure=azure,
        gcs=gcs,
        local_path=os.path.abspath(os.path.expanduser(a.local_path)),
        s3=S3Options(
            endpoint_url=a.s3_endpoint,
            access_key_id=a.s3_access_key,
            secret_access_key=a.s3_secret_key,
            region=a.s3_region,
        ),
        grace_period=a.grace_period,
        slice_size=a.slice_size,
        slice_interval=a.slice_interval,
        min_range_size=a.min_range_size,
        max_range_size=a.max_range_size,
        range_raggedness=a.range_raggedness,
        uncommitted_page_size=a.uncommitted_page_size,
        prepare_commits_delay=a.prepare_commits_delay,
        clock_offset=a.clock_offset,
    )
    return a, s


def main(argv: list[str] | None = None) -> int:
    import uvicorn

    from .app import create_app

    args, settings = parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    app = create_app(settings)
    print(
        f"lakeFS emulator listening on http://{host}:{port}/api/v1 "
        f"(blockstore {settings.blockstore_type}, state {settings.state_dir or 'in memory'})",
        flush=True,
    )
    uvicorn.run(app, host=host or "127.0.0.1", port=int(port), log_level=args.log_level, access_log=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
