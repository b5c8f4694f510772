"""Benchmarks, run on demand: `.venv/bin/python -m bench [NAME [ARGS...]]` (default: all, default sizes).

sstable   SSTable decoding beside a floor (bench/sstable_bench.py)
gc        the GC DAG on 1,000,000 objects beside floors (bench/gc_bench.py; --help for sizes)
delete    the deleter against moto server and local disk beside floors (bench/delete_bench.py)
incremental  a clean GC run, 1% churn, then an incremental run: listed objects, ranges read and
          wall time per step of both (bench/incremental_bench.py; --help for sizes; not part of the
          default run)
tiny      the fixed cost: the demo's tiny repository end to end, per task, beside spark-submit and
          Airflow floors (bench/tiny_bench.py)
list      listing a slice, the SDK's way and the GC's (obstore into Arrow), on S3, Azurite,
          fake-gcs-server and local disk: keys/s and client CPU per key (bench/list_bench.py)
inventory list_slices from an S3 Inventory (CSV, Parquet) beside LIST on the same namespace, an
          inventory of --rows rows read alone, and list_slices alone from inventories of --step-rows
          rows (bench/inventory_bench.py; not part of the default run)
staged    reading the staged entries through lakeFS's API beside lakeFS's own mark (bench/staged_bench.py)
chaos     faults in the compose stack while people write: --runs N --seed S (bench/chaos.py; needs
          Docker: scripts/setup.sh --stack; not part of the default run)
reference differential runs against lakeFS's own Spark GC, with its timings beside ours
          (bench/reference.py; needs LAKEFS_GC_REFERENCE_JAR; not part of the default run)
"""

from __future__ import annotations

import importlib
import sys

BENCHES = {
    "sstable": "bench.sstable_bench",
    "gc": "bench.gc_bench",
    "delete": "bench.delete_bench",
    "staged": "bench.staged_bench",
    "reference": "bench.reference",
    "incremental": "bench.incremental_bench",
    "tiny": "bench.tiny_bench",
    "list": "bench.list_bench",
    "inventory": "bench.inventory_bench",
    "chaos": "bench.chaos",
}
DEFAULT = ("sstable", "gc", "delete", "staged", "tiny")

if len(sys.argv) > 1:
    name, args = sys.argv[1], sys.argv[2:]
    if name not in BENCHES:
        sys.exit(f"unknown benchmark {name!r}; choose from {', '.join(BENCHES)}")
    runs = [(name, args)]
else:
    runs = [(name, []) for name in DEFAULT]
status = 0
for name, args in runs:
    print(f"=== {name} ===")
    mod = importlib.import_module(BENCHES[name])
    status = mod.main(args) or status
sys.exit(status)
