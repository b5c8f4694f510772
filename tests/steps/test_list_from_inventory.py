"""list_slices from a storage inventory (issue 53): whole runs on the emulator over moto (S3
Inventory), Azurite (Azure Blob Inventory) and fake-gcs-server (GCS inventory report), each
inventory written in its provider's layout, CSV or Parquet (S3: ORC too; tests/inventory/builders.py),
from what the bucket or container held at T_inv.

The run from the inventory deletes exactly what a LIST-based run marks on the same namespace, minus
the objects written after T_inv into a slice created before it (absent from the inventory: kept
for a later run); a slice created after T_inv is listed by LIST (the top-up). Every live object is
left in storage. A bad inventory refuses the run with its reason and deletes nothing; with
``inventory_fallback: list`` the run lists instead and its report says why. Both places the step
runs: the Airflow task's own process (a small inventory) and Spark's executors.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import time
import uuid
from datetime import UTC, datetime, timedelta

import lakefs_sdk
import pyarrow.parquet as pq
import pytest

from lakefs_gc.contract import STEP_INPUTS, STEPS, RunSettings, StepInputs, skip_result, skipped
from lakefs_gc.inventory import InventoryRefused
from lakefs_gc.lakefs.client import LakeFSClient
from lakefs_gc.report import layout
from lakefs_gc.report.marks import parquet_parts
from lakefs_gc.report.render import summary_text
from lakefs_gc.report.run_summary import RunSummary
from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY, storage_ref
from lakefs_gc.steps import STEP_FUNCTIONS, run_in_task
from lakefs_gc.steps.prepare_run import prepare_run
from lakefs_gc.storage import open_storage
from lakefs_sandbox.inprocess import run_steps
from tests.conftest import ns_rel, ns_storage
from tests.inventory.builders import azure_inventory_of, gcs_inventory_of, s3_inventory_of

DAY = 86400
CONFIG_ID = "gc-daily"
RULE = "lakefs-gc"  # the Azure inventory rule's name
GCS_CONFIG = "4c3e2a10-8f6b-4d2e-9a71-0b5c6d7e8f90"  # the GCS report configuration's id
# each store's stand-in (its fixture)
STORES = {"s3": "moto_server", "azure": "azurite", "gs": "fake_gcs"}


def _settings(**kw) -> RunSettings:
    return RunSettings(
        **{
            "min_age_seconds": 0,
            "unsafe_min_age_override": True,
            "max_delete_share": 1.0,
            "confirm_after_seconds": 0,
            "prepare_commits_timeout_seconds": 20,
            "flow": "clean",  # an incremental run lists only its new slices, by LIST
            **kw,
        }
    )


class Place:
    """
    A repository on the emulator over a store's stand-in, the inventories' destination, and runs of the GC on it.

    ``store``: the moto server (``s3``), Azurite (``azure``) or fake-gcs-server (``gs``) the
    emulator writes to; the destination is another bucket or container of the same store.
    """

    def __init__(self, emu, store, tmp_path):
        self.emu, self.store, self.tmp = emu, store, tmp_path
        self.kind = emu.blockstore_type
        self.name = f"inv-{uuid.uuid4().hex[:8]}"
        self.bucket = self._bucket(f"src-{uuid.uuid4().hex[:8]}")
        self.dest_bucket = self._bucket(f"inventories-{uuid.uuid4().hex[:8]}")
        self.dest = open_storage(self._root(self.dest_bucket), store.options())
        self.source = open_storage(self._root(self.bucket), store.options())  # the whole bucket
        self.ns = emu.namespace(self.name, bucket=self.bucket)
        self.c = emu.client()
        self.c.repositories_api.create_repository(
            lakefs_sdk.RepositoryCreation(name=self.name, storage_namespace=self.ns, default_branch="main")
        )
        self.c.repositories_api.set_gc_rules(
            self.name, lakefs_sdk.GarbageCollectionRules(default_retention_days=1, branches=[])
        )
        self.env = {
            ENV_LAKEFS_ACCESS_KEY: emu.access_key,
            ENV_LAKEFS_SECRET_KEY: emu.secret_key,
            **store.options().to_env(),
        }
        self.runs = 0

    def _bucket(self, name: str) -> str:
        return self.store.create_bucket(name) if self.kind == "s3" else self.store.create(name)

    def _root(self, bucket: str) -> str:
        return f"s3://{bucket}" if self.kind == "s3" else self.store.namespace(bucket, "")

    def location(self, config_id: str = CONFIG_ID) -> str:
        if self.kind == "s3":
            return f"s3://{self.dest_bucket}/reports/{self.bucket}/{config_id}"
        return self._root(self.dest_bucket) + ("/inventory" if self.kind == "gs" else "")

    def upload(self, path: str, data: bytes, branch: str = "main") -> str:
        stats = self.c.objects_api.upload_object(self.name, branch, path, content=data)
        return ns_rel(self.ns, stats.physical_address)

    def garbage(self, path: str) -> str:
        """An object uploaded then deleted from the branch: unreferenced."""
        address = self.upload(path, path.encode())
        self.c.objects_api.delete_object(self.name, "main", path)
        return address

    def commit(self) -> None:
        self.c.commits_api.commit(self.name, "main", lakefs_sdk.CommitCreation(message="c"))

    def keys(self) -> set[str]:
        return {o.key for o in ns_storage(self.ns, self.store).list("", recursive=True)}

    def inventory(self, taken: datetime, config_id: str = CONFIG_ID, file_format: str = "CSV", **kw) -> int:
        """An inventory of the whole bucket or container as it is now, taken at ``taken``, in its provider's layout; its rows."""
        if self.kind == "azure":
            return azure_inventory_of(
                self.source, self.bucket, self.store.account_url, self.dest, taken, file_format=file_format, **kw
            )
        if self.kind == "gs":
            return gcs_inventory_of(
                self.source, self.bucket, self.dest, taken, config_id=GCS_CONFIG, file_format=file_format, **kw
            )
        prefix = f"reports/{self.bucket}/{config_id}"
        return s3_inventory_of(self.source, self.bucket, self.dest, taken, prefix, file_format=file_format, **kw)

    def run(self, spark, **settings):
        """A whole run (``spark`` None: every Spark step in its task's own process); its results and summary."""
        self.runs += 1
        with LakeFSClient(self.emu.api_url, self.emu.access_key, self.emu.secret_key) as client:
            ctx = prepare_run(
                client,
                self.name,
                _settings(**settings),
                now=datetime.now(UTC) + timedelta(seconds=2),
                airflow_run_id=f"run-{self.runs}",
                work_dir=str(self.tmp / "work"),
                storage_options=self.store.options(),
                parallelism=2,
            )
            results = run_steps(spark, ctx, client, self.env)
        mark = results["mark_uncommitted"].run_id
        st = ns_storage(self.ns, self.store)
        summary = RunSummary.from_doc(json.loads(st.get(layout.summary_key(mark))))
        deleted = set()
        for key in parquet_parts(st, layout.deleted_dir(mark)):
            deleted |= set(pq.read_table(io.BytesIO(st.get(key))).column("address").to_pylist())
        return results, summary, deleted

    def inventory_settings(self, config_id: str = CONFIG_ID, **kw):
        name = {"azure": RULE, "gs": GCS_CONFIG}.get(self.kind, "")
        return {
            "listing_source": "inventory",
            "inventory_location": self.location(config_id),
            "inventory_source_prefix": "",
            "inventory_name": name,
            **kw,
        }


@pytest.fixture
def place(lakefs_emulator_factory, moto_server, tmp_path):
    emu = lakefs_emulator_factory("--grace-period", "3600", s3=moto_server)  # also its link window
    return Place(emu, moto_server, tmp_path)


def _place_on(kind: str, request, tmp_path) -> Place:
    """A :class:`Place` on store ``kind``'s stand-in."""
    store = request.getfixturevalue(STORES[kind])
    factory = request.getfixturevalue("lakefs_emulator_factory")
    on = {"s3": store} if kind == "s3" else {"cloud": store}
    return Place(factory("--grace-period", "3600", **on), store, tmp_path)


def _history(place: Place, file_format: str = "CSV") -> dict[str, set[str]]:
    """
    The history, T_inv, then the writes after it; what each object is.

    Built two days ago by the emulator's clock, so that its slice was created long before T_inv; the
    writes after T_inv go into that slice first (absent from the inventory), then, the clock set to
    now, into a new slice created after T_inv (the top-up lists it).
    """
    place.emu.set_clock(offset=-2 * DAY)
    live = {place.upload("keep.txt", b"keep")}
    place.commit()
    old = {place.upload("over.txt", b"v1")}
    place.commit()
    live.add(place.upload("over.txt", b"v2"))
    place.commit()
    live.add(place.upload("staged.txt", b"staged"))
    old.add(place.garbage("tmp.txt"))
    gone = place.garbage("gone-since.txt")
    time.sleep(0.05)
    t_inv = datetime.now(UTC) - timedelta(seconds=1)
    rows = place.inventory(t_inv, file_format=file_format)
    ns_storage(place.ns, place.store).delete(gone)  # deleted after T_inv: in the inventory, gone from storage
    # after T_inv, into the slice created two days ago: not in the inventory
    late = {place.garbage("late-garbage.txt")}
    live.add(place.upload("late-live.txt", b"late"))
    place.commit()
    # after T_inv, into a slice created after it: the top-up
    place.emu.set_clock(offset=0)
    new = {place.garbage("new-garbage.txt")}
    live.add(place.upload("new-staged.txt", b"new"))
    return {"live": live, "old": old, "gone": {gone}, "late": late, "new": new, "rows": {str(rows)}}


# (store, the inventory's format, where the step runs): S3 Inventory, Azure Blob Inventory, GCS inventory report
RUNS = [
    ("s3", "CSV", "task"),
    ("s3", "CSV", "executors"),
    ("s3", "Parquet", "task"),
    ("s3", "ORC", "task"),
    ("azure", "CSV", "task"),
    ("azure", "Parquet", "executors"),
    ("gs", "CSV", "executors"),
    ("gs", "Parquet", "task"),
]


@pytest.mark.spark
@pytest.mark.parametrize(("kind", "file_format", "where"), RUNS)
def test_a_run_from_an_inventory_deletes_what_listing_deletes_but_what_is_newer_than_it(
    kind, file_format, where, request, spark, tmp_path
):
    place = _place_on(kind, request, tmp_path)
    objects = _history(place, file_format)
    on = None if where == "task" else spark
    # what a LIST-based run marks on the same namespace (mark_only: nothing deleted)
    _, listed_run, by_list = place.run(on, mode="mark_only")
    assert listed_run.listing_source is None  # a run that lists as always says nothing new
    assert objects["old"] | objects["late"] | objects["new"] <= by_list
    assert not by_list & objects["live"]
    before = place.keys()

    results, summary, marked = place.run(on, **place.inventory_settings())
    after = place.keys()
    assert marked == (by_list - objects["late"]) | objects["gone"]  # the gone one: listed, already gone
    assert before - after == by_list - objects["late"]
    assert objects["live"] <= after, "a live object was deleted"
    for address in objects["live"]:  # and still reads as it was written
        assert ns_storage(place.ns, place.store).get(address)
    assert objects["late"] <= after, "an object written after T_inv was deleted"
    assert summary.deleted + summary.already_gone == len(marked)  # a missing key's delete counts as done
    sl = results["list_slices"]
    assert (sl.listing_source, sl.inventory_files, sl.slices_topped_up) == ("inventory", 1, 1)
    assert sl.inventory_rows == int(next(iter(objects["rows"])))
    assert sl.inventory_deferred == summary.inventory_deferred == 0  # all it lists is older than the cutoff
    # the two written into the old slice after T_inv are not listed; the one gone since is
    assert sl.listed_objects == listed_run.listed_objects - 2 + 1
    assert summary.listing_source == "inventory"
    # issue 54: its manifest and data file read, counted as such (on executors too), beside the top-up's LIST
    read = {(c.store, c.kind): c.count for c in sl.requests}
    assert read[(kind, "INVENTORY")] >= 2, sl.requests
    assert read[(kind, "LIST")] >= 1, sl.requests
    assert not any(c.kind == "INVENTORY" for c in listed_run.requests or ()), listed_run.requests
    assert summary.inventory_id.startswith(place.location() + "/")
    assert summary.inventory_id.endswith("manifest.json")
    assert 0 <= summary.inventory_age_seconds < 600
    text = summary_text(summary)
    assert f"listing: from the inventory {place.location()}/" in text
    assert "1 slice created after it listed by LIST; " in text
    assert "objects written after it, are left for a later run" in text


def _two_objects(place: Place) -> tuple[str, str]:
    live = place.upload("keep.txt", b"keep")
    place.commit()
    return live, place.garbage("tmp.txt")


@pytest.mark.parametrize("kind", ["s3", "gs"])
def test_a_data_file_of_no_rows_is_read_as_none(kind, request, tmp_path):
    """
    A data file of no rows beside the inventory's others: S3's gzip of nothing, a GCS shard of a
    report without header rows (0 bytes). Arrow's CSV reader refuses an empty file; the run reads it
    as no rows and deletes what a listing would.
    """
    place = _place_on(kind, request, tmp_path)
    place.emu.set_clock(offset=-2 * DAY)  # the slice is the inventory's, not the top-up's
    live, garbage = _two_objects(place)
    empty = gzip.compress(b"") if kind == "s3" else b""
    rows = place.inventory(datetime.now(UTC) - timedelta(seconds=1), more_files=(empty,))
    results, _, marked = place.run(None, **place.inventory_settings())
    sl = results["list_slices"]
    assert (sl.inventory_files, sl.inventory_rows, sl.slices_topped_up) == (2, rows, 0)
    assert marked == {garbage}
    assert garbage not in place.keys()
    assert live in place.keys()


# each bad inventory, how it is made bad (``Place.inventory``'s arguments, or after it is written), and the reason
BAD = {
    "stale": ({"taken": timedelta(days=9)}, r"is 9\.0 days old, more than max_age \(8 days\)"),
    "partial": ({"lose_data": True}, r"is missing: the inventory is partial or its files were removed"),
    "wrong checksum": ({"checksum": "0" * 32}, r"its checksum file says '0{32}' but the manifest's MD5 is"),
    "missing field": (
        {"schema": "Bucket, Key, Size, ETag, StorageClass"},
        r"its schema lacks LastModifiedDate, which the GC needs",
    ),
    "other bucket": (
        {"source_bucket": "another-bucket"},
        r"it lists bucket 'another-bucket', not the namespace's bucket",
    ),
}


def _bad_inventory(place: Place, case: str) -> str:
    """Write inventory ``case`` under a configuration of its own; return its id."""
    how = dict(BAD[case][0])
    config_id = case.replace(" ", "-")
    taken = datetime.now(UTC) - how.pop("taken", timedelta(seconds=1))
    lose = how.pop("lose_data", False)
    place.inventory(taken, config_id, **how)
    if lose:
        [data] = [o.key for o in place.dest.list(f"reports/{place.bucket}/{config_id}/data/")]
        place.dest.delete(data)
    return config_id


def test_each_bad_inventory_refuses_the_run_with_its_reason_deleting_nothing(place):
    live, garbage = _two_objects(place)
    before = place.keys()
    for case, (_, reason) in BAD.items():
        config_id = _bad_inventory(place, case)
        with pytest.raises(InventoryRefused, match=rf"no usable S3 Inventory for {place.ns} .*{reason}") as e:
            place.run(None, **place.inventory_settings(config_id))
        assert "\n" not in str(e.value), f"{case}: the reason is one line"
        assert before <= place.keys(), f"{case}: a refused run deleted something"
    assert {live, garbage} <= place.keys()


def test_fallback_list_lists_instead_and_says_why(place):
    live, garbage = _two_objects(place)
    config_id = _bad_inventory(place, "stale")
    results, summary, marked = place.run(None, **place.inventory_settings(config_id, inventory_fallback="list"))
    assert marked == {garbage}
    assert garbage not in place.keys()
    assert live in place.keys()
    sl = results["list_slices"]
    assert (sl.listing_source, sl.inventory_id) == ("list", None)
    assert re.search(BAD["stale"][1], sl.listing_fallback)
    assert summary.listing_source == "list"
    assert summary.listing_fallback == sl.listing_fallback
    assert "listing: by LIST (the inventory was not used: no usable S3 Inventory for " in summary_text(summary)


def _lockstep(place: Place, settings: list[dict], between) -> list[dict]:
    """Runs of ``settings`` step by step side by side (each in its task's own process); ``between(step)`` before each step."""
    with LakeFSClient(place.emu.api_url, place.emu.access_key, place.emu.secret_key) as client:
        ctxs = []
        for i, kw in enumerate(settings):
            ctxs.append(
                prepare_run(
                    client,
                    place.name,
                    _settings(**kw),
                    now=datetime.now(UTC) + timedelta(seconds=2),
                    airflow_run_id=f"lockstep-{i}",
                    work_dir=str(place.tmp / "work"),
                    storage_options=place.store.options(),
                    parallelism=2,
                )
            )
        results: list[dict] = [{} for _ in ctxs]
        for step in STEPS[1:]:
            between(step)
            for ctx, res in zip(ctxs, results):
                st = storage_ref(ctx, place.env).open()
                inputs = StepInputs(ctx, {k: res.get(k) for k in STEP_INPUTS[step]})
                if skipped(step, ctx.mode):
                    res[step] = skip_result(step, ctx.mode)
                elif step == "mark_uncommitted":
                    res[step] = STEP_FUNCTIONS[step](client, ctx, st)
                elif step == "save_report":
                    res[step] = STEP_FUNCTIONS[step](st, inputs)
                else:
                    res[step] = run_in_task(step, inputs, place.env, 10_000)
                    assert res[step] is not None, step
    return results


def _marked(place: Place, mark: str) -> set[str]:
    st = ns_storage(place.ns, place.store)
    return {
        a
        for key in parquet_parts(st, layout.deleted_dir(mark))
        for a in pq.read_table(io.BytesIO(st.get(key))).column("address").to_pylist()
    }


def test_interleavings_keep_what_a_listing_keeps(place):
    """
    A run listing (mark_only) and a run from the inventory (mark_and_sweep) side by side, on objects
    all written before T_inv: a committed identity staged again on another branch (lakeFS's mark
    leaves it out), an object staged at the mark and committed before the committed listing, an
    object written through the link flow before T_inv and linked after the mark, then committed
    before the committed listing. The inventory run marks what the listing run marks, and every
    live object is left in storage. (The emulator's clock stays two days back: the slice is older
    than T_inv, and the link is within lakeFS's link window of its address. On lakeFS itself:
    tests/real_lakefs/test_inventory.py.)
    """
    place.emu.set_clock(offset=-2 * DAY)
    interleavings(place)


def interleavings(place: Place, before_t_inv=None) -> None:
    """The interleavings' history, T_inv (``before_t_inv()`` just before it), the two runs, and what they must do."""
    keep = place.upload("keep.txt", b"same")
    place.commit()
    place.c.branches_api.create_branch(place.name, lakefs_sdk.BranchCreation(name="dev", source="main"))
    restaged = place.upload("keep.txt", b"same", branch="dev")  # the committed identity, staged again
    staged = place.upload("staged.txt", b"staged")
    loc = place.c.staging_api.get_physical_address(place.name, "main", "linked.txt")
    linked = ns_rel(place.ns, loc.physical_address)
    ns_storage(place.ns, place.store).put(linked, b"linked")  # written before T_inv, linked after the mark
    garbage = place.garbage("tmp.txt")
    if before_t_inv is not None:
        before_t_inv()
    place.inventory(datetime.now(UTC) - timedelta(milliseconds=500))

    def between(step: str) -> None:
        if step == "list_committed":  # after both marks, before both committed listings
            place.c.staging_api.link_physical_address(
                place.name,
                "main",
                "linked.txt",
                lakefs_sdk.StagingMetadata(
                    staging=loc, checksum=hashlib.md5(b"linked").hexdigest(), size_bytes=len(b"linked")
                ),
            )
            place.commit()

    listing, from_inventory = _lockstep(place, [{"mode": "mark_only"}, place.inventory_settings()], between)
    sl = from_inventory["list_slices"]
    assert (sl.listing_source, sl.slices_topped_up) == ("inventory", 0)  # every object from the inventory
    assert sl.listed_objects == listing["list_slices"].listed_objects
    by_list = _marked(place, listing["mark_uncommitted"].run_id)
    by_inventory = _marked(place, from_inventory["mark_uncommitted"].run_id)
    assert by_inventory == by_list == {garbage}
    left = place.keys()
    assert {keep, restaged, staged, linked} <= left, "a live object was deleted"
    assert garbage not in left
    assert from_inventory["compute_candidates"].staged_kept >= 1  # the identity staged again: the staged check
