"""report/: the one reader and writer of each file format, and the paths they go to (the same
bytes and keys the GC wrote before they had one home)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pyarrow.parquet as pq

from lakefs_gc.report import formats, layout
from lakefs_gc.report.marks import MarkSummary, read_mark
from lakefs_gc.storage import LocalStorage


def test_address_parts_round_trip(tmp_path):
    st = LocalStorage(tmp_path)
    key = layout.deleted_dir("m1") + layout.part_name(3)
    formats.write_addresses(st, key, ["data/a/1", "legacy"])
    assert key == "_lakefs/retention/gc/unified/m1/deleted/part-00003.parquet"
    assert pq.read_table(tmp_path / key).schema.names == ["address"]
    assert formats.read_addresses(st, key) == ["data/a/1", "legacy"]
    assert formats.count_rows(st, key) == 2


def test_staged_addresses_are_in_lakefs_uncommitted_format(tmp_path):
    st = LocalStorage(tmp_path)
    formats.write_staged(st, layout.staged_file("m1"), ["data/s/1"], 1700000000)
    table = pq.read_table(tmp_path / "_lakefs/retention/gc/unified/m1/staged/lakefs-omitted")
    assert table.to_pylist() == [{"physical_address": "data/s/1", "creation_date": 1700000000}]
    assert str(table.schema.field("creation_date").type) == "int64"
    assert formats.read_staged(st, layout.staged_file("m1")) == ["data/s/1"]


def test_sweep_paths_dead_letters_and_done_markers(tmp_path):
    st = LocalStorage(tmp_path)
    sdir = layout.sweep_dir("m1", "manual__2026-01-01T00:00:00+00:00")
    assert sdir == "_lakefs/retention/gc/unified/m1/sweeps/manual__2026-01-01T00_00_00_00_00/"
    part = layout.deleted_dir("m1") + "part-00007.parquet"
    assert layout.done_marker(sdir, part) == sdir + "done/part-00007.json"
    assert layout.dead_letters_file(sdir, part) == sdir + "dead_letters/part-00007.parquet"
    assert layout.sweep_summary_key("m1", "manual__2026-01-01T00:00:00+00:00") == sdir + "summary.json"
    formats.write_dead_letters(
        st,
        layout.dead_letters_file(sdir, part),
        [SimpleNamespace(key="data/x", error_code="AccessDenied", message="no", attempts=8)],
    )
    table = pq.read_table(tmp_path / layout.dead_letters_file(sdir, part))
    assert table.to_pylist() == [{"key": "data/x", "error_code": "AccessDenied", "message": "no", "attempts": 8}]
    assert str(table.schema.field("attempts").type) == "int32"
    marker = layout.done_marker(sdir, part)
    assert formats.read_done_marker(st, marker) is None
    formats.write_done_marker(st, marker, {"keys": 3, "deleted": 2})
    assert json.loads((tmp_path / marker).read_bytes()) == {"keys": 3, "deleted": 2}
    st.put(marker, json.dumps({"keys": 3, "deleted": 3, "missing": 1}).encode())  # a marker of version 0.1
    assert formats.read_done_marker(st, marker) == {"keys": 3, "deleted": 2, "missing": 1, "already_gone": 1}


def test_work_dir_paths():
    run = layout.run_work_dir("/var/gc/", "repo", "scheduled__2026-01-01T00:00:00+00:00")
    assert run == "/var/gc/repo/scheduled__2026-01-01T00_00_00_00_00"
    assert layout.listed_dir(run) == run + "/listed"
    assert layout.listed_dir("s3://b/w/repo/r") == "s3://b/w/repo/r/listed"


def test_mark_summary_reads_what_the_decisions_need(tmp_path):
    st = LocalStorage(tmp_path)
    assert read_mark(st, "m1") is None
    st.put(
        layout.summary_key("m1"),
        json.dumps(
            {
                "run_id": "m1",
                "success": True,
                "start_time": "2026-01-01T00:00:00.000Z",
                "cutoff_time": "2025-12-31T00:00:00.000Z",
                "mode": "mark_only",
                "listed_objects": 10,
                "to_delete": 4,
                "candidates": 5,
            }
        ).encode(),
    )
    m = read_mark(st, "m1")
    assert (m.success, m.mode, m.listed_objects, m.to_delete, m.cutoff_time) == (
        True,
        "mark_only",
        10,
        4,
        "2025-12-31T00:00:00.000Z",
    )
    assert m.started().year == 2026
    # a summary older than delayed confirmation: its list is "candidates"; "success" only when JSON true
    old = MarkSummary.from_doc({"success": "true", "candidates": 7, "start_time": "2026-01-01T00:00:00Z"})
    assert (old.success, old.to_delete, old.listed_objects) == (False, 7, 0)


def test_part_lists_finds_a_value_in_any_row_group_and_skips_by_statistics(tmp_path):
    import pyarrow as pa

    st = LocalStorage(tmp_path)
    key = layout.deleted_dir("m1") + layout.part_name(0)
    (tmp_path / key).parent.mkdir(parents=True)
    pq.write_table(pa.table({"address": [f"data/a/{i:04d}" for i in range(1000)]}), tmp_path / key, row_group_size=100)
    assert pq.ParquetFile(tmp_path / key).num_row_groups == 10
    assert all(formats.part_lists(st, key, f"data/a/{i:04d}") for i in (0, 99, 100, 555, 999))
    assert not any(formats.part_lists(st, key, a) for a in ("data/a/0555x", "data/a/", "data/b/0001", "legacy"))
    formats.write_dead_letters(
        st, "dl.parquet", [SimpleNamespace(key="data/x", error_code="E", message="m", attempts=1)]
    )
    assert formats.part_lists(st, "dl.parquet", "data/x", "key")
    assert not formats.part_lists(st, "dl.parquet", "E", "key")


# What a CLI does: read a part, print, exit. Arrow's dataset scanner (pq.read_table of a Python
# file with filters) let its threads drop the Python file after the interpreter began to exit, and Arrow
# aborted the process, about one exit in two (lakefs-gc explain, exit -6 in CI)
EXITS = """
import sys
import lakefs_gc.cli, lakefs_gc.explain  # what the CLI has loaded when it exits
from lakefs_gc.report import formats, layout
from lakefs_gc.storage import LocalStorage
st = LocalStorage(sys.argv[1])
key = layout.deleted_dir("m1") + layout.part_name(0)
print("answered" if formats.part_lists(st, key, "data/a/0500") else "not found")
"""


def test_a_process_that_read_parts_exits_cleanly_every_time(tmp_path):
    import subprocess
    import sys

    st = LocalStorage(tmp_path)
    formats.write_addresses(
        st, layout.deleted_dir("m1") + layout.part_name(0), [f"data/a/{i:04d}" for i in range(1000)]
    )
    for _ in range(8):  # the abort came about every other exit: 8 clean exits in a row
        r = subprocess.run(
            [sys.executable, "-c", EXITS, str(tmp_path)], capture_output=True, text=True, timeout=120, check=False
        )
        assert (r.returncode, r.stdout.strip()) == (0, "answered"), (r.returncode, r.stderr[-2000:])
