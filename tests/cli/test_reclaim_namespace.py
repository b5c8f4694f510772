"""An orphaned namespace against lakeFS 1.84 itself (local blockstore): the discovery refresh
(``DiscoverRepositoriesOperator``, its return value) reports it after its repository is deleted,
with the size the store then holds, never after a failed listing; ``lakefs-gc reclaim-namespace``
refuses it before the grace period, without ``--confirm``, while a repository of any configured
lakeFS (this one, or another: the emulator as a second connection) is under it or on it, or while
that other lakeFS does not answer; then moves it into the quarantine, and a later reclaim purges
the quarantine once it ended."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from pathlib import Path

import lakefs_sdk
import pytest

from lakefs_gc.cli import main as cli
from lakefs_gc.config import load_config
from lakefs_gc.config.discovered import read_discovered, write_discovered
from tests.conftest import start_emulator, stop_process
from tests.support import history


def files(d: Path) -> dict[str, bytes]:
    """Every file under ``d``, by its path relative to it."""
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def conn(server, **over) -> str:
    return json.dumps(
        {
            "conn_type": "lakefs_gc",
            "host": server.url,
            "login": server.access_key,
            "password": server.secret_key,
            "extra": {"local_blockstore_root": str(server.root)},
            **over,
        }
    )


@pytest.fixture
def fleet(real_lakefs, tmp_path, monkeypatch):
    server = real_lakefs("local")
    other = start_emulator(tmp_path / "other-lakefs")  # a second lakeFS the repositories file names
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFS_DEFAULT", conn(server))
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFS_OTHER", conn(other))
    tag = uuid.uuid4().hex[:6]
    cfg = tmp_path / "gc.yaml"
    cfg.write_text(
        f"repositories: [{{repository: elsewhere-{tag}, lakefs_conn_id: lakefs_other}}]\n"
        f"discover: {{sources: [{{include: ['orphan-{tag}-*']}}]}}\n"
    )
    yield server, other, cfg, tag
    stop_process(other.proc)


def refresh(cfg: Path) -> dict:
    from lakefs_gc_airflow.housekeeping import DiscoverRepositoriesOperator
    from tests.airflow.helpers import context

    return DiscoverRepositoriesOperator(task_id="discover", config_path=str(cfg)).execute(context({}))


def reclaim(capsys, ns: str, cfg: Path, *extra: str, now: datetime | None = None) -> tuple[int, str, str]:
    capsys.readouterr()
    if now is None:
        rc = cli(["reclaim-namespace", ns, "--config", str(cfg), *extra])
    else:  # the clock of a later day
        import argparse

        from lakefs_gc import cli_reclaim

        parser = argparse.ArgumentParser()
        from lakefs_gc.cli import _storage_arguments

        cli_reclaim.add_parser(parser.add_subparsers(dest="command"), _storage_arguments)
        rc = cli_reclaim.run(parser.parse_args(["reclaim-namespace", ns, "--config", str(cfg), *extra]), now=now)
    out, err = capsys.readouterr()
    return rc, out, err


def test_an_orphaned_namespace_is_reported_then_reclaimed_only_when_safe(fleet, capsys, monkeypatch):
    server, other, cfg, tag = fleet
    client = server.client()
    gone, keep = f"orphan-{tag}-gone", f"orphan-{tag}-keep"
    ns, keep_ns = server.namespace(gone), server.namespace(keep)
    for repo, repo_ns in ((gone, ns), (keep, keep_ns)):
        history.create(client, repo, repo_ns)
        for i in range(3):
            client.objects_api.upload_object(repo, "main", f"f{i}", content=b"x" * (10 + i))
        client.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message="three"))
    assert refresh(cfg)["orphaned_namespaces"] == []
    client.repositories_api.delete_repository(gone)
    ns_dir = Path(server.root) / ns.removeprefix("local://")
    left = files(ns_dir)
    assert any(k.startswith("data/") for k in left), left  # lakeFS leaves the namespace's data in the store
    keep_files = files(Path(server.root) / keep_ns.removeprefix("local://"))

    # a refresh whose listing fails marks nothing orphaned (and leaves the record as it was)
    state = load_config(cfg).discovery.state_file
    before = state.read_text()
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFS_DEFAULT", conn(server, password="not-the-secret"))
    with pytest.raises(Exception, match="401|nauthori|credentials"):
        refresh(cfg)
    assert state.read_text() == before
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFS_DEFAULT", conn(server))

    out = refresh(cfg)
    assert out["orphaned_namespaces"] == [
        {
            "namespace": ns,
            "lakefs_conn_id": "lakefs_default",
            "repository": gone,
            "orphaned_at": read_discovered(state).orphans[0].orphaned_at,
            "objects": len(left),
            "bytes": sum(len(b) for b in left.values()),
            "complete": True,
        }
    ]
    assert any(f"repository {gone} is gone: its namespace {ns} is orphaned" in c for c in out["changes"])

    # before the grace period
    rc, _, err = reclaim(capsys, ns, cfg, "--confirm", ns)
    assert rc == 1
    assert "less than the grace period of 30 days" in err
    assert "--grace-days N" in err
    assert files(ns_dir) == left
    found = read_discovered(state)
    found.orphans = [o.__class__(**{**o.to_doc(), "orphaned_at": "2026-01-01T00:00:00+00:00"}) for o in found.orphans]
    write_discovered(state, found)

    # without (the right) confirmation
    rc, _, err = reclaim(capsys, ns, cfg)
    assert rc == 1
    assert f"no --confirm: give --confirm {ns}" in err
    rc, _, err = reclaim(capsys, ns, cfg, "--confirm", ns + "-typo")
    assert rc == 1
    assert f"--confirm {ns}-typo is not it" in err

    # lakeFS itself refuses a new repository on it (its _lakefs/dummy is there)
    with pytest.raises(lakefs_sdk.exceptions.ApiException) as refused:
        history.create(client, f"orphan-{tag}-same", ns)
    assert refused.value.status == 400, refused.value
    assert files(ns_dir) == left

    # while a repository is under it, here or on the other lakeFS the file names; or that one is down
    under = f"orphan-{tag}-under"
    history.create(client, under, ns + "/under")
    rc, _, err = reclaim(capsys, ns, cfg, "--confirm", ns)
    assert rc == 1
    assert (
        f"is in use: repository {under} of lakeFS connection 'lakefs_default' ({server.api_url}) has namespace {ns}/under"
        in err
    ), err
    client.repositories_api.delete_repository(under)
    left = files(ns_dir)  # with what the repository under it left
    history.create(other.client(), f"elsewhere-{tag}", ns)
    rc, _, err = reclaim(capsys, ns, cfg, "--confirm", ns)
    assert rc == 1
    assert f"repository elsewhere-{tag} of lakeFS connection 'lakefs_other'" in err
    other.client().repositories_api.delete_repository(f"elsewhere-{tag}")
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFS_OTHER", conn(other, host="http://127.0.0.1:9"))
    rc, _, err = reclaim(capsys, ns, cfg, "--confirm", ns)
    assert rc == 1
    assert "lakeFS connection 'lakefs_other' (http://127.0.0.1:9/api/v1) did not list its repositories" in err
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFS_OTHER", conn(other))
    assert files(ns_dir) == left

    # a dry run says what would go, and changes nothing
    rc, out_text, err = reclaim(capsys, ns, cfg, "--dry-run")
    assert rc == 0, err
    assert f"dry run: would delete {len(left)} objects" in out_text
    assert files(ns_dir) == left

    # then it goes, into the quarantine; the other namespace is untouched; the orphan is no longer recorded
    rc, out_text, err = reclaim(capsys, ns, cfg, "--confirm", ns)
    assert rc == 0, err
    assert f"{ns}: reclaimed {len(left)} objects" in out_text
    assert files(ns_dir) == {}
    reclaimed = Path(server.root) / "_lakefs_gc" / "reclaimed"
    (sdir,) = reclaimed.iterdir()
    assert files(sdir / "quarantine" / ns.removeprefix("local://")) == left
    until = json.loads((sdir / "quarantine.json").read_text())["until"]
    assert files(Path(server.root) / keep_ns.removeprefix("local://")) == keep_files
    assert read_discovered(state).orphans == []
    rc, _, err = reclaim(capsys, ns, cfg, "--confirm", ns)
    assert rc == 1
    assert "is not recorded as orphaned" in err

    # the next reclaim after the quarantine ended purges it
    client.repositories_api.delete_repository(keep)
    refresh(cfg)
    found = read_discovered(state)
    found.orphans = [o.__class__(**{**o.to_doc(), "orphaned_at": "2026-01-01T00:00:00+00:00"}) for o in found.orphans]
    write_discovered(state, found)
    later = datetime.fromisoformat(until.replace("Z", "+00:00")) + timedelta(hours=1)
    rc, out_text, err = reclaim(capsys, keep_ns, cfg, "--confirm", keep_ns, "--quarantine-days", "0", now=later)
    assert rc == 0, err
    assert f"purged {len(left)} files of earlier reclaims whose quarantine ended" in out_text, (
        out_text,
        err,
        files(Path(server.root)).keys(),
    )
    assert not (sdir / "quarantine").exists()
    assert files(Path(server.root) / keep_ns.removeprefix("local://")) == {}  # quarantine days 0: deleted
    assert list(reclaimed.glob("*")) == []


def test_on_s3_with_versioning_the_reclaim_says_the_deleted_objects_stay_as_noncurrent_versions(
    real_lakefs, moto_server, tmp_path, capsys, monkeypatch
):
    server = real_lakefs("s3")
    bucket = moto_server.create_bucket(f"orphans-{uuid.uuid4().hex[:8]}")
    s3 = moto_server.client()
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFS_DEFAULT", conn(server, extra={}))
    monkeypatch.setenv(
        "AIRFLOW_CONN_AWS_DEFAULT",
        json.dumps(
            {
                "conn_type": "aws",
                "login": moto_server.access_key,
                "password": moto_server.secret_key,
                "extra": {"endpoint_url": moto_server.endpoint_url, "region_name": moto_server.region},
            }
        ),
    )
    tag = uuid.uuid4().hex[:6]
    cfg = tmp_path / "gc.yaml"
    cfg.write_text(f"discover: {{sources: [{{include: ['s3-{tag}-*']}}]}}\n")
    client, repo = server.client(), f"s3-{tag}-gone"
    ns = server.namespace(repo, bucket)
    history.create(client, repo, ns)
    for i in range(3):
        client.objects_api.upload_object(repo, "main", f"f{i}", content=b"y" * (20 + i))
    client.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message="three"))
    refresh(cfg)
    client.repositories_api.delete_repository(repo)

    def current() -> dict[str, int]:
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=f"{repo}/")
        return {o["Key"]: o["Size"] for p in pages for o in p.get("Contents", [])}

    left = current()
    (reported,) = refresh(cfg)["orphaned_namespaces"]
    assert (reported["namespace"], reported["objects"], reported["bytes"]) == (ns, len(left), sum(left.values()))
    state = load_config(cfg).discovery.state_file
    found = read_discovered(state)
    found.orphans = [o.__class__(**{**o.to_doc(), "orphaned_at": "2026-01-01T00:00:00+00:00"}) for o in found.orphans]
    write_discovered(state, found)
    rc, out_text, err = reclaim(capsys, ns, cfg, "--confirm", ns)
    assert rc == 0, err
    assert f"{ns}: reclaimed {len(left)} objects ({sum(left.values()):,} bytes)" in out_text
    assert "the store keeps what was deleted (s3 versioning: bucket versioning keeps the deleted versions" in out_text
    assert "NoncurrentVersionExpiration" in out_text
    assert current() == {}
    versions = s3.list_object_versions(Bucket=bucket, Prefix=f"{repo}/")
    assert {v["Key"]: v["Size"] for v in versions["Versions"] if not v["IsLatest"]} == left  # still billed
    assert {m["Key"] for m in versions["DeleteMarkers"] if m["IsLatest"]} == set(left)


def test_bad_input_is_exit_status_2_and_an_unrecorded_namespace_is_refused(tmp_path, capsys):
    cfg = tmp_path / "gc.yaml"
    cfg.write_text("repositories: [{repository: named}]\n")
    rc, _, err = reclaim(capsys, "s3://bkt/x", cfg, "--confirm", "s3://bkt/x")
    assert rc == 2
    assert "has no 'discover' section: no refresh records the repositories' namespaces" in err
    rc, _, err = reclaim(capsys, "s3://bkt/x", cfg, "--grace-days", "-1")
    assert rc == 2
    assert "--grace-days and --quarantine-days take a number of days, 0 or more" in err
    cfg.write_text("discover: {sources: [{include: ['*']}]}\n")
    rc, _, err = reclaim(capsys, "s3://bkt/x/", cfg, "--confirm", "s3://bkt/x")
    assert rc == 1
    assert f"s3://bkt/x is not recorded as orphaned in {tmp_path / 'gc.discovered.json'}" in err
    assert "run the DAG lakefs_gc_discover" in err
