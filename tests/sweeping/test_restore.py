"""``lakefs-gc restore`` (lakefs_gc.sweeping.restore) on stores that keep deleted data: the
``local://`` quarantine and S3 bucket versioning (a moto server on 127.0.0.1). The sweep is the
delete step's own (in the task's process, ``run_in_task``), over a mark written by hand in
lakeFS's layout; the assertions are on the bytes left in storage.

Azurite keeps no soft-deleted blob (its soft delete answers the policy calls and deletes for
good: Azure/Azurite#417, #2383) and fake-gcs-server keeps no soft-deleted generation: the
Azure and GCS restores are not tested against a store here (lakefs_gc.sweeping.restore)."""

from __future__ import annotations

import io
import json
import os
import time
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakefs_gc.cli import main as cli
from lakefs_gc.contract import SlicesResult, StepInputs, UncommittedResult
from lakefs_gc.placement import DEFAULT
from lakefs_gc.report import formats, layout
from lakefs_gc.steps import delete, run_in_task
from lakefs_gc.storage import LocalStorage, open_storage
from lakefs_gc.storage.settings import ENV_ACCESS_KEY, ENV_SECRET_KEY
from lakefs_gc.sweeping import restore
from lakefs_gc.timestamps import iso
from tests.support.contract import make_context

MARK = "ft0000000000000000rs"


def _mark(st, keys: list[str], start: datetime) -> None:
    buf = io.BytesIO()
    pq.write_table(pa.table({"address": pa.array(keys, pa.string())}), buf)
    st.put(layout.deleted_dir(MARK) + layout.part_name(0), buf.getvalue())
    st.put(
        layout.summary_key(MARK),
        json.dumps(
            {"run_id": MARK, "success": True, "start_time": iso(start), "airflow_run_id": "manual__mark1"}
        ).encode(),
    )


def _sweep(ns: str, work, sweep_run: str = "manual__sweep1", local_root=None, s3=None, **settings):
    ctx = make_context(
        ns,
        work_dir=str(work),
        local_root=local_root,
        airflow_run_id=sweep_run,
        s3_endpoint=s3.endpoint_url if s3 else None,
        s3_region="us-east-1",
        max_delete_share=1.0,
        **settings,
    )
    inputs = StepInputs(
        ctx,
        {
            "mark_uncommitted": UncommittedResult(run_id=MARK, locations=(), pages=1),
            "list_slices": SlicesResult(
                listed_dir="", first_slice="", slices_listed=0, slices_skipped=0, listed_objects=1000, listed_bytes=0
            ),
            "compute_candidates": None,
        },
    )
    env = {ENV_ACCESS_KEY: s3.access_key, ENV_SECRET_KEY: s3.secret_key} if s3 else {}
    res = run_in_task("delete", inputs, env, DEFAULT.in_task_max_keys)
    assert res is not None
    assert not res.incomplete
    return res


def _files(n: int) -> dict[str, bytes]:
    return {f"data/s{i % 3}/obj{i:03d}": f"bytes of object {i}".encode() * (i + 1) for i in range(n)}


@pytest.fixture
def local_ns(tmp_path):
    root = tmp_path / "blockstore"
    st = LocalStorage(root / "repo")
    st.uri = "local://repo"
    st.put("_lakefs/dummy", b"")
    return root, st


def test_a_quarantined_sweep_is_restored_byte_for_byte_and_never_over_a_newer_write(local_ns, tmp_path, capsys):
    root, st = local_ns
    objs = _files(12)
    live = {"data/s0/live": b"live", "data/s1/live": b"live too"}
    for k, v in {**objs, **live}.items():
        st.put(k, v)
    _mark(st, sorted(objs), datetime.now(UTC) - timedelta(minutes=5))

    res = _sweep("local://repo", tmp_path / "work", local_root=str(root), quarantine_days=7)
    assert res.counts.deleted == 12
    assert res.restorable.how == "local quarantine"
    assert res.restorable.restorable
    until = datetime.strptime(res.restorable.until, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert timedelta(days=6, hours=23) < until - datetime.now(UTC) <= timedelta(days=7)
    assert {o.key for o in st.list("data/")} == set(live)  # swept: gone from data/ ...
    sdir = layout.sweep_dir(MARK, "manual__sweep1")
    quarantined = {o.key[len(layout.quarantine_dir(sdir)) :] for o in st.list(layout.quarantine_dir(sdir))}
    assert quarantined == set(objs)  # ... kept in the sweep's quarantine, under _lakefs/
    assert formats.read_quarantine(st, layout.quarantine_file(sdir))["until"] == res.restorable.until

    again = "data/s2/obj002"  # written again after the sweep: a restore must not replace it
    st.put(again, b"a newer write")
    keys_file = tmp_path / "keys.txt"
    keys_file.write_text(f"{st.full_uri('data/s0/obj000')}\ndata/s1/obj001\n{again}\ndata/s0/never-deleted\n")

    # a dry run changes nothing, and writes nothing anywhere in the namespace (no report either)
    everything = {o.key for o in st.list("", recursive=True)}
    assert cli(["restore", "local://repo", "--run", MARK, "--dry-run", "--local-root", str(root)]) == 1
    assert {o.key for o in st.list("data/")} == set(live) | {again}
    assert {o.key for o in st.list("", recursive=True)} == everything
    # --keys: only those; a key the run did not delete is said so
    assert (
        cli(["restore", "local://repo", "--run", "manual__mark1", "--keys", str(keys_file), "--local-root", str(root)])
        == 1
    )
    out = capsys.readouterr().out
    assert "report: none (a dry run writes nothing)" in out  # the dry run's
    assert "data/s0/never-deleted  not deleted by this run" in out
    assert f"{again}  written again since" in out
    assert st.get("data/s0/obj000") == objs["data/s0/obj000"]
    assert st.get("data/s1/obj001") == objs["data/s1/obj001"]
    assert not st.exists("data/s0/obj003")
    # the rest, by the sweep's Airflow run id
    assert cli(["restore", "local://repo", "--run", MARK, "--local-root", str(root), "--restore-id", "all"]) == 1
    out = capsys.readouterr().out
    assert "9 restored" in out, out
    assert "2 already restored by restore-" in out, out  # the --keys restore's
    assert "1 written again since" in out, out
    for k, v in objs.items():
        assert st.get(k) == (b"a newer write" if k == again else v), k
    for k, v in live.items():
        assert st.get(k) == v
    report = json.loads(st.get(layout.restore_dir(MARK, "all") + "summary.json"))
    assert report["counts"] == {"restored": 9, "already restored": 2, "written again since": 1}
    rows = formats.read_restore_outcomes(st, layout.restore_dir(MARK, "all") + "outcomes.parquet")
    assert sorted(k for k, o, _ in rows) == sorted(objs)
    # the newer write's quarantined copy stays where it was
    assert st.exists(layout.quarantine_dir(sdir) + again)
    # explain tells the story of each
    from lakefs_gc.explain import COLLECTED, RESTORED, explain

    roots = ("local://repo/",)
    assert explain(st, "data/s0/obj003", roots).verdict == RESTORED
    why = explain(st, again, roots)
    assert why.verdict == COLLECTED, why.lines()
    assert any("written again since" in t for _, t in why.facts), why.lines()


def test_a_second_restore_says_already_restored_by_the_first(local_ns, tmp_path, capsys):
    """Issue 52: a restore of keys an earlier restore brought back said "the sweep did not remove
    it"; it names the restore that did, per key and in the summary line, and is not a failure."""
    root, st = local_ns
    objs = _files(6)
    for k, v in objs.items():
        st.put(k, v)
    _mark(st, sorted(objs), datetime.now(UTC) - timedelta(minutes=5))
    _sweep("local://repo", tmp_path / "work", local_root=str(root), quarantine_days=7)
    base = ["restore", "local://repo", "--run", MARK, "--local-root", str(root)]
    first = sorted(objs)[:2]
    keys_file = tmp_path / "keys.txt"
    keys_file.write_text("\n".join(first) + "\n")
    assert cli([*base, "--keys", str(keys_file), "--restore-id", "first"]) == 0
    assert "mark ft0000000000000000rs, 2 keys: 2 restored\n" in capsys.readouterr().out

    # a dry run: the two are already restored, by "first"; nothing is written anywhere
    everything = {o.key for o in st.list("", recursive=True)}
    assert cli([*base, "--dry-run"]) == 0
    out = capsys.readouterr().out
    for k in first:
        assert f"{k}  already restored: by first on " in out, out
        assert "(the object is there)" in out, out
    assert "the sweep did not remove it" not in out
    assert "dry run: mark ft0000000000000000rs, 6 keys: 4 would restore, 2 already restored by first\n" in out, out
    assert {o.key for o in st.list("", recursive=True)} == everything

    # the rest: restored; the two named as the first's
    assert cli([*base, "--restore-id", "second"]) == 0
    out = capsys.readouterr().out
    assert "mark ft0000000000000000rs, 6 keys: 4 restored, 2 already restored by first\n" in out, out
    for k, v in objs.items():
        assert st.get(k) == v
    doc = json.loads(st.get(layout.restore_dir(MARK, "second") + "summary.json"))
    assert doc["counts"] == {"restored": 4, "already restored": 2}
    assert doc["already_restored_by"] == {"first": 2}
    rows = {
        k: (o, d)
        for k, o, d in formats.read_restore_outcomes(st, layout.restore_dir(MARK, "second") + "outcomes.parquet")
    }
    assert {k for k, (o, _) in rows.items() if o == "already restored"} == set(first)
    assert rows[first[0]][1].startswith("by first on ")

    # one of them deleted by hand since; a third restore names both earlier restores and changes nothing
    os.unlink(root / "repo" / first[1])
    assert cli(base) == 0
    out = capsys.readouterr().out
    assert "6 keys: 6 already restored by first, second\n" in out, out
    [line] = [ln for ln in out.splitlines() if ln.startswith(first[1])]
    assert line.startswith(f"{first[1]}  already restored: by first on "), line
    assert line.endswith("(gone again since)"), line
    assert not st.exists(first[1])
    # the same restore id again (a task run twice): its own record stays "restored"
    assert cli([*base, "--restore-id", "second"]) == 0
    assert "6 keys: 4 restored, 2 already restored by first\n" in capsys.readouterr().out


def test_a_later_sweep_purges_an_ended_quarantine_and_restore_says_so(local_ns, tmp_path, monkeypatch):
    root, st = local_ns
    objs = _files(4)
    for k, v in objs.items():
        st.put(k, v)
    _mark(st, sorted(objs), datetime.now(UTC) - timedelta(minutes=5))
    _sweep("local://repo", tmp_path / "work", local_root=str(root), quarantine_days=1)
    sdir = layout.sweep_dir(MARK, "manual__sweep1")
    assert len(list(st.list(layout.quarantine_dir(sdir)))) == 4
    # not yet ended: nothing purged
    assert restore.purge_quarantine(st, datetime.now(UTC)) == 0
    # two days later, a later sweep (of the same mark here: all already gone) purges it
    later = datetime.now(UTC) + timedelta(days=2)
    monkeypatch.setattr(delete, "datetime", type("Later", (), {"now": staticmethod(lambda tz=None: later)}))
    res = _sweep("local://repo", tmp_path / "work", sweep_run="manual__sweep2", local_root=str(root))
    assert res.quarantine_purged == 4
    assert res.counts.already_gone == 4
    assert list(st.list(layout.quarantine_dir(sdir))) == []
    assert not res.restorable.restorable
    assert "quarantine_days is 0" in res.restorable.detail
    report = restore.restore_run(st, MARK, now=later)
    assert report.counts == {"retention passed": 4}


def test_quarantine_days_are_refused_on_a_namespace_that_is_not_local(tmp_path):
    from lakefs_gc.contract import RunSettings
    from lakefs_gc.errors import SettingsError
    from lakefs_gc.steps.prepare_run import prepare_run
    from lakefs_gc.storage import S3Options

    class Client:
        endpoint = "http://127.0.0.1:1/api/v1"

        def get_repository(self, repo):
            return type("R", (), {"storage_namespace": "s3://bucket/repo", "storage_id": ""})()

        def require_gc_rules(self, repo):
            return type("Rules", (), {"default_retention_days": 1, "branches": []})()

        def blockstore_type(self, storage_id):
            return "s3"

        def grace_period_seconds(self):
            return 60

    with pytest.raises(
        SettingsError,
        match=r"quarantine_days \(3\) is for local:// namespaces.*S3 bucket "
        r"versioning.*nothing was deleted",
    ):
        prepare_run(
            Client(),
            "repo",
            RunSettings(quarantine_days=3),
            now=datetime.now(UTC),
            airflow_run_id="manual__q",
            work_dir=str(tmp_path),
            storage_options=S3Options(endpoint_url="http://127.0.0.1:1", access_key_id="a", secret_access_key="b"),
        )


def _versioned(moto_server, name: str, versioning: bool = True):
    bucket = moto_server.create_bucket(name)
    s3 = moto_server.client()
    if versioning:
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    return open_storage(f"s3://{bucket}/repo", moto_server.s3_options())


def test_a_sweep_of_a_versioned_bucket_is_restored_and_a_newer_write_stays(moto_server, tmp_path, capsys, monkeypatch):
    st = _versioned(moto_server, "restore-versioned")
    objs = _files(8)
    for k, v in objs.items():
        st.put(k, v)
    st.put("data/s0/live", b"live")
    _mark(st, sorted(objs), datetime.now(UTC) - timedelta(minutes=1))
    res = _sweep(st.uri, tmp_path / "work", s3=moto_server)
    assert res.counts.deleted == 8
    assert {o.key for o in st.list("data/")} == {"data/s0/live"}
    assert res.restorable.how == "s3 versioning"
    assert res.restorable.restorable
    assert res.restorable.until is None
    # a lifecycle rule that expires noncurrent versions bounds it
    moto_server.client().put_bucket_lifecycle_configuration(
        Bucket=st.bucket,
        LifecycleConfiguration={
            "Rules": [
                {
                    "ID": "expire",
                    "Status": "Enabled",
                    "Filter": {"Prefix": ""},
                    "NoncurrentVersionExpiration": {"NoncurrentDays": 30},
                }
            ]
        },
    )
    r = restore.restorability(st, datetime(2026, 1, 1, tzinfo=UTC))
    assert r.restorable
    assert r.until == "2026-01-31T00:00:00.000000Z"
    assert "30 days" in r.detail

    again = "data/s1/obj001"
    st.put(again, b"a newer write")
    ns = st.uri
    env_args = ["--s3-endpoint", moto_server.endpoint_url]
    monkeypatch.setenv(ENV_ACCESS_KEY, moto_server.access_key)
    monkeypatch.setenv(ENV_SECRET_KEY, moto_server.secret_key)
    assert cli(["restore", ns, "--run", "manual__mark1", "--restore-id", "r1", *env_args]) == 1
    out = capsys.readouterr().out
    assert "7 restored, 1 written again since" in out, out
    for k, v in objs.items():
        assert st.get(k) == (b"a newer write" if k == again else v), k
    # restored: the delete markers are gone, each key's version is the one the sweep hid
    versions = moto_server.client().list_object_versions(Bucket=st.bucket, Prefix="repo/data/")
    markers = versions.get("DeleteMarkers", [])  # only the newer write's: below it, left as it was
    assert [(m["Key"], m["IsLatest"]) for m in markers] == [(f"repo/{again}", False)]
    # a second restore names the first for what it brought back; the newer write is still the newer write
    report = restore.restore_run(st, MARK)
    assert report.counts == {"already restored": 7, "written again since": 1}
    assert report.already_by == {"r1": 7}


def test_a_delete_marker_made_outside_the_sweep_is_not_the_runs_to_undo(moto_server, tmp_path):
    st = _versioned(moto_server, "restore-outside")
    st.put("data/s0/a", b"a")
    st.put("data/s0/b", b"b")
    _mark(st, ["data/s0/a", "data/s0/b"], datetime.now(UTC) - timedelta(minutes=1))
    _sweep(st.uri, tmp_path / "work", s3=moto_server)
    run = restore.swept_run(st, MARK)
    assert run.keys == {"data/s0/a", "data/s0/b"}
    # the same deletions seen from a sweep that ran a day earlier: the markers are not its own
    earlier = restore.SweptRun(
        MARK, {}, run.keys, run.sweep_dirs, run.start - timedelta(days=1), run.end - timedelta(days=1)
    )
    assert st.restore_key("data/s0/a", earlier, False, datetime.now(UTC))[0] == restore.DELETED_AGAIN
    assert not st.exists("data/s0/a")


def test_a_key_a_retried_sweep_deleted_twice_is_restored_readable(moto_server, tmp_path):
    """A sweep killed in the middle of a part re-sends that part on its retry: each of its keys gets a
    second delete marker on a versioned bucket ("already gone"). The restore removes both: removing
    only the newest left the older one current, and the key reported restored still read 404
    (found by the chaos bench, issue 56)."""
    st = _versioned(moto_server, "restore-twice")
    st.put("data/s0/a", b"a")
    st.put("data/s0/b", b"b")
    _mark(st, ["data/s0/a", "data/s0/b"], datetime.now(UTC) - timedelta(minutes=1))
    _sweep(st.uri, tmp_path / "work", s3=moto_server)
    s3 = moto_server.client()
    s3.delete_object(Bucket=st.bucket, Key="repo/data/s0/a")  # the retry's second delete, inside the sweep's window
    run = restore.swept_run(st, MARK)
    run = restore.SweptRun(MARK, {}, run.keys, run.sweep_dirs, run.start, datetime.now(UTC) + timedelta(seconds=1))
    assert st.restore_key("data/s0/a", run, True, datetime.now(UTC))[0] == restore.WOULD_RESTORE
    outcome, detail = st.restore_key("data/s0/a", run, False, datetime.now(UTC))
    assert outcome == restore.RESTORED, detail
    assert st.get("data/s0/a") == b"a"
    assert st.restore_key("data/s0/b", run, False, datetime.now(UTC))[0] == restore.RESTORED
    assert st.get("data/s0/b") == b"b"
    assert s3.list_object_versions(Bucket=st.bucket, Prefix="repo/data/").get("DeleteMarkers", []) == []


def test_an_unversioned_bucket_restores_nothing_and_the_sweep_said_so(moto_server, tmp_path):
    st = _versioned(moto_server, "restore-plain", versioning=False)
    st.put("data/s0/a", b"a")
    _mark(st, ["data/s0/a"], datetime.now(UTC) - timedelta(minutes=1))
    res = _sweep(st.uri, tmp_path / "work", s3=moto_server)
    assert res.restorable.restorable is False
    assert "versioning is off" in res.restorable.detail
    report = restore.restore_run(st, MARK)
    assert report.counts == {"no version kept": 1}
    assert not st.exists("data/s0/a")


def test_restore_refuses_a_run_that_is_not_there_or_never_swept(local_ns, tmp_path, capsys):
    root, st = local_ns
    assert cli(["restore", "local://repo", "--run", "nope", "--local-root", str(root)]) == 2
    assert "no GC run 'nope'" in capsys.readouterr().err
    _mark(st, ["data/s0/x"], datetime.now(UTC))
    assert cli(["restore", "local://repo", "--run", MARK, "--local-root", str(root)]) == 2
    assert "was never swept" in capsys.readouterr().err
    assert (
        cli(
            [
                "restore",
                "local://repo",
                "--run",
                MARK,
                "--keys",
                str(tmp_path / "missing.txt"),
                "--local-root",
                str(root),
            ]
        )
        == 2
    )
    assert "--keys" in capsys.readouterr().err


@pytest.mark.spark
@pytest.mark.parametrize("store", ["local", "s3"])
def test_a_run_with_a_wrong_rule_is_undone_and_lakefs_reads_the_old_commit_again(
    store, spark, lakefs_emulator_factory, moto_server, tmp_path, monkeypatch, capsys
):
    """The fear the restore answers: a retention rule set too short. A GC run deletes the objects
    only an old commit held; lakeFS can no longer read that commit. The restore brings exactly
    those objects back, byte for byte, and lakeFS reads the old commit again; the objects of the
    commits still kept, and one written at a swept address since, are untouched."""
    import lakefs_sdk

    from lakefs_gc.contract import RunSettings
    from lakefs_gc.lakefs.client import LakeFSClient
    from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY
    from lakefs_gc.steps.prepare_run import prepare_run
    from lakefs_sandbox.inprocess import run_steps
    from tests.conftest import ns_rel, ns_storage

    s3 = moto_server if store == "s3" else None
    emu = lakefs_emulator_factory("--grace-period", "1", s3=s3)
    bucket = ""
    if s3:
        bucket = moto_server.create_bucket("restore-e2e")
        moto_server.client().put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    ns, repo, c = emu.namespace("undo", bucket=bucket), "undo", emu.client()
    emu.set_clock(offset=-30 * 86400)  # the history: a month ago
    c.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=ns, default_branch="main")
    )
    old = {f"tables/t{i}.csv": f"id,v\n{i},old\n".encode() * 50 for i in range(6)}
    addresses = {
        p: ns_rel(ns, c.objects_api.upload_object(repo, "main", p, content=d).physical_address) for p, d in old.items()
    }
    old_commit = c.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message="the old tables")).id
    new = {p: d.replace(b"old", b"new") for p, d in old.items()}
    emu.set_clock(offset=-10 * 86400)  # replaced ten days ago: the old commit left HEAD then
    for p, d in new.items():
        c.objects_api.upload_object(repo, "main", p, content=d)
    c.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message="the new tables"))
    emu.set_clock(offset=0)
    # the wrong rule: one day, when the old commit had to be kept
    c.repositories_api.set_gc_rules(repo, lakefs_sdk.GarbageCollectionRules(default_retention_days=1, branches=[]))
    storage = ns_storage(ns, s3)
    if store == "local":  # the files' own age (the emulator wrote them now)
        for p in addresses.values():
            t = time.time() - 30 * 86400
            os.utime(storage.root / p, (t, t))
    else:
        time.sleep(2.5)  # older than the minimum age below

    client = LakeFSClient(emu.api_url, emu.access_key, emu.secret_key)
    settings = RunSettings(
        min_age_seconds=2,
        unsafe_min_age_override=True,
        confirm_after_seconds=0,
        max_delete_share=1.0,
        quarantine_days=7 if store == "local" else 0,
    )
    ctx = prepare_run(
        client,
        repo,
        settings,
        now=datetime.now(UTC),
        airflow_run_id="manual__wrong_rule",
        work_dir=str(tmp_path / "work"),
        local_root=emu.local_root,
        parallelism=2,
        storage_options=s3.s3_options() if s3 else None,
    )
    env = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
    if s3:
        env.update({ENV_ACCESS_KEY: moto_server.access_key, ENV_SECRET_KEY: moto_server.secret_key})
    results = run_steps(spark, ctx, client, env)
    assert results["delete"].counts.deleted == len(old)
    assert not any(storage.exists(a) for a in addresses.values())
    assert results["delete"].restorable.restorable is True
    summary = json.loads(storage.get(layout.summary_key(results["mark_uncommitted"].run_id)))
    assert summary["restorable"]["how"] == ("local quarantine" if store == "local" else "s3 versioning")
    with pytest.raises(Exception):  # noqa: B017, PT011 - whatever lakeFS answers, the swept object cannot be read
        c.objects_api.get_object(repo, old_commit, "tables/t0.csv")

    # one swept address written again meanwhile (by hand: lakeFS never reuses one)
    again = addresses["tables/t5.csv"]
    storage.put(again, b"written since")
    args = ["restore", ns, "--run", "manual__wrong_rule"]
    if store == "local":
        args += ["--local-root", emu.local_root]
    else:
        args += ["--s3-endpoint", moto_server.endpoint_url]
        monkeypatch.setenv(ENV_ACCESS_KEY, moto_server.access_key)
        monkeypatch.setenv(ENV_SECRET_KEY, moto_server.secret_key)
    assert cli(args) == 1  # one key could not be restored: written since
    out = capsys.readouterr().out
    assert f"{len(old) - 1} restored, 1 written again since" in out, out
    for p, d in old.items():
        if p == "tables/t5.csv":
            assert storage.get(again) == b"written since"
            continue
        assert storage.get(addresses[p]) == d
        assert bytes(c.objects_api.get_object(repo, old_commit, p)) == d  # lakeFS reads the old commit again
    for p, d in new.items():
        assert bytes(c.objects_api.get_object(repo, "main", p)) == d
