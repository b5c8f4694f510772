"""Where work runs changes nothing it decides (lakefs_gc.engine, lakefs_gc.placement).

The checks that keep live data are written once over the engine; the engine picks the place: the
Airflow task's own process (no Spark), a Spark job's driver, or its executors. Here each check runs
on all three over the same adversarial inputs (protected paths, ``..`` and ``.`` segments, U+2028
and ``\\r`` in keys, missing timestamps, restages of the same size and of the same checksum, keys
carrying lakeFS's link signature), and every row each writes or returns is compared."""

from __future__ import annotations

import dataclasses
import hashlib

import pyarrow as pa
import pytest

from lakefs_gc import placement
from lakefs_gc.contract import PartsDir, RunContext, RunSettings, SlicesResult
from lakefs_gc.engine.local import LocalEngine
from lakefs_gc.engine.spark import SparkEngine
from lakefs_gc.errors import ContractError, SettingsError
from lakefs_gc.gc.decision import compute_candidates
from lakefs_gc.lakefs.graveler import FULL, Entry
from lakefs_gc.listing import slices
from lakefs_gc.placement import PROPERTIES, Placement
from lakefs_gc.report import formats
from lakefs_gc.spark.addresses import read_parts_here, write_parts_here
from lakefs_gc.spark.runtime import StorageRef
from lakefs_gc.storage.native import listed_schema
from lakefs_gc.storage.settings import S3Options
from lakefs_sandbox import graveler_writer

pytestmark = pytest.mark.spark

PLACES = ("task", "driver", "executors")
CUTOFF_MS = 1_000_000
OLD, YOUNG = CUTOFF_MS - 1, CUTOFF_MS + 1
U2028, LINKED = "\u2028", "data/l/linked,c2lnbmF0dXJl"  # LINKED: a key lakeFS handed out signed (getPhysicalAddress)


def md5(b: bytes) -> str:
    return hashlib.md5(b).hexdigest()


# key -> content: what lies in the namespace (each file's size and MD5 follow from it)
CONTENT = {
    "data/a/garbage": b"garbage",
    f"data/a/line{U2028}sep": b"u2028",
    f"data/a/line{U2028}": b"trailing u2028",
    "data/a/cr\r": b"trailing cr",
    "data/a/restaged-same-checksum": b"committed bytes",  # equals the committed entry p/committed
    "data/a/restaged-same-size": b"commiXted bytes",  # its size, another checksum
    "data/a/committed": b"committed bytes",
    "data/a/staged": b"staged",
    "data/a/young": b"young",
    "data/a/no-time": b"no time",
    LINKED: b"linked",
    "legacy-root-object": b"legacy",
}
# listed keys GC may never delete: they reach the listing of a namespace but never a candidate
PROTECTED = [
    "_lakefs/retention/gc/rules.json",
    "dummy",
    "data/a/../escape",
    "data/a/./dot",
    "data//empty",
    "data/a/..",
    "data/",
    "..",
]


def listed_rows() -> list[tuple]:
    """The listing: every object old, but one young and one without a timestamp; protected keys too."""
    modified = {"data/a/young": YOUNG, "data/a/no-time": None}
    return [(k, len(v), modified.get(k, OLD), None) for k, v in CONTENT.items()] + [
        (k, 1, OLD, None) for k in PROTECTED
    ]


@pytest.fixture
def sref(tmp_path) -> StorageRef:
    ref = StorageRef(f"local://{tmp_path}/ns", S3Options(), str(tmp_path))
    st = ref.open()
    for key, data in CONTENT.items():
        st.put(key, data)
    return ref


@pytest.fixture
def places(spark, sref):
    n = 2
    executors = SparkEngine(
        spark,
        sref,
        n,
        Placement(driver_max_addresses=0, driver_check_max=0, driver_read_max_entries=0, driver_scan_bytes=0),
    )
    return {
        "task": LocalEngine(sref, n, Placement(), Placement().in_task_max_keys),
        "driver": SparkEngine(spark, sref, n, Placement()).on_driver(),
        "executors": executors,
    }


def rows(rel) -> list[tuple]:
    """Every row of an engine's relation, sorted: DataFrames collected, Python rows as they are."""
    if hasattr(rel, "collect"):
        rel = [tuple(r) for r in rel.collect()]
    return sorted((r,) if isinstance(r, str) else tuple(r) for r in rel)


def test_the_decision_is_the_same_row_for_row_in_every_place(places, sref, tmp_path):
    st = sref.open()
    folder = str(tmp_path / "work" / "listed")
    listed = listed_rows()
    slices.write_listed_here(
        folder,
        [pa.RecordBatch.from_pylist([dict(zip(listed_schema().names, r)) for r in listed], schema=listed_schema())],
    )
    found = SlicesResult(
        listed_dir=folder, first_slice="", slices_listed=1, slices_skipped=0, listed_objects=len(listed), listed_bytes=0
    )
    _, committed = write_parts_here(iter(["data/a/committed"]), st, "state/committed/", 2)
    formats.write_staged(st, "staged/part-0", [f"local://{tmp_path}/ns/data/a/staged"], 1)
    out = {}
    for place, engine in places.items():
        lst = engine.listed(found)
        cands = compute_candidates(
            engine.rel, lst, engine.committed([committed], lst, None), engine.staged(["staged/part-0"]), CUTOFF_MS
        )
        out[place] = rows(cands), engine.sample_undeletable(cands, 5)
    assert out["task"] == out["driver"] == out["executors"]
    candidates = {r[0] for r in out["task"][0]}
    assert candidates == set(CONTENT) - {"data/a/committed", "data/a/staged", "data/a/young", "data/a/no-time"}
    assert out["task"][1] == []


def identity_dirs(st) -> list[PartsDir]:
    """The committed entries' identities a run read: one at the re-staged path, others that share only a size."""
    formats.write_identities(
        st,
        "state/identities/part-00000.parquet",
        [
            (len(b"committed bytes"), md5(b"committed bytes"), "p/committed"),
            (len(b"u2028"), "0x8DC0FFEE", f"p/etag{U2028}"),  # not an MD5: matched by size alone
            (len(b"linked"), md5(b"other"), "p/linked-size"),
            (999, md5(b"garbage"), "p/other-size"),  # the garbage's MD5 at another size: no match
        ],
    )
    return [PartsDir("state/identities/", 1)]


def test_the_staged_checks_matching_is_the_same_in_every_place(places, sref):
    st = sref.open()
    dirs = identity_dirs(st)
    cands_rows = [(k, len(v), None) for k, v in CONTENT.items()]
    out = {}
    for place, engine in places.items():
        cands = (
            engine.rel.deletable(cands_rows)
            if place != "executors"
            else engine.spark.createDataFrame(cands_rows, "address string, size long, checksum string")
        )
        found = engine.suspicious(cands, engine.identities(dirs).plus([(7, None, "p/since")]), link_flow=True)
        kept = engine.union_addresses(
            engine.among(cands, {"data/a/garbage", "nowhere"}), engine.among(cands, {f"data/a/line{U2028}sep"})
        )
        out[place] = (found, rows(kept), rows(engine.without(cands, {"data/a/garbage"})))
    assert out["task"] == out["driver"] == out["executors"]
    found = out["task"][0]
    # by content: the two 15-byte candidates of the committed MD5 (not the same-size restage of another
    # MD5); by size, where the entry's checksum is no MD5: the 5-byte ones (line<U+2028>sep, young) and
    # the 7-byte ones (garbage, no-time: the entry read since has no checksum)
    assert set(found.paths) == {"p/committed", f"p/etag{U2028}", "p/since"}
    assert found.link_flow == ((LINKED, len(b"linked")),)
    assert found.count == 6
    assert out["task"][1] == [("data/a/garbage",), (f"data/a/line{U2028}sep",)]


def test_the_walk_from_ranges_to_addresses_is_the_same_in_every_place(places, sref, tmp_path):
    st = sref.open()
    entries = [
        (b"a/committed", Entry("data/a/committed", 15, md5(b"committed bytes"))),
        (b"a/cr", Entry("data/a/cr\r", 11, md5(b"trailing cr"))),
        (b"a/line\xe2\x80\xa8", Entry(f"data/a/line{U2028}", 14, md5(b"trailing u2028"))),
        (b"a/full-inside", Entry(f"local://{tmp_path}/ns/data/a/full", 3, "e1", address_type=FULL)),
        (b"a/full-outside", Entry("s3://elsewhere/data/x", 3, "e2", address_type=FULL)),
        (b"a/linked", Entry(LINKED, 6, md5(b"linked"))),
    ]
    keys = []
    for i, chunk in enumerate((entries[:3], entries[3:])):
        info, data = graveler_writer.range_to_bytes(chunk)
        keys.append(f"_lakefs/range-{i}")
        st.put(keys[-1], data)
    out = {}
    for place, engine in places.items():
        count, kept, parts = engine.read_ranges(
            keys, len(keys), len(entries), f"{place}/committed/", f"{place}/identities/"
        )
        identities = sorted(
            tuple(r.values())
            for p in range(parts)
            for r in formats.read_identity_table(st, f"{place}/identities/part-{p:05d}.parquet").to_pylist()
        )
        out[place] = count, sorted(read_parts_here(sref, [kept])), identities
    assert out["task"] == out["driver"] == out["executors"]
    assert out["task"][1] == sorted(["data/a/committed", f"data/a/line{U2028}", "data/a/cr\r", "data/a/full", LINKED])
    assert len(out["task"][2]) == len(entries)  # every entry's identity, those outside the namespace too


def test_the_attributions_classification_is_the_same_in_every_place(places, sref, tmp_path):
    """Every listed object summed by (holder set, fate) alike: kept by a HEAD, only by a tag, staged, in
    this run's deleted/ list, held back, young, or of unknown age (young: no run deletes it)."""
    from lakefs_gc.gc.attribution import DELETED, HELD_BACK, YOUNG

    st = sref.open()
    head, tag, staged_bit = 0b001, 0b010, 0b100
    keys = []
    for i, chunk in enumerate(
        (
            [(b"a/committed", Entry("data/a/committed", 15, "e"))],
            [(b"a/tagged", Entry("data/a/garbage", 7, "e")), (b"a/u2028", Entry(f"data/a/line{U2028}sep", 5, "e"))],
        )
    ):
        _, data = graveler_writer.range_to_bytes(chunk)
        keys.append(f"_lakefs/attr-range-{i}")
        st.put(keys[-1], data)
    ranges = {keys[0]: head, keys[1]: tag}
    staged = {"data/a/staged": staged_bit}
    folder = str(tmp_path / "work" / "listed")
    listed = listed_rows()
    slices.write_listed_here(
        folder,
        [pa.RecordBatch.from_pylist([dict(zip(listed_schema().names, r)) for r in listed], schema=listed_schema())],
    )
    found = SlicesResult(
        listed_dir=folder, first_slice="", slices_listed=1, slices_skipped=0, listed_objects=len(listed), listed_bytes=0
    )
    formats.write_addresses(st, "deleted/part-00000.parquet", ["data/a/garbage", "data/a/cr\r", "data/a/no-time"])
    out = {
        place: engine.space_groups(ranges, staged, found, ["deleted/part-00000.parquet"], CUTOFF_MS, tag)
        for place, engine in places.items()
    }
    assert out["task"] == out["driver"] == out["executors"]
    got = out["task"]
    assert got[(head, None)] == (1, 15)  # data/a/committed
    assert got[(staged_bit, None)] == (1, len(b"staged"))  # staged on a branch
    assert got[(tag, DELETED)] == (1, 7)  # only a tag reads it: collected, as lakeFS does
    assert got[(tag, HELD_BACK)] == (1, 5)  # line<U+2028>sep: only a tag, not in deleted/
    assert got[(0, YOUNG)] == (1, len(b"young"))  # data/a/young alone (no-time is in deleted/)
    assert got[(0, DELETED)][0] == 2  # cr\r and no-time, in deleted/
    assert sum(n for n, _ in got.values()) == len(listed)
    # an empty deleted/ list (a run that marks nothing): the old unreferenced are held back, the
    # object of unknown age young
    empty = {place: engine.space_groups(ranges, staged, found, [], CUTOFF_MS, tag) for place, engine in places.items()}
    assert empty["task"] == empty["driver"] == empty["executors"]
    assert empty["task"][(0, YOUNG)] == (2, len(b"young") + len(b"no time"))


def test_an_input_too_large_for_a_place_is_handed_over_before_anything_is_written(places, sref):
    from lakefs_gc.engine import NeedsSpark

    task = LocalEngine(sref, 2, Placement(in_task_max_keys=2), 2)
    with pytest.raises(NeedsSpark, match="3 range"):
        task.read_ranges(["k1", "k2", "k3"], 3, 3, "x/committed/", "x/identities/")
    with pytest.raises(NeedsSpark, match="do not say"):
        task.read_ranges(["k1"], 1, None, "x/committed/", "x/identities/")
    assert list(sref.open().list("x/", recursive=True)) == []
    with pytest.raises(NeedsSpark, match="5 key"):
        task.admit("key(s) to sweep", 5)
    seen = []
    assert places["executors"].placed("t", 10, lambda e: seen.append(e) or "done") == "done"
    assert seen == [places["executors"]]  # driver_max_addresses 0: always the executors


def test_the_incremental_guard_is_one_body(sref):
    ctx = RunContext(
        repository="r",
        lakefs_endpoint="http://127.0.0.1:1/api/v1",
        storage=None,
        grace_period_seconds=0,
        start_time="",
        cutoff_time="",
        effective_min_age_seconds=0,
        work_dir="",
        airflow_run_id="",
        settings=RunSettings(),
        flow="incremental",
    )
    with pytest.raises(ContractError, match="no base run"):
        ctx.incremental_base()
    assert dataclasses.replace(ctx, flow="clean").incremental_base() is None


@pytest.mark.parametrize(("value", "expected"), [("0", 0), ("5000", 5000), ("-1", None), ("many", None)])
def test_a_spark_property_sets_how_much_is_decided_on_the_driver(spark, value, expected):
    prop = PROPERTIES["driver_max_addresses"]
    spark.conf.set(prop, value)
    try:
        if expected is None:
            with pytest.raises(SettingsError, match=r"spark\.lakefs_gc\.driverMaxAddresses=.*whole number.*remove it"):
                Placement.from_conf(spark.conf.get)
        else:
            assert Placement.from_conf(spark.conf.get).driver_max_addresses == expected
    finally:
        spark.conf.unset(prop)
    assert Placement.from_conf(spark.conf.get) == placement.DEFAULT
