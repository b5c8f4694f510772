"""
Airflow adapters for lakeFS garbage collection: the lakeFS hook and the GC operators.

Thin: they read connections and Params, call the ``lakefs_gc`` package or spark-submit the jobs
inside it (``lakefs_gc/jobs``), and hand a small typed result to the next task by XCom.
Registered as an Airflow provider (entry point ``apache_airflow_provider``): the ``lakefs_gc``
connection type (not ``lakefs``: Treeverse's ``airflow-provider-lakefs`` registers that one, and
many lakeFS users have it; the hook reads its connections too), its form's labels, help texts and extra fields come from
:func:`get_provider_info`, which Airflow 3 reads without importing the hook.
"""

from __future__ import annotations

from typing import Any

from lakefs_gc import __version__

# The lakeFS connection's extras that the form shows as fields of their own; the hook reads them
# from the connection's extra JSON by these names (lakefs_gc_airflow.hooks.LakeFSHook).
LAKEFS_CONN_FIELDS: dict[str, dict[str, Any]] = {
    "local_blockstore_root": {
        "label": "Local blockstore root",
        "description": "Only for repositories on local:// namespaces: lakeFS's blockstore.local.path as the "
        "GC's Airflow and Spark workers see it (lakeFS keeps local://repo1 at <root>/repo1). "
        "Leave empty for s3:// namespaces.",
        "schema": {"type": ["string", "null"]},
    },
    "max_retries": {
        "label": "Max retries",
        "description": "Retries of one lakeFS call after a 5xx, 429 or connection error (other 4xx are never "
        "retried). Empty: 5.",
        "schema": {"type": ["integer", "null"], "minimum": 0},
    },
    "backoff_base": {
        "label": "Backoff base (seconds)",
        "description": "The first retry waits up to this long, doubling each retry (full jitter). Empty: 0.5.",
        "schema": {"type": ["number", "null"], "minimum": 0},
    },
    "backoff_max": {
        "label": "Backoff max (seconds)",
        "description": "The longest wait between two retries. Empty: 20.",
        "schema": {"type": ["number", "null"], "minimum": 0},
    },
    "connect_timeout": {
        "label": "Connect timeout (seconds)",
        "description": "How long one attempt waits to connect to lakeFS. Once the retries are spent on an "
        "unreachable lakeFS, the task fails at once naming the endpoint. Empty: 10.",
        "schema": {"type": ["number", "null"], "minimum": 0},
    },
}

LAKEFS_UI_FIELD_BEHAVIOUR: dict[str, Any] = {
    # Port stays: Airflow 3.3's Test button in the connections list sends a missing port as 0 and
    # is refused ("The host or port to test differs from the stored connection") unless it is set.
    "hidden-fields": ["schema"],
    "relabeling": {"host": "lakeFS endpoint", "login": "Access key ID", "password": "Secret access key"},
    "placeholders": {
        "host": "http://lakefs.example.com:8000 (/api/v1 is appended when missing)",
        "port": "8000 (used when the endpoint URL has no port; set it for the Test button)",
        "login": "AKIAIOSFOLQUICKSTART",
        "password": "the access key's secret",
        "local_blockstore_root": "/home/lakefs/lakefs/data/block",
        "max_retries": "5",
        "backoff_base": "0.5",
        "backoff_max": "20",
        "connect_timeout": "10",
    },
}


def get_provider_info() -> dict[str, Any]:
    """
    Return the provider metadata read by Airflow's ProvidersManager (no imports of hooks here: kept cheap).

    ``conn-fields`` and ``ui-field-behaviour`` are what Airflow 3 builds the connection form from
    (the hook's ``get_ui_field_behaviour`` is deprecated since Airflow 3.2 and not defined).
    """
    return {
        "package-name": "lakefs-gc",
        "name": "lakeFS garbage collection",
        "description": "lakeFS garbage collection as Airflow DAGs with PySpark jobs: the lakefs_gc connection type "
        "(LakeFSHook, which also reads airflow-provider-lakefs's lakefs connections), the GC operators and the DAG factory.",
        "versions": [__version__],
        "connection-types": [
            {
                "connection-type": "lakefs_gc",
                "hook-class-name": "lakefs_gc_airflow.hooks.LakeFSHook",
                "hook-name": "lakeFS (garbage collection)",
                "ui-field-behaviour": LAKEFS_UI_FIELD_BEHAVIOUR,
                "conn-fields": LAKEFS_CONN_FIELDS,
            },
        ],
        "notifications": ["lakefs_gc_airflow.notifiers.GCRunNotifier"],
        "extra-links": [
            "lakefs_gc_airflow.links.GCReportLink",
            "lakefs_gc_airflow.links.LakeFSRepositoryLink",
            "lakefs_gc_airflow.links.GCPageLink",
        ],
    }
