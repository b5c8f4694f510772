"""Where the golden files are: ../shared/golden beside the repository (override: LAKEFS_GC_GOLDEN)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(os.environ.get("LAKEFS_GC_GOLDEN", REPO.parent / "shared" / "golden"))
LAKEFS_SST = GOLDEN / "lakefs-sst"
PEBBLE = GOLDEN / "pebble-testdata"


def require_golden() -> Path:
    if not (LAKEFS_SST / "range.sst").is_file():
        raise FileNotFoundError(
            f"golden files not found under {GOLDEN}: put shared/ beside the repository or set LAKEFS_GC_GOLDEN")
    return GOLDEN


def h_txt_records() -> list[tuple[bytes, bytes]]:
    out = []
    for line in (PEBBLE / "h.txt").read_text().splitlines():
        count, word = line.split()
        out.append((word.encode(), count.encode()))
    return out
