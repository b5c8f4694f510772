"""
The Spark jobs' entry points, one file per Spark step, shipped inside the package.

So an installed ``lakefs_gc`` can be spark-submitted without a checkout of the repository:

    spark-submit --py-files <bundle.zip> .../lakefs_gc/jobs/<step>.py --input IN.json --result OUT.json

Each file only calls :func:`lakefs_gc.spark.shell.run` with its step run on the job's session
(:func:`lakefs_gc.steps.run_on_spark`: ``lakefs_gc.steps.<step>.run``, the one in
:data:`lakefs_gc.steps.STEP_FUNCTIONS`, on a :class:`lakefs_gc.engine.SparkEngine`). Where they are,
and the ``--py-files`` zip of the package: :mod:`lakefs_gc.spark.bundle`.
"""
