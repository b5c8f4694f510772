"""The Spark jobs for real (spark-submit, local[2]) on a local:// namespace built by hand.

Safety first: after the sweep, every object that is committed, staged, newer than the cutoff,
under _lakefs/, the dummy marker, or outside the namespace is still there; only true garbage is gone.
"""

from __future__ import annotations

import io
import json
import os
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakefs_gc import xid
from lakefs_gc.plan import iso
from lakefs_gc.storage import LocalStorage
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
    pq.write_table(pa.table({"physical_address": [objs["staged"]], "creation_date": pa.array([int(NOW)], pa.int64())}),
                   buf, compression="gzip")
    st.put(f"_lakefs/retention/gc/uncommitted/{run_id}/uncommitted/cvgabcdefghijklmnopq", buf.getvalue())
    work = tmp_path / "work"
    committed_dir = work / "committed"
    committed_dir.mkdir(parents=True)
    pq.write_table(pa.table({"address": [objs["committed"], objs["legacy_committed"],
                                         "s3://elsewhere/x"]}), committed_dir / "part-0.parquet")
    meta = {"repository": "repo", "storage_namespace": "local://ns/repo", "local_blockstore_root": str(tmp_path),
            "work_dir": str(work),
            "start_time": iso_now(), "cutoff_time": iso_at(NOW - DAY), "run_id": run_id,
            "uncommitted_locations": [f"local://{ns_root}/_lakefs/retention/gc/uncommitted/{run_id}/uncommitted/"],
            "committed_dir": str(committed_dir), "mode": "mark_and_sweep", "parallelism": 2}
    return {"root": ns_root, "objs": objs, "meta": meta, "tmp": tmp_path, "st": st}


def iso_now():
    from datetime import datetime, timezone
    return iso(datetime.fromtimestamp(NOW, timezone.utc))


def iso_at(t):
    from datetime import datetime, timezone
    return iso(datetime.fromtimestamp(t, timezone.utc))


def _exists(world, name):
    return (world["root"] / world["objs"][name]).exists()


def test_list_slices_compute_candidates_delete_keep_every_live_object(world):
    meta = world["meta"]
    rc, res, err = submit("list_slices", meta, world["tmp"] / "r")
    assert rc == 0, err
    assert res["slices_listed"] == 1 and res["slices_skipped"] == 1
    assert res["listed_objects"] == 6  # committed, staged, 2 garbage, 2 legacy; young/new/dummy/_lakefs not
    assert res["first_slice"] == world["objs"]["committed"].split("/")[1]
    meta.update(res)

    rc, res, err = submit("compute_candidates", meta, world["tmp"] / "r")
    assert rc == 0, err
    assert res["candidates"] == 3
    meta.update(res)
    report = world["root"] / f"_lakefs/retention/gc/unified/{meta['run_id']}"
    marked = sorted(pq.read_table(report / "deleted").column("address").to_pylist())
    assert marked == sorted([world["objs"]["garbage1"], world["objs"]["garbage2"], world["objs"]["legacy_garbage"]])
    assert json.loads((report / "summary.json").read_text())["success"] is False
    # marking deletes nothing
    assert all(_exists(world, n) for n in world["objs"])

    rc, res, err = submit("delete", meta, world["tmp"] / "r")
    assert rc == 0, err
    assert (res["deleted"], res["delete_failed"], res["delete_keys"], res["delete_missing"]) == (3, 0, 3, 0)
    gone = {"garbage1", "garbage2", "legacy_garbage"}
    for name in world["objs"]:
        assert _exists(world, name) == (name not in gone), name
    assert (world["tmp"] / "ns" / "repo2" / world["objs"]["garbage1"]).exists()  # outside the namespace

    # idempotent: a second sweep of the same mark deletes nothing new and succeeds
    rc, res2, err = submit("delete", meta, world["tmp"] / "r")
    assert rc == 0, err
    assert res2["delete_failed"] == 0 and res2["deleted"] == 3
    assert res2["delete_resumed_parts"] == res2["delete_parts"] > 0  # same sweep id: counted from the markers
    for name in world["objs"]:
        assert _exists(world, name) == (name not in gone), name


def test_missing_uncommitted_files_fail_closed(world):
    meta = world["meta"]
    rc, res, err = submit("list_slices", meta, world["tmp"] / "r")
    meta.update(res)
    run_dir = world["root"] / f"_lakefs/retention/gc/uncommitted/{meta['run_id']}"
    for p in run_dir.rglob("*"):
        if p.is_file():
            p.unlink()
    rc, res, err = submit("compute_candidates", meta, world["tmp"] / "r")
    assert rc != 0 and "refusing to run without the staged addresses" in err
    assert not (world["root"] / f"_lakefs/retention/gc/unified/{meta['run_id']}/deleted").exists()
    assert all(_exists(world, n) for n in world["objs"])


def _finish_mark(world, meta):
    """What save_report does at the end of a successful run: success true in summary.json."""
    st = world["st"]
    key = f"_lakefs/retention/gc/unified/{meta['run_id']}/summary.json"
    summary = {**json.loads(st.get(key)), "success": True, "mode": meta["mode"], "start_time": meta["start_time"]}
    st.put(key, json.dumps(summary).encode())


def _write_committed(world, names, extra=()):
    d = world["tmp"] / "work" / "committed"
    for p in d.glob("*.parquet"):
        p.unlink()
    pq.write_table(pa.table({"address": [world["objs"][n] for n in names] + list(extra)}), d / "part-0.parquet")


def test_delayed_confirmation_over_three_marks(world):
    """An object orphaned after the first mark is held by the second and deleted by the third; an
    object referenced again between marks is never deleted."""
    objs, meta = world["objs"], dict(world["meta"], confirm_after_seconds=1800)
    garbage3 = objs["committed"].rsplit("/", 1)[0] + "/c0000000000000000007"
    _put(world["root"], garbage3, 10)
    objs["garbage3"] = garbage3
    rc, res, err = submit("list_slices", meta, world["tmp"] / "r")
    assert rc == 0, err
    meta.update(res)

    def mark(run_id, start, committed_names):
        _write_committed(world, committed_names)
        m = dict(meta, run_id=run_id, start_time=iso_at(start))
        st = world["st"]  # every mark sees the same staged file
        unc = f"_lakefs/retention/gc/uncommitted/{meta['run_id']}/uncommitted/cvgabcdefghijklmnopq"
        if run_id != meta["run_id"]:
            st.put(f"_lakefs/retention/gc/uncommitted/{run_id}/uncommitted/cvgabcdefghijklmnopq", st.get(unc))
            m["uncommitted_locations"] = [f"local://{world['root']}/_lakefs/retention/gc/uncommitted/{run_id}/uncommitted/"]
        rc, res, err = submit("compute_candidates", m, world["tmp"] / "r")
        assert rc == 0, err
        m.update(res)
        return m

    # mark 1 (two hours ago): garbage3 still committed; nothing earlier to confirm against: all held back
    m1 = mark(meta["run_id"], NOW - 7200, ["committed", "legacy_committed", "garbage3"])
    assert (m1["candidates"], m1["to_delete"], m1["held_back"]) == (3, 0, 3)
    assert "no successful mark" in m1["held_back_reason"]
    _finish_mark(world, m1)
    # mark 2 (one hour ago): garbage1 referenced again, garbage3 orphaned since mark 1
    m2 = mark("g4uk6erfnfus73frbnq2", NOW - 3600, ["committed", "legacy_committed", "garbage1"])
    assert m2["confirmed_by_mark"] == m1["run_id"]
    assert (m2["candidates"], m2["to_delete"], m2["held_back"]) == (3, 2, 1)  # garbage2, legacy confirmed
    rc, res, err = submit("delete", m2, world["tmp"] / "r")
    assert rc == 0, err
    assert res["deleted"] == 2
    assert not _exists(world, "garbage2") and not _exists(world, "legacy_garbage")
    assert _exists(world, "garbage1") and _exists(world, "garbage3")
    _finish_mark(world, m2)
    # mark 3 (now, after a new listing): garbage3 confirmed by mark 2 and deleted; garbage1 (referenced) never
    rc, res, err = submit("list_slices", meta, world["tmp"] / "r")
    assert rc == 0, err
    meta.update(res)
    m3 = mark("g4uk6erfnfus73frbnq3", NOW, ["committed", "legacy_committed", "garbage1"])
    assert m3["confirmed_by_mark"] == m2["run_id"] and m3["to_delete"] == 1
    rc, res, err = submit("delete", m3, world["tmp"] / "r")
    assert rc == 0, err
    assert not _exists(world, "garbage3") and _exists(world, "garbage1")
    for name in ("committed", "staged", "young", "newslice", "legacy_committed", "dummy", "meta", "lakefs_dummy"):
        assert _exists(world, name), name


def test_blast_radius_guard_and_dry_run_delete_nothing(world):
    meta = world["meta"]
    for step in ("list_slices", "compute_candidates"):
        rc, res, err = submit(step, meta, world["tmp"] / "r")
        assert rc == 0, err
        meta.update(res)
    assert (meta["candidates"], meta["listed_objects"]) == (3, 6)
    rc, res, out = submit("delete", dict(meta, max_delete_share=0.4), world["tmp"] / "r")
    assert rc != 0
    assert "3 objects to delete are 50.0% of 6 listed objects, above max_delete_share=0.4" in out
    assert "Param max_delete_share >= 0.500" in out
    rc, res, out = submit("delete", dict(meta, max_delete_count=2), world["tmp"] / "r")
    assert rc != 0 and "exceed max_delete_count=2" in out
    assert all(_exists(world, n) for n in world["objs"])
    rc, res, out = submit("delete", dict(meta, dry_run=True), world["tmp"] / "r")
    assert rc == 0, out
    assert res["would_delete"] == 3 and res["deleted"] == 0
    assert all(_exists(world, n) for n in world["objs"])
