#!/usr/bin/env bash
# The main job. Today (the GC DAG is not built yet) it exercises what exists: it writes a
# lakeFS-format range and metarange with our writer, reads them back with our reader, checks
# the IDs, and dumps them and a real lakeFS range with the lakefs-gc CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python scripts/demo_sstables.py
