"""The common shell of every Spark job: arguments, session, the typed input and result files,
and a loud failure.

    spark-submit [--py-files build/lakefs_gc.zip] jobs/<step>.py --input INPUT.json --result RESULT.json

``--input`` holds the run context and the results of the tasks this step reads
(:class:`lakefs_gc.contract.StepInputs`, no secrets); ``--result`` receives this step's result
type as a small JSON object, which the operator hands on by XCom. A failure prints its cause on
one line, logs the whole traceback at ERROR (both reach the task log), and exits 1.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from lakefs_gc.contract import DeleteResult, StepInputs, inputs_from_wire, read_json, to_wire, write_json


class StepFailed(RuntimeError):
    """The step ran but must fail the task (e.g. keys that could not be deleted)."""


def check(step: str, result: Any) -> None:
    """Fail a step whose result records a failure that must not be forgotten."""
    if isinstance(result, DeleteResult) and result.counts.failed:
        raise StepFailed(f"{result.counts.failed} keys could not be deleted after retries; dead letters (key, "
                         f"error_code, message, attempts) at {result.dead_letters}; a later sweep of the same mark "
                         f"retries them. The task fails so they are not forgotten")


def run(step: str, fn: Callable[[Any, StepInputs], Any], argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"jobs/{step}.py", description=f"lakeFS GC step {step}")
    parser.add_argument("--input", required=True, help="JSON file: the run context and the results this step reads")
    parser.add_argument("--result", required=True, help="where to write the JSON result of this step")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {step} %(levelname)s %(message)s")
    log = logging.getLogger(f"lakefs_gc.{step}")

    from pyspark.sql import SparkSession

    try:
        inputs = inputs_from_wire(read_json(args.input))
    except Exception as exc:
        print(f"lakefs-gc {step}: FAILED: unreadable input {args.input}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    spark = SparkSession.builder.appName(f"lakefs-gc {step} {inputs.context.repository}").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    t0 = time.monotonic()
    try:
        result = fn(spark, inputs)
        result = replace(result, seconds=round(time.monotonic() - t0, 3))
        write_json(to_wire(result), args.result)
        check(step, result)
    except Exception as exc:  # the job exits non-zero: nothing after it runs
        print(f"lakefs-gc {step}: FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
        log.error("step %s failed", step, exc_info=True)  # the whole traceback, in the task log
        return 1
    finally:
        spark.stop()
    print(f"lakefs-gc {step}: ok {to_wire(result)}")
    return 0
