#!/usr/bin/env bash
# The main job: the GC DAG end to end on the embedded default (lakeFS emulator, Airflow on SQLite,
# Spark local[*]). See scripts/demo.py.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python scripts/demo.py "$@"
