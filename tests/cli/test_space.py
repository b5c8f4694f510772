"""``lakefs-gc space`` and ``lakefs-gc whatif`` on the emulator: the report's lines carry the
attribution's numbers (the attribution itself is judged by the API oracle in
tests/listing/test_holders.py), the stale branches by what they alone hold, a what-if's answer,
and bad input refused with the fix, nothing changed in lakeFS or the namespace."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import lakefs_sdk
import pytest

from lakefs_gc.cli import main as cli
from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY
from tests.conftest import ns_storage
from tests.support import history

_repos = itertools.count()
DAY = 86400


@pytest.fixture
def repo(lakefs_emulator, monkeypatch):
    """main: x three times (v1 tagged, 10 days ago; v2 9 days ago; v3 now), y staged; branch old
    (HEAD 40 days ago) alone holds z (100 bytes); default rule 1 day."""
    emu = lakefs_emulator
    client, name = emu.client(), f"space-cli-{next(_repos)}"
    ns = emu.namespace(name)
    history.create(client, name, ns)
    now = datetime.now(UTC).timestamp()
    client.branches_api.create_branch(name, lakefs_sdk.BranchCreation(name="old", source="main"))
    client.objects_api.upload_object(name, "old", "z", content=b"z" * 100)
    client.commits_api.commit(name, "old", lakefs_sdk.CommitCreation(message="z", date=int(now - 40 * DAY)))
    for days_ago, body in ((10, b"v1"), (9, b"v2-longer"), (0.001, b"v3-longest")):
        client.objects_api.upload_object(name, "main", "x", content=body)
        c = client.commits_api.commit(
            name, "main", lakefs_sdk.CommitCreation(message=body.decode(), date=int(now - days_ago * DAY))
        )
        if body == b"v1":
            client.tags_api.create_tag(name, lakefs_sdk.TagCreation(id="v1", ref=c.id))
    client.objects_api.upload_object(name, "main", "y", content=b"staged")
    client.repositories_api.set_gc_rules(name, lakefs_sdk.GarbageCollectionRules(default_retention_days=1, branches=[]))
    monkeypatch.setenv(ENV_LAKEFS_ACCESS_KEY, emu.access_key)
    monkeypatch.setenv(ENV_LAKEFS_SECRET_KEY, emu.secret_key)
    base = [
        ns,
        "--repository",
        name,
        "--lakefs-endpoint",
        emu.url,
        "--local-root",
        emu.local_root,
        "--min-age-seconds",
        "0",
    ]
    return base, ns_storage(ns)


def test_space_prints_the_classes_the_tags_and_the_stale_branches(repo, capsys):
    base, storage = repo
    before = sorted(o.key for o in storage.list("data/"))
    assert cli(["space", *base, "--stale-days", "30"]) == 0
    out = capsys.readouterr().out
    assert "all listed objects" in out
    assert "5 objects" in out.splitlines()[1]  # z, x three times, y
    lines = {ln.split("  ", 2)[1].strip(): ln for ln in out.splitlines() if ln.startswith("  ") and " object" in ln}
    assert "1 object " in lines["only staged (uncommitted)"]
    assert "(6 bytes)" in lines["only staged (uncommitted)"]
    assert "(9 bytes)" in lines["only in retention windows (kept commits, not HEAD)"]
    assert "(2 bytes)" in lines["unreferenced, old enough: collected"]
    assert "(2 bytes)" in lines["tag v1"]
    stale = out.split("Stale branches (HEAD older than 30 days)")[1]
    assert "old (HEAD 40 days old)" in stale
    assert "(100 bytes)" in stale
    assert "main" not in stale
    assert sorted(o.key for o in storage.list("data/")) == before  # nothing deleted


def test_whatif_prices_a_branch_deleted_and_a_rule(repo, capsys):
    base, storage = repo
    before = sorted(o.key for o in storage.list("data/"))
    assert cli(["whatif", *base, "--delete-branch", "old"]) == 0
    out = capsys.readouterr().out
    # old's HEAD becomes a dangling commit, 40 days old: expired under the 1-day default rule
    assert out.startswith("If branch 'old' deleted, the next GC run would free 1 object, 100 B (100 bytes)")
    assert "too young" not in out
    assert cli(["whatif", *base, "--rule", "main=0"]) == 0
    assert "would free 1 object, 9 B (9 bytes)" in capsys.readouterr().out  # x v2 leaves main's window
    assert sorted(o.key for o in storage.list("data/")) == before


def test_whatif_counts_apart_what_a_change_leaves_unreferenced_but_too_young(repo, capsys):
    """Every object was written seconds ago: with a minimum age of an hour, deleting branch old frees
    nothing now, and says that z (100 bytes) becomes unreferenced but is too young until about an
    hour after it was written."""
    base, storage = repo
    (z,) = [o for o in storage.list("data/") if o.size == 100]
    assert cli(["whatif", *base, "--min-age-seconds", "3600", "--delete-branch", "old"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert (
        out[0]
        == "If branch 'old' deleted, the next GC run would free 0 objects, 0 B (0 bytes), beyond today's garbage."
    )
    assert out[1].startswith(
        "  1 object, 100 B (100 bytes), becomes unreferenced but is too young to collect before "
    ), out
    when = datetime.strptime(out[1].split("too young to collect before ")[1][:20], "%Y-%m-%d %H:%M:%SZ")
    assert abs(when.replace(tzinfo=UTC).timestamp() - (z.last_modified + 3600)) < 2.0
    assert out[1].endswith("(the minimum age is 3,600 seconds)")
    assert out[2].startswith("  commits kept: ")


def test_whatif_refuses_the_default_branch_as_lakefs_does(repo, lakefs_emulator, capsys):
    """lakeFS never deletes a repository's default branch: pricing it is refused, in one line, exit 2."""
    base, _ = repo
    name = base[2]
    with pytest.raises(lakefs_sdk.exceptions.ForbiddenException, match="cannot delete repository default branch"):
        lakefs_emulator.client().branches_api.delete_branch(name, "main")
    assert cli(["whatif", *base, "--delete-branch", "main"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"lakefs-gc whatif: error: --delete-branch 'main': it is the default branch of {name!r}, which lakeFS "
        f'refuses to delete ("cannot delete repository default branch"): price another branch, or a --rule\n'
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give one change: --delete-branch BRANCH, or --rule [BRANCH=]DAYS"),
        (["--delete-branch", "old", "--rule", "3"], "give one change"),
        (["--rule", "main=week"], "--rule 'main=week': DAYS must be a whole number of days (e.g. --rule 7 or"),
        (["--rule", "-2"], "a retention rule is a number of days >= 0, got -2"),
        (["--delete-branch", "nope"], "--delete-branch 'nope': no such branch"),
    ],
)
def test_whatif_refuses_bad_input_with_the_fix(repo, capsys, args, message):
    base, _ = repo
    assert cli(["whatif", *base, *args]) == 2
    assert message in capsys.readouterr().err


def test_report_space_prints_what_a_run_found_as_space_does_now(repo, lakefs_emulator, tmp_path, capsys):
    """A mark-only run attributes the namespace (attribute_space); ``report --space`` prints its
    ``space.json`` in the lines ``space`` prints for the same namespace now, the newest run's by
    default or one run's by id; a run without one says why and how to find one."""
    from tests.steps.test_attribute_space import _run

    base, storage = repo
    ns, name, local = base[0], base[2], ["--local-root", lakefs_emulator.local_root]
    _, results = _run(lakefs_emulator, name, tmp_path / "a", mode="mark_only")
    mark = results["mark_uncommitted"].run_id
    assert cli(["space", *base, "--stale-days", "30"]) == 0
    now = capsys.readouterr().out.splitlines()
    assert cli(["report", ns, "--space", *local]) == 0
    newest = capsys.readouterr().out.splitlines()
    assert newest[0].startswith(f"Run {mark} of {name}, as its mark found the namespace at ")
    assert "retention: default 1 days" in newest[0]
    assert newest[2:] == now
    assert cli(["report", ns, "--run", mark, "--space", *local]) == 0
    assert capsys.readouterr().out.splitlines() == newest
    _, off = _run(lakefs_emulator, name, tmp_path / "b", mode="mark_only", attribute_space=False)
    assert cli(["report", ns, "--run", off["mark_uncommitted"].run_id, "--space", *local]) == 2
    err = capsys.readouterr().err
    assert "has no attribution of space: switched off (Param attribute_space)" in err
    assert f"lakefs-gc report {ns} --space` shows the newest run that has one" in err


def test_whatif_counts_apart_what_the_config_keep_rules_hold(repo, capsys, tmp_path, monkeypatch):
    """The repositories file's keep rules (issue 55) hold what they name whatever lakeFS's rules:
    x v2 (9 bytes) leaves main's window under main=0, but a branch rule on main's last 2 commits and
    a path rule on x each hold it; a deleted branch leaves its branch rules (z, 100 bytes, is freed)."""
    base, storage = repo
    name = base[base.index("--repository") + 1]
    cfg = tmp_path / "gc.yaml"
    monkeypatch.setenv("LAKEFS_GC_CONFIG", str(cfg))
    for keep in ("{branches: [{pattern: 'ma*', last: 2}]}", "{paths: ['x']}"):
        cfg.write_text(f"repositories:\n  - repository: {name}\n    keep: {keep}\n")
        assert cli(["whatif", *base, "--rule", "main=0"]) == 0
        out = capsys.readouterr().out.splitlines()
        assert "would free 0 objects, 0 B (0 bytes)" in out[0], out
        rule = "branches 'ma*' (last 2)" if "branches" in keep else "paths 'x'"
        assert out[1] == f"  the keep rules ({rule}) hold 1 object, 9 B (9 bytes) the change would otherwise free", out
    cfg.write_text(f"repositories:\n  - repository: {name}\n    keep: {{branches: [{{pattern: 'o*', last: 5}}]}}\n")
    assert cli(["whatif", *base, "--delete-branch", "old"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("If branch 'old' deleted, the next GC run would free 1 object, 100 B (100 bytes)"), out
    assert (
        out[1]
        == "  the keep rules (branches 'o*' (last 5)) hold 0 objects, 0 B (0 bytes) the change would otherwise free"
    )
