"""
The GC page in Airflow's UI: an Airflow 3 plugin (entry point ``airflow.plugins``).

- ``fastapi_apps``: :mod:`.app` at ``/lakefs-gc`` (the runs of each repository, from its reports;
  every route checks Airflow's auth);
- ``react_apps``: the React bundle ``www/dist/main.umd.js`` (built from ``www/src`` with Airflow's
  React plugin template; charts with chart.js), twice: "lakeFS GC" in the Browse menu (every
  repository), and a "lakeFS GC" tab on each GC DAG (that repository).

Both are defined only in the api-server, as Airflow's own provider plugins do (edge3): a scheduler
or a task process that loads plugins imports nothing of FastAPI for them.
"""

from __future__ import annotations

import sys

from airflow.plugins_manager import AirflowPlugin

RUNNING_ON_APISERVER = (len(sys.argv) > 1 and sys.argv[1] == "api-server") or (
    len(sys.argv) > 2 and sys.argv[2].endswith("airflow/api_fastapi/main.py")
)

URL_ROUTE = "lakefs-gc"


def bundle_path(base_url: str | None = None) -> str:
    """
    Return the bundle's absolute path on the api-server, under ``[api] base_url``'s path.

    That path is ``/`` when ``base_url`` is unset. Absolute, not relative: Airflow 3.3's UI resolves
    a relative ``bundle_url`` against its ``<base href>``, but 3.2's imports it as it is, and a bare
    ``lakefs-gc/...`` is no module specifier there ("Failed to resolve module specifier"); an
    absolute path works on both.
    """
    from urllib.parse import urlsplit

    if base_url is None:
        from airflow.configuration import conf

        base_url = conf.get("api", "base_url", fallback="") or ""
    prefix = urlsplit(base_url).path.rstrip("/")
    return f"{prefix}/{URL_ROUTE}/static/main.umd.js"


def react_apps() -> list[dict]:
    # two entries, two URLs: the UI imports each bundle_url as an ES module once, and reads the global
    # the bundle sets right after; one URL for both would leave the second without its component
    bundle = bundle_path()
    return [
        {
            "name": "lakeFS GC",
            "bundle_url": f"{bundle}?view=all",
            "destination": "nav",
            "url_route": URL_ROUTE,
            "category": "browse",
        },
        {
            "name": "lakeFS GC (DAG)",
            "bundle_url": f"{bundle}?view=dag",
            "destination": "dag",
            "url_route": f"{URL_ROUTE}-dag",
        },
    ]


def fastapi_apps() -> list[dict]:
    from lakefs_gc_airflow.gc_page.app import URL_PREFIX, app

    return [{"app": app, "url_prefix": URL_PREFIX, "name": "lakeFS GC"}]


class LakeFSGCPlugin(AirflowPlugin):
    """The GC page: its FastAPI app and its React views, defined only in the api-server."""

    name = "lakefs_gc"
    fastapi_apps = fastapi_apps() if RUNNING_ON_APISERVER else []
    react_apps = react_apps() if RUNNING_ON_APISERVER else []
