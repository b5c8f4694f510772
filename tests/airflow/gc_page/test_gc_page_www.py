"""The GC page's npm project (``lakefs_gc_airflow/gc_page/www``) as the build and ``make test`` need it:
every package pinned to an exact version, the lock agreeing with them, and the bundle taking from
the host only React, Chakra UI and Emotion (Ajv and chart.js are inside it). The page's own UI tests
are vitest's (``www/test/``, ``npm test``, run by ``make test`` before pytest)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from lakefs_gc_airflow.gc_page import runs

WWW = Path(runs.__file__).parent / "www"
HOST = {"react", "react-dom", "react/jsx-runtime", "@chakra-ui/react", "@emotion/react"}


def test_every_package_is_pinned_exactly_and_locked_as_pinned():
    package = json.loads((WWW / "package.json").read_text())
    lock = json.loads((WWW / "package-lock.json").read_text())
    root = lock["packages"][""]
    for kind in ("dependencies", "devDependencies"):
        for name, version in package[kind].items():
            assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name} {version}: pin an exact version"
            assert lock["packages"][f"node_modules/{name}"]["version"] == version, (
                f"{name}: the lock is not at {version}"
            )
        assert root[kind] == package[kind], f"package-lock.json's {kind} differ from package.json's: npm install"
    assert package["scripts"]["test"] == "vitest run"
    assert "ajv" in package["dependencies"], "the trigger form's field checks are Ajv's"


def test_the_bundle_takes_only_react_chakra_and_emotion_from_the_host():
    head = (WWW / "dist" / "main.umd.js").read_text()[:2000]
    required = set(re.findall(r'require\("([^"]+)"\)', head.split("define", 1)[0]))
    assert "react" in required, required
    assert required <= HOST, required
    assert not re.search(r'require\("(ajv|chart\.js)', head), "Ajv and chart.js are bundled, not the host's"
