"""What a sweep frees on the bill (issue 54): freed now, freed on a date, still billed, against what
the store then holds, listed with its versions.

S3 (a moto server) and ``local://`` run the delete step itself, in the task's process
(``run_in_task``), over a mark written by hand in lakeFS's layout, as ``test_restore.py`` does; the
report is then built and read as a person reads it. moto keeps versions and delete markers and
stores lifecycle rules (it never applies them), so the store holds, after the sweep, exactly what
the figures say is billed.

Azurite and fake-gcs-server model less, and each test says what it takes from where:

- Azurite answers the blob soft delete policy (set and read through azure-storage-blob) but
  deletes for good and has no blob versioning (Azure/Azurite#417, #2383): the store then holds
  nothing; the figure is the policy's, read through the library. Versioning is read from version
  ids in a listing, served by a small HTTP stub answering as the service documents.
- fake-gcs-server keeps a bucket's versioning flag, but no lifecycle rules and no soft delete
  policy, and lists no noncurrent generation after a delete: without versioning the store is
  checked; with versioning, lifecycle and soft delete the bucket's metadata comes from a stub and
  is read through google-cloud-storage.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, time, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakefs_gc.contract import (
    FREED_LATER,
    FREED_NOW,
    STILL_BILLED,
    CandidatesResult,
    FreedOn,
    SlicesResult,
    StepInputs,
    UncommittedResult,
)
from lakefs_gc.placement import DEFAULT
from lakefs_gc.report import layout
from lakefs_gc.report.figures import run_figures
from lakefs_gc.report.run_summary import RunSummary
from lakefs_gc.report.summary import build_summary, summary_text
from lakefs_gc.steps import run_in_task
from lakefs_gc.storage import AzureOptions, GCSOptions, LocalStorage, open_storage
from lakefs_gc.storage.settings import ENV_ACCESS_KEY, ENV_SECRET_KEY
from lakefs_gc.sweeping.deleter import DeletePolicy
from lakefs_gc.sweeping.parts import sweep_part
from lakefs_gc.timestamps import iso
from tests.support.contract import make_context
from tests.sweeping.test_restore_clouds import Stub

MARK = "ft0000000000000000bl"


def _objects() -> dict[str, bytes]:
    return {f"data/s{i % 2}/obj{i}": b"x" * (100 * (i + 1)) for i in range(6)}


def _mark(st, keys: list[str]) -> None:
    buf = io.BytesIO()
    pq.write_table(pa.table({"address": pa.array(keys, pa.string())}), buf)
    st.put(layout.deleted_dir(MARK) + layout.part_name(0), buf.getvalue())
    start = iso(datetime.now(UTC) - timedelta(minutes=5))
    st.put(layout.summary_key(MARK), json.dumps({"run_id": MARK, "success": True, "start_time": start}).encode())


def _run(ns: str, work, swept_bytes: int, s3=None, local_root=None, **settings):
    """Sweep the mark as a run does; return (the delete step's result, the run's summary)."""
    ctx = make_context(
        ns,
        work_dir=str(work),
        local_root=local_root,
        s3_endpoint=s3.endpoint_url if s3 else None,
        s3_region="us-east-1",
        max_delete_share=1.0,
        **settings,
    )
    results = {
        "mark_uncommitted": UncommittedResult(run_id=MARK, locations=(), pages=1),
        "list_slices": SlicesResult(
            listed_dir="", first_slice="", slices_listed=0, slices_skipped=0, listed_objects=1000, listed_bytes=0
        ),
        "compute_candidates": CandidatesResult(
            report_dir="",
            uncommitted_files=0,
            candidates=4,
            candidate_bytes=swept_bytes,
            to_delete=4,
            to_delete_bytes=swept_bytes,
            held_back=0,
            confirm_after_seconds=0,
        ),
    }
    env = {ENV_ACCESS_KEY: s3.access_key, ENV_SECRET_KEY: s3.secret_key} if s3 else {}
    res = run_in_task("delete", StepInputs(ctx, results), env, DEFAULT.in_task_max_keys)
    assert res is not None
    assert not res.incomplete
    summary = RunSummary.from_doc(build_summary(StepInputs(ctx, {**results, "delete": res})).to_doc())
    return res, summary


def _next_midnight_after(t: datetime, days: int) -> set[str]:
    """S3's date for a version made noncurrent at ``t`` (or a second later: the sweep's own clock)."""
    return {
        iso(datetime.combine((u + timedelta(days=days)).date() + timedelta(days=1), time(0), tzinfo=UTC))
        for u in (t, t + timedelta(seconds=60))
    }


@pytest.mark.parametrize("case", ["rule", "no-rule", "unversioned"])
def test_s3_figures_equal_what_the_bucket_then_holds(moto_server, tmp_path, case):
    bucket = moto_server.create_bucket(f"bill-{case}")
    client = moto_server.client()
    if case != "unversioned":
        client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    if case == "rule":
        expire = {"NoncurrentVersionExpiration": {"NoncurrentDays": 30}}
        rules = [
            {"ID": "ns", "Status": "Enabled", "Filter": {"Prefix": "repo/"}, **expire},
            {
                "ID": "tagged",
                "Status": "Enabled",
                "Filter": {"Tag": {"Key": "k", "Value": "v"}},
                **{"NoncurrentVersionExpiration": {"NoncurrentDays": 1}},
            },
            {
                "ID": "off",
                "Status": "Disabled",
                "Filter": {"Prefix": ""},
                **{"NoncurrentVersionExpiration": {"NoncurrentDays": 2}},
            },
            {
                "ID": "narrow",
                "Status": "Enabled",
                "Filter": {"Prefix": "repo/data/s0/"},
                **{"NoncurrentVersionExpiration": {"NoncurrentDays": 3}},
            },
        ]
        client.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": rules})
    st = open_storage(f"s3://{bucket}/repo", moto_server.s3_options())
    objs = _objects()
    for k, v in objs.items():
        st.put(k, v)
    st.put("data/s1/obj1", b"an older version, noncurrent before the sweep" * 3)  # obj1 has two versions
    st.put("data/s1/obj1", objs["data/s1/obj1"])
    swept = sorted(objs)[:4]
    _mark(st, swept)
    swept_bytes = sum(len(objs[k]) for k in swept)
    before = datetime.now(UTC)
    res, summary = _run(f"s3://{bucket}/repo", tmp_path / "work", swept_bytes, s3=moto_server)
    assert res.counts.deleted == 4

    # what the bucket holds now, with its versions
    pages = client.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix="repo/data/")
    versions, markers = [], []
    for page in pages:
        versions += page.get("Versions", [])
        markers += page.get("DeleteMarkers", [])
    full = {f"repo/{k}": k for k in swept}
    noncurrent_now = {v["Key"]: v for v in versions if v["Key"] in full and v["IsLatest"] is False}
    left = {full[v["Key"]] for v in versions if v["Key"] in full}
    gone_bytes = sum(len(objs[k]) for k in swept if k not in left)
    # the sweep's own noncurrent versions (the version each delete hid), not the older one of obj1
    hid = {k: next(v for v in versions if v["Key"] == k)["Size"] for k in noncurrent_now}  # S3 lists newest first
    billed_by_store = sum(hid.values())

    later = sum(x.bytes for x in res.freed_later)
    assert res.freed_now_bytes == gone_bytes
    assert later + res.still_billed_bytes == billed_by_store
    assert res.freed_now_bytes + later + res.still_billed_bytes == summary.reclaimed_bytes == swept_bytes
    if case == "unversioned":
        assert (res.freeing.when, gone_bytes, billed_by_store, markers) == (FREED_NOW, swept_bytes, 0, [])
        assert "bill:" not in summary_text(summary)
    else:
        assert gone_bytes == 0
        assert billed_by_store == swept_bytes
        assert {m["Key"] for m in markers} == set(full)  # a delete marker each: no object bytes
        assert "delete marker" in res.freeing.detail
    if case == "rule":
        [freed] = res.freed_later
        assert res.freeing.when == FREED_LATER
        assert freed.on in _next_midnight_after(before, 30)
        assert res.still_billed_bytes == 0
        for why in ("rule tagged: it has a tag condition", "rule off is disabled", "rule narrow's prefix"):
            assert why in res.freeing.detail
    if case == "no-rule":
        assert (res.freeing.when, res.freed_later, res.still_billed_bytes) == (STILL_BILLED, (), swept_bytes)
        first = summary_text(summary).splitlines()[:5]
        assert any(ln.startswith("bill: deletes on this store free nothing until someone acts") for ln in first), first

    # the report, the metrics: beside "reclaimed", never instead of it
    rows = dict(line.split(": ", 1) for line in summary_text(summary).splitlines())
    assert rows["reclaimed"].startswith(f"{swept_bytes / 1024:.1f} KiB")
    assert rows["freed"].startswith("freed now ")
    figures = run_figures(summary)
    assert figures["bytes_reclaimed"] == swept_bytes
    assert figures["bytes_freed_now"] + figures["bytes_freed_later"] + figures["bytes_still_billed"] == swept_bytes


def test_a_dry_run_frees_nothing_and_says_what_a_delete_would(moto_server, tmp_path):
    bucket = moto_server.create_bucket("bill-dry")
    st = open_storage(f"s3://{bucket}/repo", moto_server.s3_options())
    objs = _objects()
    for k, v in objs.items():
        st.put(k, v)
    _mark(st, sorted(objs))
    res, summary = _run(f"s3://{bucket}/repo", tmp_path / "work", 2100, s3=moto_server, dry_run=True)
    assert {o.key for o in st.list("data/")} == set(objs)
    assert (res.freed_now_bytes, res.freed_later, res.still_billed_bytes) == (0, (), 0)
    assert res.freeing.when == FREED_NOW
    assert "freed: nothing (dry run); a delete here frees its bytes now" in summary_text(summary)


@pytest.mark.parametrize("days", [0, 3])
def test_local_frees_now_or_when_a_sweep_purges_the_ended_quarantine(tmp_path, days):
    root = tmp_path / "blockstore"
    st = LocalStorage(root / "repo")
    st.uri = "local://repo"
    objs = _objects()
    for k, v in objs.items():
        st.put(k, v)
    _mark(st, sorted(objs))
    total = sum(map(len, objs.values()))
    res, _ = _run("local://repo", tmp_path / "work", total, local_root=str(root), quarantine_days=days)
    held = sum(o.size for o in st.list(layout.sweeps_dir(MARK)) if "/quarantine/" in o.key)
    assert not list(st.list("data/"))
    if days:
        assert res.freed_later == (FreedOn(res.restorable.until, total),)
        assert (res.freed_now_bytes, held) == (0, total)
    else:
        assert (res.freed_now_bytes, res.freed_later, res.still_billed_bytes, held) == (total, (), 0, 0)


def _sweep_directly(st, keys: list[str]) -> None:
    """The sweep's own part sweeper (the delete step's work for one part), on a store the run harness does not open."""
    _mark(st, keys)
    sweep_part(st, layout.deleted_dir(MARK) + layout.part_name(0), layout.sweep_dir(MARK, "s1"), DeletePolicy())


@pytest.mark.parametrize("soft_days", [0, 7])
def test_azurite_soft_delete_policy_read_through_the_library(azurite, soft_days):
    """Azurite keeps the policy (set here through azure-storage-blob) but deletes for good: with soft
    delete on, the figure is the policy's; with it off, the store holds nothing of the keys."""
    from azure.storage.blob import RetentionPolicy

    from lakefs_gc.storage.azure import make_service_client

    container = azurite.create(f"bill{soft_days}")
    make_service_client(azurite.options()).set_service_properties(
        delete_retention_policy=RetentionPolicy(enabled=bool(soft_days), days=soft_days or None)
    )
    st = open_storage(azurite.namespace(container, "repo"), azurite.options())
    objs = _objects()
    for k, v in objs.items():
        st.put(k, v)
    now = datetime.now(UTC)
    _sweep_directly(st, sorted(objs))
    f = st.freeing(now)
    total = sum(map(len, objs.values()))
    listed = list(st.client.list_blobs(name_starts_with="repo/data/", include=["deleted", "versions"]))
    assert listed == []  # Azurite: gone for good, soft delete or not
    if soft_days:
        assert f.split(total) == (0, (FreedOn(iso(now + timedelta(days=7)), total),), 0)
        assert f.how == "azure soft delete"
    else:
        assert f.split(total) == (total, (), 0)  # what the store holds: nothing


def _azure_versions_answer(method, path, query, body):
    x = {"Content-Type": "application/xml", "x-ms-version": "2021-08-06"}
    if query.get("comp") == "properties":
        return (
            200,
            x,
            (
                b'<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><DeleteRetentionPolicy>'
                b"<Enabled>false</Enabled></DeleteRetentionPolicy></StorageServiceProperties>"
            ),
        )
    if query.get("comp") == "list":
        assert "versions" in query.get("include", "")
        blob = (
            "<Blob><Name>repo/_lakefs/x</Name><VersionId>2026-11-29T09:00:00.0000000Z</VersionId>"
            "<IsCurrentVersion>true</IsCurrentVersion><Properties><Content-Length>3</Content-Length>"
            "<BlobType>BlockBlob</BlobType></Properties></Blob>"
        )
        return (
            200,
            x,
            (
                f'<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="x" ContainerName="ctr">'
                f"<Blobs>{blob}</Blobs><NextMarker /></EnumerationResults>"
            ).encode(),
        )
    return 400, {**x, "x-ms-error-code": "InvalidQueryParameterValue"}, b""


def test_azure_versioning_read_from_version_ids_is_still_billed():
    """Azurite has no blob versioning: a stub lists a blob with a version id, as the service does."""
    stub = Stub(_azure_versions_answer)
    try:
        opts = AzureOptions(
            account_url=f"{stub.url}/acct",
            account_name="acct",
            account_key="a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5",
        )
        f = open_storage("https://acct.blob.core.windows.net/ctr/repo", opts).freeing(datetime.now(UTC))
    finally:
        stub.stop()
    assert (f.when, f.how) == (STILL_BILLED, "azure versioning")
    lists = [q for m, p, q in stub.requests if q.get("comp") == "list"]
    assert lists[0]["prefix"] == "repo/_lakefs/"


def test_fake_gcs_without_versioning_frees_now(fake_gcs):
    """fake-gcs-server models a plain bucket: after the sweep it holds no generation of the keys."""
    bucket = fake_gcs.create("bill-plain")
    st = open_storage(f"gs://{bucket}/repo", fake_gcs.options())
    objs = _objects()
    for k, v in objs.items():
        st.put(k, v)
    _sweep_directly(st, sorted(objs))
    f = st.freeing(datetime.now(UTC))
    total = sum(map(len, objs.values()))
    assert list(st.client.list_blobs(bucket, prefix="repo/data/", versions=True)) == []
    assert f.split(total) == (total, (), 0)


def test_fake_gcs_versioning_is_read_and_counted_as_still_billed(fake_gcs):
    """fake-gcs-server keeps the versioning flag (read here) but no lifecycle rule: still billed."""
    from lakefs_gc.storage.gcs import make_gcs_client

    b = make_gcs_client(fake_gcs.options()).bucket("bill-versioned")
    b.versioning_enabled = True
    b.create()
    f = open_storage("gs://bill-versioned/repo", fake_gcs.options()).freeing(datetime.now(UTC))
    assert (f.when, f.how) == (STILL_BILLED, "gcs versioning")


def _gcs_bucket_answer(method, path, query, body):
    doc = {
        "name": "bkt",
        "versioning": {"enabled": True},
        "softDeletePolicy": {"retentionDurationSeconds": "172800"},
        "lifecycle": {
            "rule": [
                {"action": {"type": "Delete"}, "condition": {"daysSinceNoncurrentTime": 5, "matchesPrefix": ["repo/"]}},
                {
                    "action": {"type": "Delete"},
                    "condition": {"isLive": False, "age": 1, "matchesStorageClass": ["NEARLINE"]},
                },
            ]
        },
    }
    if method == "GET" and path == "/storage/v1/b/bkt":
        return 200, {"Content-Type": "application/json"}, json.dumps(doc).encode()
    return 404, {"Content-Type": "application/json"}, b'{"error": {"code": 404}}'


def test_gcs_lifecycle_and_soft_delete_read_through_the_library():
    """fake-gcs-server keeps neither lifecycle rules nor a soft delete policy: a stub serves the bucket's
    metadata as GCS documents it, read through google-cloud-storage."""
    stub = Stub(_gcs_bucket_answer)
    now = datetime.now(UTC)
    try:
        f = open_storage("gs://bkt/repo", GCSOptions(endpoint_url=stub.url, project="p", anonymous=True)).freeing(now)
    finally:
        stub.stop()
    assert (f.when, f.on, f.how) == (FREED_LATER, iso(now + timedelta(days=7)), "gcs versioning")
    assert "matchesStorageClass cannot be proven" in f.detail
