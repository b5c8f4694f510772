"""
A Spark standalone cluster on 127.0.0.1: one master and its workers, stopped by PID.

Each is a JVM started from the pyspark distribution's own classes
(``spark-class org.apache.spark.deploy.master.Master`` and ``...worker.Worker``), each worker with
its own work directory. For the tests and the benches: a GC run's driver (spark-submit in client
deploy mode) on this machine, its executors in the workers' JVMs, as on a real cluster.

By hand: ``python -m lakefs_sandbox.spark_cluster --workdir var/spark-cluster`` (prints the master
URL; Ctrl-C stops it).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from lakefs_sandbox.emulator.launcher import free_port, start_server, stop_group


@dataclass
class SparkCluster:
    """A running standalone cluster: its master's URLs, its work directory and its processes."""

    master_url: str  # spark://127.0.0.1:PORT
    ui_url: str  # the master's web UI (its JSON at /json/)
    workdir: Path
    procs: list[subprocess.Popen] = field(default_factory=list)
    worker_dirs: list[Path] = field(default_factory=list)

    def status(self) -> dict:
        with urllib.request.urlopen(self.ui_url + "/json/", timeout=30) as r:
            return json.loads(r.read())

    def logs(self) -> list[Path]:
        """
        Every file the master and the workers wrote.

        Their logs, and each application's executor stdout and stderr under the workers' work
        directories.
        """
        return [p for p in self.workdir.rglob("*") if p.is_file()]

    def stop(self, timeout: float = 15) -> None:
        for proc in reversed(self.procs):
            stop_group(proc, timeout)
        self.procs.clear()


def _env(workdir: Path) -> dict[str, str]:
    """
    Return the daemons' environment.

    Every daemon binds to 127.0.0.1 (its RPC and its web UI: SPARK_LOCAL_IP) and runs executors'
    Python workers with this Python (its packages).
    """
    return {
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_HOSTNAME": "127.0.0.1",
        "SPARK_LOG_DIR": str(workdir / "logs"),
        "SPARK_NO_DAEMONIZE": "1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_DAEMON_MEMORY": "256m",
        # no REST submission server (cluster deploy mode, refused by the GC; its fixed port 6066 would clash)
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    }


def start(workdir: Path, workers: int = 2, cores: int = 1, memory: str = "1g", timeout: float = 120.0) -> SparkCluster:
    """
    Start a master and ``workers`` workers (``cores`` and ``memory`` each) in ``workdir`` (created).

    Returns once the master counts every worker alive. Stops what it started when that fails.
    """
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    spark_class = str(Path(sys.executable).parent / "spark-class")
    env = _env(workdir)
    port, ui = free_port(), free_port()
    cluster = SparkCluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui}", workdir)
    try:
        cluster.procs.append(
            start_server(
                [
                    spark_class,
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--webui-port",
                    str(ui),
                ],
                workdir / "master.log",
                cluster.ui_url + "/json/",
                env,
                timeout,
                cwd=workdir,
            )
        )
        for i in range(workers):
            wdir = workdir / f"worker-{i}"
            wdir.mkdir(exist_ok=True)
            wui = free_port()
            cluster.procs.append(
                start_server(
                    [
                        spark_class,
                        "org.apache.spark.deploy.worker.Worker",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(free_port()),
                        "--webui-port",
                        str(wui),
                        "--cores",
                        str(cores),
                        "--memory",
                        memory,
                        "--work-dir",
                        str(wdir),
                        cluster.master_url,
                    ],
                    workdir / f"worker-{i}.log",
                    f"http://127.0.0.1:{wui}/json/",
                    env,
                    timeout,
                    cwd=workdir,
                )
            )
            cluster.worker_dirs.append(wdir)
        deadline = time.monotonic() + timeout
        while sum(w.get("state") == "ALIVE" for w in cluster.status().get("workers", [])) < workers:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{workers} Spark worker(s) not registered with {cluster.master_url} after "
                    f"{timeout}s:\n{(workdir / 'master.log').read_text()[-3000:]}"
                )
            time.sleep(0.2)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lakefs_sandbox.spark_cluster", description=__doc__.split("\n\n")[0])
    p.add_argument("--workdir", type=Path, default=Path("var/spark-cluster"))
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--cores", type=int, default=1)
    p.add_argument("--memory", default="1g")
    a = p.parse_args(argv)
    cluster = start(a.workdir, a.workers, a.cores, a.memory)
    print(
        f"Spark master {cluster.master_url} (UI {cluster.ui_url}), {a.workers} worker(s); Ctrl-C stops them", flush=True
    )
    try:
        while all(proc.poll() is None for proc in cluster.procs):
            time.sleep(1)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        cluster.stop()


if __name__ == "__main__":
    raise SystemExit(main())
