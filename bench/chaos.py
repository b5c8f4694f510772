"""
Faults in the compose stack while people write (issue 56): ``python -m bench chaos --runs N --seed S``.

Brings the stack up (docker-compose.yaml with docker/chaos.compose.yaml, under a project of its own,
on the project's Docker engine: ``bash scripts/setup.sh --stack`` builds the images), runs
:class:`lakefs_sandbox.chaos.run.Chaos`, prints the table (lakefs_sandbox.chaos.table) and writes
the whole result as JSON (``--out``, default var/chaos/seed-S-runs-N.json); the stack is taken down
(``--keep``: left up). Exits 1 when the checker found a problem (a loss, a delete outside the
candidates, a stuck run, garbage left after the quiet run).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHAOS_COMPOSE = ROOT / "docker" / "chaos.compose.yaml"


def up(project: str):
    """The project's engine started, the images checked, the stack up with the chaos override."""
    from lakefs_sandbox.compose_stack import LAKEFS_BINARY, Engine, Stack

    engine = Engine.start()
    engine.build_images()
    stack = Stack(engine, project=project, overrides=(CHAOS_COMPOSE,))
    stack.compose("up", "-d", "--no-build", timeout=600)
    return engine, stack, LAKEFS_BINARY


def s3_options(stack):
    """The stack's object store as the GC reaches it (:class:`lakefs_gc.storage.S3Options`) on its published port."""
    from lakefs_gc.storage import S3Options
    from lakefs_sandbox.compose_stack import dotenv

    env = dotenv()
    return S3Options(
        endpoint_url=f"http://127.0.0.1:{stack.ports['S3_PORT']}",
        access_key_id=env["MINIO_ROOT_USER"],
        secret_access_key=env["MINIO_ROOT_PASSWORD"],
    )


def clients(stack):
    """Airflow's REST API, a lakeFS client (lakefs-sdk) and an S3 client (boto3) on the stack's ports."""
    import boto3
    from botocore.config import Config

    from lakefs_sandbox.compose_stack import API, dotenv
    from lakefs_sandbox.seed import sdk_client

    env, s3o = dotenv(), s3_options(stack)
    api = API(f"http://127.0.0.1:{stack.ports['AIRFLOW_PORT']}")
    lakefs = sdk_client(
        f"http://127.0.0.1:{stack.ports['LAKEFS_PORT']}", env["LAKEFS_ACCESS_KEY_ID"], env["LAKEFS_SECRET_ACCESS_KEY"]
    )
    s3 = boto3.client(
        "s3",
        endpoint_url=s3o.endpoint_url,
        region_name=s3o.region,
        aws_access_key_id=s3o.access_key_id,
        aws_secret_access_key=s3o.secret_access_key,
        config=Config(connect_timeout=5, read_timeout=30, retries={"max_attempts": 3}),
    )
    return api, lakefs, s3


def wait_dag(api, dag_id: str, deadline_s: float = 300) -> None:
    import urllib.error

    deadline = time.monotonic() + deadline_s
    while True:
        try:
            api.call("GET", f"/api/v2/dags/{dag_id}")
            return
        except urllib.error.HTTPError as e:
            if e.code != 404 or time.monotonic() > deadline:
                raise
            time.sleep(3)


def chaos(
    stack, runs: int, seed: int, writers: int = 2, min_age_s: int | None = None, progress: Path | None = None
) -> dict:
    """One chaos run on a stack that is up (every service healthy); ``progress``: each run's outcome written there as it ends."""
    from lakefs_gc.storage import open_storage
    from lakefs_sandbox.chaos.run import BUCKET, DAG_ID, MIN_AGE_S, REPO, Chaos

    api, lakefs, s3 = clients(stack)
    storage = open_storage(f"s3://{BUCKET}/{REPO}", s3_options(stack))
    c = Chaos(stack, api, lakefs, s3, storage, seed, min_age_s=min_age_s or MIN_AGE_S)
    c.progress = progress
    c.create_repository()
    wait_dag(api, DAG_ID)
    return c.run(runs, writers=writers)


def main(argv: list[str]) -> int:
    from lakefs_sandbox.chaos.table import markdown, problems
    from lakefs_sandbox.compose_stack import LONG_RUNNING, ONE_SHOTS

    p = argparse.ArgumentParser(prog="python -m bench chaos", description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=30, help="GC runs, one fault each (default 30)")
    p.add_argument(
        "--seed",
        type=int,
        default=4953,
        help="the seed of the faults and the writers (default 4953: every service killed and paused, the scheduler killed mid-sweep)",
    )
    p.add_argument("--writers", type=int, default=2, help="writer threads (default 2)")
    p.add_argument("--out", type=Path, help="the result as JSON (default var/chaos/seed-S-runs-N.json)")
    p.add_argument("--keep", action="store_true", help="leave the stack up (docker-compose -p PROJECT down -v to stop)")
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error(f"--runs must be at least 1, got {args.runs}")
    out = args.out or ROOT / "var" / "chaos" / f"seed-{args.seed}-runs-{args.runs}.json"
    project = f"lakefs-gc-chaos-{int(time.time())}"
    engine, stack, _ = up(project)
    try:
        up_s = stack.wait_up([*LONG_RUNNING, *ONE_SHOTS])
        print(f"the stack is up ({up_s:.0f} s); project {project}", flush=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        result = chaos(stack, args.runs, args.seed, args.writers, progress=out.with_suffix(".partial.json"))
    finally:
        if not args.keep:
            stack.compose("down", "-v", "--timeout", "20", timeout=300, check=False)
            engine.stop()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=str))
    print(markdown(result))
    print(f"result: {out}")
    found = problems(result)
    for f in found:
        print("PROBLEM:", f)
    return 1 if found else 0
