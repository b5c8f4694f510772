"""The common shell of every Spark job: arguments, session, secrets, result file, clear failure."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

from lakefs_gc.runmeta import read_meta, write_meta


class StepFailed(RuntimeError):
    """The step ran but must fail the task (e.g. keys that could not be deleted)."""


def run(step: str, fn: Callable[[Any, dict, Any], dict], argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"jobs/{step}.py", description=f"lakeFS GC step {step}")
    parser.add_argument("--meta", required=True, help="JSON file with the run metadata (no secrets)")
    parser.add_argument("--result", required=True, help="where to write the JSON result of this step")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {step} %(levelname)s %(message)s")
    meta = read_meta(args.meta)

    from pyspark.sql import SparkSession

    from lakefs_gc.spark_steps import Secrets

    spark = SparkSession.builder.appName(f"lakefs-gc {step} {meta.get('repository', '')}").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    t0 = time.monotonic()
    try:
        result = fn(spark, meta, Secrets.from_env())
        result[f"{step}_seconds"] = round(time.monotonic() - t0, 3)
        write_meta(result, args.result)
        if result.get("delete_failed"):
            raise StepFailed(f"{result['delete_failed']} keys could not be deleted after retries; dead letters "
                             f"(key, error_code, message, attempts) at {result.get('dead_letters')}; a later "
                             f"sweep of the same mark retries them. The task fails so they are not forgotten")
    except Exception as exc:  # reported on one line, then the job exits non-zero: nothing after it runs
        print(f"lakefs-gc {step}: FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
        logging.getLogger(step).error("step %s failed", step, exc_info=True)  # the whole traceback, in the task log
        return 1
    finally:
        spark.stop()
    print(f"lakefs-gc {step}: ok {result}")
    return 0
