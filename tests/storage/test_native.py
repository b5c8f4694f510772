"""The native listing (lakefs_gc.storage.native: obstore into Arrow) on a real server of each kind
(moto, Azurite, fake-gcs-server on 127.0.0.1): it lists exactly what the store's SDK lists, it
hands over to the SDK where it cannot (a key object_store refuses, a directory marker that collides
with an object, switched off), and it reaches each store with each kind of credential the Airflow
hooks give."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from lakefs_gc.storage import native, open_storage
from lakefs_gc.storage.base import StorageUnreachable

CLOUD = ["s3", "azure", "gcs"]
_n = itertools.count()


def _server(request, kind):
    return request.getfixturevalue({"s3": "moto_server", "azure": "azurite", "gcs": "fake_gcs"}[kind])


@pytest.fixture(params=CLOUD)
def cloud(request):
    """(kind, server, storage of a fresh namespace)."""
    kind, name = request.param, f"native{next(_n)}"
    server = _server(request, kind)
    if kind == "s3":
        server.create_bucket(name)
        return kind, server, open_storage(f"s3://{name}/repo", server.s3_options())
    server.create(name)
    return kind, server, open_storage(server.namespace(name, "repo"), server.options())


def _put_raw(kind, st, name: str, data: bytes = b"x") -> None:
    """An object by its full name in the bucket, past the adapter's key checks."""
    if kind == "s3":
        st.client.put_object(Bucket=st.bucket, Key=name, Body=data)
    elif kind == "azure":
        st.client.upload_blob(name, data, overwrite=True)
    else:
        st.bucket.blob(name).upload_from_string(data)


def _rows(batches) -> list[tuple]:
    return [tuple(r.values()) for b in batches for r in b.to_pylist()]


def _sdk_rows(st, prefix: str) -> list[tuple]:
    return [(o.key, o.size, int(o.last_modified * 1000), o.checksum) for o in st.list(prefix)]


def _same(kind, got, want) -> bool:
    """The SDK's listing as the native one gives it: Azure's and GCS's without a checksum (their
    listing has no content MD5; ``listed_md5`` says so). fake-gcs-server's XML listing (the one
    object_store reads) gives whole seconds where its JSON API gives milliseconds; Google's gives
    milliseconds in both."""
    if len(got) != len(want):
        return False
    for (k, s, t, c), (k2, s2, t2, c2) in zip(got, want):
        if (k, s) != (k2, s2) or c != (c2 if kind == "s3" else None):
            return False
        if t != t2 and not (kind == "gcs" and t == t2 // 1000 * 1000):
            return False
    return True


@pytest.fixture
def fallbacks(monkeypatch):
    monkeypatch.setattr(native, "FALLBACKS", {})
    return native.FALLBACKS


def test_a_slice_is_listed_natively_exactly_as_the_sdk_lists_it(cloud, fallbacks):
    kind, _, st = cloud
    keys = [f"data/s1/{i:05d}" for i in range(1003)] + [
        "data/s1/a b%20c",
        "data/s1/é ü€",
        "data/s1/x+y?z&w#h",
        "data/s1/tilde~*'()",
        "data/s1/sub/deep",
        "data/s10/not-in-s1",
        "data/s0",
        "top",
    ]
    for i, k in enumerate(keys):
        st.put(k, b"x" * (i % 7))
    got = _rows(st.list_batches("data/s1/"))
    assert _same(kind, got, _sdk_rows(st, "data/s1/"))
    assert len(got) == 1008
    assert fallbacks == {}, "the native client served it all"
    assert st.listed_md5 is False  # the staged check asks the store, as on S3
    if kind == "s3":
        assert {c for *_, c in got} == {o.checksum for o in st.list("data/s1/")}
        assert None not in {c for *_, c in got}


def test_a_key_the_native_client_refuses_hands_the_rest_of_the_slice_to_the_sdk(cloud, fallbacks):
    kind, _, st = cloud
    if kind == "azure":
        pytest.skip("Azurite refuses a blob name with an empty segment")
    for k in ("data/s1/a", "data/s1/b", "data/s1/z"):
        st.put(k, b"x")
    _put_raw(kind, st, "repo/data/s1/c//empty-segment")
    _put_raw(kind, st, "repo/data/s1/d/./dot")
    got = _rows(st.list_batches("data/s1/"))
    assert [r[0] for r in got] == ["data/s1/a", "data/s1/b", "data/s1/c//empty-segment", "data/s1/d/./dot", "data/s1/z"]
    assert [r[:3] for r in got] == [r[:3] for r in _sdk_rows(st, "data/s1/")]
    assert fallbacks == {"a key object_store refuses as a path": 1}


def test_a_directory_marker_beside_an_object_of_its_name_hands_over_to_the_sdk(cloud, fallbacks):
    """object_store gives the marker ``x/`` as ``x``: beside an object ``x`` the same address twice,
    the marker's with its own (older) time. The listing must never give that."""
    kind, _, st = cloud
    if kind == "azure":
        pytest.skip("Azure's native listing leaves markers out")
    st.put("data/s1/x", b"object")
    st.put("data/s1/x!between", b"y")
    _put_raw(kind, st, "repo/data/s1/x/")
    st.put("data/s1/x/inside", b"z")
    got = _rows(st.list_batches("data/s1/"))
    assert [r[0] for r in got] == ["data/s1/x", "data/s1/x!between", "data/s1/x/", "data/s1/x/inside"]
    assert fallbacks == {"a key out of order (a directory marker)": 1}


def test_the_slices_own_directory_marker_keeps_its_key(cloud, fallbacks):
    """S3 and GCS: object_store gives ``data/s1/`` as ``data/s1``, which is outside the slice: the
    marker's own key. Azure: object_store leaves blobs named ``.../`` out (never deleted)."""
    kind, _, st = cloud
    _put_raw(kind, st, "repo/data/s1/")
    st.put("data/s1/a", b"x")
    want = [r[0] for r in _sdk_rows(st, "data/s1/")]
    assert want == ["data/s1/", "data/s1/a"]
    assert [r[0] for r in _rows(st.list_batches("data/s1/"))] == (want if kind != "azure" else ["data/s1/a"])
    assert fallbacks == {}


def test_switched_off_the_sdk_lists_and_the_listing_says_so(cloud, fallbacks, monkeypatch):
    kind, _, st = cloud
    st.put("data/s1/a", b"x")
    monkeypatch.setenv(native.NATIVE_ENV, "0")
    monkeypatch.setattr(type(st), "native_store", lambda self: pytest.fail("the native client was used"))
    assert _rows(st.list_batches("data/s1/")) == _sdk_rows(st, "data/s1/")
    assert st.listed_md5 is (kind != "s3")  # the SDK's listing carries Azure's and GCS's MD5


def test_an_unreachable_endpoint_fails_the_native_listing_with_the_stores_one_line(fallbacks):
    import socket

    from lakefs_gc.storage import S3Options

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    st = open_storage(
        "s3://bucket/repos/r",
        S3Options(endpoint_url=f"http://127.0.0.1:{port}", access_key_id="AKIA", secret_access_key="s"),
    )
    with pytest.raises(StorageUnreachable) as err:
        list(st.list_batches("data/s1/"))
    message = str(err.value)
    assert message.startswith(f"S3 endpoint http://127.0.0.1:{port} is unreachable")
    assert "(list s3://bucket/repos/r" in message
    assert "\n" not in message


# --- credentials: each kind the hooks give, through the native client --------------------------


def test_s3_keys_with_a_session_token(moto_server, fallbacks):
    from dataclasses import replace

    name = moto_server.create_bucket(f"native{next(_n)}")
    st = open_storage(f"s3://{name}/repo", replace(moto_server.s3_options(), session_token="FwoGZXIvYXdzEXAMPLE"))
    st.put("data/s1/a", b"x")
    assert [r[0] for r in _rows(st.list_batches("data/s1/"))] == ["data/s1/a"]
    assert fallbacks == {}


def test_s3_role_assumption_from_the_default_chain_is_refreshed_by_the_provider(
    moto_server, tmp_path, monkeypatch, fallbacks
):
    """No keys in the settings: boto3's chain, here a profile that assumes a role (moto's STS),
    through obstore's Boto3CredentialProvider, which asks boto3 again before the keys expire."""
    from lakefs_gc.storage import S3Options

    name = moto_server.create_bucket(f"native{next(_n)}")
    moto_server.client().put_object(Bucket=name, Key="repo/data/s1/a", Body=b"x")
    (tmp_path / "config").write_text(
        "[profile gc]\nrole_arn = arn:aws:iam::123456789012:role/lakefs-gc\nsource_profile = base\n"
        "region = us-east-1\n[profile base]\nregion = us-east-1\n"
    )
    (tmp_path / "credentials").write_text("[base]\naws_access_key_id = AKIABASE\naws_secret_access_key = base\n")
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_PROFILE", "gc")
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", moto_server.endpoint_url)
    st = open_storage(f"s3://{name}/repo", S3Options(endpoint_url=moto_server.endpoint_url))
    store = st.native_store()
    assert [r[0] for r in _rows(st.list_batches("data/s1/"))] == ["data/s1/a"]
    assert fallbacks == {}
    provider = store.credential_provider
    creds = provider()
    assert creds["token"], "the assumed role's keys, not the base profile's"
    assert creds["access_key_id"] != "AKIABASE", "the assumed role's keys, not the base profile's"
    assert creds["expires_at"] <= datetime.now(UTC) + timedelta(minutes=6), "asked again before they expire"


def test_azure_sas_token(azurite, fallbacks):
    from azure.storage.blob import ContainerSasPermissions, generate_container_sas

    from lakefs_gc.storage import AzureOptions
    from lakefs_sandbox.cloud_servers import AZURITE_ACCOUNT, AZURITE_KEY

    name = azurite.create(f"native{next(_n)}")
    keyed = open_storage(azurite.namespace(name, "repo"), azurite.options())
    keyed.put("data/s1/a", b"x")
    sas = generate_container_sas(
        AZURITE_ACCOUNT,
        name,
        account_key=AZURITE_KEY,
        permission=ContainerSasPermissions(read=True, list=True),
        expiry=datetime.now(UTC) + timedelta(hours=1),
    )
    st = open_storage(
        azurite.namespace(name, "repo"),
        AzureOptions(account_url=azurite.account_url, account_name=AZURITE_ACCOUNT, sas_token=sas),
    )
    assert _same("azure", _rows(st.list_batches("data/s1/")), _sdk_rows(keyed, "data/s1/"))
    assert fallbacks == {}


def test_gcs_access_token_from_a_service_account(fake_gcs, fallbacks, native_deletes):
    """GCSHook turns a service account (key file, key JSON, impersonation) into an access token
    (tests/airflow/hooks/test_hooks.py); the native client sends it as the SDK does, listing and deleting."""
    from lakefs_gc.storage import GCSOptions

    name = fake_gcs.create(f"native{next(_n)}")
    st = open_storage(
        f"gs://{name}/repo",
        GCSOptions(endpoint_url=fake_gcs.endpoint_url, project="test", access_token="ya29.from-the-hook"),
    )
    st.put("data/s1/a", b"x")
    assert [r[0] for r in _rows(st.list_batches("data/s1/"))] == ["data/s1/a"]
    assert fallbacks == {}
    assert "ya29" not in repr(st.native_store().credential_provider)
    assert st.delete_batch(["data/s1/a"]) == []
    assert native_deletes == ["data/s1/a"]
    assert not list(st.list("data/"))


@pytest.fixture
def native_deletes(monkeypatch):
    """The keys each delete sent through obstore (lakefs_gc.storage.native.delete_outcome)."""
    sent: list[str] = []
    real = native.delete_outcome

    def recorded(store, key):
        sent.append(key)
        return real(store, key)

    monkeypatch.setattr(native, "delete_outcome", recorded)
    return sent


def test_gcs_deletes_go_through_obstore_and_delete_exactly_the_named_objects(fake_gcs, fallbacks, native_deletes):
    """object_store would name a directory marker ``x/`` as ``x``: that key goes through the SDK,
    and the object ``x`` beside it is left. Odd characters and an encoded slash name their own object."""
    name = fake_gcs.create(f"native{next(_n)}")
    st = open_storage(fake_gcs.namespace(name, "repo"), fake_gcs.options())
    odd = ["data/s/a name+with%25 odd?chars&é", "data/s/a%2Fb", "data/s/ünï €"]
    for k in ["data/s/plain", *odd, "data/s/x", "data/s/a/b", "data/s/live"]:
        st.put(k, b"x")
    _put_raw("gcs", st, "repo/data/s/x/")
    st.put("data/s/ctl\x01char", b"x")  # object_store refuses a control character: the SDK deletes it
    failed = st.delete_batch(["data/s/plain", *odd, "data/s/x/", "data/s/ctl\x01char", "data/s/missing"])
    assert [(k, code) for k, code, _ in failed] == [("data/s/missing", "404")]
    assert [o.key for o in st.list("data/")] == ["data/s/a/b", "data/s/live", "data/s/x"]
    assert sorted(native_deletes) == sorted(["data/s/plain", *odd, "data/s/ctl\x01char", "data/s/missing"])
    assert fallbacks == {
        "gcs delete: a key object_store names otherwise": 1,
        "gcs delete: a key object_store refuses as a path": 1,
    }


def test_gcs_deletes_through_the_sdk_when_the_native_client_is_switched_off(fake_gcs, native_deletes, monkeypatch):
    monkeypatch.setenv(native.NATIVE_ENV, "0")
    name = fake_gcs.create(f"native{next(_n)}")
    st = open_storage(fake_gcs.namespace(name, "repo"), fake_gcs.options())
    st.put("data/s/a", b"x")
    failed = st.delete_batch(["data/s/a", "data/s/missing"])
    assert [(k, code) for k, code, _ in failed] == [("data/s/missing", "404")]
    assert not list(st.list("data/"))
    assert native_deletes == []


def test_a_gcs_delete_the_endpoint_does_not_answer_is_a_connection_error_for_the_deleter(fallbacks):
    """No retries of obstore's own: the deleter's retries and dead letters decide (ConnectionError is retryable)."""
    from lakefs_gc.storage import GCSOptions
    from lakefs_gc.sweeping.deleter import RETRYABLE_CODES
    from lakefs_sandbox.emulator.launcher import free_port

    st = open_storage("gs://bucket/repo", GCSOptions(endpoint_url=f"http://127.0.0.1:{free_port()}", anonymous=True))
    failed = st.delete_batch(["data/s/a"])
    assert [(k, code) for k, code, _ in failed] == [("data/s/a", "ConnectionError")]
    assert "ConnectionError" in RETRYABLE_CODES
