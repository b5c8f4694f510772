"""
The Spark driver's JVM start: what a GC job pays before it reads anything.

Most of the time of a small spark-submit (open a session, one JVM and one Python action, stop) is
the JVM loading and verifying Spark's classes and compiling code it will run a few times.
:func:`driver_java_options` gives the driver two options that cut it by about a half (``python -m
bench tiny`` measures both; the figures are in docs/benchmarks.md):

- ``-XX:TieredStopAtLevel=1``: the client compiler only. A GC job is short or I/O bound; the
  server compiler's threads compete with the job for the cores (docs/benchmarks.md has the
  figures).
- ``-XX:SharedArchiveFile=<archive>``: Spark's classes mapped from a class-data-sharing archive
  (JDK AppCDS) instead of loaded and verified again by every job. The archive is made once per
  Spark installation, Java and worker by a small Spark job (``-XX:ArchiveClassesAtExit``) touching
  what the GC jobs use, under a file lock (tasks running at once wait for one maker), in
  ``$LAKEFS_GC_JVM_CACHE_DIR``, else the package's cache (:func:`lakefs_gc.spark.bundle.cache_dir`),
  a directory only this user may write (an archive is loaded code). If making it fails, the jobs run without it and the next attempt is a day later.

It is only a cache: a JVM whose class path differs from the archive's loads classes as usual.
Only the driver's JVM gets these options (the task sets ``spark.driver.extraJavaOptions``; it runs
on the Airflow worker, in client mode on every master); executors on a cluster start as the cluster
starts them. The options come first, so a user's own ``spark.driver.extraJavaOptions`` overrides
them (e.g. ``-XX:TieredStopAtLevel=4``); the config's ``spark.fast_start: false`` leaves them out.

``python -m lakefs_gc.spark.jvm [SPARK_SUBMIT]`` makes the archive now and prints the options
(``scripts/setup.sh`` runs it, so the demo's first job does not pay for it).
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

log = logging.getLogger(__name__)

C1_ONLY = "-XX:TieredStopAtLevel=1"
ENV_ARCHIVE_DIR = "LAKEFS_GC_JVM_CACHE_DIR"
RETRY_AFTER_S = 86_400  # after a failed attempt to make the archive
MAKE_TIMEOUT_S = 300

# What the archive's job touches: DataFrames, Parquet written and read, a join and a shuffle, an
# RDD of Python rows made a DataFrame, a Python RDD, and Arrow batches through Python
_JOB = """
import tempfile
from pyspark.sql import SparkSession
spark = SparkSession.builder.appName("lakefs-gc: class archive").getOrCreate()
d = tempfile.mkdtemp()
rows = spark.sparkContext.parallelize([(f"data/s/{i}", i) for i in range(100)], 2)
spark.createDataFrame(rows, "address string, size long").write.mode("overwrite").parquet(d + "/a")
a = spark.read.parquet(d + "/a")
a.join(a.select("address").limit(10), on="address", how="left_anti").distinct().count()
a.mapInArrow(lambda batches: batches, a.schema).count()
spark.sparkContext.parallelize(range(8), 2).mapPartitions(lambda it: [sum(it)]).collect()
spark.stop()
"""


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java") or "java"
    return os.path.realpath(java)


def _pyspark_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pyspark")
    except PackageNotFoundError:
        return ""


def archive_dir() -> Path:
    """
    Return ``$LAKEFS_GC_JVM_CACHE_DIR``, else ``jvm/`` in the package's cache.

    The package's cache: :func:`lakefs_gc.spark.bundle.cache_dir`. Private to this user either way.
    """
    from lakefs_gc.spark.bundle import cache_dir, private_dir

    configured = os.environ.get(ENV_ARCHIVE_DIR)
    if configured:
        return private_dir(Path(configured), "the JVM class archive's directory", ENV_ARCHIVE_DIR)
    return private_dir(cache_dir() / "jvm", "the JVM class archive's directory", ENV_ARCHIVE_DIR)


def archive_path(spark_binary: str, cache: Path | None = None) -> Path:
    """
    Return where the archive for this Spark binary and Java lives.

    Named by both: another Spark or Java gets its own.
    """
    binary = shutil.which(spark_binary) or spark_binary
    key = "|".join([os.path.realpath(binary), _java(), _pyspark_version()])
    return (cache or archive_dir()) / f"spark-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def _make(spark_binary: str, python: str, archive: Path) -> str | None:
    """Make the archive; None, or why it could not be made."""
    binary = shutil.which(spark_binary) or spark_binary
    env = {
        **os.environ,
        "PYSPARK_PYTHON": python,
        "PYSPARK_DRIVER_PYTHON": python,
        "PATH": os.pathsep.join([str(Path(python).parent), os.environ.get("PATH", "")]),
    }
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    with tempfile.TemporaryDirectory(prefix="lakefs-gc-jvm-") as tmp:
        job, partial = Path(tmp) / "job.py", Path(tmp) / "spark.jsa"
        job.write_text(_JOB)
        cmd = [
            binary,
            "--master",
            "local[2]",
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            f"spark.driver.extraJavaOptions={C1_ONLY} -XX:ArchiveClassesAtExit={partial}",
            str(job),
        ]
        try:
            r = subprocess.run(cmd, env=env, capture_output=True, timeout=MAKE_TIMEOUT_S, cwd=tmp, check=False)
        except subprocess.TimeoutExpired:
            return f"its Spark job took over {MAKE_TIMEOUT_S} s"
        except OSError as e:
            return f"{binary}: {e}"
        if r.returncode != 0 or not partial.is_file():
            tail = (r.stderr or b"").decode(errors="replace").strip().splitlines()[-1:]
            return f"its Spark job exited {r.returncode}" + (f": {tail[0]}" if tail else "")
        fd, part = tempfile.mkstemp(prefix=archive.name + ".", suffix=".part", dir=archive.parent)
        os.close(fd)
        shutil.move(str(partial), part)
        os.chmod(part, 0o600)
        os.replace(part, archive)
    return None


def class_archive(spark_binary: str, python: str | None = None, cache: Path | None = None) -> Path | None:
    """
    Return the class archive for ``spark_binary``, made on first use.

    None when it cannot be made (the reason is logged; the next attempt is :data:`RETRY_AFTER_S` later).
    """
    archive = archive_path(spark_binary, cache)
    if archive.is_file():
        return archive
    failed = archive.with_name(archive.name + ".failed")
    with open(archive.with_name(archive.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one maker; the others wait for its archive
        if archive.is_file():
            return archive
        if failed.is_file() and time.time() - failed.stat().st_mtime < RETRY_AFTER_S:
            return None
        t0 = time.monotonic()
        log.info("making the Spark driver's class archive %s (once per Spark installation)", archive)
        why = _make(spark_binary, python or sys.executable, archive)
        if why is not None:
            failed.write_text(why + "\n")
            log.warning(
                "no class archive for the Spark driver (%s); the jobs start without it. Next attempt in "
                "a day, or remove %s",
                why,
                failed,
            )
            return None
        failed.unlink(missing_ok=True)
        log.info("class archive made in %.1f s", time.monotonic() - t0)
    return archive


def driver_java_options(spark_binary: str, python: str | None = None, cache: Path | None = None) -> str:
    """
    Return the driver JVM's fast-start options (C1 only, and the class archive when there is one).

    A cache that cannot be used (not private, not writable) leaves the archive out, never fails the task.
    """
    try:
        archive = class_archive(spark_binary, python, cache)
    except (OSError, RuntimeError) as e:
        log.warning("no class archive for the Spark driver: %s", e)
        archive = None
    return f"{C1_ONLY} -XX:SharedArchiveFile={archive}" if archive else C1_ONLY


def with_driver_options(conf: dict[str, str], options: str) -> dict[str, str]:
    """``conf`` with ``options`` before the driver's own extra Java options (the user's win)."""
    key = "spark.driver.extraJavaOptions"
    own = str(conf.get(key) or "").strip()
    if own.startswith(options):  # a retry's: already there
        return dict(conf)
    return {**conf, key: f"{options} {own}".strip()}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    binary = args[0] if args else str(Path(sys.executable).parent / "spark-submit")
    print(driver_java_options(binary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
