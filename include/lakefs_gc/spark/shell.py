"""
The common shell of every Spark job.

Arguments, session, secrets, the typed input and result files, and a failure the task can act on.

    spark-submit [--py-files lakefs_gc.zip] lakefs_gc/jobs/<step>.py --input INPUT.json \
        --result RESULT.json [--secrets SECRETS.json]

(the entry points and the zip: :mod:`lakefs_gc.spark.bundle`)

``--input`` holds the run context and the results of the tasks this step reads
(:class:`lakefs_gc.contract.StepInputs`, no secrets); ``--secrets`` the lakeFS and S3 keys
(:func:`lakefs_gc.spark.runtime.write_secrets`; without it they come from the environment).
``--result`` receives this step's result type as a small JSON object, which the operator hands on
by XCom, or, when the step fails, ``{"failure": {"kind", "type", "message"}}``
(:class:`lakefs_gc.contract.StepFailure`): kind ``refused`` for a
:class:`lakefs_gc.errors.Refusal` (the task fails at once), else ``failed`` (Airflow retries it).
A result whose ``incomplete`` is set (delete: dead letters) is a ``failed`` step. Spark logs at
WARN (the task passes ``--conf spark.log.level=WARN`` unless the entry's ``spark.conf`` sets it; a
job started without it is set to WARN once its session is up); the job's own lines stay at INFO and its
result is its last line, readable (:func:`lakefs_gc.report.render.step_line`). A failure also
prints its cause on one line (a ``failed`` one logs its traceback at ERROR; both reach the task
log), and the job exits 1.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from lakefs_gc.contract import (
    REFUSED,
    CandidatesResult,
    CommittedResult,
    DeleteResult,
    SlicesResult,
    SparkStepResult,
    StepInputs,
    failure_of,
    inputs_from_wire,
    read_json,
    to_wire,
    write_json,
)
from lakefs_gc.errors import Unreachable
from lakefs_gc.spark.runtime import job_environ

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# the result types of the Spark steps (each a SparkStepResult, and each timed: ``seconds``)
SparkResult = CommittedResult | SlicesResult | CandidatesResult | DeleteResult
# a Spark step on a session: ``lakefs_gc.steps.run_on_spark`` with the step's id (the jobs' entry points)
StepFn = Callable[["SparkSession", StepInputs, Mapping[str, str]], SparkResult]


LOG_LEVEL_CONF = "spark.log.level"  # Spark's own logging from the SparkContext's start (the task sets it)
DEFAULT_SPARK_LOG_LEVEL = "WARN"  # our lines (lakefs_gc.*, Python logging) stay at INFO


class StepFailed(RuntimeError):
    """The step ran to its end but must fail the task: its result's ``incomplete``."""


def check(step: str, result: SparkStepResult) -> None:
    """Fail a step whose result records a failure that must not be forgotten."""
    if result.incomplete:
        raise StepFailed(result.incomplete)


def record_failure(step: str, exc: BaseException, result_path: str, where: str = "") -> int:
    """Write ``exc`` as the step's failure record, say why on stderr; returns the exit status (1)."""
    failure = failure_of(exc)
    word = "REFUSED" if failure.kind == REFUSED else "FAILED"
    print(f"lakefs-gc {step}: {word}: {where}{failure.type}: {failure.message}", file=sys.stderr)
    if failure.kind != REFUSED:  # a refusal's message says it all; anything else may need its traceback
        # (an unreachable service's message says it all too: its traceback only at DEBUG)
        level = logging.DEBUG if isinstance(exc, Unreachable) else logging.ERROR
        logging.getLogger(f"lakefs_gc.{step}").log(level, "step %s failed", step, exc_info=exc)
    try:
        write_json({"failure": to_wire(replace(failure, message=where + failure.message))}, result_path)
    except Exception as e:  # no record: the task sees a plain failure and retries
        print(f"lakefs-gc {step}: cannot write the failure to {result_path}: {type(e).__name__}: {e}", file=sys.stderr)
    return 1


def run_step(
    step: str, fn: StepFn, spark: SparkSession, inputs: StepInputs, environ: Mapping[str, str], result_path: str
) -> int:
    """Run one step on ``spark``; write its result, or its failure, to ``result_path``; return the job's exit status."""
    t0 = time.monotonic()
    try:
        result = replace(fn(spark, inputs, environ), seconds=round(time.monotonic() - t0, 3))
        check(step, result)
        write_json(to_wire(result), result_path)
    except Exception as exc:
        return record_failure(step, exc, result_path)
    from lakefs_gc.report.render import step_line

    print(f"lakefs-gc {step_line(step, result)}", flush=True)  # the result in one readable line
    return 0


def run(step: str, fn: StepFn, argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"lakefs_gc/jobs/gc_step.py {step}", description=f"lakeFS GC step {step}")
    parser.add_argument("--input", required=True, help="JSON file: the run context and the results this step reads")
    parser.add_argument("--result", required=True, help="where to write the JSON result of this step")
    parser.add_argument("--secrets", help="JSON file (mode 0600) with the lakeFS and S3 keys; default: the environment")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {step} %(levelname)s %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)

    from pyspark.sql import SparkSession

    try:
        inputs = inputs_from_wire(read_json(args.input))
    except Exception as exc:
        return record_failure(step, exc, args.result, where=f"unreadable input {args.input}: ")
    try:
        environ = job_environ(args.secrets)
    except Exception as exc:
        return record_failure(step, exc, args.result, where="secrets file: ")
    spark = SparkSession.builder.appName(f"lakefs-gc {step} {inputs.context.repository}").getOrCreate()
    if spark.sparkContext.getConf().get(LOG_LEVEL_CONF) is None:  # a job started by hand without it
        spark.sparkContext.setLogLevel(DEFAULT_SPARK_LOG_LEVEL)
    try:
        return run_step(step, fn, spark, inputs, environ, args.result)
    finally:
        spark.stop()
