"""Bad entries of the GC repositories file, as an Airflow import error of this file.

`gc_dags.py` builds the DAG of every good entry of `config/gc_repositories.yaml`
(`$LAKEFS_GC_CONFIG`) and leaves the bad ones out. This file raises one error naming every problem
of each bad entry (`FILE:LINE: entry: field: ...`), which Airflow lists under "Dag Import Errors". It is a file of its own because
Airflow marks every DAG of a file that fails to import as stale: raised in `gc_dags.py`, one typo
would hide every repository's DAG. With a good file it defines no DAG and imports cleanly.
"""
# The file is the docstring, the import and one call (tests/airflow/dags/test_dags.py): no __future__
# import, which nothing here needs.

from lakefs_gc.config import raise_entry_errors

raise_entry_errors()
