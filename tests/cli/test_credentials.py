"""Where the ``lakefs-gc`` commands find lakeFS and the namespace's store (``lakefs_gc.credentials``),
as a user runs the installed console script: an Airflow connection (``AIRFLOW_CONN_*`` in JSON or
URI form, or in Airflow's metadata database) with no ``LAKEFS_GC_*`` variable set; ``make
airflow``'s variable names alone; without Airflow importable, the environment only; the precedence
flags > connection > environment; a connection id Airflow does not know named with the fix; a
refused key naming where the keys came from. Judged by the lakeFS emulator's answers (it checks the
keys) and moto's; no secret is ever printed."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import lakefs_sdk
import pytest

from tests.support import history

EXE = shutil.which("lakefs-gc", path=str(Path(sys.executable).parent))
_repos = itertools.count()
# what must not leak from the test's own environment into the command's
FOREIGN = ("LAKEFS_", "S3_", "AIRFLOW_CONN_", "AIRFLOW__", "AIRFLOW_HOME", "_AIRFLOW")


def run(*args: str, env: dict[str, str], home: Path, no_airflow: bool = False) -> subprocess.CompletedProcess:
    """``lakefs-gc ARGS`` with only ``env`` of its settings and an Airflow home of its own (no database)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN)}
    cmd = [EXE, *args]
    if no_airflow:  # a Python where `import airflow` fails, as on a machine without Airflow
        cmd = [sys.executable, "-c", NO_AIRFLOW, *args]
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=180,
        env={**clean, "AIRFLOW_HOME": str(home), **env},
        check=False,
    )


NO_AIRFLOW = "import sys; sys.modules['airflow'] = None; from lakefs_gc.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.fixture
def repo(lakefs_emulator, tmp_path):
    """A repository with one committed object and one staged, GC rules of a day; (emulator, name, namespace)."""
    emu = lakefs_emulator
    client, name = emu.client(), f"creds-{next(_repos)}"
    ns = emu.namespace(name)
    history.create(client, name, ns)
    client.objects_api.upload_object(name, "main", "a", content=b"committed")
    client.commits_api.commit(name, "main", lakefs_sdk.CommitCreation(message="a"))
    client.objects_api.upload_object(name, "main", "b", content=b"staged")
    client.repositories_api.set_gc_rules(name, lakefs_sdk.GarbageCollectionRules(default_retention_days=1, branches=[]))
    return emu, name, ns


def space(emu, name: str, ns: str, *extra: str) -> list[str]:
    return ["space", ns, "--repository", name, "--min-age-seconds", "0", *extra]


def conn_json(emu, **over) -> str:
    return json.dumps(
        {
            "conn_type": "lakefs_gc",
            "host": emu.url,
            "login": emu.access_key,
            "password": emu.secret_key,
            "extra": {"local_blockstore_root": str(emu.root)},
            **over,
        }
    )


def conn_uri(emu) -> str:
    host = emu.url.removeprefix("http://")
    return (
        f"lakefs-gc://{quote(emu.access_key, safe='')}:{quote(emu.secret_key, safe='')}@{host}"
        f"?local_blockstore_root={quote(str(emu.root), safe='')}"
    )


def assert_space_printed(res: subprocess.CompletedProcess, secret: str) -> None:
    assert res.returncode == 0, res.stderr
    assert "all listed objects" in res.stdout
    assert "2 objects" in res.stdout.splitlines()[1]  # a and b
    assert secret not in res.stdout + res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("form", ["json", "uri"])
def test_an_airflow_connection_in_the_environment_reaches_lakefs_without_any_lakefs_gc_variable(repo, tmp_path, form):
    emu, name, ns = repo
    value = conn_json(emu) if form == "json" else conn_uri(emu)
    # no --lakefs-endpoint, no --local-root, no LAKEFS_GC_*: all from lakefs_default
    res = run(*space(emu, name, ns, "-v"), env={"AIRFLOW_CONN_LAKEFS_DEFAULT": value}, home=tmp_path / "af")
    assert_space_printed(res, emu.secret_key)
    said = res.stderr
    assert "Airflow connection 'lakefs_default' (AIRFLOW_CONN_LAKEFS_DEFAULT)" in said, said
    assert f"local root {emu.root}: Airflow connection 'lakefs_default', extra local_blockstore_root" in said
    assert f"access key {emu.access_key[:4]}****" in said
    assert emu.access_key not in said


def test_a_connection_in_airflows_metadata_database_reaches_lakefs(repo, tmp_path):
    """Added with `airflow connections add`, as a user of an Airflow does: read through Airflow."""
    emu, name, ns = repo
    home = tmp_path / "af"
    env = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN)}
    env.update(AIRFLOW_HOME=str(home), AIRFLOW__CORE__LOAD_EXAMPLES="False")
    airflow = str(Path(sys.executable).parent / "airflow")
    for cmd in (
        [airflow, "db", "migrate"],
        [airflow, "connections", "add", "lakefs_prod", "--conn-json", conn_json(emu)],
    ):
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, check=False)
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    res = run(*space(emu, name, ns, "--conn-id", "lakefs_prod", "-v"), env={}, home=home)
    assert_space_printed(res, emu.secret_key)
    assert "Airflow connection 'lakefs_prod' (Airflow's metadata database or secrets backend)" in res.stderr


def test_the_config_entrys_connection_is_the_default(repo, tmp_path):
    """No --conn-id: the --repository entry's lakefs_conn_id of the GC config (LAKEFS_GC_CONFIG), as its DAG uses it."""
    emu, name, ns = repo
    cfg = tmp_path / "gc.yaml"
    cfg.write_text(
        f"repositories:\n  - {{repository: {name}, lakefs_conn_id: lakefs_prod}}\n"
        "  - {repository: other, lakefs_conn_id: lakefs_other}\n"
    )
    env = {
        "LAKEFS_GC_CONFIG": str(cfg),
        "AIRFLOW_CONN_LAKEFS_PROD": conn_json(emu),
        "AIRFLOW_CONN_LAKEFS_DEFAULT": conn_json(emu, password="not-the-secret"),
    }
    res = run(*space(emu, name, ns, "-v"), env=env, home=tmp_path / "af")
    assert_space_printed(res, emu.secret_key)
    assert "Airflow connection 'lakefs_prod' (AIRFLOW_CONN_LAKEFS_PROD)" in res.stderr


def test_make_airflows_variable_names_alone_reach_lakefs(repo, tmp_path):
    """config/airflow.env's names, as the seeder takes them too (``set -a; . config/airflow.env``)."""
    emu, name, ns = repo
    env = {
        "LAKEFS_ENDPOINT": emu.url,
        "LAKEFS_ACCESS_KEY_ID": emu.access_key,
        "LAKEFS_SECRET_ACCESS_KEY": emu.secret_key,
        "LAKEFS_LOCAL_BLOCKSTORE_ROOT": str(emu.root),
    }
    res = run(*space(emu, name, ns, "-v"), env=env, home=tmp_path / "af")
    assert_space_printed(res, emu.secret_key)
    assert "no Airflow connection 'lakefs_default': lakeFS from the environment" in res.stderr
    assert "environment (LAKEFS_ACCESS_KEY_ID, LAKEFS_SECRET_ACCESS_KEY)" in res.stderr
    assert f"local root {emu.root}: LAKEFS_LOCAL_BLOCKSTORE_ROOT" in res.stderr


def test_without_airflow_the_environment_serves_and_a_conn_id_says_airflow_is_missing(repo, tmp_path):
    emu, name, ns = repo
    env = {
        "LAKEFS_GC_LAKEFS_ENDPOINT": emu.url,
        "LAKEFS_GC_LAKEFS_ACCESS_KEY_ID": emu.access_key,
        "LAKEFS_GC_LAKEFS_SECRET_ACCESS_KEY": emu.secret_key,
        "LAKEFS_GC_LOCAL_ROOT": str(emu.root),
        # a connection only Airflow would read: without Airflow it is not read at all
        "AIRFLOW_CONN_LAKEFS_DEFAULT": conn_json(emu, password="not-the-secret"),
    }
    res = run(*space(emu, name, ns, "-v"), env=env, home=tmp_path / "af", no_airflow=True)
    assert_space_printed(res, emu.secret_key)
    assert "environment (LAKEFS_GC_LAKEFS_ACCESS_KEY_ID, LAKEFS_GC_LAKEFS_SECRET_ACCESS_KEY)" in res.stderr
    named = run(*space(emu, name, ns, "--conn-id", "lakefs_prod"), env=env, home=tmp_path / "af", no_airflow=True)
    assert named.returncode == 2
    assert named.stdout == ""
    assert named.stderr.startswith(
        "lakefs-gc space: error: --conn-id 'lakefs_prod': Airflow is not installed here, so its connections "
        "cannot be read"
    ), named.stderr


def test_flags_win_over_the_connection_and_the_connection_over_the_environment(repo, tmp_path):
    emu, name, ns = repo
    env = {
        # the connection's host is wrong: --lakefs-endpoint corrects it; its keys are right
        "AIRFLOW_CONN_LAKEFS_DEFAULT": conn_json(emu, host="http://127.0.0.1:9"),
        # the environment's keys are wrong: never used while the connection serves
        "LAKEFS_GC_LAKEFS_ACCESS_KEY_ID": "AKIAWRONGWRONGWRONG",
        "LAKEFS_GC_LAKEFS_SECRET_ACCESS_KEY": "wrong-secret",
        "LAKEFS_GC_LOCAL_ROOT": "/nonexistent/root",
    }
    res = run(*space(emu, name, ns, "--lakefs-endpoint", emu.url, "-v"), env=env, home=tmp_path / "af")
    assert_space_printed(res, emu.secret_key)
    assert f"lakeFS {emu.url} (--lakefs-endpoint), access key {emu.access_key[:4]}****: Airflow connection" in (
        res.stderr
    )


def test_a_connection_id_airflow_does_not_know_is_named_with_the_fix(repo, tmp_path):
    emu, name, ns = repo
    res = run(*space(emu, name, ns, "--conn-id", "lakefs_prd"), env={}, home=tmp_path / "af")
    assert res.returncode == 2
    assert res.stdout == ""
    [line] = res.stderr.splitlines()
    assert line.startswith(
        "lakefs-gc space: error: lakeFS connection 'lakefs_prd' is not defined in Airflow "
        "(its AIRFLOW_CONN_LAKEFS_PRD variable, its metadata database, its secrets backend): check the id "
        "(airflow connections list), add it (airflow connections add lakefs_prd --conn-type lakefs_gc"
    ), line
    assert "export AIRFLOW_CONN_LAKEFS_PRD=" in line
    wrong_type = run(
        *space(emu, name, ns),
        env={"AIRFLOW_CONN_LAKEFS_DEFAULT": json.dumps({"conn_type": "aws", "login": "x", "password": "y"})},
        home=tmp_path / "af",
    )
    assert wrong_type.returncode == 2
    assert "connection 'lakefs_default' has type 'aws', not a lakeFS connection" in wrong_type.stderr
    assert "(--conn-id; AIRFLOW_CONN_LAKEFS_DEFAULT)" in wrong_type.stderr


def test_refused_keys_say_where_they_came_from_and_never_the_secret(repo, tmp_path):
    emu, name, ns = repo
    wrong = "wrong-secret-0f3e"
    res = run(
        *space(emu, name, ns),
        env={"AIRFLOW_CONN_LAKEFS_DEFAULT": conn_json(emu, password=wrong)},
        home=tmp_path / "af",
    )
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    first, second = res.stderr.splitlines()
    assert first.startswith("lakefs-gc space: error: "), first
    assert first.endswith("refused the keys (HTTP 401 Unauthorized): check the access key id and secret"), first
    assert second.startswith(
        "lakefs-gc space: settings used (flags, then the Airflow connection (--conn-id, --storage-conn-id), "
        "then environment variables): "
    ), second
    assert "Airflow connection 'lakefs_default' (AIRFLOW_CONN_LAKEFS_DEFAULT)" in second
    assert wrong not in res.stdout + res.stderr


def test_s3_keys_from_an_aws_connection_or_make_airflows_names(moto_server, tmp_path):
    """``report`` on s3:// reads nothing but storage: the storage connection (Airflow's AwsBaseHook),
    else make airflow's S3_* names."""
    from lakefs_gc.storage import open_storage
    from tests.cli.test_cli_report import _write_runs

    bucket = moto_server.create_bucket("cli-creds")
    ns = f"s3://{bucket}/repo1"
    _write_runs(open_storage(ns, moto_server.s3_options()), ns)
    aws = json.dumps(
        {
            "conn_type": "aws",
            "login": moto_server.access_key,
            "password": moto_server.secret_key,
            "extra": {"endpoint_url": moto_server.endpoint_url, "region_name": "us-east-1"},
        }
    )
    via_conn = run("report", ns, "-v", env={"AIRFLOW_CONN_AWS_DEFAULT": aws}, home=tmp_path / "af")
    via_names = run(
        "report",
        ns,
        "-v",
        env={
            "S3_ENDPOINT_URL": moto_server.endpoint_url,
            "S3_ACCESS_KEY_ID": moto_server.access_key,
            "S3_SECRET_ACCESS_KEY": moto_server.secret_key,
        },
        home=tmp_path / "af",
    )
    for res in (via_conn, via_names):
        assert res.returncode == 0, res.stderr
        assert [line.split()[0] for line in res.stdout.splitlines()[1:5]] == ["markB", "markA", "sweep", "markC"]
        assert moto_server.secret_key not in res.stdout + res.stderr
    assert "storage from Airflow connection 'aws_default' (AIRFLOW_CONN_AWS_DEFAULT)" in via_conn.stderr
    assert "storage from the environment (S3_ACCESS_KEY_ID, S3_ENDPOINT_URL, S3_SECRET_ACCESS_KEY)" in (
        via_names.stderr
    )
