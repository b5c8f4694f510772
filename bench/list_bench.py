"""Listing a slice, the old way and the GC's way, on every store, side by side in one run.

    .venv/bin/python -m bench list [--keys N] [--s3 seaweedfs|moto] [--stores s3,azure,gcs,local]

Each store gets ``--keys`` objects in one slice (``data/<slice>/``), then the slice is listed twice
each way, and the second listing of each is printed:

* ``sdk``: the store's SDK client as the GC used it before (``Storage.list``: boto3's
  ``list_objects_v2`` paginator, azure-storage-blob's ``list_blobs``, google-cloud-storage's
  ``list_blobs``, ``os.scandir`` for local), one Python object per key;
* ``gc``: the GC's listing path (``Storage.list_batches``: obstore into Arrow record batches on S3,
  Azure and GCS, lakefs_gc.storage.native; local has no native client and stays on ``os.scandir``).

One line each: ``<store> <path>: <keys/s> keys/s, <x> us/key`` (the client's CPU per key: this
process's user + system time, every thread), with the store server's CPU meanwhile beside it.
Target (issue 41): on S3 the GC's path at most 20 us/key.

Then the staged check's stats (``--stats`` keys of the slice, one after another as the check's
threads each do): ``stat sdk`` (``Storage.stat``: boto3's ``head_object``, the blob client's
properties, GCS's ``get_blob``) beside ``stat native`` (``obstore.head`` on the same store), so
which client serves the HEADs is a measured choice.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SLICE = "data/gbench0000000000000000/"
TARGET_US = 20.0


def _seed(store, keys: list[str], concurrency: int = 64) -> None:
    """Every key written through obstore's async puts (the bench's set-up, not measured)."""
    import obstore

    async def go():
        sem = asyncio.Semaphore(concurrency)

        async def one(k):
            async with sem:
                await obstore.put_async(store, k, b"x")

        await asyncio.gather(*(one(k) for k in keys))

    asyncio.run(go())


def _write(kind: str, st, keys: list[str]) -> None:
    """Every key written (the set-up, not measured): through obstore's async puts, on
    fake-gcs-server through the SDK in threads (it refuses object_store's uploads)."""
    if kind != "gcs":
        _seed(st.native_store(), keys)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(32) as pool:
        for _ in pool.map(lambda k: st.put(k, b"x"), keys):
            pass


def _measure(fn, server_pid: int | None) -> tuple[int, float, float, float]:
    """(keys, wall seconds, client CPU seconds, server CPU seconds) of ``fn()`` (which returns the
    number of keys it listed)."""
    from bench.reference import cpu_seconds

    s0 = cpu_seconds(server_pid) if server_pid else 0.0
    c0, t0 = time.process_time(), time.perf_counter()
    n = fn()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return n, wall, cpu, (cpu_seconds(server_pid) - s0) if server_pid else 0.0


def _paths(st):
    return {"sdk": lambda: sum(1 for _ in st.list(SLICE)), "gc": lambda: sum(len(b) for b in st.list_batches(SLICE))}


def _stat_paths(st, keys: list[str]):
    """The staged check's HEADs, one after another: the SDK's (``Storage.stat``) and obstore's."""
    import obstore

    def sdk():
        return sum(1 for k in keys if st.stat(k) is not None)

    def native():
        store = st.native_store()
        return sum(1 for k in keys if obstore.head(store, k)["size"] is not None)

    return {"stat sdk": sdk, "stat native": native}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench list", description=__doc__.split("\n\n")[0])
    p.add_argument("--keys", type=int, default=200_000, help="objects in the slice, on each store")
    p.add_argument(
        "--s3",
        choices=("seaweedfs", "moto"),
        default="seaweedfs",
        help="the S3 server: SeaweedFS (default; scripts/seaweedfs.sh builds it on first use) or moto",
    )
    p.add_argument("--stores", default="s3,azure,gcs,local", help="comma-separated: s3, azure, gcs, local")
    p.add_argument("--stats", type=int, default=1_000, help="keys HEADed each way on the cloud stores (0: none)")
    a = p.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("AWS_REQUEST_CHECKSUM_CALCULATION", "when_required")
    os.environ.setdefault("AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required")
    from lakefs_gc.storage import LocalStorage, S3Options, make_s3_client, open_storage
    from lakefs_sandbox.cloud_servers import start_azurite, start_fake_gcs, start_seaweedfs
    from lakefs_sandbox.emulator.launcher import free_port, start_server, stop_group

    stores = a.stores.split(",")
    keys = [f"{SLICE}{i:09d}" for i in range(a.keys)]
    work = Path(tempfile.mkdtemp(prefix="lakefs-gc-list-bench-"))
    procs, lines, slow = [], [], []
    try:
        for kind in stores:
            pid = None
            if kind == "s3":
                if a.s3 == "moto":
                    port = free_port()
                    proc = start_server(
                        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                        work / "moto.log",
                        f"http://127.0.0.1:{port}/moto-api/",
                    )
                    opts = S3Options(
                        endpoint_url=f"http://127.0.0.1:{port}", access_key_id="bench", secret_access_key="bench"
                    )
                else:
                    srv = start_seaweedfs(work)
                    proc = srv.proc
                    opts = S3Options(
                        endpoint_url=srv.endpoint_url, access_key_id=srv.access_key, secret_access_key=srv.secret_key
                    )
                procs.append(proc)
                pid, label = proc.pid, f"s3 ({a.s3})"
                make_s3_client(opts).create_bucket(Bucket="bench")
                st = open_storage("s3://bench/repo", opts)
            elif kind in ("azure", "gcs"):
                srv = (start_azurite if kind == "azure" else start_fake_gcs)(work / kind)
                procs.append(srv.proc)
                pid, label = srv.proc.pid, {"azure": "azure (Azurite)", "gcs": "gcs (fake-gcs-server)"}[kind]
                srv.create("bench")
                st = open_storage(srv.namespace("bench", "repo"), srv.options())
            elif kind == "local":
                label = "local"
                st = LocalStorage(work / "local")
                t0 = time.perf_counter()
                for k in keys:
                    path = work / "local" / k
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(b"x")
                print(f"{label}: {len(keys):,} files written in {time.perf_counter() - t0:.1f} s", flush=True)
            else:
                raise SystemExit(f"unknown store {kind!r}: s3, azure, gcs or local")
            if kind != "local":
                t0 = time.perf_counter()
                _write(kind, st, keys)
                print(f"{label}: {len(keys):,} objects written in {time.perf_counter() - t0:.1f} s", flush=True)
            paths = _paths(st)
            stat_keys = keys[:: max(1, len(keys) // a.stats)][: a.stats] if a.stats and kind != "local" else []
            if stat_keys:
                paths.update(_stat_paths(st, stat_keys))
            for path, fn in paths.items():
                fn()  # warm: the server's caches, the client's imports
                n, wall, cpu, server = _measure(fn, pid)
                want = len(stat_keys) if path.startswith("stat") else len(keys)
                if n != want:
                    raise SystemExit(f"{label} {path}: {n:,} keys found, {want:,} written")
                us = cpu / n * 1e6
                line = f"{label} {path}: {n / wall:,.0f} keys/s, {us:.1f} us/key" + (
                    f"   (server CPU {server:.1f} s, {wall:.1f} s wall)" if pid else f"   ({wall:.1f} s wall)"
                )
                print(line, flush=True)
                lines.append(line)
                if kind == "s3" and path == "gc" and us > TARGET_US:
                    slow.append(f"{label} gc: {us:.1f} us/key above the {TARGET_US:.0f} us/key target")
            if kind != "local":
                stop_group(procs.pop())
        print("\n" + "\n".join(lines))
        for s in slow:
            print(s)
        return 1 if slow else 0
    finally:
        for proc in procs:
            stop_group(proc)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
