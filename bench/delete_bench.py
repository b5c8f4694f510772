"""Deletion throughput of the sweep's deleter, beside floors measured in the same run.

    .venv/bin/python -m bench delete [--keys N] [--rate R] [--backends s3,local,azure,gcs]
    .venv/bin/python -m bench delete --slowdown [...]   # through a SlowDown storm (bench/delete_slowdown.py)

* moto server on 127.0.0.1 (S3 DeleteObjects): floor = sequential 1,000-key DeleteObjects with a
  plain boto3 client; ours = :class:`lakefs_gc.sweeping.deleter.Deleter` (same concurrency: one sequential
  deleter, batches of 1,000, no rate limit). Then ours with a rate limit below what the endpoint
  can do, to check the achieved rate against the configured one.
* Azurite (Azure Blob Batch): floor = the SDK's own loop, ``ContainerClient.delete_blobs`` over
  batches of 256 names; ours = the deleter (Blob Batch of 256, per-key outcomes read), rate-limited.
* fake-gcs-server (GCS): floor = the library's own bulk delete, ``Bucket.delete_blobs`` (one call
  per object, in sequence); ours = the deleter (parallel single calls, 100 keys per batch).
  The library's JSON batch is not the floor: it cannot read fake-gcs-server's batch answer.
* a local namespace: floor = an ``os.unlink`` loop; ours = the deleter (unlink per key, empty
  directories pruned as an object store has none), then rate-limited.
Beside them, on S3, Azurite and fake-gcs: ``native``, the same keys deleted by obstore's bulk
delete (``obstore.delete`` with every path: S3 DeleteObjects, Azure Blob Batch, GCS single deletes,
all in Rust), the native client the listing uses (issue 41: the deleter may use it where it is
faster). It reports no outcome per key (the first error raises), which the deleter needs.
Targets (issue 5): >= 80% of the floor when no rate binds; within 5% of the rate when it does.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start_moto(work: Path):
    """Start moto server on 127.0.0.1 (its log in ``work``); return its process and port. Stop it with ``stop_group``."""
    from lakefs_sandbox.emulator.launcher import free_port, start_server

    port = free_port()
    proc = start_server(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        work / "moto.log",
        f"http://127.0.0.1:{port}/moto-api/",
    )
    return proc, port


def _put_s3(client, bucket, keys):
    for k in keys:
        client.put_object(Bucket=bucket, Key=k, Body=b"x")


def _mk_local(base: Path, keys):
    for k in keys:
        p = base / k
        p.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"x")
        os.close(fd)


def main(argv: list[str] | None = None) -> int | None:
    p = argparse.ArgumentParser(prog="python -m bench delete", description=__doc__.split("\n\n")[0])
    p.add_argument("--keys", type=int, default=20_000, help="objects per measurement on moto")
    p.add_argument("--local-keys", type=int, default=100_000, help="objects per measurement on local disk")
    p.add_argument(
        "--rate",
        type=float,
        default=0,
        help="rate limit to check (default: half the S3 floor, a tenth of the local throughput)",
    )
    p.add_argument(
        "--cloud-keys",
        type=int,
        default=2_000,
        help="objects per measurement on Azurite and fake-gcs (Azurite slows down as a container grows)",
    )
    p.add_argument("--local-only", action="store_true", help="skip the moto, Azurite and fake-gcs measurements")
    p.add_argument("--backends", default="s3,local,azure,gcs", help="comma-separated: s3, local, azure, gcs")
    p.add_argument(
        "--slowdown",
        action="store_true",
        help="instead: the sweep through a SlowDown storm, the shared rate beside the deleter before it "
        "(bench/delete_slowdown.py; --slowdown --help for its sizes)",
    )
    if argv and "--slowdown" in argv:
        from bench import delete_slowdown

        return delete_slowdown.main([x for x in argv if x != "--slowdown"])
    a = p.parse_args(argv)
    import signal

    # a SIGTERM (timeout, Ctrl-C from a wrapper) runs the finally blocks that stop the servers
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    backends = {"local"} if a.local_only else set(a.backends.split(","))
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("AWS_REQUEST_CHECKSUM_CALCULATION", "when_required")
    os.environ.setdefault("AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required")
    from lakefs_gc.storage import LocalStorage, S3Options, make_s3_client, open_storage
    from lakefs_gc.sweeping.deleter import DeletePolicy, Deleter
    from lakefs_sandbox.emulator.launcher import stop_group

    work = Path(tempfile.mkdtemp(prefix="lakefs-gc-delete-bench-"))
    moto, port = start_moto(work)
    rows = []
    try:
        url = f"http://127.0.0.1:{port}"
        opts = S3Options(endpoint_url=url, access_key_id="bench", secret_access_key="bench")
        client = make_s3_client(opts)
        n = a.keys if "s3" in backends else 0
        if n:
            client.create_bucket(Bucket="bench")
            keys = [f"data/s{i % 50:02d}/k{i:07d}" for i in range(n)]

            _put_s3(client, "bench", [f"floor/{k}" for k in keys])
            t = time.perf_counter()
            for i in range(0, n, 1000):
                client.delete_objects(
                    Bucket="bench",
                    Delete={"Objects": [{"Key": f"floor/{k}"} for k in keys[i : i + 1000]], "Quiet": True},
                )
            s3_floor = n / (time.perf_counter() - t)

            _put_s3(client, "bench", [f"ours/{k}" for k in keys])
            st = open_storage("s3://bench/ours", opts)
            t = time.perf_counter()
            stats = Deleter(st, DeletePolicy(rate=0)).delete(keys)
            s3_ours = n / (time.perf_counter() - t)
            assert stats.deleted == n
            assert not stats.dead
            s3_native = _native(
                open_storage("s3://bench/native", opts),
                keys,
                lambda: _put_s3(client, "bench", [f"native/{k}" for k in keys]),
            )

            rate = a.rate or round(s3_floor / 2, -1)
            _put_s3(client, "bench", [f"ours/{k}" for k in keys])
            t = time.perf_counter()
            Deleter(st, DeletePolicy(rate=rate)).delete(keys)
            s3_limited = n / (time.perf_counter() - t)
            rows.append(("moto S3 (DeleteObjects x1000)", s3_floor, s3_ours, s3_native, rate, s3_limited))

        for kind in ("azure", "gcs"):
            if kind in backends:
                rows.append(_cloud_row(kind, work, a.cloud_keys, a.rate))
        m = a.local_keys if "local" in backends else 0
        if not m:
            return _print(rows)
        lkeys = [f"data/s{i % 100:02d}/k{i:07d}" for i in range(m)]
        floor_dir, ours_dir = work / "floor", work / "ours"
        # the local disk is noisy (writeback of the files just created): alternate, best of three each
        local_floor = local_ours = 0.0
        for _ in range(3):
            _mk_local(floor_dir, lkeys)
            os.sync()
            paths = [str(floor_dir / k) for k in lkeys]
            t = time.perf_counter()
            for path in paths:
                os.unlink(path)
            local_floor = max(local_floor, m / (time.perf_counter() - t))
            _mk_local(ours_dir, lkeys)
            os.sync()
            t = time.perf_counter()
            stats = Deleter(LocalStorage(ours_dir), DeletePolicy(rate=0)).delete(lkeys)
            local_ours = max(local_ours, m / (time.perf_counter() - t))
            assert stats.deleted == m
            assert not stats.dead
        lrate = a.rate or round(local_ours / 10, -2)
        sub = lkeys[: max(1000, int(lrate * 5))]
        _mk_local(ours_dir, sub)
        os.sync()
        t = time.perf_counter()
        Deleter(LocalStorage(ours_dir), DeletePolicy(rate=lrate)).delete(sub)
        local_limited = len(sub) / (time.perf_counter() - t)
        rows.append(("local (unlink)", local_floor, local_ours, None, lrate, local_limited))
    finally:
        stop_group(moto)
        shutil.rmtree(work, ignore_errors=True)
    _print(rows)


def _native(st, keys: list[str], fill) -> float | None:
    """Keys/s of obstore's bulk delete of ``keys`` (written by ``fill()``) through ``st``'s native store;
    None when it fails (the error printed)."""
    import obstore

    fill()
    t = time.perf_counter()
    try:
        obstore.delete(st.native_store(), keys)
    except Exception as exc:
        print(f"native delete on {st.uri}: {str(exc).splitlines()[0]}", flush=True)
        return None
    rate = len(keys) / (time.perf_counter() - t)
    left = sum(1 for k in keys if st.exists(k))
    if left:
        print(f"native delete on {st.uri}: {left:,} of {len(keys):,} keys still there", flush=True)
        return None
    return rate


def _cloud_row(kind: str, work: Path, n: int, rate: float):
    """(name, floor, ours, native, rate, achieved) on Azurite or fake-gcs-server, started and stopped here."""
    from concurrent.futures import ThreadPoolExecutor

    from lakefs_gc.storage import open_storage
    from lakefs_gc.sweeping.deleter import DeletePolicy, Deleter
    from lakefs_sandbox.cloud_servers import start_azurite, start_fake_gcs

    server = (start_azurite if kind == "azure" else start_fake_gcs)(work / kind)
    try:
        container = server.create("bench")
        keys = [f"data/s{i % 50:02d}/k{i:07d}" for i in range(n)]

        def fill(prefix: str, some: list[str]) -> None:
            st = open_storage(server.namespace(container, prefix), server.options())
            with ThreadPoolExecutor(16) as ex:
                list(ex.map(lambda k: st.put(k, b"x"), some))

        fill("floor", keys)
        names = [f"floor/{k}" for k in keys]
        t = time.perf_counter()
        if kind == "azure":
            from lakefs_gc.storage.azure import make_service_client

            cc = make_service_client(server.options()).get_container_client(container)
            for i in range(0, n, 256):
                list(cc.delete_blobs(*names[i : i + 256]))
        else:
            from lakefs_gc.storage.gcs import make_gcs_client

            make_gcs_client(server.options()).bucket(container).delete_blobs(names)
        floor = n / (time.perf_counter() - t)

        fill("ours", keys)
        st = open_storage(server.namespace(container, "ours"), server.options())
        t = time.perf_counter()
        stats = Deleter(st, DeletePolicy(rate=0)).delete(keys)
        ours = n / (time.perf_counter() - t)
        assert stats.deleted == n, stats
        assert not stats.dead, stats
        opts = server.options()
        if kind == "gcs":  # object_store's GCS deletes ask for a token even when told to skip signing
            import dataclasses

            opts = dataclasses.replace(opts, anonymous=False, access_token="bench")
        native = _native(open_storage(server.namespace(container, "native"), opts), keys, lambda: fill("native", keys))
        rate = rate or round(min(floor, ours) / 2, -1)
        sub = keys[: max(1000, int(rate * 5))]
        fill("ours", sub)
        t = time.perf_counter()
        Deleter(st, DeletePolicy(rate=rate)).delete(sub)
        limited = len(sub) / (time.perf_counter() - t)
        name = "Azurite (Blob Batch x256)" if kind == "azure" else "fake-gcs (parallel deletes)"
        return name, floor, ours, native, rate, limited
    finally:
        server.stop()


def _print(rows) -> None:
    print(f"\nDeletion throughput, one sequential deleter ({os.cpu_count()} cores), keys/s")
    print(
        f"  {'target':32} {'floor':>10} {'ours':>10} {'ours/floor':>10} {'native':>10}   {'rate set':>9} "
        f"{'achieved':>9} {'dev':>6}"
    )
    for name, floor, ours, native, rate, limited in rows:
        nat = "-" if native is None else f"{native:,.0f}"
        print(
            f"  {name:32} {floor:10,.0f} {ours:10,.0f} {ours / floor:9.0%} {nat:>10}    {rate:9,.0f} {limited:9,.0f} "
            f"{(limited - rate) / rate:+6.1%}"
        )
