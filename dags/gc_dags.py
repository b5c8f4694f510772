"""Every lakeFS GC DAG: one per repository of the repositories file ($LAKEFS_GC_CONFIG), the restore
DAG, and lakefs_gc_config_errors while an entry is bad (lakefs_gc_airflow.dags)."""
from __future__ import annotations

from lakefs_gc_airflow.dags import all_dags

globals().update(all_dags())
