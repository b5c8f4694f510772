"""The README stays a front page: under 300 lines, every file it links to there (the rest is in docs/)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_LINES = 300


def test_the_readme_is_under_300_lines():
    lines = len((REPO / "README.md").read_text().splitlines())
    assert lines < MAX_LINES, f"README.md has {lines} lines: move the detail into docs/ and link to it"


def test_every_file_the_readme_links_to_exists():
    text = (REPO / "README.md").read_text()
    links = re.findall(r"\]\(((?!https?://)[^)#\s]+)\)", text)
    assert links, "the README links to its docs"
    missing = [link for link in links if not (REPO / link).exists()]
    assert missing == []
