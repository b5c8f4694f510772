"""Benchmarks, run on demand: `.venv/bin/python -m bench [NAME ...]` (default: all)."""

import importlib
import sys

BENCHES = {"sstable": "bench.sstable_bench"}

names = sys.argv[1:] or list(BENCHES)
for name in names:
    if name not in BENCHES:
        sys.exit(f"unknown benchmark {name!r}; choose from {', '.join(BENCHES)}")
    print(f"=== {name} ===")
    importlib.import_module(BENCHES[name]).main()
