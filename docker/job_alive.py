"""The compose stack's health check for Airflow's dag-processor and triggerer: is a job of this type,
on this host, running with a recent heartbeat? The question ``airflow jobs check --job-type T
--hostname H`` answers (same table, same rule: state ``running``, heartbeat within the component's
``health_check_threshold``), asked with psycopg2 alone.

Why not ``airflow jobs check`` itself: each call starts Airflow's CLI, about 4 s of CPU. Two
components checked every 10 s kept most of a core busy on an idle 2-core machine, and on a loaded
one the check outlived its own timeout, so a running component never turned healthy. This takes
about 0.15 s.

    python /opt/lakefs-gc/docker/job_alive.py DagProcessorJob     # exit 0: alive; 1: not, and why
"""

from __future__ import annotations

import os
import socket
import sys

# the component's own threshold setting (Airflow's health_check_threshold in airflow.jobs.job), with
# Airflow's defaults
THRESHOLDS = {
    "DagProcessorJob": ("AIRFLOW__DAG_PROCESSOR__HEALTH_CHECK_THRESHOLD", 30.0),
    "TriggererJob": ("AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD", 30.0),
    "SchedulerJob": ("AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_THRESHOLD", 30.0),
}

QUERY = """
SELECT count(*), max(extract(epoch FROM now() - latest_heartbeat))
FROM job
WHERE job_type = %s AND hostname = %s AND state = 'running'
  AND latest_heartbeat > now() - make_interval(secs => %s)
"""


def dsn(sql_alchemy_conn: str) -> str:
    """libpq's URI from SQLAlchemy's (``postgresql+psycopg2://...`` -> ``postgresql://...``)."""
    scheme, sep, rest = sql_alchemy_conn.partition("://")
    if not sep or not scheme.startswith("postgres"):
        raise SystemExit(f"AIRFLOW__DATABASE__SQL_ALCHEMY_CONN must be a PostgreSQL URL, got scheme {scheme!r}")
    return "postgresql://" + rest


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in THRESHOLDS:
        print(f"usage: job_alive.py {{{'|'.join(THRESHOLDS)}}}", file=sys.stderr)
        return 2
    job_type = argv[0]
    env_name, default = THRESHOLDS[job_type]
    threshold = float(os.environ.get(env_name) or default)
    conn_url = os.environ.get("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "")
    hostname = socket.getfqdn()  # Airflow's default hostname_callable
    import psycopg2

    with psycopg2.connect(dsn(conn_url), connect_timeout=5) as conn, conn.cursor() as cur:
        cur.execute(QUERY, (job_type, hostname, threshold))
        count, age = cur.fetchone()
    conn.close()
    if not count:
        print(f"no {job_type} on {hostname} with a heartbeat in the last {threshold:g} s")
        return 1
    print(f"{job_type} on {hostname} alive (heartbeat {age:.0f} s ago)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
