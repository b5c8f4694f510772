#!/usr/bin/env python3
"""Stand-in for the `minio` and `mc` commands of docker-compose.yaml (docker/standins/README.md).

minio server DIR [--address :9000] [--console-address ADDR]   S3 on port 9000 (moto's server)
mc ready ALIAS                  exit 0 when the server answers (the compose health check)
mc alias set ALIAS URL USER PASSWORD
mc mb [--ignore-existing] ALIAS/BUCKET
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path

ALIASES = Path(os.environ.get("MC_CONFIG_DIR", Path.home() / ".mc")) / "aliases.json"


def _aliases() -> dict:
    try:
        return json.loads(ALIASES.read_text())
    except FileNotFoundError:
        return {
            "local": {
                "url": "http://127.0.0.1:9000",
                "user": os.environ.get("MINIO_ROOT_USER", ""),
                "password": os.environ.get("MINIO_ROOT_PASSWORD", ""),
            }
        }


class _Untracked(list):
    """A model's ``instances_tracked`` that keeps nothing."""

    def append(self, _instance: object) -> None:
        pass


def untrack_s3_models() -> None:
    """
    Stop moto keeping every S3 model instance it ever made (the list its reset API disposes of).

    ListObjectVersions deep-copies every version of the bucket on each page; tracked, the copies were
    never freed: 20 listings of 4,000 versions took the server from 92 MB to 942 MB, and a chaos
    run's restores (a version listing per key) 20 GB. The stand-in never resets.
    """
    import moto.s3.models  # noqa: F401 - defines the S3 models, which registers them
    from moto.core.base_backend import model_data

    for model in model_data["s3"].values():
        model.instances_tracked = _Untracked()


def server(args: list[str]) -> int:
    port = "9000"
    if "--address" in args:
        port = args[args.index("--address") + 1].rsplit(":", 1)[-1]
    from moto.server import main as moto_main

    untrack_s3_models()

    print(f"minio stand-in: S3 (moto) on 0.0.0.0:{port}; objects are kept in memory", flush=True)
    moto_main(["-H", "0.0.0.0", "-p", port])
    return 0


def ready(alias: str) -> int:
    url = _aliases().get(alias, {}).get("url", "http://127.0.0.1:9000")
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/", timeout=5) as r:
            return 0 if r.status < 500 else 1
    except Exception as e:
        print(f"not ready: {e}", file=sys.stderr)
        return 1


def alias_set(name: str, url: str, user: str, password: str) -> int:
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/", timeout=5):
            pass
    except Exception as e:
        print(f"mc: {url} does not answer: {e}", file=sys.stderr)
        return 1
    al = _aliases()
    al[name] = {"url": url, "user": user, "password": password}
    ALIASES.parent.mkdir(parents=True, exist_ok=True)
    ALIASES.write_text(json.dumps(al))
    print(f"Added `{name}` successfully.")
    return 0


def make_bucket(target: str, ignore_existing: bool) -> int:
    import boto3

    name, _, bucket = target.partition("/")
    a = _aliases()[name]
    s3 = boto3.client(
        "s3",
        endpoint_url=a["url"],
        aws_access_key_id=a["user"] or "x",
        aws_secret_access_key=a["password"] or "x",
        region_name="us-east-1",
    )
    try:
        s3.create_bucket(Bucket=bucket)
    except s3.exceptions.BucketAlreadyOwnedByYou:
        if not ignore_existing:
            print(f"mc: bucket {bucket} exists", file=sys.stderr)
            return 1
    print(f"Bucket created successfully `{target}`.")
    return 0


def main(argv: list[str]) -> int:
    prog, args = Path(argv[0]).name, argv[1:]
    if prog == "minio" and args[:1] == ["server"]:
        return server(args[1:])
    if prog == "mc" and args[:1] == ["ready"] and len(args) == 2:
        return ready(args[1])
    if prog == "mc" and args[:2] == ["alias", "set"] and len(args) == 6:
        return alias_set(*args[2:])
    if prog == "mc" and args[:1] == ["mb"]:
        rest = [a for a in args[1:] if a != "--ignore-existing"]
        if len(rest) == 1:
            return make_bucket(rest[0], "--ignore-existing" in args)
    print(
        f"{prog} stand-in: unsupported command {' '.join(args)!r} (docker/standins/README.md lists what it does)",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
