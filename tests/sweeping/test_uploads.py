"""Incomplete multipart uploads swept (lakefs_gc.sweeping.uploads): on moto, through the delete step,
on a stand-in of GCS's XML API, on fake-gcs-server (which does not model them) and on Azurite.

moto 5.2 answers every upload's ``Initiated`` with one fixed date (2010-11-10), so an upload's age
here comes from what the code also reads: the run's start (the ``now`` it is given, as the delete
step gives it the run's start time) and, for a key in lakeFS's address form, the time in its xid.
The assertions are on what the store still holds (ListMultipartUploads after the run)."""

from __future__ import annotations

import io
import json
import os
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakefs_gc.contract import SlicesResult, StepInputs, UncommittedResult
from lakefs_gc.lakefs import xid
from lakefs_gc.placement import DEFAULT
from lakefs_gc.steps import run_in_task
from lakefs_gc.storage import open_storage
from lakefs_gc.storage.settings import ENV_ACCESS_KEY, ENV_SECRET_KEY
from lakefs_gc.sweeping.deleter import DeletePolicy
from lakefs_gc.sweeping.uploads import sweep_uploads
from tests.support.contract import make_context

# the run's start: a month ahead of the store's clock, so that every upload made now is at least that
# old by the store's Initiated, and the xids in the keys alone say which are young
RUN_START = datetime.now(UTC).replace(microsecond=0) + timedelta(days=30)
MARK = "ft0000000000000000up"


def _address(at: datetime) -> str:
    """A lakeFS object address made at ``at``: data/<partition>/<xid of that time>."""
    return f"data/gpart/{xid.encode(int(at.timestamp()).to_bytes(4, 'big') + os.urandom(8))}"


def _upload(client, bucket: str, key: str, part_sizes: tuple[int, ...]) -> str:
    upload_id = client.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    for n, size in enumerate(part_sizes, 1):
        client.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=n, Body=b"p" * size)
    return upload_id


def _held(client, bucket: str) -> set[str]:
    return {u["Key"] for u in client.list_multipart_uploads(Bucket=bucket).get("Uploads", ())}


def _plant(moto_server, bucket: str) -> dict[str, str]:
    """An old lakeFS upload, a young one, an old one outside lakeFS's address form, one outside the namespace."""
    client = moto_server.client()
    client.create_bucket(Bucket=bucket)
    keys = {
        "old": "repo/" + _address(RUN_START - timedelta(days=10)),
        "young": "repo/" + _address(RUN_START - timedelta(hours=1)),
        "loose": "repo/data/loose/upload.bin",
        "outside": "repo2/" + _address(RUN_START - timedelta(days=10)),
    }
    _upload(client, bucket, keys["old"], (1000, 234))
    _upload(client, bucket, keys["young"], (77,))
    _upload(client, bucket, keys["loose"], (500,))
    _upload(client, bucket, keys["outside"], (9,))
    return keys


def test_old_uploads_are_aborted_counted_and_sized_young_ones_untouched(moto_server):
    keys = _plant(moto_server, "uploads-real")
    client = moto_server.client()
    st = open_storage("s3://uploads-real/repo", moto_server.s3_options())
    r = sweep_uploads(st, RUN_START, 7.0, DeletePolicy())
    assert _held(client, "uploads-real") == {keys["young"], keys["outside"]}
    assert (r.how, r.old, r.old_bytes, r.aborted, r.aborted_bytes, r.young) == ("s3 multipart", 2, 1734, 2, 1734, 1)
    assert (r.failed, r.already_gone, r.error, r.skipped) == (0, 0, None, None)
    # run again: nothing old is left
    again = sweep_uploads(st, RUN_START, 7.0, DeletePolicy())
    assert (again.old, again.aborted, again.young) == (0, 0, 1)


def test_a_dry_run_sizes_and_counts_the_old_uploads_and_aborts_none(moto_server):
    keys = _plant(moto_server, "uploads-dry")
    st = open_storage("s3://uploads-dry/repo", moto_server.s3_options())
    r = sweep_uploads(st, RUN_START, 7.0, DeletePolicy(dry_run=True))
    assert _held(moto_server.client(), "uploads-dry") == set(keys.values())
    assert (r.old, r.old_bytes, r.aborted, r.aborted_bytes, r.young) == (2, 1734, 0, 0, 1)


def test_the_threshold_decides_and_zero_never_aborts(moto_server):
    keys = _plant(moto_server, "uploads-threshold")
    st = open_storage("s3://uploads-threshold/repo", moto_server.s3_options())
    off = sweep_uploads(st, RUN_START, 0, DeletePolicy())
    assert off.skipped
    assert "never" in off.skipped
    assert _held(moto_server.client(), "uploads-threshold") == set(keys.values())
    # 11 days: the 10-day-old lakeFS upload is young now; only the loose one (the store's Initiated) goes
    r = sweep_uploads(st, RUN_START, 11.0, DeletePolicy())
    assert (r.old, r.young) == (1, 2)
    assert _held(moto_server.client(), "uploads-threshold") == {keys["old"], keys["young"], keys["outside"]}


def test_local_namespaces_have_no_uploads_to_abort(tmp_path):
    (tmp_path / "ns" / "repo").mkdir(parents=True)
    st = open_storage("local://ns/repo", None, str(tmp_path))
    r = sweep_uploads(st, RUN_START, 7.0, DeletePolicy())
    assert (r.how, r.old, r.aborted) == ("none", 0, 0)
    assert r.skipped
    assert r.skipped.startswith("local://")


# ---------------------------------------------------------------------------------------------
# through the delete step, as a run calls it: the run's start time is the uploads' "now"


def _mark(st, candidates: list[str]) -> None:
    buf = io.BytesIO()
    pq.write_table(pa.table({"address": pa.array(candidates, pa.string())}), buf)
    st.put(f"_lakefs/retention/gc/unified/{MARK}/deleted/part-00000.parquet", buf.getvalue())
    st.put(f"_lakefs/retention/gc/unified/{MARK}/summary.json", json.dumps({"run_id": MARK}).encode())


def _delete_step(moto_server, bucket: str, tmp_path, **settings):
    st = open_storage(f"s3://{bucket}/repo", moto_server.s3_options())
    st.put("data/gpart/garbage", b"g")
    _mark(st, ["data/gpart/garbage"])
    ctx = make_context(
        f"s3://{bucket}/repo",
        work_dir=str(tmp_path),
        s3_endpoint=moto_server.endpoint_url,
        s3_region="us-east-1",
        start=RUN_START,
        max_delete_share=1.0,
        **settings,
    )
    listed = SlicesResult(
        listed_dir="", first_slice="", slices_listed=0, slices_skipped=0, listed_objects=10, listed_bytes=0
    )
    inputs = StepInputs(
        ctx,
        {
            "mark_uncommitted": UncommittedResult(run_id=MARK, locations=(), pages=1),
            "list_slices": listed,
            "compute_candidates": None,
        },
    )
    env = {ENV_ACCESS_KEY: moto_server.access_key, ENV_SECRET_KEY: moto_server.secret_key}
    res = run_in_task("delete", inputs, env, DEFAULT.in_task_max_keys)
    assert res is not None
    return st, res


def test_the_delete_step_aborts_the_old_uploads_from_the_run_start(moto_server, tmp_path):
    keys = _plant(moto_server, "uploads-step")
    st, res = _delete_step(moto_server, "uploads-step", tmp_path)
    assert _held(moto_server.client(), "uploads-step") == {keys["young"], keys["outside"]}
    assert res.uploads is not None
    assert (res.uploads.aborted, res.uploads.aborted_bytes, res.uploads.young) == (2, 1734, 1)
    assert res.incomplete is None
    assert res.counts.deleted == 1
    assert not st.exists("data/gpart/garbage")


def test_a_dry_run_of_the_delete_step_aborts_no_upload(moto_server, tmp_path):
    keys = _plant(moto_server, "uploads-step-dry")
    _, res = _delete_step(moto_server, "uploads-step-dry", tmp_path, dry_run=True)
    assert _held(moto_server.client(), "uploads-step-dry") == set(keys.values())
    assert (res.uploads.old, res.uploads.old_bytes, res.uploads.aborted) == (2, 1734, 0)


def test_a_sweep_the_blast_radius_guard_refuses_aborts_no_upload(moto_server, tmp_path):
    from lakefs_gc.errors import SweepRefused

    keys = _plant(moto_server, "uploads-guard")
    with pytest.raises(SweepRefused, match="max_delete_count"):
        _delete_step(moto_server, "uploads-guard", tmp_path, max_delete_count=0)
    assert _held(moto_server.client(), "uploads-guard") == set(keys.values())


def test_uploads_that_cannot_be_listed_fail_the_step_after_the_sweep(moto_server, tmp_path):
    """A credential without the listing right: the keys are swept, the task fails saying what to grant."""
    _plant(moto_server, "uploads-denied")
    from lakefs_gc.storage.multipart import S3Uploads

    def denied(self):
        from botocore.exceptions import ClientError

        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "denied"}}, "ListMultipartUploads")
        yield  # pragma: no cover

    mp = pytest.MonkeyPatch()
    mp.setattr(S3Uploads, "list", denied)
    try:
        st, res = _delete_step(moto_server, "uploads-denied", tmp_path)
    finally:
        mp.undo()
    assert res.counts.deleted == 1
    assert res.uploads.error
    assert "AccessDenied" in res.uploads.error
    assert res.incomplete
    assert "abort_uploads_after_days to 0" in res.incomplete
    assert "0 aborted before that" in res.incomplete


# ---------------------------------------------------------------------------------------------
# GCS: the XML API's multipart uploads, on a stand-in that answers as GCS documents them
# (fake-gcs-server does not model them: see the test after it)


class _XmlMultipart:
    """GCS's XML API multipart calls over uploads held in memory: two uploads a page, one part a page."""

    NS = "http://s3.amazonaws.com/doc/2006-03-01/"

    def __init__(self, uploads: dict[str, tuple[str, datetime, tuple[int, ...]]]):
        self.uploads = dict(uploads)  # upload id -> (object name, initiated, part sizes)

    def __call__(self, method, path, query, body):
        xml = {"Content-Type": "application/xml"}
        if method == "GET" and path == "/bkt" and "uploads" in query:
            ups = sorted((name, uid, at) for uid, (name, at, _) in self.uploads.items())
            ups = [u for u in ups if u[0].startswith(query.get("prefix", ""))]
            after = (query.get("key-marker", ""), query.get("upload-id-marker", ""))
            ups = [u for u in ups if (u[0], u[1]) > after]
            page, more = ups[:2], len(ups) > 2
            items = "".join(
                f"<Upload><Key>{n}</Key><UploadId>{u}</UploadId><StorageClass>STANDARD</StorageClass>"
                f"<Initiated>{at.strftime('%Y-%m-%dT%H:%M:%S.000Z')}</Initiated></Upload>"
                for n, u, at in page
            )
            nxt = f"<NextKeyMarker>{page[-1][0]}</NextKeyMarker><NextUploadIdMarker>{page[-1][1]}</NextUploadIdMarker>"
            doc = (
                f'<?xml version="1.0" encoding="UTF-8"?><ListMultipartUploadsResult xmlns="{self.NS}">'
                f"<Bucket>bkt</Bucket>{nxt if more else ''}<IsTruncated>{str(more).lower()}</IsTruncated>"
                f"{items}</ListMultipartUploadsResult>"
            )
            return 200, xml, doc.encode()
        uid = query.get("uploadId")
        if uid is not None and path.startswith("/bkt/"):
            if uid not in self.uploads or self.uploads[uid][0] != path[len("/bkt/") :]:
                return 404, xml, b"<Error><Code>NoSuchUpload</Code></Error>"
            if method == "DELETE":
                del self.uploads[uid]
                return 204, {}, b""
            sizes = self.uploads[uid][2]
            n = int(query.get("part-number-marker") or 0)
            more = n + 1 < len(sizes)
            doc = (
                f'<ListPartsResult xmlns="{self.NS}"><IsTruncated>{str(more).lower()}</IsTruncated>'
                f"<NextPartNumberMarker>{n + 1}</NextPartNumberMarker>"
                f"<Part><PartNumber>{n + 1}</PartNumber><Size>{sizes[n]}</Size></Part></ListPartsResult>"
            )
            return 200, xml, doc.encode()
        return 400, xml, b"<Error><Code>InvalidArgument</Code></Error>"


def _gcs_uploads() -> dict[str, tuple[str, datetime, tuple[int, ...]]]:
    old = RUN_START - timedelta(days=8)
    return {
        "u1": ("repo/data/a/one", old, (100, 200, 3)),
        "u2": ("repo/data/a/two", old, (40,)),
        "u3": ("repo/data/b/three", old, (5, 5)),
        "u4": ("repo/data/b/young", RUN_START - timedelta(days=2), (1,)),
        "u5": ("repo2/data/c/other", old, (1,)),
    }


def test_gcs_xml_multipart_uploads_paged_sized_and_aborted():
    from lakefs_gc.storage import GCSOptions
    from tests.sweeping.test_restore_clouds import Stub

    model = _XmlMultipart(_gcs_uploads())
    stub = Stub(model)
    try:
        st = open_storage("gs://bkt/repo", GCSOptions(endpoint_url=stub.url, project="p", anonymous=True))
        dry = sweep_uploads(st, RUN_START, 7.0, DeletePolicy(dry_run=True))
        assert set(model.uploads) == {"u1", "u2", "u3", "u4", "u5"}
        r = sweep_uploads(st, RUN_START, 7.0, DeletePolicy())
    finally:
        stub.stop()
    assert (dry.how, dry.old, dry.old_bytes, dry.aborted, dry.young) == ("gcs multipart", 3, 353, 0, 1)
    assert (r.old, r.old_bytes, r.aborted, r.aborted_bytes, r.young) == (3, 353, 3, 353, 1)
    assert set(model.uploads) == {"u4", "u5"}
    lists = [q for m, p, q in stub.requests if m == "GET" and "uploads" in q]
    assert all(q["prefix"] == "repo/" for q in lists)
    assert len(lists) == 4
    assert sorted(p for m, p, q in stub.requests if m == "DELETE") == [
        "/bkt/repo/data/a/one",
        "/bkt/repo/data/a/two",
        "/bkt/repo/data/b/three",
    ]


def test_fake_gcs_server_does_not_model_multipart_uploads_the_sweep_says_so(fake_gcs):
    st = open_storage(fake_gcs.namespace(fake_gcs.create("uploads"), "repo"), fake_gcs.options())
    st.put("data/a/object", b"x")
    r = sweep_uploads(st, RUN_START, 7.0, DeletePolicy())
    assert r.skipped
    assert "does not model multipart uploads" in r.skipped
    assert (r.old, r.aborted, r.error) == (0, 0, None)
    assert st.exists("data/a/object")


def test_an_s3_compatible_store_without_the_call_is_said_so():
    from lakefs_gc.storage import S3Options
    from tests.sweeping.test_restore_clouds import Stub

    def answer(method, path, query, body):
        error = b"<Error><Code>NotImplemented</Code><Message>not here</Message></Error>"
        return 501, {"Content-Type": "application/xml"}, error

    stub = Stub(answer)
    try:
        options = S3Options(endpoint_url=stub.url, access_key_id="a", secret_access_key="b", path_style=True)
        r = sweep_uploads(open_storage("s3://bkt/repo", options), RUN_START, 7.0, DeletePolicy())
    finally:
        stub.stop()
    assert (
        r.skipped
        == f"the endpoint does not model multipart uploads: {stub.url} answered ListMultipartUploads: NotImplemented"
    )
    assert r.error is None
    assert [(m, q.get("prefix")) for m, p, q in stub.requests] == [("GET", "repo/")]


# ---------------------------------------------------------------------------------------------
# Azure: blobs of uncommitted blocks only, reported (count, bytes), never deleted


def test_azure_uncommitted_blocks_are_reported_not_deleted(azurite):
    ns = azurite.namespace(azurite.create("uploads"), "repo")
    st = open_storage(ns, azurite.options())
    st.put("data/a/committed", b"hello")
    st.put("data/a/empty", b"")
    staged = st.client.get_blob_client(st._name("data/a/never-committed"))
    staged.stage_block("YmxvY2sx", b"x" * 1000)
    staged.stage_block("YmxvY2sy", b"y" * 500)
    st.client.get_blob_client(st._name("data/b/other")).stage_block("YmxvY2sz", b"z" * 30)
    elsewhere = open_storage(azurite.namespace("uploads", "repo2"), azurite.options())
    elsewhere.client.get_blob_client(elsewhere._name("data/c/outside")).stage_block("YmxvY2s0", b"o" * 7)
    r = sweep_uploads(st, RUN_START, 7.0, DeletePolicy())
    assert (r.how, r.old, r.old_bytes, r.aborted) == ("azure uncommitted blocks", 2, 1530, 0)
    assert "7 days" in r.detail
    _, blocks = staged.get_block_list("uncommitted")
    assert sum(b.size for b in blocks) == 1500  # still there: Azure has no abort
    assert {o.key for o in st.list("data/")} == {"data/a/committed", "data/a/empty"}


# ---------------------------------------------------------------------------------------------
# the threshold: never below lakeFS's expiry of upload addresses (24 h), refused naming the field


@pytest.mark.parametrize("days", [0.5, 0.99, 1e-6])
def test_a_threshold_below_lakefs_expiry_of_upload_addresses_is_refused(days):
    from lakefs_gc.contract import RunSettings, settings_from_params
    from lakefs_gc.errors import SettingsError

    want = (
        rf"Param 'abort_uploads_after_days' must be 0 \(never abort\) or at least 1 day, lakeFS's expiry of "
        rf"upload addresses \(86400s\), got {days:g}: .* Set abort_uploads_after_days >= 1 \(the default is 7\), "
        r"or 0 never to abort uploads"
    )
    with pytest.raises(SettingsError, match=want):
        RunSettings(abort_uploads_after_days=days)
    with pytest.raises(SettingsError, match=want):
        settings_from_params({"abort_uploads_after_days": days})
    assert RunSettings(abort_uploads_after_days=1).abort_uploads_after_days == 1
    assert RunSettings(abort_uploads_after_days=0).abort_uploads_after_days == 0


def test_the_config_file_refuses_a_threshold_below_lakefs_expiry():
    from lakefs_gc.config import ConfigError
    from lakefs_gc.config.entry import parse_entry

    with pytest.raises(ConfigError) as e:
        parse_entry({"repository": "abc", "sweep": {"abort_uploads_after_days": 0.5}}, "gc.yaml: repositories[0] (abc)")
    assert str(e.value).startswith(
        "gc.yaml: repositories[0] (abc): field 'sweep.abort_uploads_after_days': must be 0 (never abort) or at "
        "least 1 day, lakeFS's expiry of upload addresses (86400s), got 0.5"
    )
    assert "Set sweep.abort_uploads_after_days >= 1" in str(e.value)
    assert (
        parse_entry({"repository": "abc", "sweep": {"abort_uploads_after_days": 2}}).sweep.abort_uploads_after_days == 2
    )


def test_prepare_run_refuses_a_threshold_below_the_expiry_this_lakefs_reports(tmp_path):
    from lakefs_gc.contract import RunSettings
    from lakefs_gc.errors import SettingsError
    from lakefs_gc.steps.prepare_run import prepare_run
    from lakefs_gc.storage import S3Options

    class Client:
        endpoint = "http://127.0.0.1:1/api/v1"

        def get_repository(self, repo):
            return type("Repo", (), {"storage_namespace": "s3://bkt/repo", "storage_id": ""})()

        def require_gc_rules(self, repo):
            return type("Rules", (), {"default_retention_days": 1, "branches": []})()

        def blockstore_type(self, storage_id):
            return "s3"

        def grace_period_seconds(self):
            return 2 * 86400  # a lakeFS whose upload addresses live two days

    with pytest.raises(
        SettingsError, match=r"at least 2 days, lakeFS's expiry of upload addresses \(172800s\), got 1.5"
    ):
        prepare_run(
            Client(),
            "repo",
            RunSettings(abort_uploads_after_days=1.5, min_age_seconds=2 * 86400),
            now=datetime.now(UTC),
            airflow_run_id="manual__u",
            work_dir=str(tmp_path),
            storage_options=S3Options(endpoint_url="http://127.0.0.1:1", access_key_id="a", secret_access_key="b"),
        )


# ---------------------------------------------------------------------------------------------
# the report: summary.json, its text, the metrics


def test_the_report_and_the_metrics_carry_the_uploads():
    from lakefs_gc.contract import DeleteResult, Uploads
    from lakefs_gc.report.figures import run_figures
    from lakefs_gc.report.render import step_line, summary_text
    from lakefs_gc.report.run_summary import RunSummary
    from tests.report.test_summary import _summary as built_summary

    u = Uploads(how="s3 multipart", older_than_days=7.0, young=1, old=3, old_bytes=3 << 20, aborted=2)
    u = Uploads(**{**u.__dict__, "aborted_bytes": 2 << 20, "already_gone": 1})
    summary = RunSummary.from_doc(RunSummary(run_id="m", uploads=u).to_doc())  # through summary.json
    assert summary.uploads == u
    text = summary_text(summary)
    assert (
        "incomplete uploads: aborted 2 uploads (2.0 MiB) of 3 initiated more than 7 days before the run, "
        "1 already gone, 0 failed; 1 younger upload untouched"
    ) in text
    figures = run_figures(summary)
    assert {k: v for k, v in figures.items() if k.startswith("uploads.")} == {
        "uploads.aborted": 2,
        "uploads.aborted_bytes": 2 << 20,
        "uploads.old": 3,
        "uploads.old_bytes": 3 << 20,
        "uploads.young": 1,
        "uploads.failed": 0,
    }
    dry = summary_text(RunSummary(run_id="m", dry_run=True, uploads=Uploads(older_than_days=1, old=1, old_bytes=10)))
    assert "incomplete uploads: would abort 1 upload (10 B) initiated more than 1 day before the run; 0 younger" in dry
    local = Uploads(skipped="local:// has no multipart uploads to abort")
    assert not any(k.startswith("uploads.") for k in run_figures(RunSummary(uploads=local)))
    assert built_summary(uploads=u).uploads == u  # a run's summary, from its delete step's result
    assert built_summary(mode="mark_only").uploads is None  # mark-only: no sweep, no uploads
    line = step_line("delete", DeleteResult(uploads=u))
    assert line.endswith(
        "; incomplete uploads: aborted 2 uploads (2.0 MiB) of 3 initiated more than 7 days before the run, 1 already gone, 0 failed; 1 younger upload untouched"
    )


def test_mark_only_never_reaches_the_uploads():
    """mark-only skips the delete step, the one caller of sweep_uploads: nothing is aborted."""
    from pathlib import Path

    from lakefs_gc.contract import skip_result, skipped

    assert skipped("delete", "mark_only")
    assert skip_result("delete", "mark_only").uploads is None
    package = Path(__file__).resolve().parents[2] / "include" / "lakefs_gc"
    callers = {p.relative_to(package).as_posix() for p in package.rglob("*.py") if "sweep_uploads(" in p.read_text()}
    assert callers == {"steps/delete.py", "sweeping/uploads.py"}
