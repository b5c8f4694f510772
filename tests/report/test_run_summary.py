"""summary.json as a type (``lakefs_gc.report.run_summary.RunSummary``): the file stays what it was.

``golden/summaries/`` holds summaries written by the code before RunSummary existed: one per case
below (``build_summary`` and ``mark_started`` on these exact inputs) and real runs' files
(``older_*``). Every one reads and writes back unchanged, and the new builder writes the same
bytes for the same inputs; unknown fields round-trip, a mistyped field is refused by name.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lakefs_gc.contract import (
    CandidatesResult,
    CommittedResult,
    DeleteCounts,
    DeleteResult,
    IncrementalBase,
    MarkRef,
    PartsDir,
    Restorability,
    SlicesResult,
    SpaceResult,
    StepInputs,
    UncommittedResult,
)
from lakefs_gc.errors import ContractError
from lakefs_gc.report.figures import FIGURES, SPACE_FIGURES
from lakefs_gc.report.marks import MarkSummary
from lakefs_gc.report.run_summary import IncrementalState, RunSummary
from lakefs_gc.report.summary import build_summary, mark_started
from tests.support.contract import inputs, make_context

GOLDEN = Path(__file__).parent / "golden" / "summaries"

# The runs the golden summaries were written for: each case's StepInputs (and success), built from
# the contract's types. Changing one changes what its golden file must hold.
START = datetime(2026, 11, 23, 17, 0, tzinfo=UTC)
NS = "s3://bucket/repo"
MARK = "ft1m5cb8di15rp32pjbg"
RUN = "scheduled__2026-11-23T17:00:00+00:00"
STATE = "_lakefs/retention/gc/unified/" + MARK + "/state/"


def _ctx(flow: dict | None = None, **kw):
    """A run's context; ``flow``: the context's own fields prepare_run sets (flow, its reason, gc_rules, base)."""
    kw.setdefault("airflow_run_id", RUN)
    ctx = make_context(NS, start=START, s3_region="eu-west-1", repository="repo", **kw)
    return dataclasses.replace(ctx, **(flow or {}))


def _uncommitted(**kw):
    return UncommittedResult(
        **{
            "run_id": MARK,
            "locations": ("_lakefs/retention/gc/uncommitted/" + MARK + "/uncommitted/part-0",),
            "pages": 2,
            "seconds": 1.25,
            "staged_branches": 3,
            "staged_entries_checked": 12,
            "staged_addresses_lakefs_omitted": 1,
            "staged_file": "_lakefs/retention/gc/unified/" + MARK + "/staged/lakefs-omitted",
            "staged_objects_listed": 40,
            "staged_branches_gone": ("feature-gone",),
            "staged_check": "candidates",
            "lakefs_seconds": 0.75,
            "heads_file": STATE + "heads.json",
            "branches_moved": 1,
            **kw,
        }
    )


def _committed(**kw):
    return CommittedResult(
        **{
            "committed_dir": PartsDir(STATE + "committed/", 4),
            "commits_csv": NS + "/_lakefs/retention/gc/commits/run_id=c1/commits.csv",
            "active_commits": 9,
            "metaranges": 5,
            "ranges": 11,
            "committed_addresses": 900,
            "documented_commits": 9,
            "commits_lakefs_lacked": 1,
            "seconds": 3.5,
            "new_commits": 9,
            "ranges_known": 0,
            "read_file": STATE + "read.json",
            "identity_dir": PartsDir(STATE + "identities/", 4),
            **kw,
        }
    )


def _slices(**kw):
    return SlicesResult(
        **{
            "listed_dir": "/tmp/work/listed",
            "first_slice": "ft1m5cb8di15rp32pj9g",
            "slices_listed": 6,
            "slices_skipped": 1,
            "listed_objects": 1200,
            "listed_bytes": 3 * 1024 * 1024,
            "seconds": 4.0,
            **kw,
        }
    )


def _candidates(**kw):
    return CandidatesResult(
        **{
            "report_dir": "_lakefs/retention/gc/unified/" + MARK + "/",
            "uncommitted_files": 2,
            "candidates": 40,
            "candidate_bytes": 4000,
            "to_delete": 40,
            "to_delete_bytes": 4000,
            "held_back": 0,
            "confirm_after_seconds": 0,
            "seconds": 6.5,
            "uncommitted_dir": PartsDir(STATE + "uncommitted/", 2),
            "staged_check": "candidates",
            "staged_suspicious": 3,
            "staged_stats": 6,
            "staged_kept": 1,
            "commits_since": 2,
            "committed_since_kept": 1,
            "staged_check_seconds": 0.5,
            "unreadable_marks": ("m0: summary.json is not valid JSON",),
            **kw,
        }
    )


def _space(**kw):
    return SpaceResult(
        **{
            "space_key": "_lakefs/retention/gc/unified/" + MARK + "/space.json",
            "objects": 1200,
            "bytes": 3 * 1024 * 1024,
            "head_bytes": 2_000_000,
            "retention_bytes": 500_000,
            "staged_bytes": 100_000,
            "deleted_bytes": 4000,
            "held_back_bytes": 0,
            "young_bytes": 541_152,
            "branches": 4,
            "stale_branches": 1,
            "stale_alone_bytes": 20_000,
            "seconds": 2.25,
            **kw,
        }
    )


def _delete(**kw):
    return DeleteResult(
        **{
            "counts": DeleteCounts(
                keys=40, deleted=38, already_gone=2, retried=3, requests=2, parts=2, resumed_parts=1
            ),
            "concurrency": 2,
            "rate": 3000.0,
            "sweep_dir": NS + "/_lakefs/retention/gc/unified/" + MARK + "/sweeps/" + "x/",
            "seconds": 7.75,
            "restorable": Restorability("s3 versioning", True, None, "bucket versioning is Enabled"),
            **kw,
        }
    )


def _marking(ctx, **results):
    steps = {
        "mark_uncommitted": _uncommitted(),
        "list_committed": _committed(),
        "list_slices": _slices(),
        "compute_candidates": _candidates(),
        "attribute_space": _space(),
        "delete": _delete(),
    }
    steps.update(results)
    return inputs(ctx, **steps)


BASE = IncrementalBase(
    mark_id="ft1m4k38di10ge4kgsc0",
    start_time="2026-11-22T17:00:00.000000Z",
    mode="mark_and_sweep",
    dry_run=False,
    last_slice="ft1m4k38di10ge4kgsa0",
    uncommitted_dir=PartsDir("_lakefs/retention/gc/unified/b/state/uncommitted/", 1),
    committed_dirs=(
        PartsDir("_lakefs/retention/gc/unified/c/state/committed/", 3),
        PartsDir("_lakefs/retention/gc/unified/b/state/committed/", 1),
    ),
    identity_dirs=(
        PartsDir("_lakefs/retention/gc/unified/c/state/identities/", 3),
        PartsDir("_lakefs/retention/gc/unified/b/state/identities/", 1),
    ),
    read_file="_lakefs/retention/gc/unified/b/state/read.json",
    clean_run_id="ft1m3tj8di14ubocmkv0",
    clean_start_time="2026-11-21T17:00:00.000000Z",
    clean_listed_objects=5000,
    runs_in_chain=2,
)


def clean() -> tuple[StepInputs, bool]:
    """A clean mark_and_sweep run: every step's result, the attribution and the staged check on the candidates."""
    ctx = _ctx({"gc_rules": "0123456789abcdef", "flow_reason": "auto: no earlier successful run"})
    return _marking(ctx, delete=_delete(quarantine_purged=2)), True


def incremental() -> tuple[StepInputs, bool]:
    """An incremental run on a base: carried counts, new commits and ranges known, the attribution skipped."""
    ctx = _ctx(
        {
            "gc_rules": "0123456789abcdef",
            "flow": "incremental",
            "base": BASE,
            "flow_reason": "auto: builds on run ft1m4k38di10ge4kgsc0 (started 2026-11-22T17:00:00.000000Z)",
        }
    )
    return _marking(
        ctx,
        list_committed=_committed(new_commits=3, ranges_known=7),
        list_slices=_slices(slices_before_base=5, root_listed=False, listed_objects=200),
        compute_candidates=_candidates(
            carried_checked=12, carried_candidates=4, staged_check="full", unreadable_marks=()
        ),
        attribute_space=SpaceResult(skipped="an incremental run: the chain's clean run's space.json stands"),
    ), True


def dry_run() -> tuple[StepInputs, bool]:
    """A dry run: the sweep counts what it would delete; nothing reclaimed, nothing restorable."""
    ctx = _ctx(dry_run=True)
    return _marking(
        ctx, delete=_delete(dry_run=True, counts=DeleteCounts(keys=40, deleted=40, parts=2), restorable=None)
    ), True


def mark_only() -> tuple[StepInputs, bool]:
    """A mark_only run: no sweep (delete skipped), held-back candidates."""
    ctx = _ctx(mode="mark_only", confirm_after_seconds=3600)
    return _marking(
        ctx,
        compute_candidates=_candidates(
            to_delete=30,
            to_delete_bytes=3000,
            held_back=10,
            confirm_after_seconds=3600,
            held_back_reason="not yet a candidate in mark m0",
        ),
        delete=DeleteResult(skipped="mark_only"),
    ), True


def sweep_only() -> tuple[StepInputs, bool]:
    """A sweep_only run of an earlier mark: only the delete step's result."""
    ref = MarkRef(MARK, "2026-11-22T17:00:00.000000Z", "2026-11-21T17:00:00.000000Z", 1200, 40)
    ctx = _ctx(mode="sweep_only", mark_id=MARK, sweep_mark=ref, airflow_run_id="manual__2026-11-23T17:00:00+00:00")
    return inputs(
        ctx,
        delete=_delete(
            soft_delete_days=7,
            restorable=Restorability(
                "azure soft delete", True, "2026-11-30T17:00:00.000000Z", "soft delete keeps deleted blobs 7 days"
            ),
        ),
    ), True


def delete_failed() -> tuple[StepInputs, bool]:
    """A sweep that left dead letters: the run did not complete."""
    ctx = _ctx()
    dead = NS + "/_lakefs/retention/gc/unified/" + MARK + "/sweeps/x/dead_letters/"
    return _marking(
        ctx,
        delete=_delete(
            counts=DeleteCounts(keys=40, deleted=35, already_gone=1, retried=24, requests=9, failed=4, parts=2),
            dead_letters=dead,
            incomplete="4 key(s) left as dead letters",
        ),
    ), False


def space_skipped() -> tuple[StepInputs, bool]:
    """A clean run whose attribution was switched off."""
    ctx = _ctx(attribute_space=False)
    return _marking(ctx, attribute_space=SpaceResult(skipped="switched off (Param attribute_space)")), True


def held_back() -> tuple[StepInputs, bool]:
    """Delayed confirmation: some candidates confirmed by an earlier mark, the rest held back until a time."""
    ctx = _ctx(confirm_after_seconds=86400)
    return _marking(
        ctx,
        compute_candidates=_candidates(
            to_delete=25,
            to_delete_bytes=2500,
            held_back=15,
            confirm_after_seconds=86400,
            confirmed_by_mark="m0",
            held_back_reason="not yet a candidate in mark m0 (started 2026-11-22T16:00:00.000000Z)",
        ),
        delete=_delete(counts=DeleteCounts(keys=25, deleted=25, requests=1, parts=1)),
    ), True


CASES = {
    f.__name__: f for f in (clean, incremental, dry_run, mark_only, sweep_only, delete_failed, space_skipped, held_back)
}


def _golden(name: str) -> tuple[str, dict]:
    text = (GOLDEN / f"{name}.json").read_text()
    return text, json.loads(text)


def test_every_case_and_older_file_is_golden():
    files = {p.stem for p in GOLDEN.glob("*.json")}
    assert set(CASES) | {"mark_started"} <= files
    assert {f for f in files if f.startswith("older_")}, "no real run's summary among the golden files"


@pytest.mark.parametrize("name", sorted(p.stem for p in GOLDEN.glob("*.json")))
def test_every_golden_summary_reads_and_writes_back_unchanged(name):
    _, doc = _golden(name)
    summary = RunSummary.from_doc(doc)
    assert summary.to_doc() == doc
    assert list(summary.to_doc()) == list(doc)  # in the same order
    assert summary.extra == {}  # this version names every field they have
    assert RunSummary.from_doc(json.loads(json.dumps(summary.to_doc()))) == summary


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_builder_writes_what_the_earlier_code_wrote(name):
    text, doc = _golden(name)
    step_inputs, success = CASES[name]()
    built = build_summary(step_inputs, success)
    assert built.to_doc() == doc
    assert json.dumps(built.to_doc(), sort_keys=False) == text  # the same bytes: order, ints and floats
    assert RunSummary.from_doc(doc) == built


def test_mark_started_writes_what_the_earlier_code_wrote():
    text, doc = _golden("mark_started")
    started = mark_started(_ctx(), MARK, "ft1m5cb8di15rp32pj9g")
    assert json.dumps(started.to_doc(), sort_keys=False) == text
    assert (started.success, started.note) == (False, "mark in progress or failed")


def test_typed_parts_read_as_their_types():
    summary = RunSummary.from_doc(_golden("incremental")[1])
    assert summary.restorable == Restorability("s3 versioning", True, None, "bucket versioning is Enabled")
    state = summary.incremental_state
    assert isinstance(state, IncrementalState)
    assert state.uncommitted_dir == PartsDir(STATE + "uncommitted/", 2)
    assert state.committed_dirs == (*BASE.committed_dirs, PartsDir(STATE + "committed/", 4))
    assert state.lacks() is None
    assert summary.staged_branches_gone == ("feature-gone",)
    assert summary.step_seconds() == {
        "mark_uncommitted": 1.25,
        "list_committed": 3.5,
        "list_slices": 4.0,
        "compute_candidates": 6.5,
        "delete": 7.75,
    }
    base = summary.incremental_base(MARK)
    assert base == IncrementalBase(
        mark_id=MARK,
        start_time=summary.start_time,
        mode="mark_and_sweep",
        dry_run=False,
        last_slice=state.last_slice,
        uncommitted_dir=state.uncommitted_dir,
        committed_dirs=state.committed_dirs,
        identity_dirs=state.identity_dirs,
        read_file=state.read_file,
        clean_run_id=BASE.clean_run_id,
        clean_start_time=BASE.clean_start_time,
        clean_listed_objects=BASE.clean_listed_objects,
        runs_in_chain=3,
    )


def test_a_summary_of_another_version_round_trips_with_its_unknown_fields():
    doc = {**_golden("clean")[1], "written_by": "lakefs-gc 9.0", "future_counts": {"a": [1, 2.5, None]}}
    doc["incremental_state"] = {**doc["incremental_state"], "format": 3, "compaction": {"every": 4}}
    summary = RunSummary.from_doc(doc)
    assert summary.extra == {"written_by": "lakefs-gc 9.0", "future_counts": {"a": [1, 2.5, None]}}
    assert summary.incremental_state is not None
    assert summary.incremental_state.extra == {"compaction": {"every": 4}}
    assert summary.to_doc() == doc
    # a field named like the extra mapping itself is an unknown field too
    assert RunSummary.from_doc({"extra": 1}).to_doc() == {"extra": 1}


def test_an_earlier_versions_fields_are_kept_and_read():
    old = {
        "run_id": "m",
        "success": True,
        "mode": "mark_and_sweep",
        "deleted": 5,
        "delete_missing": 1,
        "delete_failed": 0,
        "candidates": 7,
    }
    summary = RunSummary.from_doc(old)
    assert (summary.delete_missing, summary.to_delete, summary.extra) == (1, None, {})
    assert MarkSummary.of(summary).to_delete == 7  # its deleted/ list was "candidates" then
    assert summary.to_doc() == old


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("listed_objects", "many"),
        ("dry_run", "no"),
        ("start_time", 17),
        ("restorable", "yes"),
        ("unreadable_marks", "m0"),
        ("max_delete_share", "half"),
    ],
)
def test_a_mistyped_field_is_refused_by_name(field, value):
    with pytest.raises(ContractError, match=rf"summary\.json\.{field}: expected"):
        RunSummary.from_doc({**_golden("clean")[1], field: value})


def test_a_mistyped_nested_field_is_refused_by_its_path():
    doc = _golden("clean")[1]
    doc["incremental_state"]["committed_dirs"] = ["c/"]
    with pytest.raises(ContractError, match=r"summary\.json\.incremental_state\.committed_dirs"):
        RunSummary.from_doc(doc)
    with pytest.raises(ContractError, match="expected an object"):
        RunSummary.from_doc(["not", "a", "summary"])


def test_success_is_true_only_for_a_json_true():
    assert RunSummary.from_doc({"success": "true"}).success is False
    assert RunSummary.from_doc({"success": True}).success is True
    assert RunSummary.from_doc({}).success is None


def test_every_figure_names_a_field():
    names = {f.name for f in dataclasses.fields(RunSummary)}
    assert set(FIGURES.values()) | set(SPACE_FIGURES.values()) <= names
