"""The README's main command (``make demo`` -> scripts/demo.py) works, its figures add up, and with
``--keep`` it leaves lakeFS running for the commands it prints until Ctrl-C, then nothing; the
seeding CLI works against a lakeFS (the emulator) and refuses to seed twice without failing."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO_ROOT


def _gc(cmd: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run a ``lakefs-gc ...`` line the demo printed, as printed, from the project root in the venv
    (the demo says ``source .venv/bin/activate`` once)."""
    argv = cmd.split()
    assert argv[0] == "lakefs-gc", cmd
    return subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "lakefs-gc"), *argv[1:]],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def _figures_add_up(out: str) -> None:
    """Issue 52: every figure the demo prints says what it counts, and they add up, line by line."""

    def num(pattern: str) -> tuple[int, ...]:
        m = re.search(pattern, out, re.M)
        assert m, (pattern, out)
        return tuple(int(g) for g in m.groups())

    listed, head, retention, staged, cands, young = num(
        r"^  listed +(\d+) objects .*\n += (\d+) read by a branch HEAD \+ (\d+) only in a retention window "
        r"\+ (\d+) only staged\n +\+ (\d+) candidates \+ (\d+) unreferenced but too young"
    )
    assert listed == head + retention + staged + cands + young
    candidates, marked, held = num(r"^  candidates +(\d+) .*\n += (\d+) marked .* \+ (\d+) held back$")
    assert candidates == cands == marked + held
    deleted, marked2, gone, dead = num(
        r"^  deleted +(\d+) \(.* reclaimed\) = (\d+) marked - (\d+) already gone - (\d+) dead letters$"
    )
    assert marked2 == marked
    assert deleted == marked - gone - dead
    before, listed2, later = num(r"^  data/ +(\d+) objects before = (\d+) listed \+ (\d+) written after the cutoff")
    assert listed2 == listed
    assert before == listed + later
    after, before2, deleted2 = num(r"^ +(\d+) after = (\d+) - (\d+) deleted$")
    assert (before2, deleted2) == (before, deleted)
    assert after == before - deleted
    meta, meta_kept = num(r"^  _lakefs/ +(\d+) files of lakeFS's own before .*: (\d+) of them still there")
    assert meta_kept == meta > 0
    # the table: one row per object under data/, in the groups the figures count, each its figure
    (rows,) = num(r"^  The (\d+) objects the seeding wrote \(every object under data/\), one row each")
    assert rows == before
    table = out[out.index("one row each, grouped") :].split("\n  report:")[0].splitlines()[1:]
    groups: dict[str, list[str]] = {}
    head_line = ""
    for line in table:
        if line.startswith("    "):
            groups[head_line].append(line)
        elif line.strip():
            head_line = line.strip()
            groups[head_line] = []
    [(d_head, d_rows), (r_head, r_rows), (y_head, y_rows)] = groups.items()
    assert d_head.startswith(f"deleted, {deleted} ")
    assert len(d_rows) == deleted
    assert r_head.startswith(f"kept, {listed - candidates} (listed {listed} - {candidates} candidates")
    assert len(r_rows) == listed - candidates == head + retention + staged
    assert y_head.startswith(f"kept, {later} (not listed")
    assert len(y_rows) == later
    assert len(d_rows) + len(r_rows) + len(y_rows) == rows


@pytest.mark.spark
@pytest.mark.e2e
def test_demo_runs_the_gc_dag_end_to_end_adds_up_and_keeps_lakefs_until_ctrl_c(tmp_path):
    """``make demo ARGS=--keep``: the run, its figures adding up, then lakeFS left running with
    explain, space and whatif commands that work as printed; Ctrl-C stops everything."""
    log = tmp_path / "demo.out"
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "scripts/demo.py", "--keep"],
            cwd=REPO_ROOT,
            stdout=fh,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 1200
        while "runs until Ctrl-C" not in log.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(1)
        out = log.read_text()
        assert proc.poll() is None, out[-6000:]
        assert "every seeded object ended as expected" in out
        pid = int(re.search(r"\(pid (\d+)\)", out).group(1))
        os.kill(pid, 0)  # lakeFS is still there
        _figures_add_up(out)

        # the commands to read the report again, say why one went and undo the run, as printed
        rep = _gc(re.search(r"read it again:\s+(.*)$", out, re.M).group(1))
        assert rep.returncode == 0, rep.stdout + rep.stderr
        assert "local://demo/sample-repo" in rep.stdout, rep.stdout + rep.stderr
        why = _gc(re.search(r"why one went:\s+(.*)$", out, re.M).group(1))
        assert why.returncode == 0, why.stdout
        assert ": deleted (mark " in why.stdout, why.stdout
        assert "quarantine" in why.stdout, why.stdout

        # --keep: lakeFS's endpoint and keys in the env file it names; explain, space, whatif on it
        env_line = re.search(r"^    set -a; \. (\S+); set \+a", out, re.M).group(1)
        env = {**os.environ}
        for line in (REPO_ROOT / env_line).read_text().splitlines():
            if line and not line.startswith("#"):
                k, v = line.split("=", 1)
                env[k] = v
        assert env["LAKEFS_GC_LAKEFS_ENDPOINT"].startswith("http://127.0.0.1:")
        assert re.search(r"^    source \.venv/bin/activate ", out, re.M), out
        tries = re.findall(r"^    (lakefs-gc (?:explain|space|whatif) .*)$", out, re.M)
        assert [t.split()[1] for t in tries] == ["explain", "explain", "explain", "space", "whatif"], tries
        results = [_gc(t, env) for t in tries]
        for t, r in zip(tries, results, strict=True):
            assert r.returncode == 0, (t, r.stdout, r.stderr)
        gone_path, gone_address, kept_path, space, whatif = (r.stdout for r in results)
        assert "has no object at 'tables/gone.csv' now" in gone_path, gone_path
        assert ": deleted (mark " in gone_path, gone_path
        assert "no branch HEAD, no commit the newest mark keeps and no staged entry references it now" in gone_address
        assert "kept: in a branch HEAD" in kept_path, kept_path
        assert "read by a branch HEAD" in space, space
        assert re.search(r"would free [1-9]\d* objects?, ", whatif), whatif

        undo = _gc(re.search(r"undo the run:\s+(.*)$", out, re.M).group(1))
        assert undo.returncode == 0, undo.stdout + undo.stderr
        assert "5 restored" in undo.stdout, undo.stdout + undo.stderr

        # Ctrl-C: the demo stops lakeFS (by its pid) and exits 0
        proc.send_signal(signal.SIGINT)
        try:  # its stop of lakeFS waits up to 15 s for SIGTERM, then SIGKILLs (slow on a loaded machine)
            code = proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the demo did not stop within 120 s of Ctrl-C: {log.read_text()[-3000:]}")
        assert code == 0, log.read_text()[-3000:]
        assert f"Ctrl-C: stopping lakeFS (pid {pid})" in log.read_text()
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)


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
