"""
``make airflow`` = ``.venv/bin/python -m lakefs_sandbox.local_airflow [options]``.

An Airflow 3 of our own with the GC DAGs, on 127.0.0.1, until Ctrl-C
(:mod:`lakefs_sandbox.local_airflow`). A development tool of this repository, not part of the
installed provider.
"""

from __future__ import annotations

import argparse
import sys

from lakefs_sandbox.local_airflow import COMMAND, main


def cli(argv: list[str] | None = None) -> int:
    af = argparse.ArgumentParser(prog=COMMAND, description="start Airflow 3 with the GC DAGs on 127.0.0.1 until Ctrl-C")
    af.add_argument(
        "--env-file",
        default=None,
        help="settings file (default: config/airflow.env, a copy of config/airflow.env.example "
        "filled in); '' for the environment only",
    )
    af.add_argument(
        "--state-dir", default=None, help="Airflow's home: database, logs, generated secrets (default: var/airflow)"
    )
    af.add_argument(
        "--port", type=int, default=None, help="the UI's port on 127.0.0.1 (default: AIRFLOW_PORT, else 8080)"
    )
    af.add_argument(
        "--lakefs",
        choices=("settings", "real"),
        default="settings",
        help="settings: the lakeFS of the settings (default); real: run lakeFS 1.84 itself (the "
        "set-up builds it; local blockstore, state in <state-dir>/lakefs) and seed sample-repo",
    )
    args = af.parse_args(argv)
    return main(args.env_file, args.state_dir, args.port, args.lakefs)


if __name__ == "__main__":
    sys.exit(cli())
