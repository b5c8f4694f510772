"""
The doctor's runtime checks: pyspark and pyspark-client, Java, and the cluster's Spark.

``pyspark`` and ``pyspark-client`` write into one ``pyspark/`` folder, so unequal versions corrupt
each other (docs/compatibility.md); the version this package pins is read from its own metadata.
The cluster's Spark is read only where it is cheap: a standalone master (``spark://``) answers its
REST submission server's status call with ``serverSparkVersion`` (port 6066, when the master runs
it: ``spark.master.rest.enabled``); elsewhere it is "not checked".
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import urllib.error
import urllib.request
from importlib.metadata import PackageNotFoundError, requires, version
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from lakefs_gc.doctor import Report

JAVA_MIN = 17
REST_PORT = 6066


def _installed(name: str, versions: Callable[[str], str]) -> str | None:
    try:
        return versions(name)
    except PackageNotFoundError:
        return None


def pinned_pyspark() -> str | None:
    """Return the pyspark version lakefs-gc pins (``pyspark==X`` in its requirements), None when not found."""
    try:
        for req in requires("lakefs-gc") or ():
            m = re.match(r"pyspark\s*==\s*([\w.]+)", req)
            if m:
                return m.group(1)
    except PackageNotFoundError:
        return None
    return None


def check_pyspark(report: Report, versions: Callable[[str], str] = version) -> str | None:
    """Check pyspark and pyspark-client are installed at one version (the pinned one); return pyspark's."""
    spark, client = _installed("pyspark", versions), _installed("pyspark-client", versions)
    pinned = pinned_pyspark()
    both = f"pyspark {spark or 'not installed'}, pyspark-client {client or 'not installed'}"
    fix_to = pinned or spark or client or "<version>"
    same = f"pip install pyspark=={fix_to} pyspark-client=={fix_to} (both write the pyspark/ folder)"
    if spark is None:
        report.fail("pyspark on the task", both, same)
    elif client is not None and client != spark:
        report.fail("pyspark on the task", f"{both}: unequal, they corrupt each other's pyspark/ folder", same)
    elif pinned and spark != pinned:
        report.warn("pyspark on the task", f"{both}: lakefs-gc pins {pinned}", same)
    elif client is None:
        report.warn("pyspark on the task", f"{both}: the Apache Spark provider of Airflow needs pyspark-client", same)
    else:
        report.ok("pyspark on the task", f"{both}" + (" (the version lakefs-gc pins)" if pinned else ""))
    return spark


def java_version(java: str | None = None) -> tuple[str, str | None]:
    """Return (the java binary, its version, None: not found or not answering)."""
    home = os.environ.get("JAVA_HOME")
    binary = java or (str(Path(home) / "bin" / "java") if home else shutil.which("java") or "java")
    try:
        done = subprocess.run([binary, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return binary, None
    m = re.search(r'version "([^"]+)"', done.stderr + done.stdout)
    return binary, m.group(1) if m else None


def check_java(report: Report, java: str | None = None) -> None:
    binary, found = java_version(java)
    fix = f"install Java {JAVA_MIN} or newer and set JAVA_HOME (Spark 4 needs it)"
    if found is None:
        report.fail("Java on the task", f"{binary} not found or not answering", fix)
        return
    parts = found.split(".")
    major = int(parts[1] if parts[0] == "1" and len(parts) > 1 else re.sub(r"\D.*", "", parts[0]) or 0)
    if major < JAVA_MIN:
        report.fail("Java on the task", f"{binary}: Java {found}", fix)
    else:
        report.ok("Java on the task", f"{binary}: Java {found}")


def cluster_spark(master: str, timeout: float = 3.0) -> str | None:
    """Return a standalone master's Spark version from its REST submission server; None when it does not answer."""
    host = master.removeprefix("spark://").split(",")[0].split(":")[0]
    url = f"http://{host}:{REST_PORT}/v1/submissions/status/lakefs-gc-doctor"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # the configured master
            body = resp.read()
    except urllib.error.HTTPError as exc:  # an unknown submission: still a JSON answer with the version
        body = exc.read()
    except (OSError, ValueError):
        return None
    try:
        return str(json.loads(body).get("serverSparkVersion") or "") or None
    except ValueError:
        return None


def check_cluster(report: Report, master: str | None, where: str, task_spark: str | None) -> None:
    """Check the cluster's Spark against the task's pyspark, where it can be read cheaply."""
    if not master:
        report.warn("Spark on the cluster", f"not checked: no Spark master known ({where})", "give --spark-master")
        return
    if master.startswith("local"):
        report.ok("Spark on the cluster", f"master {master} ({where}): the task's own Spark, pyspark {task_spark}")
        return
    if not master.startswith("spark://"):
        report.warn("Spark on the cluster", f"not checked: master {master} ({where}) is not a standalone master")
        return
    found = cluster_spark(master)
    if found is None:
        report.warn(
            "Spark on the cluster",
            f"not checked: master {master}'s REST server (port {REST_PORT}) did not answer ({where})",
            "spark.master.rest.enabled=true on the master lets the doctor read its version",
        )
    elif task_spark and found.split(".")[:2] != task_spark.split(".")[:2]:
        report.fail(
            "Spark on the cluster",
            f"master {master} runs Spark {found}, the task pyspark {task_spark}",
            f"install pyspark=={found} and pyspark-client=={found} on the task, or run Spark {task_spark}",
        )
    else:
        report.ok("Spark on the cluster", f"master {master} runs Spark {found} ({where})")
