"""``python -m bench inventory`` at tiny sizes (every step in its task's own process, no Spark): its code
path, and that its figures and checks come out in the form docs/benchmarks.md quotes. No timing is judged."""

from __future__ import annotations

import re

from bench import inventory_bench


def test_the_rows_bench_reads_both_formats_at_a_tenth_and_at_n(capsys):
    assert inventory_bench.main(["--rows", "3000"]) == 0
    out = capsys.readouterr().out
    table = out[out.index("Reading an S3 Inventory alone") :]
    found = re.findall(r"^  (CSV|Parquet) +([\d,]+) +1 .* ([\d,]+) +[\d]+ / +\d+ / +\d+ +in the task$", table, re.M)
    # every row read; 9 in 10 under the namespace's data/ kept
    assert found == [
        ("CSV", "300", "270"),
        ("Parquet", "300", "270"),
        ("CSV", "3,000", "2,700"),
        ("Parquet", "3,000", "2,700"),
    ], table


def test_the_objects_bench_lists_by_list_and_from_both_inventories_and_marks_the_same(capsys):
    status = inventory_bench.main(["--objects", "300", "--slices", "3", "--garbage", "0.34"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "S3 Inventory, CSV: " in out
    assert "S3 Inventory, Parquet: " in out
    listed = re.search(r"^  objects listed +([\d,]+) +([\d,]+) +([\d,]+)$", out, re.M)
    assert listed is not None, out
    assert listed.groups() == ("300", "300", "300"), out
    assert re.search(r"^  slices topped up +- +0 +0$", out, re.M), out  # every slice from the inventory
    assert re.search(r"^  deleted +- +- +100$", out, re.M), out
    for line in ("list_slices from the CSV inventory", "list_slices from the Parquet inventory"):
        assert re.search(rf"^  {line} +[\d.]+ s +<= 30 s +n/a below 10,000,000 objects$", out, re.M), out
    assert re.search(r"^  the clean run from the Parquet inventory +[\d.]+ s +<= 400 s", out, re.M), out
    assert "check: the three runs mark the same objects (100 by LIST, 100 from CSV, 100 from Parquet" in out
    assert "0 of 200 referenced objects lost, 0 garbage left" in out


def test_the_step_bench_runs_list_slices_alone_from_both_inventories_of_n_rows(capsys):
    assert inventory_bench.main(["--step-rows", "3000"]) == 0
    out = capsys.readouterr().out
    assert "a real repository of 400 objects in 4 slices" in out, out
    assert "The made-up rows name objects that are NOT in the bucket" in out, out
    held = re.search(r"the bucket holds ([\d,]+) real objects", out)  # the namespace's, lakeFS's own, the warm-up's
    assert held is not None, out
    real = int(held.group(1).replace(",", ""))
    made_up = 3000 - real
    kept = 400 + made_up - made_up // 10  # the namespace's 400, and 9 in 10 made-up rows under its data/
    rows = re.findall(
        r"^  (CSV|Parquet) +[\d.]+ +([\d,]+) +([\d,]+) +(\d+) +(\d+) +[\d.]+ +\d+ / +\d+ / +\d+$", out, re.M
    )
    # every row read, exactly the namespace's kept; none deferred, no slice topped up
    assert rows == [("CSV", "3,000", f"{kept:,}", "0", "0"), ("Parquet", "3,000", f"{kept:,}", "0", "0")], out
    for fmt in ("CSV", "Parquet"):
        assert re.search(
            rf"^  list_slices from the {fmt} inventory +[\d.]+ s +<= 30 s +n/a below 10,000,000 rows$", out, re.M
        ), out
    assert "list_slices by LIST at 10,000,000 objects on local disk 204.6 s" in out
    assert (
        f"check: every run read all 3,000 rows and kept exactly the namespace's {kept:,} (its 400 real objects among them: 400, 400 found"
        in out
    )
