"""The JVM options of every Spark driver the tests start (spark-submit jobs, Airflow's Spark
tasks, the in-process session): C1 only (the jobs are short), and Spark's classes mapped from a
class-data-sharing archive (JDK AppCDS) instead of loaded and verified again by each of the
suite's ~50 drivers: about 4 s and 4 CPU-s less per spark-submit on 2 cores.

The archive is made once per checkout (``build/test-cds/``), by the first test that asks, from a
small Spark job that touches what the GC jobs use (DataFrames, Parquet, a shuffle, a Python RDD);
a file lock serialises the pytest workers. It is only a cache: a JVM whose class path differs
(another venv, e.g. the wheel test's) prints a warning and loads classes as usual; if making it
fails, the options leave it out. Behaviour never depends on it."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CDS_DIR = REPO / "build" / "test-cds"
C1_ONLY = "-XX:TieredStopAtLevel=1"

_JOB = """
import sys, tempfile
from pyspark.sql import SparkSession
spark = SparkSession.builder.appName("lakefs-gc tests: class archive").getOrCreate()
d = tempfile.mkdtemp()
df = spark.createDataFrame([(f"data/s/{i}", i) for i in range(100)], "address string, size long")
df.write.mode("overwrite").parquet(d + "/a")
a = spark.read.parquet(d + "/a")
a.join(a.select("address").limit(10), on="address", how="left_anti").distinct().count()
spark.sparkContext.parallelize(range(8), 2).mapPartitions(lambda it: [sum(it)]).collect()
spark.stop()
"""

_options: str | None = None


def _archive() -> Path:
    import pyspark

    key = hashlib.sha256(f"{sys.prefix}|{pyspark.__version__}".encode()).hexdigest()[:12]
    return CDS_DIR / f"spark-{key}.jsa"


def _make(archive: Path) -> bool:
    venv_bin = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{venv_bin}:{os.environ.get('PATH', '')}", "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    with tempfile.TemporaryDirectory() as tmp:
        job, partial = Path(tmp) / "job.py", Path(tmp) / "spark.jsa"
        job.write_text(_JOB)
        cmd = [str(venv_bin / "spark-submit"), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
               "--conf", f"spark.driver.extraJavaOptions={C1_ONLY} -XX:ArchiveClassesAtExit={partial}", str(job)]
        try:
            r = subprocess.run(cmd, env=env, capture_output=True, timeout=300)
        except subprocess.TimeoutExpired:
            return False
        if r.returncode != 0 or not partial.is_file():
            return False
        shutil.move(str(partial), str(archive) + ".part")
        os.replace(str(archive) + ".part", archive)
    return True


def java_options() -> str:
    """``spark.driver.extraJavaOptions`` for a test's Spark driver (made on first use)."""
    global _options
    if _options is None:
        archive = _archive()
        CDS_DIR.mkdir(parents=True, exist_ok=True)
        with open(CDS_DIR / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            ok = archive.is_file() or _make(archive)
        _options = f"{C1_ONLY} -XX:SharedArchiveFile={archive}" if ok else C1_ONLY
    return _options
