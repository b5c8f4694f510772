"""The real-lakeFS tier: every test here is judged by lakeFS 1.84.0 itself (the server
``scripts/setup.sh`` builds from the Go module proxy; ``tests/conftest.py``'s ``real_lakefs``
fixture starts it on each blockstore). Marked ``real_lakefs``; never skipped: a missing binary is
a failure naming the set-up step."""

from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True)  # before -m deselects by markers
def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/real_lakefs/" in item.path.as_posix():
            item.add_marker(pytest.mark.real_lakefs)
