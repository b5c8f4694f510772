"""
lakeFS garbage collection: the product (no Airflow imports).

The Airflow layer is ``lakefs_gc_airflow``.
"""

from __future__ import annotations

__version__ = "0.1.0"  # the distribution's version (pyproject.toml)
