"""
``make airflow LAKEFS=real``: lakeFS 1.84 itself in ``<state>/lakefs``.

Its settings, and the sample repository it seeds.
"""

from __future__ import annotations

import time
from pathlib import Path

from lakefs_sandbox.local_airflow.settings import Plan, private_json

# --lakefs real: lakeFS itself in <state>/lakefs, the settings it fills, the repository it seeds.
LAKEFS_MODES = ("settings", "real")
SAMPLE_REPO, SAMPLE_NAMESPACE = "sample-repo", "local://sample-repo"


def start_lakefs(home: Path, timeout: float = 60.0):
    """
    Start lakeFS 1.84 itself (``lakefs_sandbox.real_lakefs``, local blockstore) in ``home``.

    Its state stays there from one start to the next: its admin's keys generated at the first start
    into ``home/keys.json`` (0600) and reused at the next ones (lakeFS is then already set up).
    Returns its handle (``.url``, ``.access_key``, ``.secret_key``, ``.local_root``, ``.proc``,
    ``.stop()``).
    """
    from lakefs_sandbox import real_lakefs

    home.mkdir(parents=True, exist_ok=True)
    key_id, secret = real_lakefs.new_keys()
    keys = private_json(home / "keys.json", {"access_key_id": key_id, "secret_access_key": secret})
    try:
        return real_lakefs.start(
            home, "local", timeout=timeout, access_key=keys["access_key_id"], secret_key=keys["secret_access_key"]
        )
    except FileNotFoundError as e:  # no binary: the set-up builds it
        raise RuntimeError(str(e)) from None
    except RuntimeError as e:
        if "refuses the given keys" not in str(e):
            raise
        raise RuntimeError(
            f"{e}: {home}/keys.json is not the one of the lakeFS in {home}; put that one back, "
            f"or remove {home} to start lakeFS over (its repositories go with it)"
        ) from None


def lakefs_settings(server) -> dict[str, str]:
    """Return the ``LAKEFS_*`` settings of a lakeFS this command runs (``plan(..., lakefs=...)``)."""
    return {
        "LAKEFS_ENDPOINT": server.url,
        "LAKEFS_ACCESS_KEY_ID": server.access_key,
        "LAKEFS_SECRET_ACCESS_KEY": server.secret_key,
        "LAKEFS_LOCAL_BLOCKSTORE_ROOT": server.local_root,
    }


def seed_sample(server) -> tuple[bool, int]:
    """
    Seed ``sample-repo`` on ``local://sample-repo`` unless the repository exists.

    Through ``lakefs_sandbox.seed``, commits dated back ten days through the commit API. Returns
    (seeded now, its creation time).
    """
    from lakefs_sdk.exceptions import ApiException, NotFoundException

    from lakefs_sandbox.seed import seed

    client = server.client()
    try:
        return False, int(client.repositories_api.get_repository(SAMPLE_REPO).creation_date)
    except NotFoundException:
        pass
    try:
        seed(client, SAMPLE_REPO, SAMPLE_NAMESPACE, backdate=True, local_root=server.local_root)
        return True, int(client.repositories_api.get_repository(SAMPLE_REPO).creation_date)
    except ApiException as e:
        raise RuntimeError(
            f"seeding {SAMPLE_REPO} on {SAMPLE_NAMESPACE} failed: lakeFS answered {e.status} "
            f"{e.reason}: {str(e.body)[:300]}"
        ) from None


# The conf that collects the seeded garbage now: the objects are as new as the seed (only its commits
# are dated back), and lakeFS's grace period (a day) is the floor of the minimum age unless
# unsafe_min_age_override (prepare_run refuses a smaller one without it: lakefs_gc.gc.clock). A minute:
# nothing but the seed writes here. Mode given: the config's entry may default to mark_only.
COLLECT_NOW_MIN_AGE = 60
COLLECT_NOW = {"mode": "mark_and_sweep", "min_age_seconds": COLLECT_NOW_MIN_AGE, "unsafe_min_age_override": True}
# the Params' titles (plugins/lakefs_gc_airflow/params.py: no Airflow import here), as both forms show them
FORM_FIELDS = {
    "mode": "Run mode",
    "min_age_seconds": "Minimum object age (s)",
    "unsafe_min_age_override": "Unsafe minimum-age override",
}


def collect_now_lines(dag_id: str, state: Path, created: int) -> list[str]:
    """Return the banner's lines that collect the seeded garbage now: the conf, the forms' fields, the CLI."""
    import json
    import shlex

    conf = json.dumps(COLLECT_NOW)
    fields = ", ".join(f'"{FORM_FIELDS[k]}" {"on" if v is True else v}' for k, v in COLLECT_NOW.items())
    when = created + COLLECT_NOW_MIN_AGE + 10  # the seed writes its objects within seconds of the repository
    soon = f" (from {time.strftime('%H:%M:%S', time.localtime(when))} on: the objects must be a minute old)"
    return [
        f"  collect now  conf {conf}{soon if when > time.time() else ''}",
        "               (lakeFS's grace period is a day: the override, for this sandbox only, goes below it)",
        f"               in the UI: unpause {dag_id}, Trigger, and set {fields}",
        "               (the GC page's Run GC form has the same fields); or in a shell, from the project root:",
        f"               source .venv/bin/activate; export AIRFLOW_HOME={shlex.quote(str(state))}",
        f"               airflow dags unpause {dag_id}",
        f"               airflow dags trigger {dag_id} --conf {shlex.quote(conf)}",
    ]


def lakefs_lines(server, home: Path, seeded: bool, created: int, p: Plan) -> list[str]:
    """
    Return what the summary says of the lakeFS this command runs.

    Where, how to sign in (the secret only as where it is), the placeholder UI, the sample
    repository and when a GC run has garbage to take.
    """
    from lakefs_sandbox.real_lakefs import VERSION

    keys = home / "keys.json"
    creds = (
        "$(python3 -c 'import json,sys; k=json.load(open(sys.argv[1])); "
        'print(k["access_key_id"]+":"+k["secret_access_key"])\' ' + f"{keys})"
    )
    lines = [
        f"  lakeFS API   {server.api_url}   (lakeFS {VERSION} run by this command, pid {server.proc.pid}; "
        f"state in {home}, log {home}/lakefs.log)",
        f"  its login    access key id {server.access_key}, secret access key in {keys} (0600); HTTP basic auth, e.g.",
        f'               curl -u "{creds}" {server.api_url}/repositories',
        f"  lakeFS UI    none: {server.url}/ is a placeholder page (this lakeFS is built without its web UI); "
        f"use the API",
    ]
    when = "seeded now" if seeded else "seeded at an earlier start"
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(created))
    lines.append(
        f"  {SAMPLE_REPO}  {when} ({stamp}) on {SAMPLE_NAMESPACE}, in {server.local_root}/{SAMPLE_REPO}: "
        f"commits dated back ten days, GC retention 1 day"
    )
    if SAMPLE_REPO in p.min_ages:
        age = p.min_ages[SAMPLE_REPO]
        ready = time.strftime("%Y-%m-%d %H:%M", time.localtime(created + age))
        if created + age > time.time():
            lines.append(
                f"               a run with the defaults deletes its garbage once the objects are older than the "
                f"minimum age (min_age_seconds {age}, and lakeFS's grace period), i.e. from about {ready} on; "
                f"before that it deletes nothing. To collect now:"
            )
            dag_id = next((d for d in p.dag_ids if d.endswith("__" + SAMPLE_REPO)), f"lakefs_gc__{SAMPLE_REPO}")
            lines += collect_now_lines(dag_id, p.state, created)
        else:
            lines.append(
                f"               its objects are older than the minimum age ({age}s): a run with the defaults collects"
            )
    else:
        lines.append(f"               not in {p.config_path}: no DAG collects it")
    return lines
