"""The spark-submit entry point of every GC step, where the design lays the jobs out (``jobs/``):

    spark-submit --py-files build/lakefs_gc.zip jobs/gc_step.py STEP --input INPUT.json --result RESULT.json

A thin entry point: the job itself is ``lakefs_gc.jobs.gc_step``, inside the package, so that an
installed wheel needs no checkout (the operator uses that one unless the config's ``spark.jobs_dir``
names this folder: ``jobs_dir: jobs``).
"""

from __future__ import annotations

import runpy

if __name__ == "__main__":
    runpy.run_module("lakefs_gc.jobs.gc_step", run_name="__main__", alter_sys=True)
