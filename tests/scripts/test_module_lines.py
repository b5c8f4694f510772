"""scripts/lint.sh's size gate: a module of 451 lines fails it, naming the module; 450 pass."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _gate(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "module_lines.py"), str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_module_over_450_lines_fails_the_gate(tmp_path):
    pkg = tmp_path / "include" / "pkg"
    page = tmp_path / "plugins" / "page" / "src"
    pkg.mkdir(parents=True)
    page.mkdir(parents=True)
    (pkg / "ok.py").write_text("x = 1\n" * 450)
    (pkg / "gen_pb2.py").write_text("x = 1\n" * 900)  # generated: not ours to split
    (page / "main.tsx").write_text("const x = 1;\n" * 450)
    assert _gate(tmp_path).returncode == 0
    (pkg / "big.py").write_text("x = 1\n" * 451)
    (page / "app.tsx").write_text("const x = 1;\n" * 451)
    out = _gate(tmp_path)
    assert out.returncode == 1
    assert "include/pkg/big.py: 451 lines, more than 450" in out.stderr
    assert "plugins/page/src/app.tsx: 451 lines" in out.stderr
    assert "ok.py" not in out.stderr
    assert "gen_pb2.py" not in out.stderr


def test_lint_sh_runs_the_gate_first(tmp_path):
    """The whole of lint.sh fails on a 451-line module before ruff and mypy are asked."""
    tree = tmp_path / "tree"
    shutil.copytree(REPO / "scripts", tree / "scripts")
    (tree / "include").mkdir()
    (tree / "plugins").mkdir()
    (tree / "include" / "big.py").write_text("x = 1\n" * 451)
    venv_bin = tree / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(sys.executable)
    for tool in ("ruff", "mypy"):  # would pass: the gate must stop the script first
        (venv_bin / tool).write_text("#!/bin/sh\nexit 0\n")
        (venv_bin / tool).chmod(0o755)
    out = subprocess.run(
        ["bash", str(tree / "scripts" / "lint.sh")],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "VENV": str(tree / ".venv")},
        check=False,
    )
    assert out.returncode == 1
    assert "include/big.py: 451 lines" in out.stderr


def test_the_tree_passes_the_gate():
    out = _gate(REPO)
    assert out.returncode == 0, out.stderr
