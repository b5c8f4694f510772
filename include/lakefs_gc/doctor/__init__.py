"""
``lakefs-gc doctor REPO``: everything a GC run needs, checked before any run, nothing of the user's deleted.

Each check is one line: ``PASS``, ``FAIL`` or ``WARN``, what was checked, what was found and, where
something is wrong, the fix. The checks (:mod:`lakefs_gc.cli_doctor` runs them in this order):
lakeFS (:mod:`.lakefs_checks`: reachable and its version, the repository, its GC rules, every call
a run makes, the grace period), the store (:mod:`.storage_checks`: each right tried on a scratch
key under the namespace, then removed; versioning, lifecycle and soft delete), the task's and the
cluster's Spark and Java (:mod:`.runtime_checks`), and the inventory when one is configured. The
least the run needs is :mod:`.policy`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TextIO

PASS, FAIL, WARN = "PASS", "FAIL", "WARN"


@dataclass(frozen=True)
class Line:
    """One check's outcome."""

    status: str  # PASS | FAIL | WARN
    what: str
    found: str
    fix: str = ""

    def text(self) -> str:
        found = " ".join(self.found.split())
        return f"{self.status}  {self.what}: {found}" + (f"; fix: {' '.join(self.fix.split())}" if self.fix else "")


@dataclass
class Report:
    """The lines so far, printed as they come (a slow check shows what came before it)."""

    out: TextIO
    lines: list[Line] = field(default_factory=list)

    def add(self, status: str, what: str, found: str, fix: str = "") -> Line:
        line = Line(status, what, found, fix)
        self.lines.append(line)
        self.out.write(line.text() + "\n")
        self.out.flush()
        return line

    def ok(self, what: str, found: str) -> Line:
        return self.add(PASS, what, found)

    def fail(self, what: str, found: str, fix: str) -> Line:
        return self.add(FAIL, what, found, fix)

    def warn(self, what: str, found: str, fix: str = "") -> Line:
        return self.add(WARN, what, found, fix)

    def failed(self) -> int:
        return sum(1 for line in self.lines if line.status == FAIL)

    def summary(self) -> str:
        from lakefs_gc.words import plural

        warned = sum(1 for line in self.lines if line.status == WARN)
        failed = self.failed()
        verdict = "a run would fail or do harm" if failed else "a run has what it needs"
        return f"{plural(len(self.lines), 'check')}: {failed} failed, {plural(warned, 'warning')}: {verdict}"
