"""The size gate of scripts/lint.sh: no module over MAX_LINES lines in the product's sources.

Checked: the Python modules under include/ and plugins/ (the generated *_pb2.py aside) and the GC
page's TypeScript sources. A room that grows past it is split by what it does, not trimmed.

    python scripts/module_lines.py [ROOT]     # exit status 1, each module over the limit named
"""

from __future__ import annotations

import sys
from pathlib import Path

MAX_LINES = 450
ROOTS = ("include", "plugins")
SUFFIXES = (".py", ".ts", ".tsx")
SKIP_PARTS = {"node_modules", "dist", "__pycache__"}


def too_long(root: Path) -> list[tuple[Path, int]]:
    """Return each checked module of ``root`` over :data:`MAX_LINES` lines, with its count."""
    out = []
    for top in ROOTS:
        for path in sorted((root / top).rglob("*")):
            if (
                path.suffix not in SUFFIXES
                or not path.is_file()
                or path.name.endswith("_pb2.py")
                or SKIP_PARTS & set(path.parts)
            ):
                continue
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > MAX_LINES:
                out.append((path.relative_to(root), lines))
    return out


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parents[1]
    over = too_long(root)
    for path, lines in over:
        print(f"{path}: {lines} lines, more than {MAX_LINES}: split it by what it does", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
