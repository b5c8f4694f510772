"""Fail (exit 1) unless every ``name==version`` pin of a requirements file is the installed version.

Run by docker/Dockerfile right after ``pip install -r requirements.txt`` on top of the Airflow base
image, so an upgrade or downgrade of a pinned package (apache-airflow above all) breaks the build
instead of the running stack. Standard library only.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata

PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*==\s*([^\s;#]+)")


def pins(path: str) -> list[tuple[str, str]]:
    out = []
    with open(path) as f:
        for line in f:
            m = PIN.match(line)
            if m:
                out.append((m.group(1), m.group(2)))
    return out


def main(argv: list[str]) -> int:
    path = argv[1] if len(argv) > 1 else "requirements.txt"
    found = pins(path)
    if not found:
        print(f"check_pins: no name==version pins in {path}", file=sys.stderr)
        return 1
    bad = []
    for name, want in found:
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            have = None
        if have != want:
            bad.append(f"{name}: pinned {want}, installed {have}")
    if bad:
        print("check_pins: installed versions differ from " + path + ":\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    print(f"check_pins: {len(found)} pins of {path} installed exactly")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
