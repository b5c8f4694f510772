"""``lakefs-gc explain`` (lakefs_gc.explain): for every fate an object can meet, the right
reason. A repository on the emulator (history dated back with its clock), two GC runs in process
(the jobs' step functions on the shared SparkSession): the first sweeps, the second holds its new
garbage back (delayed confirmation). Then each object is explained, by address and by path.

Fates: kept by a branch HEAD, kept by a commit the retention rules keep (not a HEAD), kept by a
staged entry, collected (staged then deleted), collected though a tag's commit references it
(lakeFS's GC keeps no commit for a tag, treeverse/lakeFS#7621), held back. A path the branch no
longer reads is explained by the address it had in the newest commit that had it; one no commit
had is said never to have existed there."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime

import lakefs_sdk
import pytest

from lakefs_gc import explain as E
from lakefs_gc.cli import main as cli
from lakefs_gc.contract import RunSettings
from lakefs_gc.lakefs.client import LakeFSClient
from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY
from lakefs_gc.steps.prepare_run import prepare_run
from lakefs_gc.storage import parse_namespace
from lakefs_sandbox.inprocess import run_steps
from tests.conftest import ns_rel, ns_storage

pytestmark = pytest.mark.spark
DAY = 86400


def _age(storage, days: float = 30) -> None:
    t = time.time() - days * DAY
    for dirpath, _, files in os.walk(storage.root / "data"):
        for f in files:
            os.utime(os.path.join(dirpath, f), (t, t))


def _run(spark, emu, client, repo, tmp_path, name: str, confirm: int) -> dict:
    ctx = prepare_run(
        client,
        repo,
        RunSettings(
            min_age_seconds=2,
            unsafe_min_age_override=True,
            flow="clean",
            confirm_after_seconds=confirm,
            max_delete_share=1.0,
        ),
        now=datetime.now(UTC),
        airflow_run_id=name,
        work_dir=str(tmp_path / "work"),
        local_root=emu.local_root,
        parallelism=2,
    )
    return run_steps(spark, ctx, client, {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key})


def test_every_fate_is_explained_with_its_reason(spark, lakefs_emulator_factory, tmp_path, monkeypatch, capsys):
    emu = lakefs_emulator_factory()
    c, repo = emu.client(), "why"
    ns = emu.namespace(repo)
    emu.set_clock(offset=-30 * DAY)
    c.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=ns, default_branch="main")
    )

    def up(branch, path, data):
        return ns_rel(ns, c.objects_api.upload_object(repo, branch, path, content=data).physical_address)

    # long: from the repository's first commit, not from c1 (its 60 days would keep c1 too)
    c.branches_api.create_branch(repo, lakefs_sdk.BranchCreation(name="long", source="main"))
    a = {"head": up("main", "head.csv", b"in main's HEAD"), "tagged": up("main", "old.csv", b"old, tagged")}
    a["dropped"] = up("main", "dropped.csv", b"committed, then deleted")
    c1 = c.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message="c1")).id
    c.tags_api.create_tag(repo, lakefs_sdk.TagCreation(id="v1", ref=c1))
    a["retained"] = up("long", "long.csv", b"v1 of long")
    c.commits_api.commit(repo, "long", lakefs_sdk.CommitCreation(message="l1"))
    emu.set_clock(offset=-10 * DAY)  # c1 and l1 leave their HEADs ten days ago
    up("main", "old.csv", b"new")
    c.objects_api.delete_object(repo, "main", "dropped.csv")
    c2 = c.commits_api.commit(repo, "main", lakefs_sdk.CommitCreation(message="c2")).id
    up("long", "long.csv", b"v2 of long")
    c.commits_api.commit(repo, "long", lakefs_sdk.CommitCreation(message="l2"))
    emu.set_clock(offset=-30 * DAY)  # uncommitted work, in an old slice
    a["staged"] = up("main", "staged.csv", b"staged, never committed")
    a["collected"] = up("main", "gone.csv", b"staged then deleted")
    c.objects_api.delete_object(repo, "main", "gone.csv")
    emu.set_clock(offset=0)
    c.repositories_api.set_gc_rules(
        repo,
        lakefs_sdk.GarbageCollectionRules(
            default_retention_days=1, branches=[lakefs_sdk.GarbageCollectionRule(branch_id="long", retention_days=60)]
        ),
    )
    storage = ns_storage(ns)
    _age(storage)
    client = LakeFSClient(emu.api_url, emu.access_key, emu.secret_key)
    first = _run(spark, emu, client, repo, tmp_path, "manual__first", confirm=0)
    assert not storage.exists(a["tagged"])
    assert not storage.exists(a["collected"])
    assert not storage.exists(a["dropped"])  # only c1 (expired, tagged v1) had it

    emu.set_clock(offset=-30 * DAY)  # in an old slice: a candidate at once
    a["held"] = up("main", "held.csv", b"garbage after the first run")
    c.objects_api.delete_object(repo, "main", "held.csv")
    emu.set_clock(offset=0)
    _age(storage)
    second = _run(spark, emu, client, repo, tmp_path, "manual__second", confirm=3600)
    assert second["compute_candidates"].held_back == 1
    assert storage.exists(a["held"])

    roots = parse_namespace(ns, emu.local_root).roots()
    fate = {k: E.explain(storage, addr, roots, client, repo) for k, addr in a.items()}
    text = {k: "\n".join(ex.lines()) for k, ex in fate.items()}
    assert fate["head"].verdict == E.KEPT_HEAD
    assert "branch main" in text["head"]
    assert "'head.csv'" in text["head"]
    assert fate["retained"].verdict == E.KEPT_COMMIT, text["retained"]
    assert "'long.csv'" in text["retained"]
    assert "'long': 60" in text["retained"]
    assert fate["staged"].verdict == E.KEPT_STAGED
    assert "stages it at 'staged.csv'" in text["staged"]
    first_mark = first["mark_uncommitted"].run_id
    assert fate["collected"].verdict == E.COLLECTED
    assert f"mark {first_mark}" in fate["collected"].reason
    assert "sweep manual__first" in text["collected"]
    assert "restorable" in text["collected"]
    assert fate["tagged"].verdict == E.COLLECTED
    assert E.TAG_ONLY in fate["tagged"].fates
    assert "tag v1" in text["tagged"]
    assert "#7621" in text["tagged"]
    assert fate["held"].verdict == E.HELD_BACK, text["held"]
    assert "delayed confirmation" in text["held"], text["held"]
    for k in ("head", "retained", "staged"):
        assert "not present" not in text[k], text[k]
        assert E.COLLECTED not in fate[k].fates, text[k]

    # the command, by logical path on a branch, and by address without lakeFS
    monkeypatch.setenv(ENV_LAKEFS_ACCESS_KEY, emu.access_key)
    monkeypatch.setenv(ENV_LAKEFS_SECRET_KEY, emu.secret_key)
    assert (
        cli(
            [
                "explain",
                ns,
                "long.csv",
                "--repository",
                repo,
                "--lakefs-endpoint",
                emu.url,
                "--ref",
                "long",
                "--local-root",
                emu.local_root,
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert f"{E.KEPT_HEAD}" in out
    assert "branch long" in out
    assert cli(["explain", ns, a["held"], "--local-root", emu.local_root]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{a['held']}: {E.HELD_BACK}")
    assert "held back by delayed confirmation" in out
    assert cli(["explain", ns, "nope.csv", "--local-root", emu.local_root]) == 2
    assert "logical path with --repository" in capsys.readouterr().err

    # a path main no longer reads: the newest commit of main that had it, the address it had there,
    # and what the GC did with that address; then asked on that commit, as the answer suggests
    lakefs_args = ["--repository", repo, "--lakefs-endpoint", emu.url, "--local-root", emu.local_root]
    assert cli(["explain", ns, "dropped.csv", *lakefs_args]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        f"{repo}@main has no object at 'dropped.csv' now. The newest commit of main that had it: {c1[:12]} ("
    ), out
    assert ns_rel(ns, out.split("'c1'), where it read ", 1)[1].split(";", 1)[0]) == a["dropped"], out
    assert f"; {c2[:12]} (" in out
    assert "'c2') no longer has it (2 commits of main searched)." in out
    assert f"To ask about the path on that commit: --ref {c1}\n" in out
    assert f"\n{a['dropped']}: {E.COLLECTED} (mark {first_mark})\n" in out
    assert "sweep manual__first" in out
    assert cli(["explain", ns, "dropped.csv", *lakefs_args, "--ref", c1]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{repo}@{c1}:dropped.csv reads ")
    assert f"\n{a['dropped']}: {E.COLLECTED} (mark {first_mark})\n" in out
    # a path no commit of main had: never existed there, with a close path main has; and the bound
    assert cli(["explain", ns, "heed.csv", *lakefs_args]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"lakefs-gc explain: error: {repo}@main has no object at 'heed.csv', and no commit of main ever had one "
        f"(3 commits searched, back to the first): it never existed on main. Try another --ref (a branch, tag "
        f"or commit that had it), or a path main has near it: 'head.csv'\n"
    )
    assert cli(["explain", ns, "dropped.csv", *lakefs_args, "--max-commits", "1"]) == 2
    assert capsys.readouterr().err.startswith(
        f"lakefs-gc explain: error: {repo}@main has no object at 'dropped.csv', and no commit among the newest "
        f"1 commit of main had one; the search stopped there (a larger --max-commits searches further back). "
        f"Try another --ref"
    )
