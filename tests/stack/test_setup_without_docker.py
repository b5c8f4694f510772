"""Only the compose stack's commands touch Docker: ``make test`` sets up with ``scripts/setup.sh
--stack`` (the stack's tools, its images, the project's Docker engine, for ``test_compose_stack``);
``make demo``, ``make airflow`` and the other targets set up with plain ``scripts/setup.sh``, which
runs no Docker, docker-compose or debootstrap at all and takes about a second on a repeat (it took
8 s to 35 s while every set-up started the engine and checked the stack's images)."""

from __future__ import annotations

import os
import subprocess
import time

from lakefs_sandbox.compose_stack import ROOT

DOCKER_TOOLS = ("docker", "dockerd", "docker-compose", "debootstrap")


def _recipes(target: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}  # under make test
    p = subprocess.run(
        ["make", "-n", "--no-print-directory", target],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


def test_only_make_test_sets_up_the_stack():
    assert _recipes("test")[0] == "bash scripts/setup.sh --stack"
    for target in ("demo", "airflow", "lint", "bench", "setup"):
        setups = [line for line in _recipes(target) if "scripts/setup.sh" in line]
        assert setups == ["bash scripts/setup.sh"], (target, setups)


def test_a_repeat_set_up_runs_no_docker_tool_and_takes_about_a_second(tmp_path):
    """Every Docker tool on PATH is a shim that records its call and fails: a set-up that called one
    (directly, or through scripts/stack_images.sh and scripts/dockerd.sh) would leave a record."""
    shims, calls = tmp_path / "bin", tmp_path / "calls"
    shims.mkdir()
    for tool in DOCKER_TOOLS:
        shim = shims / tool
        shim.write_text(f'#!/bin/sh\necho "{tool} $*" >> {calls}\nexit 1\n')
        shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKER")}
    env["PATH"] = f"{shims}{os.pathsep}{env['PATH']}"
    t0 = time.monotonic()
    p = subprocess.run(
        ["bash", "scripts/setup.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    took = time.monotonic() - t0
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert not calls.exists(), calls.read_text()
    assert "compose stack" not in p.stdout + p.stderr
    assert took < 15, f"a repeat set-up took {took:.1f} s"  # 1.1 s measured; bounded for a loaded machine
