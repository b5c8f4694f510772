"""The Spark steps on a local:// namespace built by hand: once through spark-submit (the jobs as
the DAG runs them), the rest in-process on the shared SparkSession (the same step functions).

Safety first: after the sweep, every object that is committed, staged, newer than the cutoff,
under _lakefs/, the dummy marker, or outside the namespace is still there; only true garbage is gone.
"""

from __future__ import annotations

import io
import json
import os
import time
from dataclasses import replace
from datetime import UTC
from functools import partial

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakefs_gc.contract import STEP_INPUTS, CommittedResult, PartsDir, StepInputs, UncommittedResult
from lakefs_gc.errors import LakeFSGCError
from lakefs_gc.lakefs import xid
from lakefs_gc.report import formats, layout
from lakefs_gc.spark import shell
from lakefs_gc.steps import run_on_spark
from lakefs_gc.storage import LocalStorage
from lakefs_gc.timestamps import iso
from tests.support.contract import make_context
from tests.support.spark import submit

pytestmark = pytest.mark.spark

NOW = time.time()
DAY = 86400


def _desc_slice(t: float) -> str:
    secs = (xid.UNIX_YEAR_4000 - int(t)) & 0xFFFFFFFF
    return xid.encode(secs.to_bytes(4, "big") + b"\x01\x02\x03\x04\x05" + b"\x00\x00\x01")


def _put(root, key, age_days, data=b"x" * 10):
    p = root / key
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    t = NOW - age_days * DAY
    os.utime(p, (t, t))


@pytest.fixture
def world(tmp_path):
    ns_root = tmp_path / "ns" / "repo"
    old_slice, new_slice = _desc_slice(NOW - 10 * DAY), _desc_slice(NOW - 60)
    objs = {
        "committed": f"data/{old_slice}/c0000000000000000001",
        "staged": f"data/{old_slice}/c0000000000000000002",
        "garbage1": f"data/{old_slice}/c0000000000000000003",
        "garbage2": f"data/{old_slice}/c0000000000000000004",
        "young": f"data/{old_slice}/c0000000000000000005",
        "newslice": f"data/{new_slice}/c0000000000000000006",
        "legacy_garbage": "0123456789abcdef0123456789abcdef",
        "legacy_committed": "fedcba9876543210fedcba9876543210",
        "dummy": "dummy",
        "meta": "_lakefs/0000aaaa",
        "lakefs_dummy": "_lakefs/dummy",
    }
    for name, key in objs.items():
        _put(ns_root, key, 0.001 if name in ("young", "newslice") else 10)
    # outside the namespace: a sibling prefix sharing a string prefix
    _put(tmp_path / "ns" / "repo2", f"data/{old_slice}/c0000000000000000003", 10)
    st = LocalStorage(ns_root)
    run_id = "g4uk6erfnfus73frbnqg"
    buf = io.BytesIO()
    pq.write_table(
        pa.table({"physical_address": [objs["staged"]], "creation_date": pa.array([int(NOW)], pa.int64())}),
        buf,
        compression="gzip",
    )
    st.put(f"_lakefs/retention/gc/uncommitted/{run_id}/uncommitted/cvgabcdefghijklmnopq", buf.getvalue())
    work = tmp_path / "work"
    committed_dir = PartsDir(layout.state_committed_dir(run_id), 1)  # what list_committed writes
    formats.write_addresses(
        st, committed_dir.dir + layout.part_name(0), [objs["committed"], objs["legacy_committed"], "s3://elsewhere/x"]
    )
    from datetime import datetime

    ctx = make_context(
        "local://ns/repo",
        local_root=str(tmp_path),
        work_dir=str(work),
        start=datetime.fromtimestamp(NOW, UTC),
        cutoff=datetime.fromtimestamp(NOW - DAY, UTC),
    )
    results = {
        "mark_uncommitted": UncommittedResult(
            run_id=run_id,
            pages=1,
            locations=(f"local://{ns_root}/_lakefs/retention/gc/uncommitted/{run_id}/uncommitted/",),
        ),
        "list_committed": CommittedResult(
            committed_dir=committed_dir, commits_csv="", active_commits=1, metaranges=1, ranges=1, committed_addresses=3
        ),
    }
    return {"root": ns_root, "objs": objs, "ctx": ctx, "results": results, "run_id": run_id, "tmp": tmp_path, "st": st}


STEP_RUN = {name: partial(run_on_spark, name) for name in ("list_slices", "compute_candidates", "delete")}


def step(spark, world, name, ctx=None, **settings):
    """Run one step in-process (the job's function on the shared session); record its result."""
    ctx = ctx or world["ctx"]
    if settings:
        ctx = replace(ctx, settings=replace(ctx.settings, **settings))
    res = STEP_RUN[name](spark, StepInputs(ctx, {k: world["results"].get(k) for k in STEP_INPUTS[name]}), {})
    shell.check(name, res)
    world["results"][name] = res
    return res


def iso_now():
    from datetime import datetime

    return iso(datetime.fromtimestamp(NOW, UTC))


def iso_at(t):
    from datetime import datetime

    return iso(datetime.fromtimestamp(t, UTC))


def _exists(world, name):
    return (world["root"] / world["objs"][name]).exists()


def test_the_top_level_jobs_are_the_packages():
    """``jobs/gc_step.py <step>`` (the design's layout) for every Spark step, running the package's job
    as ``__main__`` (its usage is the package job's)."""
    import subprocess
    import sys

    from lakefs_gc.steps import SPARK_STEPS
    from tests.support.spark import REPO, TOP_LEVEL_JOBS

    assert sorted(p.name for p in TOP_LEVEL_JOBS.glob("*.py")) == ["gc_step.py"]
    for step in SPARK_STEPS:
        out = subprocess.run(
            [sys.executable, str(TOP_LEVEL_JOBS / "gc_step.py"), step, "--help"],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": f"{REPO / 'include'}"},
            check=False,
        )
        assert out.returncode == 0, (step, out.stdout, out.stderr[-2000:])
        assert f"lakeFS GC step {step}" in out.stdout, (step, out.stdout, out.stderr[-2000:])


def test_the_jobs_through_spark_submit_keep_every_live_object(world):
    """list_slices, compute_candidates and delete as the DAG runs them: spark-submit, --py-files; here
    through the top-level ``jobs/`` entry points (the DAG tests run the package's own)."""
    from tests.support.spark import TOP_LEVEL_JOBS

    results, tmp = world["results"], world["tmp"] / "r"

    def job(name):
        rc, res, out = submit(
            name, StepInputs(world["ctx"], {k: results.get(k) for k in STEP_INPUTS[name]}), tmp, jobs_dir=TOP_LEVEL_JOBS
        )
        assert rc == 0, out[out.find("Traceback") :][:6000] or out[-4000:]
        results[name] = res
        outputs[name] = out
        return res

    outputs = {}

    res = job("list_slices")
    assert res.slices_listed == 1
    assert res.slices_skipped == 1
    assert res.listed_objects == 6  # committed, staged, 2 garbage, 2 legacy; young/new/dummy/_lakefs not
    assert res.first_slice == world["objs"]["committed"].split("/")[1]

    res = job("compute_candidates")
    assert res.candidates == 3
    report = world["root"] / f"_lakefs/retention/gc/unified/{world['run_id']}"
    marked = sorted(pq.read_table(report / "deleted").column("address").to_pylist())
    assert marked == sorted([world["objs"]["garbage1"], world["objs"]["garbage2"], world["objs"]["legacy_garbage"]])
    assert json.loads((report / "summary.json").read_text())["success"] is False
    # marking deletes nothing
    assert all(_exists(world, n) for n in world["objs"])

    res = job("delete")
    c = res.counts
    assert (c.deleted, c.failed, c.keys, c.already_gone) == (3, 0, 3, 0)
    # Spark logs at WARN by default: no INFO line of log4j's pattern ("26/11/23 17:00:00 INFO SparkContext: ...");
    # the job's result is one readable line, the last of its own
    import re

    for name, out in outputs.items():
        print(f"--- {name}: the job's output\n{out}")
        info = [m.start() for m in re.finditer(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d INFO ", out, re.M)]
        # the SparkContext logs its version, OS and Java before it applies spark.log.level; nothing after
        level_set = out.find('Setting Spark log level to "WARN"')
        assert level_set >= 0, (name, out[:3000])
        assert len(info) <= 3, (name, out[:3000])
        assert all(i < level_set for i in info), (name, out[:3000])
    ours = [line for line in outputs["delete"].splitlines() if line.startswith("lakefs-gc delete: ")]
    assert ours, outputs["delete"][-3000:]
    assert ours[-1].startswith("lakefs-gc delete: deleted 3, already gone 0, dead letters 0 of 3 keys in "), outputs[
        "delete"
    ][-3000:]
    assert re.search(
        r"^lakefs-gc list_slices: 6 objects \([^)]+\) in 1 slice, 1 skipped; [\d.]+ s$",
        outputs["list_slices"],
        re.M,
    ), outputs["list_slices"][-3000:]
    gone = {"garbage1", "garbage2", "legacy_garbage"}
    for name in world["objs"]:
        assert _exists(world, name) == (name not in gone), name
    assert (world["tmp"] / "ns" / "repo2" / world["objs"]["garbage1"]).exists()  # outside the namespace


def test_a_second_sweep_of_the_same_mark_resumes_and_deletes_nothing_new(spark, world):
    step(spark, world, "list_slices")
    step(spark, world, "compute_candidates")
    first = step(spark, world, "delete").counts
    assert (first.deleted, first.failed) == (3, 0)
    gone = {"garbage1", "garbage2", "legacy_garbage"}
    again = step(spark, world, "delete").counts
    assert again.failed == 0
    assert again.deleted == 3
    assert again.resumed_parts == again.parts > 0  # same sweep id: counted from the markers
    for name in world["objs"]:
        assert _exists(world, name) == (name not in gone), name


def test_missing_uncommitted_files_fail_closed(spark, world):
    step(spark, world, "list_slices")
    run_dir = world["root"] / f"_lakefs/retention/gc/uncommitted/{world['run_id']}"
    for p in run_dir.rglob("*"):
        if p.is_file():
            p.unlink()
    with pytest.raises(LakeFSGCError, match="refusing to run without the staged addresses"):
        step(spark, world, "compute_candidates")
    assert not (world["root"] / f"_lakefs/retention/gc/unified/{world['run_id']}/deleted").exists()
    assert all(_exists(world, n) for n in world["objs"])


def _finish_mark(world, mark_id, start):
    """What save_report does at the end of a successful run: success true in summary.json."""
    st = world["st"]
    key = f"_lakefs/retention/gc/unified/{mark_id}/summary.json"
    summary = {**json.loads(st.get(key)), "success": True, "mode": "mark_and_sweep", "start_time": start}
    st.put(key, json.dumps(summary).encode())


def _write_committed(world, names, extra=()):
    """The committed addresses of the next mark, where list_committed writes them (one part)."""
    d = world["results"]["list_committed"].committed_dir
    formats.write_addresses(world["st"], d.dir + layout.part_name(0), [world["objs"][n] for n in names] + list(extra))


def test_delayed_confirmation_over_three_marks(spark, world):
    """An object orphaned after the first mark is held by the second and deleted by the third; an
    object referenced again between marks is never deleted."""
    objs = world["objs"]
    garbage3 = objs["committed"].rsplit("/", 1)[0] + "/c0000000000000000007"
    _put(world["root"], garbage3, 10)
    objs["garbage3"] = garbage3
    step(spark, world, "list_slices")
    first_run = world["run_id"]

    def mark(run_id, start, committed_names):
        _write_committed(world, committed_names)
        st = world["st"]  # every mark sees the same staged file
        unc = f"_lakefs/retention/gc/uncommitted/{first_run}/uncommitted/cvgabcdefghijklmnopq"
        if run_id != first_run:
            st.put(f"_lakefs/retention/gc/uncommitted/{run_id}/uncommitted/cvgabcdefghijklmnopq", st.get(unc))
        world["results"]["mark_uncommitted"] = UncommittedResult(
            run_id=run_id,
            pages=1,
            locations=(f"local://{world['root']}/_lakefs/retention/gc/uncommitted/{run_id}/uncommitted/",),
        )
        ctx = replace(world["ctx"], start_time=iso_at(start))
        return ctx, step(spark, world, "compute_candidates", ctx=ctx, confirm_after_seconds=1800)

    # mark 1 (two hours ago): garbage3 still committed; nothing earlier to confirm against: all held back
    ctx1, m1 = mark(first_run, NOW - 7200, ["committed", "legacy_committed", "garbage3"])
    assert (m1.candidates, m1.to_delete, m1.held_back) == (3, 0, 3)
    assert "no successful mark" in m1.held_back_reason
    _finish_mark(world, first_run, ctx1.start_time)
    # mark 2 (one hour ago): garbage1 referenced again, garbage3 orphaned since mark 1
    ctx2, m2 = mark("g4uk6erfnfus73frbnq2", NOW - 3600, ["committed", "legacy_committed", "garbage1"])
    assert m2.confirmed_by_mark == first_run
    assert (m2.candidates, m2.to_delete, m2.held_back) == (3, 2, 1)  # garbage2, legacy confirmed
    assert step(spark, world, "delete", ctx=ctx2).counts.deleted == 2
    assert not _exists(world, "garbage2")
    assert not _exists(world, "legacy_garbage")
    assert _exists(world, "garbage1")
    assert _exists(world, "garbage3")
    _finish_mark(world, "g4uk6erfnfus73frbnq2", ctx2.start_time)
    # mark 3 (now, after a new listing): garbage3 confirmed by mark 2 and deleted; garbage1 (referenced) never
    step(spark, world, "list_slices")
    ctx3, m3 = mark("g4uk6erfnfus73frbnq3", NOW, ["committed", "legacy_committed", "garbage1"])
    assert m3.confirmed_by_mark == "g4uk6erfnfus73frbnq2"
    assert m3.to_delete == 1
    step(spark, world, "delete", ctx=ctx3)
    assert not _exists(world, "garbage3")
    assert _exists(world, "garbage1")
    for name in ("committed", "staged", "young", "newslice", "legacy_committed", "dummy", "meta", "lakefs_dummy"):
        assert _exists(world, name), name


def test_blast_radius_guard_and_dry_run_delete_nothing(spark, world):
    from lakefs_gc.errors import SweepRefused

    step(spark, world, "list_slices")
    cands = step(spark, world, "compute_candidates")
    assert (cands.candidates, world["results"]["list_slices"].listed_objects) == (3, 6)
    with pytest.raises(SweepRefused) as e:
        step(spark, world, "delete", max_delete_share=0.4)
    assert "3 objects to delete are 50.0% of 6 listed objects, above max_delete_share=0.4" in str(e.value)
    assert "Param max_delete_share >= 0.500" in str(e.value)
    with pytest.raises(SweepRefused, match="exceed max_delete_count=2"):
        step(spark, world, "delete", max_delete_count=2)
    assert all(_exists(world, n) for n in world["objs"])
    res = step(spark, world, "delete", dry_run=True)
    assert res.dry_run
    assert res.counts.deleted == 3
    assert all(_exists(world, n) for n in world["objs"])
