"""lakefs_gc_airflow.gc_page: where the UI finds the page's bundle."""

from __future__ import annotations

import pytest

from lakefs_gc_airflow.gc_page import bundle_path


@pytest.mark.parametrize(
    ("base_url", "path"),
    [
        ("", "/lakefs-gc/static/main.umd.js"),
        ("http://localhost:8080", "/lakefs-gc/static/main.umd.js"),
        ("http://localhost:8080/", "/lakefs-gc/static/main.umd.js"),
        ("https://example.test/airflow/", "/airflow/lakefs-gc/static/main.umd.js"),
    ],
)
def test_the_bundle_path_is_absolute_under_the_base_url(base_url, path):
    """Absolute: Airflow 3.2's UI imports a relative bundle_url as a bare module specifier and fails."""
    assert bundle_path(base_url) == path
