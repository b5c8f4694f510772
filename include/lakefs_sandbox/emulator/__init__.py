"""
A lakeFS REST API emulator for tests and the Docker-less demo (never imported by production code).

Start it with ``python -m lakefs_sandbox.emulator --listen 127.0.0.1:8000 --state DIR --access-key K
--secret-key S`` and point ``lakefs_sdk`` at ``http://127.0.0.1:8000/api/v1``. See README.md here.
"""

from __future__ import annotations

from .core import APIError, Catalog, Settings

__all__ = ["APIError", "Catalog", "Settings", "create_app"]


def create_app(settings: Settings):
    from .app import create_app as _create

    return _create(settings)
