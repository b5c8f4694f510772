"""Every lakeFS GC DAG: one per repository of the repositories file ($LAKEFS_GC_CONFIG), the restore
DAG, and lakefs_gc_config_errors while an entry is bad (lakefs_gc_airflow.dags)."""
# The file users copy is the docstring, the import and one call (tests/airflow/dags/test_dags.py): no
# __future__ import, which nothing here needs.

from lakefs_gc_airflow.dags import all_dags

globals().update(all_dags())
