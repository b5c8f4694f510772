"""Run a GC Spark job for real: spark-submit from the venv, local[2], --py-files zip."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lakefs_gc.contract import StepInputs, inputs_to_wire, read_result
from tests.support.jvm import java_options

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
ZIP = REPO / "build" / "lakefs_gc.zip"


PACKAGE_JOBS = REPO / "include" / "lakefs_gc" / "jobs"
TOP_LEVEL_JOBS = REPO / "jobs"  # the design's jobs/: thin entry points into the package's


def prepare(
    step: str, inputs: StepInputs | dict, tmp: Path, extra_env: dict | None = None, jobs_dir: Path = PACKAGE_JOBS
):
    """(argv, env, result path) of a spark-submit of ``<jobs_dir>/gc_step.py <step>`` (the package's job by default)
    with ``inputs`` (typed, or a raw dict to test what a job does with a malformed input)."""
    assert ZIP.is_file(), "build/lakefs_gc.zip missing: run scripts/setup.sh"
    tmp.mkdir(parents=True, exist_ok=True)
    meta_path, result_path = tmp / f"{step}.input.json", tmp / f"{step}.result.json"
    meta_path.write_text(json.dumps(inputs if isinstance(inputs, dict) else inputs_to_wire(inputs)))
    result_path.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        {
            "PATH": f"{VENV_BIN}:{env.get('PATH', '')}",
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_LOCAL_IP": "127.0.0.1",
        }
    )
    env.update(extra_env or {})
    cmd = [
        str(VENV_BIN / "spark-submit"),
        "--master",
        "local[2]",
        "--py-files",
        str(ZIP),
        "--conf",
        f"spark.driver.extraJavaOptions={java_options()}",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.sql.shuffle.partitions=4",
        "--conf",
        "spark.log.level=WARN",  # as the Airflow task passes it (GCSparkSubmitOperator)
        str(jobs_dir / "gc_step.py"),
        step,
        "--input",
        str(meta_path),
        "--result",
        str(result_path),
    ]
    return cmd, env, result_path


def submit(
    step: str,
    inputs: StepInputs | dict,
    tmp: Path,
    extra_env: dict | None = None,
    timeout: int = 300,
    jobs_dir: Path = PACKAGE_JOBS,
):
    """Returns (returncode, typed result or None, output). The job's own messages reach stdout:
    spark-submit runs the Python driver under the JVM, which merges its streams."""
    cmd, env, result_path = prepare(step, inputs, tmp, extra_env, jobs_dir)
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    result = read_result(step, json.loads(result_path.read_text())) if result_path.exists() else None
    return res.returncode, result, res.stdout + res.stderr
