"""Where the golden files are: tests/golden/ (real SSTables written by lakeFS and RocksDB, their
provenance in its README; override: LAKEFS_GC_GOLDEN)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(os.environ.get("LAKEFS_GC_GOLDEN", REPO / "tests" / "golden"))
LAKEFS_SST = GOLDEN / "lakefs-sst"
PEBBLE = GOLDEN / "pebble-testdata"


def require_golden() -> Path:
    if not (LAKEFS_SST / "range.sst").is_file():
        raise FileNotFoundError(
            f"golden files not found under {GOLDEN}: they ship in tests/golden/; set LAKEFS_GC_GOLDEN to another copy"
        )
    return GOLDEN


def h_txt_records() -> list[tuple[bytes, bytes]]:
    out = []
    for line in (PEBBLE / "h.txt").read_text().splitlines():
        count, word = line.split()
        out.append((word.encode(), count.encode()))
    return out
