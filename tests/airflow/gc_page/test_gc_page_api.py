"""The GC page's API (``gc_page/app.py``) over HTTP: every route's JSON is what the route builds, byte for
byte but for the keys' order, through its response model (``gc_page/models.py``): no field dropped, none
added, a field a route leaves out still left out (``response_model_exclude_unset``).

Airflow's auth and database are stood in for (dependency overrides; the config, the namespace's
storage and the DAG's runs given); the namespace is a local one with real reports in it.
"""

from __future__ import annotations

import itertools
import json
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lakefs_gc.config.model import RemovedRepository
from lakefs_gc.gc.attribution import Attribution, Space, StaleBranch
from lakefs_gc.report import formats, layout
from lakefs_gc.report.run_summary import RunSummary
from lakefs_gc.report.summary import write_summary
from lakefs_gc.storage import open_storage
from lakefs_gc_airflow.gc_page import runs

DAG = "lakefs_gc__repo"
T1, T2, T3 = "2026-11-01T00:00:00+00:00", "2026-11-02T00:00:00+00:00", "2026-11-03T00:00:00+00:00"


def _repo(name: str, source: str = "list") -> SimpleNamespace:
    return SimpleNamespace(
        repository=name,
        dag_id=f"lakefs_gc__{name}",
        schedule=None,
        lakefs_conn_id="lakefs_default",
        storage_conn_id=None,
        min_age_seconds=0,
        listing=SimpleNamespace(source=source),
        keep=None,  # the entry's keep rules (none: lakeFS's rules alone)
    )


def _summary(run_id: str, start: str, **kw) -> RunSummary:
    base = {
        "run_id": run_id,
        "success": True,
        "start_time": start,
        "cutoff_time": start,
        "mode": "mark_and_sweep",
        "flow": "clean",
        "repository": "repo",
        "airflow_run_id": f"manual__{start}",
        "listed_objects": 10,
        "candidates": 4,
        "to_delete": 4,
        "held_back": 0,
        "deleted": 4,
        "already_gone": 0,
        "delete_failed": 0,
        "reclaimed_bytes": 400,
        "dry_run": False,
        "min_age_seconds": 0,
        "staged_check": "lakefs",
        "mark_uncommitted_seconds": 1.5,
        "delete_seconds": 0.5,
        "max_delete_share": 0.5,
        "some_new_field": [1, 2],
    }
    return RunSummary.from_doc({**base, **kw})


def _space_doc() -> dict[str, Any]:
    attribution = Attribution(total=Space(10, 1000))
    attribution.branch("main").alone["head"] = Space(6, 600)
    return {
        "mark_id": "m1",
        "repository": "repo",
        "computed_at": T1,
        "cutoff": T1,
        "rules": {"default_days": 7, "branches": {"main": 30}},
        "heads": {"main": {"commit": "c1", "created": T1}},
        "stale_branch_days": 30,
        "stale": [StaleBranch("old", 40.25, Space(3, 300)).as_dict()],
        "attribution": attribution.as_dict(),
    }


@pytest.fixture
def namespace(tmp_path):
    """A namespace with a clean run and its space.json, a sweep of it, a dry run, and a report that does not read."""
    (tmp_path / "repo").mkdir()
    st = open_storage("local://repo", None, tmp_path)
    formats.write_space(st, layout.space_key("m1"), _space_doc())
    write_summary(
        st, layout.summary_key("m1"), _summary("m1", T1, space_file=layout.space_key("m1"), grace_period_seconds=3600)
    )
    write_summary(st, layout.sweep_summary_key("m1", "s1"), _summary("m1", T2, mode="sweep_only", airflow_run_id=None))
    write_summary(
        st,
        layout.summary_key("m2"),
        _summary("m2", T2, dry_run=True, would_delete=4, mode=None, held_back_until=T3, grace_period_seconds=7200),
    )
    st.put(layout.summary_key("m3"), b"{not json")
    return st


REFUSAL = {
    "task_id": "prepare_run",
    "refused": True,
    "reason": "min_age_seconds=60 is below lakeFS's grace period of 86400s: objects uploaded but not yet linked "
    "could be deleted. Nothing was deleted",
}


def _dag_run(
    run_id: str, state: str, start: str | None, failed: list[str], reason: dict | None = None
) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "state": state,
        "run_type": "manual",
        "logical_date": start,
        "start_date": start,
        "end_date": None,
        "failed_tasks": failed,
        "reason": reason,
    }


@pytest.fixture
def api(monkeypatch, namespace):
    """The app with Airflow's auth and session stood in for, over ``namespace``: (module, HTTP client)."""
    from fastapi.testclient import TestClient

    from lakefs_gc_airflow.gc_page import app as module

    cfg = SimpleNamespace(
        repositories=(_repo("repo"), _repo("hidden")),
        entry_errors=("entry 3: bad",),
        path=Path("/etc/lakefs-gc/gc.yaml"),
        refreshed_at=T2,
        removed=(RemovedRepository("gone", "lakefs_default", T1),),
        discovery=None,
    )
    monkeypatch.setattr(module, "_config", lambda: cfg)
    monkeypatch.setattr(module, "_may_read", lambda user, dag_id: dag_id != "lakefs_gc__hidden")
    monkeypatch.setattr(module, "_storage", lambda repo: ("local://repo", namespace))
    monkeypatch.setattr(module, "_grace_period", lambda repo: 86400)
    monkeypatch.setattr(
        module,
        "_dag_runs",
        lambda session, dag_id: [
            _dag_run(f"manual__{T1}", "success", T1, []),
            _dag_run("manual__refused", "failed", T3, ["prepare_run"], REFUSAL),
            _dag_run("manual__queued", "queued", None, []),
        ],
    )

    @contextmanager
    def lakefs_and_namespace(repo, what):
        yield None, namespace, ("local://repo",), None

    monkeypatch.setattr(module, "_lakefs_and_namespace", lakefs_and_namespace)
    for route in module.app.routes:
        for dep in getattr(route, "dependant", SimpleNamespace(dependencies=[])).dependencies:
            module.app.dependency_overrides[dep.call] = lambda: None
    try:
        yield module, TestClient(module.app)
    finally:
        module.app.dependency_overrides.clear()


def _served_as_built(client, path: str, built: dict[str, Any]) -> dict[str, Any]:
    got = client.get(f"/api{path}")
    assert got.status_code == 200, got.text
    assert json.dumps(got.json(), sort_keys=True) == json.dumps(built, sort_keys=True)
    return got.json()


def test_the_repositories_are_served_as_built(api):
    module, client = api
    got = _served_as_built(client, "/repositories", module.repositories(None))
    assert [r["repository"] for r in got["repositories"]] == ["repo"]
    assert got["removed"][0]["dag_id"] == "lakefs_gc__gone"


def test_a_config_that_does_not_read_is_its_error_alone(api, monkeypatch):
    module, client = api

    def broken():
        raise ValueError("gc.yaml: not YAML")

    monkeypatch.setattr(module, "_config", broken)
    got = _served_as_built(client, "/repositories", module.repositories(None))
    assert got == {"repositories": [], "errors": ["gc.yaml: not YAML"]}  # no config, removed, refreshed_at: not null


INVENTORY = {
    "listing_source": "inventory",
    "inventory_id": "s3://inv/reports/lakefs-data/gc-daily/2026-11-01T00-00Z/manifest.json",
    "inventory_time": "2026-11-01T00:00:00.000000Z",
    "inventory_age_seconds": 7200,
    "inventory_rows": 1500,
    "inventory_files": 3,
    "slices_topped_up": 2,
    "inventory_deferred": 7,
}


def test_a_run_from_an_inventory_serves_which_one_and_a_run_that_listed_serves_null(api, namespace):
    module, client = api
    write_summary(namespace, layout.summary_key("m4"), _summary("m4", T3, **INVENTORY))
    fallback = "no usable S3 Inventory for s3://lakefs-data/repo under s3://inv/reports/lakefs-data/gc-daily: ..."
    write_summary(
        namespace, layout.summary_key("m5"), _summary("m5", T3, listing_source="list", listing_fallback=fallback)
    )
    got = _served_as_built(client, f"/dags/{DAG}/runs", module.dag_gc_runs(DAG, None))
    by = {r["mark_id"]: r for r in got["runs"] if r["mark_id"] and not r["sweep"]}
    assert by["m4"]["listing"] == {
        "source": "inventory",
        "inventory_id": INVENTORY["inventory_id"],
        "inventory_time": INVENTORY["inventory_time"],
        "inventory_age_seconds": 7200,
        "inventory_rows": 1500,
        "inventory_files": 3,
        "slices_topped_up": 2,
        "inventory_deferred": 7,
        "fallback": None,
    }
    assert by["m5"]["listing"]["source"] == "list"
    assert by["m5"]["listing"]["fallback"] == fallback
    assert by["m5"]["listing"]["inventory_id"] is None
    assert by["m1"]["listing"] is None  # listed by LIST, as always
    assert "listing" not in by["m3"]  # its report does not read
    assert "inventory" not in got  # no refresh recorded an inventory


def test_the_refreshs_inventory_record_is_served_with_the_repositories_and_the_runs_of_a_reader(api, tmp_path):
    from lakefs_gc.config.discovered import InventoryReader, InventoryRecord, record_inventories

    module, client = api
    cfg = module._config()
    cfg.discovery = SimpleNamespace(state_file=tmp_path / "gc.discovered.json")
    cfg.repositories = (_repo("repo", source="inventory"), _repo("other"))
    manifest = INVENTORY["inventory_id"]
    rec = InventoryRecord(
        location="s3://inv/reports/lakefs-data/gc-daily",
        name="",
        storage_conn_id="aws_default",
        checked_at=T3,
        inventory_id=manifest,
        inventory_time=INVENTORY["inventory_time"],
        verified=False,
        reason="third: no usable S3 Inventory for s3://other-bucket/third ...",
        repositories={
            "repo": InventoryReader(manifest, INVENTORY["inventory_time"]),
            "third": InventoryReader(reason="no usable S3 Inventory for s3://other-bucket/third ..."),
            "other": InventoryReader(manifest, INVENTORY["inventory_time"]),  # it read it when the refresh ran
        },
    )
    record_inventories(cfg.discovery, [rec])
    got = _served_as_built(client, "/repositories", module.repositories(None))
    assert got["inventories"] == [rec.to_doc()]
    assert got["inventories"][0]["repositories"]["repo"] == {
        "inventory_id": manifest,
        "inventory_time": INVENTORY["inventory_time"],
        "reason": None,
    }
    got = _served_as_built(client, f"/dags/{DAG}/runs", module.dag_gc_runs(DAG, None))
    assert got["inventory"] == rec.to_doc()
    got = _served_as_built(client, "/dags/lakefs_gc__other/runs", module.dag_gc_runs("lakefs_gc__other", None))
    assert "inventory" not in got  # its entry lists by LIST now: the record is of the past


def test_the_runs_are_served_as_built_with_every_field_of_their_reports(api):
    module, client = api
    got = _served_as_built(client, f"/dags/{DAG}/runs", module.dag_gc_runs(DAG, None))
    by = {(r["mark_id"], r["sweep"], r["airflow_run_id"] if "airflow_run_id" in r else "-"): r for r in got["runs"]}
    assert set(by) == {
        ("m1", None, f"manual__{T1}"),
        ("m1", "s1", None),
        ("m2", None, f"manual__{T2}"),
        ("m3", None, "-"),
        (None, None, "manual__refused"),
        (None, None, "manual__queued"),
    }
    clean, dry, unreadable = by["m1", None, f"manual__{T1}"], by["m2", None, f"manual__{T2}"], by["m3", None, "-"]
    assert clean["dag_run"]["state"] == "success"
    assert "would_delete" not in clean  # a dry run's alone
    assert (dry["would_delete"], dry["mode"], dry["dag_run"]) == (4, None, None)
    assert set(unreadable) == {"mark_id", "sweep", "report", "problem", "rows", "seconds", "dag_run"}
    assert got["space"]["attribution"]["branches"]["main"]["alone"]["head"] == {"objects": 6, "bytes": 600}
    assert got["space"]["heads"] == {"main": {"commit": "c1", "created": T1}}  # space.json's own fields, kept
    assert got["space"]["stale"][0]["head_age_days"] == 40.25
    assert by[None, None, "manual__refused"]["dag_run"]["reason"] == REFUSAL  # why, for the page's outcome cell
    assert clean["dag_run"]["reason"] is None
    assert (got["grace_period_seconds"], got["grace_period_source"]) == (86400, "lakeFS")


def test_the_grace_period_is_the_newest_reports_when_lakefs_does_not_answer_it(api, monkeypatch):
    module, client = api

    def unanswered(repo):
        raise ConnectionError("lakeFS at http://127.0.0.1:8000 did not answer")

    monkeypatch.setattr(module, "_grace_period", unanswered)
    got = _served_as_built(client, f"/dags/{DAG}/runs", module.dag_gc_runs(DAG, None))
    # m2 (T2) is the newest report that reads and records the rules it ran under
    assert (got["grace_period_seconds"], got["grace_period_source"]) == (7200, f"the report of run manual__{T2}")


def test_a_namespace_that_does_not_read_has_no_space(api, monkeypatch):
    module, client = api

    def unreadable(repo):
        raise OSError("no route to the store")

    monkeypatch.setattr(module, "_storage", unreadable)
    got = _served_as_built(client, f"/dags/{DAG}/runs", module.dag_gc_runs(DAG, None))
    assert "space" not in got
    assert got["error"].endswith("no route to the store")
    assert (got["grace_period_seconds"], got["grace_period_source"]) == (None, None)  # no report, lakeFS not asked
    assert [r["airflow_run_id"] for r in got["runs"]] == ["manual__refused", f"manual__{T1}", "manual__queued"]


def test_a_space_json_not_as_the_page_reads_it_is_its_problem(api, namespace):
    module, client = api
    namespace.put(layout.space_key("m1"), json.dumps({"version": 1, "attribution": {"total": {"objects": 1}}}).encode())
    got = _served_as_built(client, f"/dags/{DAG}/runs", module.dag_gc_runs(DAG, None))
    assert set(got["space"]) == {"mark_id", "airflow_run_id", "problem"}
    assert (
        "not the space.json attribute_space writes (attribution.total.bytes: Field required)" in got["space"]["problem"]
    )
    records = runs.repository_runs(namespace)
    assert runs.newest_space(namespace, records) == got["space"]


def test_explain_and_whatif_are_served_as_built(api, monkeypatch):
    import lakefs_gc.explain
    import lakefs_gc.space

    module, client = api
    ex = lakefs_gc.explain.Explanation(
        "data/abc", verdict="kept", reason="a branch HEAD reads it", facts=[("held by", "main")], fates=["kept"]
    )
    monkeypatch.setattr(lakefs_gc.explain, "resolve", lambda roots, target, *a, **kw: ("data/abc", None, None))
    monkeypatch.setattr(lakefs_gc.explain, "explain", lambda *a, **kw: ex)
    monkeypatch.setattr(lakefs_gc.space, "whatif_now", lambda *a: ["deleting feature frees 3 objects"])
    got = _served_as_built(client, f"/dags/{DAG}/explain?target=data/abc", module.dag_gc_explain(DAG, "data/abc"))
    assert got["note"] is None
    assert got["lines"][0] == "data/abc: kept (a branch HEAD reads it)"
    got = _served_as_built(client, f"/dags/{DAG}/whatif?delete_branch=feature", module.dag_gc_whatif(DAG, "feature"))
    assert got["lines"] == ["deleting feature frees 3 objects"]


_lakefs_repos = itertools.count()


@pytest.fixture
def page_on_lakefs(lakefs_emulator, monkeypatch):
    """The app over a repository of the emulator, reached through its lakeFS connection as deployed
    (``lakefs_default``, its local blockstore root in the extra): main committed ``kept.csv`` and
    ``gone.csv`` (c1), then deleted ``gone.csv`` (c2). (HTTP client, repository, c1, c2)."""
    import lakefs_sdk
    from fastapi.testclient import TestClient

    from lakefs_gc_airflow.gc_page import app as module

    emu, name = lakefs_emulator, f"explained-{next(_lakefs_repos)}"
    c = emu.client()
    c.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=name, storage_namespace=emu.namespace(name), default_branch="main")
    )
    c.repositories_api.set_gc_rules(name, lakefs_sdk.GarbageCollectionRules(default_retention_days=1, branches=[]))
    for path in ("kept.csv", "gone.csv"):
        c.objects_api.upload_object(name, "main", path, content=path.encode())
    c1 = c.commits_api.commit(name, "main", lakefs_sdk.CommitCreation(message="c1")).id
    c.objects_api.delete_object(name, "main", "gone.csv")
    c2 = c.commits_api.commit(name, "main", lakefs_sdk.CommitCreation(message="c2")).id
    monkeypatch.setenv(
        "AIRFLOW_CONN_LAKEFS_DEFAULT",
        json.dumps(
            {
                "conn_type": "lakefs_gc",
                "host": emu.url,
                "login": emu.access_key,
                "password": emu.secret_key,
                "extra": {"local_blockstore_root": emu.local_root},
            }
        ),
    )
    monkeypatch.setattr(module, "_config", lambda: SimpleNamespace(repositories=(_repo(name),), path=Path("gc.yaml")))
    for route in module.app.routes:
        for dep in getattr(route, "dependant", SimpleNamespace(dependencies=[])).dependencies:
            module.app.dependency_overrides[dep.call] = lambda: None
    try:
        yield TestClient(module.app), name, c1, c2
    finally:
        module.app.dependency_overrides.clear()


def test_explain_answers_a_gone_path_with_its_last_commit_and_404_for_one_never_there(page_on_lakefs):
    from tests.conftest import ns_rel

    client, name, c1, c2 = page_on_lakefs
    got = client.get(f"/api/dags/lakefs_gc__{name}/explain", params={"target": "gone.csv"})
    assert got.status_code == 200, got.text
    answer = got.json()
    assert answer["note"].startswith(
        f"{name}@main has no object at 'gone.csv' now. The newest commit of main that had it: {c1[:12]} ("
    ), answer
    physical = answer["note"].split("'c1'), where it read ", 1)[1].split(";", 1)[0]
    assert ns_rel(f"local://ns/{name}", physical) == answer["address"]
    assert f"; {c2[:12]} (" in answer["note"]
    assert answer["note"].endswith(f"To ask about the path on that commit: ref {c1}")
    assert answer["lines"][0].startswith(f"{answer['address']}: no mark saw it (no GC mark under "), answer
    got = client.get(f"/api/dags/lakefs_gc__{name}/explain", params={"target": "nowhere.csv"})
    assert got.status_code == 404, got.text
    assert got.json()["detail"] == (
        f"{name}@main has no object at 'nowhere.csv', and no commit of main ever had one (3 commits searched, "
        f"back to the first): it never existed on main. Try another ref (a branch, tag or commit that had it)"
    )


def test_whatif_refuses_the_default_branch_with_a_400(page_on_lakefs):
    client, name, _, _ = page_on_lakefs
    got = client.get(f"/api/dags/lakefs_gc__{name}/whatif", params={"delete_branch": "main"})
    assert got.status_code == 400, got.text
    assert got.json()["detail"] == (
        f"delete branch 'main': it is the default branch of {name!r}, which lakeFS refuses to delete "
        f'("cannot delete repository default branch"): price another branch, or a rule'
    )


def test_the_orphaned_namespaces_the_refresh_recorded_are_served_with_the_repositories(api, tmp_path):
    from lakefs_gc.config.discovered import Discovered, write_discovered
    from lakefs_gc.listing.orphans import Orphan

    module, client = api
    cfg = module._config()
    cfg.discovery = SimpleNamespace(state_file=tmp_path / "gc.discovered.json")
    got = _served_as_built(client, "/repositories", module.repositories(None))
    assert "orphans" not in got  # none recorded: left out
    gone = Orphan("s3://bkt/gone", "lakefs_default", "gone", T1, T2, T3, 3, 2048, True, T3)
    held = Orphan(
        "s3://bkt/held", "lakefs_default", "held", T1, T2, T3, held_by="repository x (lakefs_default) on s3://bkt"
    )
    write_discovered(cfg.discovery.state_file, Discovered(refreshed_at=T3, orphans=[gone, held]))
    got = _served_as_built(client, "/repositories", module.repositories(None))
    assert got["orphans"] == [gone.to_doc()]  # a held one is not orphaned (yet)
    assert got["orphans"][0]["objects"] == 3
    assert got["orphans"][0]["bytes"] == 2048
