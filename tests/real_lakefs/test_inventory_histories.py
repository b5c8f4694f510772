"""Runs from an inventory over random histories on lakeFS 1.84 itself, on every blockstore with an
inventory (S3 on moto, Azure Blob on Azurite, GCS on fake-gcs-server).

The same property as ``tests/runs/test_inventory_histories.py`` (that module's docstring), with
lakeFS itself writing the histories: an inventory taken in the provider's layout (CSV or Parquet)
with every history paused at a random step; then the run from it marks what a LIST-based run on
the same state marks, minus the objects written after T_inv into a slice that held objects at
T_inv; its sweep deletes what it marks, and every object lakeFS's API says to keep is still in
storage and reads back. lakeFS starts a slice once an hour per process, so the writes after T_inv
mostly land in the slice of T_inv (deferred); a slice created after T_inv (the hour rolled over)
is listed by LIST, and the property covers it the same way.

    LAKEFS_GC_REAL_INVENTORY_HISTORIES=20 .venv/bin/python -m pytest tests/real_lakefs/test_inventory_histories.py -q -s
    LAKEFS_GC_INVENTORY_KINDS=s3 ...  # some blockstores only
"""

from __future__ import annotations

import os
from datetime import timedelta

import pytest

from lakefs_gc.listing import inventory as inventory_listing
from tests.runs.test_inventory_histories import KINDS, SEED_BASE, judge_stores, report, store_on
from tests.runs.test_random_histories import Place

pytestmark = pytest.mark.spark
HISTORIES = int(os.environ.get("LAKEFS_GC_REAL_INVENTORY_HISTORIES", "10"))  # per blockstore


def test_runs_from_an_inventory_on_random_histories_on_lakefs_itself(real_lakefs, spark, tmp_path, monkeypatch):
    # a slice created less than 10 minutes before T_inv is the inventory's here: the histories take seconds
    monkeypatch.setattr(inventory_listing, "TOP_UP_MARGIN", timedelta(0))
    stores = []
    for kind in KINDS:
        server = real_lakefs(kind)
        stores.append(store_on(Place(server, server.store, f"real-inv-histories-{kind}")))
    judged = judge_stores(stores, spark, tmp_path, HISTORIES, SEED_BASE + 10_000)  # other seeds than the emulator's
    report(stores, judged, "on lakeFS 1.84 itself")
    if HISTORIES >= 10:
        done = [j for js in judged for j in js]
        assert sum(j.marked for j in done), "no garbage from before T_inv: the run from the inventory deleted nothing"
        assert sum(j.deferred_garbage for j in done), "no garbage written after T_inv: nothing was deferred"
