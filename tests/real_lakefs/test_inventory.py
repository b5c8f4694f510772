"""A run from an S3 Inventory on lakeFS 1.84 itself (S3 blockstore on moto), judged against a run
that lists: a random history (branches, commits, merges, deletes, link-flow entries, committed
identities staged again), an inventory of the bucket taken at T_inv, more writes after it. The run
from the inventory deletes what the listing run marks, minus what was written after T_inv, and
every address lakeFS reads (each branch, staged or committed) is left in storage.

lakeFS starts a slice once an hour per process, so the history's slice is seconds old at T_inv:
the margin that hands a slice created less than 10 minutes before T_inv to LIST is set to 0 here,
so that the inventory, not the top-up, lists it (tests/steps/test_list_from_inventory.py has the
top-up, on the emulator's clock).
"""

from __future__ import annotations

import io
import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pyarrow.parquet as pq
import pytest

from lakefs_gc.listing import inventory as inventory_listing
from lakefs_gc.report import layout
from lakefs_gc.report.marks import parquet_parts
from lakefs_gc.storage import open_storage, parse_namespace
from tests.conftest import ns_rel, ns_storage
from tests.inventory.builders import s3_inventory_of
from tests.runs.test_random_histories import SETTINGS, Place
from tests.support import history

pytestmark = pytest.mark.spark
SEED = 5303


def _marked(storage, mark: str) -> set[str]:
    return {
        a
        for key in parquet_parts(storage, layout.deleted_dir(mark))
        for a in pq.read_table(io.BytesIO(storage.get(key))).column("address").to_pylist()
    }


def _read_by_lakefs(client, name: str, ns: str) -> set[str]:
    """Every address a branch of ``name`` reads now, staged or committed (lakeFS's API only)."""
    out = set()
    for b in client.branches_api.list_branches(name, amount=1000).results:
        for ref in (b.id, b.commit_id):
            after = ""
            while True:
                page = client.objects_api.list_objects(name, ref, after=after, amount=1000)
                out |= {ns_rel(ns, o.physical_address) for o in page.results}
                if not page.pagination.has_more:
                    break
                after = page.pagination.next_offset
    return out


def test_a_run_from_an_s3_inventory_on_lakefs_itself(real_lakefs, moto_server, spark, tmp_path, monkeypatch):
    monkeypatch.setattr(inventory_listing, "TOP_UP_MARGIN", timedelta(0))
    server = real_lakefs("s3")
    bucket = moto_server.create_bucket(f"inv-{uuid.uuid4().hex[:8]}")
    dest_bucket = moto_server.create_bucket(f"inventories-{uuid.uuid4().hex[:8]}")
    name = f"inv-{uuid.uuid4().hex[:6]}"
    ns = server.namespace(name, bucket)
    roots = parse_namespace(ns).roots()
    storage = ns_storage(ns, moto_server)
    client = server.client()
    history.create(client, name, ns)
    h = history.apply(client, name, ns, roots, history.ops(SEED, 60), storage=storage, same_identity=True)
    history.set_rules(client, name, [h])
    time.sleep(1.2)  # T_inv after the slice's second
    prefix = f"reports/{bucket}/gc-daily"
    dest = open_storage(f"s3://{dest_bucket}", moto_server.s3_options())
    source = open_storage(f"s3://{bucket}", moto_server.s3_options())
    rows = s3_inventory_of(source, bucket, dest, datetime.now(UTC) - timedelta(milliseconds=500), prefix)
    # after T_inv: garbage and a live object in the same slice, absent from the inventory
    late = ns_rel(ns, client.objects_api.upload_object(name, "main", "late/garbage", content=b"g").physical_address)
    client.objects_api.delete_object(name, "main", "late/garbage")
    client.objects_api.upload_object(name, "main", "late/live", content=b"l")

    place = Place(server, server.store)
    now = datetime.now(UTC) + timedelta(seconds=2)
    listing = replace(SETTINGS, mode="mark_only", flow="clean")
    _, by_list = place.collect(name, spark, tmp_path / "work", now, listing, run_id="inv-list")
    listed = _marked(storage, by_list["mark_uncommitted"].run_id)
    assert late in listed
    before = {o.key for o in storage.list("", recursive=True)}
    settings = replace(
        SETTINGS,
        flow="clean",
        listing_source="inventory",
        inventory_location=f"s3://{dest_bucket}/{prefix}",
        inventory_source_prefix="",
    )
    _, from_inv = place.collect(name, spark, tmp_path / "work", now, settings, run_id="inv-inventory")
    sl = from_inv["list_slices"]
    assert sl.listing_source == "inventory"
    assert sl.slices_topped_up == 0
    assert sl.inventory_rows == rows  # the bucket as it was at T_inv
    marked = _marked(storage, from_inv["mark_uncommitted"].run_id)
    after = {o.key for o in storage.list("", recursive=True)}
    assert marked == listed - {late}
    assert marked, "the history left no garbage: the comparison says nothing"
    assert before - after == marked & before
    assert late in after
    assert _read_by_lakefs(client, name, ns) <= after, "an address lakeFS reads was deleted"


def test_the_interleavings_on_lakefs_itself(real_lakefs, moto_server, tmp_path, monkeypatch):
    """tests/steps/test_list_from_inventory.py's interleavings (a committed identity staged again, an
    object staged at the mark and committed before the committed listing, a link-flow object written
    before T_inv, linked after the mark and committed), with lakeFS 1.84 judging: the run from the
    inventory marks what the listing run marks, and every live object is left."""
    from tests.steps.test_list_from_inventory import Place as InventoryPlace, interleavings

    monkeypatch.setattr(inventory_listing, "TOP_UP_MARGIN", timedelta(0))
    interleavings(InventoryPlace(real_lakefs("s3"), moto_server, tmp_path), before_t_inv=lambda: time.sleep(1.2))
