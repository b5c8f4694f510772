"""Airflow adapters for lakeFS garbage collection: the lakeFS hook and the GC operators.

Thin: they read connections and Params, call the ``lakefs_gc`` package or spark-submit the jobs in
``jobs/``, and hand a small run-metadata dict to the next task by XCom. Registered as an Airflow
provider (entry point ``apache_airflow_provider``) so the ``lakefs`` connection type shows in the UI.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def get_provider_info() -> dict[str, Any]:
    """Provider metadata read by Airflow's ProvidersManager (no imports of hooks here: kept cheap)."""
    return {
        "package-name": "lakefs-gc",
        "name": "lakeFS garbage collection",
        "description": "lakeFS connection type and garbage-collection operators (hook: LakeFSHook).",
        "versions": [__version__],
        "connection-types": [
            {"connection-type": "lakefs", "hook-class-name": "lakefs_gc_airflow.hooks.LakeFSHook"},
        ],
        "extra-links": [
            "lakefs_gc_airflow.operators.GCReportLink",
            "lakefs_gc_airflow.operators.LakeFSRepositoryLink",
        ],
    }
