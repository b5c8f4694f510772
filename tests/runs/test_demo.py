"""The README's main command (``make demo`` -> scripts/demo.py) works and leaves nothing running; the
seeding CLI works against a lakeFS (the emulator) and refuses to seed twice without failing."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT


@pytest.mark.spark
@pytest.mark.e2e
def test_demo_runs_the_gc_dag_end_to_end_and_stops_everything():
    r = subprocess.run(
        [sys.executable, "scripts/demo.py"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=1200, check=False
    )
    assert r.returncode == 0, r.stdout[-5000:] + r.stderr[-3000:]
    assert "every seeded object ended as expected" in r.stdout
    assert re.search(r"objects deleted:\s+5 ", r.stdout), r.stdout
    pid = int(re.search(r"\(pid (\d+)\)", r.stdout).group(1))
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    # the command it gives to read the report again works as printed, from the project root
    again = re.search(r"read it again:\s+\.venv/bin/(lakefs-gc report .*)$", r.stdout, re.M).group(1).split()
    rep = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), again[0]), *again[1:]],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert rep.returncode == 0, rep.stdout + rep.stderr
    assert "local://demo/sample-repo" in rep.stdout, rep.stdout + rep.stderr
    # and the two that explain one deleted object and undo the run (its sweep quarantined the files)
    outs = {}
    for label in ("why one went", "undo the run"):
        cmd = re.search(rf"{label}:\s+\.venv/bin/(lakefs-gc .*)$", r.stdout, re.M).group(1).split()
        outs[label] = subprocess.run(
            [os.path.join(os.path.dirname(sys.executable), cmd[0]), *cmd[1:]],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    why, undo = outs["why one went"], outs["undo the run"]
    assert why.returncode == 0, why.stdout
    assert ": deleted (mark " in why.stdout, why.stdout
    assert "quarantine" in why.stdout, why.stdout
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert "5 restored" in undo.stdout, undo.stdout + undo.stderr


def test_seed_cli_against_the_emulator(lakefs_emulator, tmp_path):
    env = {
        **os.environ,
        "LAKEFS_ACCESS_KEY_ID": lakefs_emulator.access_key,
        "LAKEFS_SECRET_ACCESS_KEY": lakefs_emulator.secret_key,
    }
    ns = lakefs_emulator.namespace("seeded")
    cmd = [
        sys.executable,
        "-m",
        "lakefs_sandbox.seed",
        "--endpoint",
        lakefs_emulator.url,
        "--repository",
        "seeded",
        "--namespace",
        ns,
        "--local-root",
        lakefs_emulator.local_root,
        "--manifest",
        str(tmp_path / "m.json"),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert r.returncode == 0, r.stderr
    assert "seeded seeded on" in r.stdout
    manifest = json.loads((tmp_path / "m.json").read_text())
    assert {o["expect"] for o in manifest["objects"]} == {"kept", "deleted"}
    assert all(o["address"].startswith("data/") for o in manifest["objects"])
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert again.returncode == 0
    assert "already exists at" in again.stderr
    assert "not seeding again" in again.stderr
    no_keys = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in env.items() if not k.startswith("LAKEFS_")},
        check=False,
    )
    assert no_keys.returncode == 2
    assert "LAKEFS_ACCESS_KEY_ID" in no_keys.stderr
