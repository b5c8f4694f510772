"""
The extra links of ``save_report`` (tab "Details" of the task).

The run's report, the repository in lakeFS's UI, and the repository on the GC page. Registered in
``get_provider_info()["extra-links"]``; none holds a secret (the first two read URLs from the
task's result, the third builds a UI path).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow.sdk import BaseOperator, BaseOperatorLink

if TYPE_CHECKING:
    from airflow.sdk.types import TaskInstanceKey


class _ReportResultLink(BaseOperatorLink):
    """
    A URL from ``save_report``'s result (its XCom ``return_value``, a ``ReportResult``).

    Empty, so the UI shows no target, when the task has none.
    """

    field = ""

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        from airflow.sdk.execution_time.xcom import XCom

        value = XCom.get_value(ti_key=ti_key, key="return_value")
        return str(value.get(self.field) or "") if isinstance(value, dict) else ""


class GCReportLink(_ReportResultLink):
    """
    The run's ``summary.json`` where a browser can open it.

    The S3 console for AWS, the object's path-style URL on an S3-compatible endpoint
    (``lakefs_gc.report.links.report_url``).
    """

    name = "GC report (summary.json)"
    field = "report_url"


class LakeFSRepositoryLink(_ReportResultLink):
    """The repository in lakeFS's UI (``<endpoint>/repositories/<repo>``)."""

    name = "lakeFS repository"
    field = "lakefs_url"


class GCPageLink(BaseOperatorLink):
    """
    The repository's runs over time on the GC page, under the UI's own path (``[api] base_url``).

    The page: ``lakefs_gc_airflow.gc_page``, its DAG's "lakeFS GC (DAG)" tab.
    """

    name = "GC page"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        from urllib.parse import quote, urlsplit

        from airflow.configuration import conf

        from lakefs_gc_airflow.gc_page import URL_ROUTE

        base = urlsplit(conf.get("api", "base_url", fallback="") or "").path.rstrip("/")
        return f"{base}/dags/{quote(ti_key.dag_id, safe='')}/plugin/{URL_ROUTE}-dag"
