"""
The Spark jobs' entry point, shipped inside the package: ``gc_step.py``, one for every Spark step.

So an installed ``lakefs_gc`` can be spark-submitted without a checkout of the repository:

    spark-submit --py-files <bundle.zip> .../lakefs_gc/jobs/gc_step.py <step> --input IN.json --result OUT.json

It only calls :func:`main`, which runs the step named by its first argument on the job's session
through the jobs' shell (:func:`lakefs_gc.spark.shell.run`, :func:`lakefs_gc.steps.run_on_spark`:
``lakefs_gc.steps.<step>.run``, the one in :data:`lakefs_gc.steps.STEP_FUNCTIONS`, on a Spark job's
engine). Where it is, and the ``--py-files`` zip of the package: :mod:`lakefs_gc.spark.bundle`.
"""

from __future__ import annotations

import sys
from functools import partial

from lakefs_gc.contract import SPARK_STEPS
from lakefs_gc.spark import shell
from lakefs_gc.steps import run_on_spark

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """
    Run the Spark step its first argument names (``gc_step.py STEP --input ... --result ...``).

    An unknown step is a usage error (exit status 2) naming the steps.
    """
    if not argv or argv[0] not in SPARK_STEPS:
        given = repr(argv[0]) if argv else "none"
        print(
            f"lakefs_gc/jobs/gc_step.py: the first argument names the Spark step ({given} given); one of "
            f"{', '.join(SPARK_STEPS)}",
            file=sys.stderr,
        )
        return 2
    return shell.run(argv[0], partial(run_on_spark, argv[0]), argv[1:])
