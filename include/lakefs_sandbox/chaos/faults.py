"""
The chaos bench's faults: which service, how, in which phase of a GC run, for how long.

A plan is drawn from the seed alone (:func:`plan`), so a seed reproduces the same faults: the
services in a shuffled cycle (each of the eight once per eight runs), the phase (a task of the GC
DAG, or "between": no run in the air) likewise in a cycle, the way (``kill``: ``docker kill``, the
process gone at once, then ``docker start``; ``pause``: ``docker pause``, every process frozen,
then ``docker unpause``), the delay after the phase's task starts and the time down.

The object store of the stack is a stand-in that keeps objects in memory (docker/standins): killing
it would lose every object, which the real MinIO (objects on disk) never does. Its ``kill`` is
therefore a network cut instead (``docker network disconnect``, then ``connect``): the store is
gone for every client, its objects stay.
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass

from lakefs_gc.contract import STEPS

SERVICES = (
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-apiserver",
    "spark-master",
    "spark-worker",
    "lakefs",
    "postgres",
    "minio",
)
# the phases of a run the fault is aimed at: the task running when it strikes (every task of the
# provider's table), or between runs
PHASES = (*STEPS, "between")
WAYS = ("kill", "pause")


@dataclass(frozen=True)
class Fault:
    """One fault of the plan."""

    run: int  # the GC run it strikes (0-based)
    service: str
    way: str  # kill | pause (minio's kill: a network cut)
    phase: str  # the task it waits for (or "between")
    delay_s: float  # after that task is seen running
    down_s: float  # how long the service stays down

    def as_dict(self) -> dict:
        return asdict(self)


def _cycle(rng: random.Random, items: tuple[str, ...], n: int) -> list[str]:
    out: list[str] = []
    while len(out) < n:
        block = list(items)
        rng.shuffle(block)
        out += block
    return out[:n]


def plan(seed: int, runs: int) -> list[Fault]:
    """One fault per run, drawn from ``seed`` alone."""
    rng = random.Random(seed)
    services = _cycle(rng, SERVICES, runs)
    phases = _cycle(rng, PHASES, runs)
    return [
        Fault(
            run=i,
            service=services[i],
            way=rng.choice(WAYS),
            phase=phases[i],
            delay_s=round(rng.uniform(0.0, 4.0), 1),
            down_s=round(rng.uniform(3.0, 25.0), 1),
        )
        for i in range(runs)
    ]


class Injector:
    """Strikes and heals services of a :class:`lakefs_sandbox.compose_stack.Stack`."""

    def __init__(self, stack):
        self.stack = stack

    def _network(self) -> str:
        return f"{self.stack.project}_default"

    def strike(self, fault: Fault) -> None:
        cid = self.stack.container_id(fault.service)
        if fault.way == "pause":
            self.stack.docker("pause", cid)
        elif fault.service == "minio":
            self.stack.docker("network", "disconnect", self._network(), cid)
        else:
            self.stack.docker("kill", cid)

    def heal(self, fault: Fault) -> None:
        cid = self.stack.container_id(fault.service)
        if fault.way == "pause":
            self.stack.docker("unpause", cid)
        elif fault.service == "minio":
            self.stack.docker("network", "connect", "--alias", "minio", self._network(), cid)
        else:
            state = self.stack.containers()[fault.service]
            if state["Status"] != "running":  # the restart policy may have brought it back already
                self.stack.docker("start", cid)

    def wait_healthy(self, service: str, deadline_s: float = 300) -> float:
        """Until the service's health check passes again (seconds waited)."""
        t0 = time.monotonic()
        while True:
            st = self.stack.containers().get(service) or {}
            if st.get("Status") == "running" and (st.get("Health") or {}).get("Status") == "healthy":
                return time.monotonic() - t0
            if time.monotonic() - t0 > deadline_s:
                raise AssertionError(
                    f"{service} not healthy {deadline_s:.0f} s after its fault was healed: "
                    f"{st.get('Status')}/{(st.get('Health') or {}).get('Status')}\n{self.stack.logs(service)}"
                )
            time.sleep(1)
