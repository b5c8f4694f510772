#!/usr/bin/env bash
# The gates (`make lint`; `make test` runs them first; pre-commit runs the same): no module over 450
# lines (scripts/module_lines.py), ruff's formatter (`ruff format` fixes what it finds), ruff with
# Airflow's rule set for providers, then mypy on include/ and plugins/, strict on lakefs_gc
# (pyproject.toml's [tool.ruff] and [tool.mypy]). Versions: requirements-dev.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
"$VENV/bin/python" scripts/module_lines.py
"$VENV/bin/ruff" format --check --no-cache .
"$VENV/bin/ruff" check --no-cache .
# mypy's cache outside the checkout (a fresh clone checks everything: about a minute)
"$VENV/bin/mypy" --cache-dir "${XDG_CACHE_HOME:-$HOME/.cache}/lakefs-gc/mypy"
