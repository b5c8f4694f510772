"""docs/install.md as the wheel test follows it: its marked shell blocks, the tables it keeps about the
supported Airflow versions, the stand-ins of Airflow's constraints (``tests/airflow/constraints/``),
and a traced run of a block (each command with its own output).
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from tests.airflow.helpers import REPO

INSTALL_MD = REPO / "docs" / "install.md"
CONSTRAINTS_DIR = REPO / "tests" / "airflow" / "constraints"
# The Airflow versions the provider supports, oldest and newest (docs/compatibility.md)
AIRFLOW_VERSIONS = {"oldest": "3.2.2", "newest": "3.3.2"}
AIRFLOW_ITSELF = {"apache-airflow", "apache-airflow-core", "apache-airflow-task-sdk"}
# Airflow's constraints file of one version, for Python 3.11, as Airflow documents it
CONSTRAINTS_URL = re.compile(
    r"https://raw\.githubusercontent\.com/apache/airflow/constraints-(?P<version>[0-9][0-9.]*)/constraints-3\.11\.txt"
)
WHEEL_ARG = re.compile(r"\./(lakefs_gc-[A-Za-z0-9_.+-]+\.whl)")
PS4 = "@@doc@@ "  # marks each traced command in a block's transcript (bash repeats its first character when nested)


def block(name: str, text: str | None = None) -> str:
    """The shell commands between ``<!-- name:begin -->`` and ``<!-- name:end -->`` in docs/install.md."""
    text = INSTALL_MD.read_text() if text is None else text
    found = re.search(rf"<!-- {name}:begin -->\s*```sh\n(.*?)```\s*<!-- {name}:end -->", text, re.S)
    assert found, f"docs/install.md has no shell block between <!-- {name}:begin --> and <!-- {name}:end -->"
    return found.group(1)


def lock(version: str) -> Path:
    return CONSTRAINTS_DIR / f"airflow-{version}.txt"


def pins(path: Path) -> dict[str, str]:
    """``name==version`` lines of a lock, by canonical name."""
    out = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            out[canonicalize_name(name)] = version.strip()
    return out


def pypi_as_of(version: str) -> str:
    """The day the provider's step resolves against (its lock's header: lock.sh writes it)."""
    found = re.search(r"^# pypi-as-of: (\S+)", lock(version).read_text(), re.M)
    assert found, f"{lock(version)} has no '# pypi-as-of:' line"
    return found.group(1)


def install_script(airflow: str, uv: str, python: Path, wheel: Path, text: str | None = None) -> str:
    """The install block with the test's substitutions only: Airflow's constraints URL -> the local
    stand-in for ``airflow``; the block's Airflow version -> ``airflow``; ``pip install`` -> ``uv pip
    install --offline -p <python>`` and ``pip check`` -> ``uv pip check -p <python>``. The wheel is not
    substituted: the block runs where the wheel is, and its name must be the built one's."""
    script = block("install", text)
    versions = {m.group("version") for m in CONSTRAINTS_URL.finditer(script)}
    assert len(versions) == 1, f"the install block names no constraints file of Airflow's (or several): {versions}"
    (doc_version,) = versions
    assert f'"apache-airflow=={doc_version}"' in script, f"the install block does not install Airflow {doc_version}"
    named = set(WHEEL_ARG.findall(script))
    assert named == {wheel.name}, f"the install block installs {named}, the build makes {wheel.name}"
    script = CONSTRAINTS_URL.sub("@CONSTRAINTS@", script).replace(doc_version, airflow)
    script = script.replace("@CONSTRAINTS@", str(lock(airflow)))
    script = re.sub(r"(?m)^pip install\b", f"{uv} pip install --offline -p {python}", script)
    script = re.sub(r"(?m)^pip check\b", f"{uv} pip check -p {python}", script)
    left = [ln for ln in script.splitlines() if re.match(r"\s*pip\b", ln)]
    assert not left, f"pip commands the test does not know how to run offline: {left}"
    return script


@dataclass
class Transcript:
    steps: list[tuple[str, str]]  # each traced command and what it printed (stdout and stderr)

    def output(self, command: str) -> str:
        """What the first command matching the regex ``command`` printed."""
        for cmd, out in self.steps:
            if re.search(command, cmd):
                return out
        raise AssertionError(f"no command matching {command!r} ran: {[c for c, _ in self.steps]}")

    def __str__(self) -> str:
        return "\n".join(f"$ {cmd}\n{out}" for cmd, out in self.steps)


def run(script: str, env: dict[str, str], cwd: Path, timeout: float) -> Transcript:
    """Run ``script`` in bash as a user would paste it, stopping at the first failing command."""
    full = f"set -euo pipefail\nPS4='{PS4}'\nset -x\n{script}"
    try:
        proc = subprocess.run(
            ["bash", "-c", full],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=cwd,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        raise AssertionError(f"docs/install.md's block timed out after {timeout:.0f} s:\n{out[-8000:]}") from None
    steps: list[tuple[str, list[str]]] = []
    marker = re.compile(rf"^{re.escape(PS4[0])}*{re.escape(PS4[1:])}(.*)$")
    for line in proc.stdout.splitlines():
        traced = marker.match(line)
        if traced:
            steps.append((traced.group(1), []))
        elif steps:
            steps[-1][1].append(line)
    transcript = Transcript([(cmd, "\n".join(lines)) for cmd, lines in steps])
    assert proc.returncode == 0, f"docs/install.md's block exited {proc.returncode}:\n{str(transcript)[-8000:]}"
    return transcript


def changes(output: str) -> tuple[dict[str, str], dict[str, str]]:
    """The ``- name==version`` (removed) and ``+ name==version`` (added) lines uv prints."""
    out: tuple[dict[str, str], dict[str, str]] = ({}, {})
    for sign, name, version in re.findall(r"^ ([-+]) ([A-Za-z0-9._-]+)==(\S+)", output, re.M):
        out[sign == "+"][canonicalize_name(name)] = version
    return out


def table(title: str) -> dict[str, list[str]]:
    """A table of docs/install.md whose header is ``| Airflow | <title> |``: per Airflow version, the
    backquoted names of its row (``*`` as in a shell pattern)."""
    text = INSTALL_MD.read_text()
    found = re.search(rf"^\| Airflow \| {re.escape(title)} \|\n\|[-|]+\|\n((?:\|.*\|\n)+)", text, re.M)
    assert found, f"docs/install.md has no table '| Airflow | {title} |'"
    rows = {}
    for row in found.group(1).splitlines():
        version, names = (cell.strip() for cell in row.strip("|").split("|", 1))
        rows[version] = re.findall(r"`([^`\s]+)`", names)
    return rows


def unmatched(names: set[str], patterns: list[str]) -> tuple[set[str], set[str]]:
    """Names no pattern matches, and patterns that match no name."""
    return (
        {n for n in names if not any(fnmatch.fnmatchcase(n, p) for p in patterns)},
        {p for p in patterns if not any(fnmatch.fnmatchcase(n, p) for n in names)},
    )
