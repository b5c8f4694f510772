"""What reading the staged entries through lakeFS's API costs, beside lakeFS's own mark.

    .venv/bin/python -m bench staged [--entries N] [--committed M] [--concurrency C]

On the emulator (local blockstore): a repository with M committed objects and N staged entries on
two branches, a quarter of them written through the link flow and a quarter uploaded again over a
committed object with the same bytes (lakeFS's mark omits both). Measured in the same run:
  peer   lakeFS's uncommitted mark: prepare_uncommited to the end, its Parquet read back
  api    the defence alone: listBranches, then listObjects of each branch and of its HEAD commit
  task   mark_uncommitted whole (both, and the omitted addresses written beside the mark)
The defence's cost grows with what the branches read (two listings per branch, 1,000 objects a
request), so the figures are per object listed as well as per staged entry.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench staged")
    ap.add_argument("--entries", type=int, default=2000)
    ap.add_argument("--committed", type=int, default=5000)
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args(argv)

    import lakefs_sdk
    from lakefs_sdk.client import LakeFSClient as SDK

    from lakefs_gc.contract import RunSettings
    from lakefs_gc.lakefs.client import LakeFSClient
    from lakefs_gc.listing import uncommitted
    from lakefs_gc.steps.mark_uncommitted import mark_uncommitted
    from lakefs_gc.steps.prepare_run import prepare_run
    from lakefs_gc.storage import open_storage, parse_namespace
    from lakefs_sandbox.emulator import launcher
    from lakefs_sandbox.seed import link_object

    root = Path(tempfile.mkdtemp(prefix="bench-staged-"))
    local_root = str(root / "blockstore")
    access, secret = "AKIABENCHSTAGED00001", "bench/staged/secret"
    emu = launcher.start(root / "emulator.log", "--local-path", local_root, access_key=access, secret_key=secret)
    api_url = emu.url + "/api/v1"
    try:
        c = SDK(lakefs_sdk.Configuration(host=api_url, username=access, password=secret))
        repo, ns = "bench-staged", "local://bench-staged"
        c.repositories_api.create_repository(
            lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=ns, default_branch="main")
        )
        c.repositories_api.set_gc_rules(repo, lakefs_sdk.GarbageCollectionRules(default_retention_days=1, branches=[]))
        t = time.perf_counter()
        for i in range(args.committed):
            c.objects_api.upload_object(repo, "main", f"committed/{i:07d}", content=b"c")
        c.objects_api.upload_object(repo, "main", "seed", content=b"s")
        c.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message="seed"))
        print(f"built {args.committed} committed objects in {time.perf_counter() - t:.1f}s")
        c.branches_api.create_branch(repo, lakefs_sdk.BranchCreation(name="dev", source="main"))
        st = open_storage(ns, None, local_root)
        roots = parse_namespace(ns, local_root).roots()
        t = time.perf_counter()
        for i in range(args.entries):
            branch, path = ("main", "dev")[i % 2], f"staged/{i:07d}"
            if i % 4 == 3 and i < args.committed:  # the committed object's bytes again: same identity
                c.objects_api.upload_object(repo, branch, f"committed/{i:07d}", content=b"c")
            elif i % 4 < 2:
                c.objects_api.upload_object(repo, branch, path, content=b"x")
            else:
                link_object(c, repo, branch, path, b"x", st, roots)
        print(f"built {args.entries} staged entries in {time.perf_counter() - t:.1f}s")
        logging.getLogger("lakefs_gc").setLevel(logging.ERROR)  # one warning per omitted address otherwise
        with LakeFSClient(api_url, access, secret) as client:
            client.prepare_uncommitted_all(repo)  # warm-up: the emulator's first Parquet write imports pyarrow
            t = time.perf_counter()
            run_id, locations, _ = client.prepare_uncommitted_all(repo)
            marked = uncommitted.lakefs_mark_addresses(st, roots, run_id, tuple(locations))
            peer = time.perf_counter() - t
            t = time.perf_counter()
            check = uncommitted.api_staged(client, repo, roots, local_root, concurrency=args.concurrency)
            api = time.perf_counter() - t
            ctx = prepare_run(
                client,
                repo,
                RunSettings(),
                now=datetime.now(UTC),
                airflow_run_id="bench",
                work_dir=str(root / "work"),
                local_root=local_root,
            )
            t = time.perf_counter()
            result = mark_uncommitted(client, ctx, st)
            task = time.perf_counter() - t
        n, listed = args.entries, check.listed
        print(
            f"lakeFS's mark lists {len(marked)} of {n} staged addresses; the API finds {len(check.addresses)} "
            f"({listed} objects listed); the task kept {result.staged_addresses_lakefs_omitted} that lakeFS's "
            f"mark lacked"
        )
        print(f"{'peer (lakeFS mark)':<24}{peer:8.2f}s {n / peer:10.0f} entries/s")
        print(
            f"{'api (listings)':<24}{api:8.2f}s {n / api:10.0f} entries/s {listed / api:10.0f} objects listed/s  "
            f"({api / peer:.1f}x the peer)"
        )
        print(f"{'task (mark_uncommitted)':<24}{task:8.2f}s {n / task:10.0f} entries/s")
        return 0
    finally:
        emu.stop()
