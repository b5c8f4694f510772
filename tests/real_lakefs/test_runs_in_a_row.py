"""The incremental flow over runs in a row on lakeFS itself, on every blockstore: the same sequence
as ``tests/runs/test_random_histories.py``'s (clean, incremental, incremental, clean, ...; new histories
and churn between runs: staged entries later committed, reset or deleted), each run judged by the
API-only oracle: no run loses a live object, no garbage is left after a clean run, the incremental
runs collect.

What cannot be tested here as on the emulator: lakeFS rolls its ``data/`` slices over hourly (or
after a slice's object count, ``pkg/upload/path_provider.go``, not configurable), so every run of
the sequence writes into one slice and no incremental run leaves an old slice unlisted; the
emulator's test moves slices every second to cover that."""

from __future__ import annotations

import uuid

import pytest

from tests.runs.test_random_histories import Place, runs_in_a_row

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("kind", ["local", "s3", "azure", "gs"])
def test_runs_in_a_row_on_lakefs_itself(kind, real_lakefs, moto_server, spark, tmp_path):
    server = real_lakefs(kind)
    bucket = ""
    if kind == "s3":
        bucket = moto_server.create_bucket(f"runs-{uuid.uuid4().hex[:8]}")
        moto_server.create_bucket(f"{bucket}-outside")
    elif kind in ("azure", "gs"):
        bucket = "runs-in-a-row"
    totals = runs_in_a_row(Place(server, server.store, bucket), spark, tmp_path)
    assert totals["incremental_runs"]
    assert totals["incremental_deleted"]
