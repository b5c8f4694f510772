"""Never delete live data, over generated histories (tests/support/history.py).

Each history is built through lakefs-sdk on the shared emulator, collected by the real GC (every
step, mark and sweep, in one process on the shared SparkSession), and checked against an oracle
computed only from lakeFS's API and the generator's bookkeeping: zero "must keep" objects lost,
every "must go" object collected. A failure is shrunk to a minimal list of operations and printed
with its seed.

    LAKEFS_GC_HISTORIES=1000 .venv/bin/python -m pytest tests/test_random_histories.py -q   # more histories
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone

import pytest

from lakefs_gc.contract import RunSettings
from lakefs_gc.gc.prepare import prepare_run
from lakefs_gc.lakefs.client import LakeFSClient
from lakefs_gc.spark.inprocess import run_steps
from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY
from lakefs_gc.storage import parse_namespace
from tests.conftest import ns_storage
from tests.support import history

pytestmark = pytest.mark.spark
HISTORIES = int(os.environ.get("LAKEFS_GC_HISTORIES", "200"))
SEED_BASE = int(os.environ.get("LAKEFS_GC_HISTORY_SEED", "0"))
PER_RUN = 20  # histories sharing one repository, judged by one GC run
STEPS = 24
# the run's cutoff is its start: everything the histories wrote is old enough (the grace period is
# the emulator's business; min age 0 with the override, as a test may)
SETTINGS = RunSettings(min_age_seconds=0, unsafe_min_age_override=True, confirm_after_seconds=0,
                       max_delete_share=1.0)
_repos = iter(range(10**9))


class Collected:
    """Histories built in one repository, collected by one GC run, and judged."""

    def __init__(self, gc_client, emu, spark, work, seeds_and_steps: list[tuple[int, list[tuple]]]):
        client = emu.client()
        name = f"hist-{SEED_BASE}-{next(_repos)}"
        ns = emu.namespace(name)
        roots = parse_namespace(ns, emu.local_root).roots()
        history.create(client, name, ns)
        shared = len(seeds_and_steps) > 1
        outside = os.path.join(emu.local_root, "outside", name)  # imports come from here, never collected
        self.histories = [history.apply(client, name, ns, roots, steps, prefix=f"h{seed}-" if shared else "",
                                        outside=outside) for seed, steps in seeds_and_steps]
        history.set_rules(client, name, self.histories)
        # the clock a little ahead of the last write: with a minimum age of 0 the cutoff is the start
        now = datetime.now(timezone.utc) + timedelta(seconds=2)
        self.keep, self.go = history.oracle(client, name, self.histories, roots, now.timestamp())
        ctx = prepare_run(gc_client, name, SETTINGS, now=now, airflow_run_id=f"h-{name}", work_dir=str(work),
                          local_root=emu.local_root, parallelism=1)
        env = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
        self.results = run_steps(spark, ctx, gc_client, env)
        after = {o.key for o in ns_storage(ns).list("data/", recursive=True)}
        self.lost = self.keep - after
        self.lost |= {f for h in self.histories for f in h.outside if not os.path.exists(f)}
        self.left = self.go & after

    @property
    def ok(self) -> bool:
        return not self.lost and not self.left


def _shrink(run, steps: list[tuple], budget: int = 40) -> list[tuple]:
    """Drop operations one at a time while the failure persists (bounded)."""
    i = 0
    while i < len(steps) - 1 and budget > 0:
        candidate = steps[:i] + steps[i + 1:]
        budget -= 1
        if not run(candidate).ok:
            steps = candidate
        else:
            i += 1
    return steps


def test_random_histories_lose_nothing_live_and_collect_all_garbage(spark, lakefs_emulator, tmp_path):
    emu = lakefs_emulator
    seeds = list(range(SEED_BASE, SEED_BASE + HISTORIES))
    objects = keep = go = imported = 0
    with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key) as gc_client:
        def run(*seeds_and_steps):
            return Collected(gc_client, emu, spark, tmp_path / "work", list(seeds_and_steps))

        for start in range(0, len(seeds), PER_RUN):
            batch = [(seed, history.ops(seed, STEPS)) for seed in seeds[start:start + PER_RUN]]
            c = run(*batch)
            objects += sum(len(h.uploaded) for h in c.histories)
            imported += sum(len(h.outside) for h in c.histories)
            keep += len(c.keep)
            go += len(c.go)
            if c.ok:
                continue
            # find the history that fails alone, shrink it, print it
            for seed, steps in batch:
                if not run((seed, steps)).ok:
                    small = _shrink(lambda s, seed=seed: run((seed, s)), steps)
                    again = run((seed, small))
                    pytest.fail(f"seed {seed}: lost {sorted(again.lost)}, left {sorted(again.left)}; "
                                f"shrunk to {len(small)} operations:\n" + "\n".join(map(repr, small)))
            pytest.fail(f"seeds {batch[0][0]}..{batch[-1][0]} fail together, none alone: lost {sorted(c.lost)}, "
                        f"left {sorted(c.left)}")
    print(f"\n{HISTORIES} histories, {objects} objects written and {imported} imported from outside the namespace, "
          f"{keep} must-keep and {go} must-go checks: 0 live objects lost, 0 garbage left")
