"""The GC's own leftovers expire (lakefs_gc.report.leftovers), and never a mark a later run, a sweep or an undo needs.

Marks are written by hand in the report layout on a ``local://`` namespace (and on a moto S3
bucket); sweeps are the delete step's own (``run_in_task``), as in tests/sweeping/test_restore.py.
The assertions are on what the store holds afterwards.
"""

from __future__ import annotations

import io
import json
import os
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakefs_gc.config import ConfigError
from lakefs_gc.config.entry import parse_entry
from lakefs_gc.config.model import LeftoversSettings
from lakefs_gc.contract import (
    PartsDir,
    Restorability,
    RunSettings,
    SlicesResult,
    StepInputs,
    UncommittedResult,
)
from lakefs_gc.errors import SettingsError
from lakefs_gc.placement import DEFAULT
from lakefs_gc.report import layout
from lakefs_gc.report.leftovers import (
    BASE,
    NOT_OURS,
    PENDING,
    THIS_RUN,
    Retention,
    SweepFacts,
    expire,
    first_pass,
    second_pass,
)
from lakefs_gc.report.run_summary import STATE_FORMAT, IncrementalState, RunSummary
from lakefs_gc.report.summary import write_summary
from lakefs_gc.steps import run_in_task
from lakefs_gc.steps.save_report import save_report
from lakefs_gc.storage import LocalStorage, open_storage
from lakefs_gc.storage.settings import ENV_ACCESS_KEY, ENV_SECRET_KEY
from lakefs_gc.timestamps import iso
from tests.support.contract import make_context

NOW = datetime.now(UTC)
CUR = "ft00000000000000cur0"  # the mark of the run that expires the others


def _parquet(keys: list[str]) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table({"address": pa.array(keys, pa.string())}), buf)
    return buf.getvalue()


def _state(clean: str, chain: list[str]) -> IncrementalState:
    return IncrementalState(
        format=STATE_FORMAT,
        namespace="local://repo",
        clean_run_id=clean,
        clean_start_time=iso(NOW),
        runs_in_chain=len(chain),
        last_slice="",
        uncommitted_dir=PartsDir(layout.state_uncommitted_dir(chain[-1]), 1),
        committed_dirs=tuple(PartsDir(layout.state_committed_dir(m), 1) for m in chain),
        identity_dirs=tuple(PartsDir(layout.state_identities_dir(m), 1) for m in chain),
        read_file=layout.state_read_file(chain[-1]),
    )


def _mark(st, mark_id: str, age: timedelta, *, success=True, mode="mark_and_sweep", state=None, ours=True, **more):
    """A mark as a run leaves it: its summary, deleted/ list, state, and lakeFS's uncommitted/ folder of it."""
    deleted = more.pop("deleted", [])
    if ours:
        summary = RunSummary(
            run_id=mark_id,
            success=success,
            start_time=iso(NOW - age),
            cutoff_time=iso(NOW - age),
            num_deleted_objects=0,
            repository="repo",
            mode=mode,
            airflow_run_id=f"scheduled__{mark_id}",
            note=None if success else "mark in progress or failed",
            incremental_state=state,
            **more,
        )
        write_summary(st, layout.summary_key(mark_id), summary)
    else:  # lakeFS's own GC: only its fields
        doc = {"run_id": mark_id, "success": True, "start_time": iso(NOW - age), "num_deleted_objects": 0}
        st.put(layout.summary_key(mark_id), json.dumps(doc).encode())
    st.put(layout.deleted_dir(mark_id) + layout.part_name(0), _parquet(deleted))
    st.put(layout.state_committed_dir(mark_id) + layout.part_name(0), _parquet(["data/a"]))
    st.put(layout.uncommitted_dir(mark_id) + layout.part_name(0), _parquet([]))


def _marks(st) -> set[str]:
    return {p[len(layout.UNIFIED) :].rstrip("/") for p in st.list_prefixes(layout.UNIFIED)}


def _everything(st) -> dict[str, int]:
    return {o.key: o.size for o in st.list("", recursive=True)}


@pytest.fixture
def local_ns(tmp_path):
    root = tmp_path / "blockstore"
    st = LocalStorage(root / "repo")
    st.uri = "local://repo"
    st.put("data/live", b"user data")
    return root, st


def _sweep(st_uri: str, mark_id: str, work, local_root=None, s3=None, **settings):
    """The delete step's sweep of ``mark_id`` (in the task's process)."""
    ctx = make_context(
        st_uri,
        work_dir=str(work),
        local_root=local_root,
        airflow_run_id=f"manual__sweep_{mark_id}",
        s3_endpoint=s3.endpoint_url if s3 else None,
        s3_region="us-east-1",
        max_delete_share=1.0,
        **settings,
    )
    inputs = StepInputs(
        ctx,
        {
            "mark_uncommitted": UncommittedResult(run_id=mark_id, locations=(), pages=1),
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
    assert res.counts.deleted
    return res


# ---------------------------------------------------------------------------------------------
# Kept: what a later run, a pending sweep or an undo needs, however old
# ---------------------------------------------------------------------------------------------


def test_the_base_of_incremental_runs_and_its_chain_are_kept_however_old(local_ns):
    _, st = local_ns
    _mark(st, "clean", timedelta(days=300), state=_state("clean", ["clean"]))
    _mark(st, "incr", timedelta(days=200), state=_state("clean", ["clean", "incr"]))  # the newest successful
    _mark(st, "failed", timedelta(days=150), success=False)
    _mark(st, "lakefs", timedelta(days=400), ours=False)  # lakeFS's own GC's mark: never ours to remove
    _mark(st, CUR, timedelta(0), success=False)  # this run, in progress
    out = expire(st, Retention(marks_days=90, keep_runs=1), NOW, this_run={CUR})

    assert _marks(st) == {"clean", "incr", "lakefs", CUR}
    assert not list(st.list("_lakefs/retention/gc/uncommitted/failed/"))  # lakeFS's folder of the mark too
    assert list(st.list("_lakefs/retention/gc/uncommitted/clean/"))
    assert st.get("data/live") == b"user data"
    assert (out.marks, out.work) == (1, 0)
    assert out.objects == 4
    assert out.bytes > 0
    assert out.kept_lines() == (f"2 marks: {BASE}", f"1 mark: {NOT_OURS}", f"1 mark: {THIS_RUN}")


def test_this_runs_own_state_keeps_its_chain_when_the_newest_successful_run_is_another():
    marks = [
        (
            "old",
            RunSummary(success=True, mode="mark_only", start_time=iso(NOW - timedelta(days=300)), repository="r"),
            None,
        ),
        (
            "newer",
            RunSummary(success=True, mode="mark_only", start_time=iso(NOW - timedelta(days=200)), repository="r"),
            None,
        ),
    ]
    this = RunSummary(incremental_state=_state("old", ["old", CUR]))
    got = first_pass(marks, Retention(marks_days=90, keep_runs=1), NOW, {CUR}, this)
    assert got == {"old": BASE, "newer": BASE}  # "newer": the newest successful run (this one may not finish)
    newest = ("x", RunSummary(success=True, start_time=iso(NOW - timedelta(hours=1)), repository="r"), None)
    without = first_pass([marks[0], newest], Retention(marks_days=90, keep_runs=1), NOW)
    assert without["old"] is None  # nothing needs it any more: past its retention, the store is asked


def test_a_mark_in_its_undo_window_is_kept_until_the_quarantine_ends(local_ns, tmp_path):
    root, st = local_ns
    swept = {f"data/s/obj{i}": f"object {i}".encode() for i in range(5)}
    for k, v in swept.items():
        st.put(k, v)
    _mark(st, "swept", timedelta(days=100), deleted=sorted(swept))
    _sweep("local://repo", "swept", tmp_path / "work", local_root=str(root), quarantine_days=7)
    assert not any(st.exists(k) for k in swept)  # in the sweep's quarantine now
    _mark(st, "recent", timedelta(hours=1))  # the base of the next run
    _mark(st, CUR, timedelta(0), success=False)
    retention = Retention(marks_days=90, keep_runs=1)

    out = expire(st, retention, NOW, this_run={CUR})
    assert _marks(st) == {"swept", "recent", CUR}
    until = (NOW + timedelta(days=7)).strftime("%Y-%m-%d")
    assert f"1 mark: undo window until {until}" in out.kept_lines()
    quarantined = [o.key for o in st.list(layout.report_dir("swept"), recursive=True) if "/quarantine/" in o.key]
    assert len(quarantined) == 5

    later = expire(st, retention, NOW + timedelta(days=8), this_run={CUR})  # the quarantine has ended
    assert _marks(st) == {"recent", CUR}
    assert not list(st.list(layout.report_dir("swept"), recursive=True))
    assert later.marks == 1
    assert later.objects >= 5 + 3
    assert st.get("data/live") == b"user data"


def test_a_mark_awaiting_its_sweep_is_kept_until_a_sweep_only_run_would_refuse_it(local_ns):
    _, st = local_ns
    _mark(st, "awaiting", timedelta(days=3), mode="mark_only")  # a sweep_only run may still sweep it
    _mark(st, "stale", timedelta(days=10), mode="mark_only")  # older than mark_max_age_seconds: never swept now
    _mark(st, "recent", timedelta(hours=1))
    _mark(st, CUR, timedelta(0), success=False)
    out = expire(st, Retention(marks_days=1, keep_runs=1, mark_max_age_seconds=7 * 86400), NOW, this_run={CUR})
    assert _marks(st) == {"awaiting", "recent", CUR}
    assert f"1 mark: {PENDING}" in out.kept_lines()


def test_an_undo_window_the_store_would_not_say_keeps_the_mark_and_an_ended_one_does_not():
    old = RunSummary(success=True, mode="mark_and_sweep", start_time=iso(NOW - timedelta(days=100)), repository="r")
    retention = Retention(marks_days=90)

    def verdict(*kept: Restorability) -> str | None:
        return second_pass(old, SweepFacts(swept=True, kept_by_store=kept), retention, NOW)

    assert verdict(Restorability("s3 versioning", None, None, "AccessDenied")) == (
        "undo window unknown (s3 versioning: the store would not say)"
    )
    assert verdict(Restorability("azure soft delete", True, iso(NOW - timedelta(days=1)))) is None
    assert verdict(Restorability("none", False, None)) is None
    ended, running = iso(NOW - timedelta(days=1)), iso(NOW + timedelta(days=2))
    assert verdict(Restorability("gcs soft delete", True, ended), Restorability("local quarantine", True, running)) == (
        f"undo window until {(NOW + timedelta(days=2)).strftime('%Y-%m-%d')}"
    )
    assert second_pass(old, SweepFacts(swept=False), retention, NOW) is None  # never swept, too old to be: goes


def test_a_dry_run_removes_nothing_and_counts_what_it_would(local_ns):
    _, st = local_ns
    _mark(st, "old", timedelta(days=120))
    _mark(st, "recent", timedelta(hours=1))
    before = _everything(st)
    out = expire(st, Retention(marks_days=90, keep_runs=1), NOW, dry_run=True)
    assert _everything(st) == before
    assert out.dry_run
    assert out.marks == 1
    assert out.objects == 4
    assert out.bytes == sum(v for k, v in before.items() if "/old/" in k)


def test_old_run_work_folders_go_and_this_runs_and_young_ones_stay(tmp_path, local_ns):
    _, st = local_ns
    work = tmp_path / "work" / "repo"
    old = NOW - timedelta(days=10)
    for name, when in [
        ("scheduled__2026-01-01T00_00_00_00_00", old),
        ("manual__young", NOW),
        ("manual__this_run", old),
        ("not-a-run", old),  # not a run's folder: never touched
    ]:
        (work / name / "listed").mkdir(parents=True)
        part = work / name / "listed" / "part-0.parquet"
        part.write_bytes(b"x" * 100)
        os.utime(part, (when.timestamp(), when.timestamp()))
        os.utime(work / name, (when.timestamp(), when.timestamp()))
    out = expire(st, Retention(work_days=7), NOW, work_root=str(work), this_work="manual__this_run")
    assert sorted(p.name for p in work.iterdir()) == ["manual__this_run", "manual__young", "not-a-run"]
    assert (out.work, out.objects, out.bytes) == (1, 1, 100)


# ---------------------------------------------------------------------------------------------
# The run: save_report expires, and its report says what went and what stayed
# ---------------------------------------------------------------------------------------------


def _report(st, root, tmp_path, **settings):
    ctx = make_context(
        "local://repo",
        local_root=str(root),
        work_dir=str(tmp_path / "work" / "repo" / "manual__now"),
        airflow_run_id="manual__now",
        keep_marks_runs=1,
        **settings,
    )
    return save_report(st, StepInputs(ctx, {"mark_uncommitted": UncommittedResult(run_id=CUR, locations=(), pages=1)}))


def test_save_report_expires_the_leftovers_and_says_what_stayed_and_why(local_ns, tmp_path):
    root, st = local_ns
    _mark(st, "old", timedelta(days=120))
    _mark(st, "older", timedelta(days=130), mode="mark_only")
    _mark(st, "recent", timedelta(days=2))
    _mark(st, CUR, timedelta(0), success=False)
    old_run = tmp_path / "work" / "repo" / "scheduled__long_ago"
    old_run.mkdir(parents=True)
    (old_run / "part").write_bytes(b"x" * 10)
    for path in (old_run / "part", old_run):
        os.utime(path, ((NOW - timedelta(days=8)).timestamp(),) * 2)
    res = _report(st, root, tmp_path)
    assert _marks(st) == {"recent", CUR}
    assert not old_run.exists()
    doc = json.loads(st.get(layout.summary_key(CUR)))
    assert doc["leftovers_removed_marks"] == 2
    assert doc["leftovers_removed_work"] == 1
    assert doc["leftovers_removed_objects"] == 9
    assert doc["leftovers_kept"] == [f"1 mark: {BASE}", f"1 mark: {THIS_RUN}"]
    assert "leftovers: removed 2 marks and 1 run work folder, 9 objects" in res.summary
    assert f"leftovers kept: 1 mark: {BASE}; 1 mark: {THIS_RUN}" in res.summary


def test_a_work_location_not_laid_out_by_prepare_run_is_never_touched(local_ns, tmp_path):
    root, st = local_ns
    beside = tmp_path / "manual__someone_elses"  # a sibling of a work_dir given by hand: not the GC's
    beside.mkdir()
    os.utime(beside, ((NOW - timedelta(days=30)).timestamp(),) * 2)
    ctx = make_context("local://repo", local_root=str(root), work_dir=str(tmp_path / "by-hand"))
    res = save_report(st, StepInputs(ctx, {"mark_uncommitted": UncommittedResult(run_id=CUR, locations=(), pages=1)}))
    assert beside.exists()
    assert "the run folders beside it are left" in res.summary


def test_a_dry_run_of_the_run_says_what_it_would_remove_and_removes_nothing(local_ns, tmp_path):
    root, st = local_ns
    _mark(st, "old", timedelta(days=120))
    _mark(st, "recent", timedelta(days=2))
    _mark(st, CUR, timedelta(0), success=False)
    res = _report(st, root, tmp_path, dry_run=True)
    assert _marks(st) == {"old", "recent", CUR}
    assert "leftovers: would remove 1 mark and 0 run work folders, 4 objects" in res.summary


def test_switched_off_the_run_removes_nothing_and_says_so(local_ns, tmp_path):
    root, st = local_ns
    _mark(st, "old", timedelta(days=120))
    _mark(st, CUR, timedelta(0), success=False)
    res = _report(st, root, tmp_path, expire_leftovers=False)
    assert _marks(st) == {"old", CUR}
    assert "leftovers: not expired: the Param expire_leftovers is false" in res.summary


# ---------------------------------------------------------------------------------------------
# S3: what the bucket keeps decides (moto)
# ---------------------------------------------------------------------------------------------


def test_on_s3_a_versioned_bucket_keeps_the_mark_and_an_unversioned_one_lets_it_go(moto_server, tmp_path):
    for name, versioned in (("leftovers-versioned", True), ("leftovers-plain", False)):
        bucket = moto_server.create_bucket(name)
        if versioned:
            moto_server.client().put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        st = open_storage(f"s3://{bucket}/repo", moto_server.s3_options())
        swept = {f"data/s/obj{i}": b"bytes" for i in range(3)}
        for k, v in swept.items():
            st.put(k, v)
        _mark(st, "swept", timedelta(days=100), deleted=sorted(swept))
        res = _sweep(st.uri, "swept", tmp_path / name, s3=moto_server)
        if not versioned:  # the record save_report writes; the versioned mark has none: the store is asked
            summary = json.loads(st.get(layout.summary_key("swept")))
            summary["restorable"] = {"how": res.restorable.how, "restorable": False, "until": None, "detail": ""}
            st.put(layout.summary_key("swept"), json.dumps(summary).encode())
        _mark(st, "recent", timedelta(hours=1))
        out = expire(st, Retention(marks_days=90, keep_runs=1), NOW)
        if versioned:
            assert _marks(st) == {"swept", "recent"}
            assert "1 mark: undo window with no end (s3 versioning)" in out.kept_lines()
        else:
            assert _marks(st) == {"recent"}
            assert not list(st.list(layout.report_dir("swept"), recursive=True))


# ---------------------------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------------------------


def test_the_leftovers_section_sets_the_params_and_a_bad_value_names_its_field_and_fix():
    entry = parse_entry({"repository": "repo-a", "leftovers": {"marks_days": 30, "keep_runs": 3}})
    assert entry.leftovers == LeftoversSettings(enabled=True, marks_days=30, keep_runs=3, work_days=7)
    with pytest.raises(
        ConfigError,
        match=r"field 'leftovers.marks_days': must be a whole number of days 1..36500 .*enabled: false.*got 0",
    ):
        parse_entry({"repository": "repo-a", "leftovers": {"marks_days": 0}})
    with pytest.raises(ConfigError, match=r"unknown key 'mark_days' \(did you mean 'marks_days'\?\)"):
        parse_entry({"repository": "repo-a", "leftovers": {"mark_days": 30}})
    with pytest.raises(SettingsError, match=r"Param 'keep_marks_runs' must be >= 1, got 0"):
        RunSettings(keep_marks_runs=0)
    assert Retention.of(RunSettings()) == Retention(90, 10, 7, 7 * 86400, 0)
