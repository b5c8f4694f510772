"""``lakefs-gc doctor REPO`` against lakeFS 1.84 itself on S3 (moto): it passes on a normal set-up, and each
broken thing gives its line and a non-zero exit: a wrong lakeFS key, no GC rules, a pyspark /
pyspark-client skew (a fake ``pyspark_client`` distribution ahead on ``sys.path``), and each storage
right taken away. The last on a moto server of its own with IAM enforced (``INITIAL_NO_AUTH_ACTION_COUNT``:
its first requests make an admin user, then every request is authorized): the policy ``--policy``
prints is enough for a whole GC run (mark and sweep) with the GC user's key, and without any one
of its actions the doctor fails on that action's line."""

from __future__ import annotations

import json
import sys
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import lakefs_sdk
import pytest
import yaml

from lakefs_gc.cli import main as cli
from lakefs_gc.contract import RunSettings
from lakefs_gc.doctor.policy import S3_ACTIONS
from lakefs_gc.doctor.preflight import PreflightFailed
from lakefs_gc.lakefs.client import LakeFSClient
from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY
from lakefs_gc.steps.prepare_run import prepare_run
from lakefs_gc.storage import S3Options, make_s3_client
from lakefs_sandbox.emulator.launcher import free_port, start_server, stop_group
from lakefs_sandbox.inprocess import run_steps
from tests.conftest import start_real_lakefs

SETTINGS = RunSettings(min_age_seconds=0, unsafe_min_age_override=True, confirm_after_seconds=0, max_delete_share=1.0)


def lines(out: str, status: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(status + "  ")]


@dataclass
class Setup:
    server: object
    repo: str
    bucket: str
    config: str
    options: object  # the store's settings (S3Options, AzureOptions; None: local://)

    def doctor(self, capsys, monkeypatch, *args: str, lakefs_secret: str | None = None) -> tuple[int, str, str]:
        monkeypatch.setenv(ENV_LAKEFS_ACCESS_KEY, self.server.access_key)
        monkeypatch.setenv(ENV_LAKEFS_SECRET_KEY, lakefs_secret or self.server.secret_key)
        for k, v in (self.options.to_env() if self.options is not None else {}).items():
            monkeypatch.setenv(k, v)
        capsys.readouterr()
        rc = cli(
            ["doctor", self.repo, "--config", self.config, "--lakefs-endpoint", self.server.url]
            + ["--spark-master", "local[2]", *args]
        )
        out, err = capsys.readouterr()
        return rc, out, err


def make_repo(server, s3, bucket: str, tmp_path, options, rules: bool = True, namespace: str = "") -> Setup:
    """A repository on ``bucket`` (versioned, a rule expiring noncurrent versions) with a commit, and its entry."""
    name = f"doctor-{uuid.uuid4().hex[:8]}"
    client = server.client()
    ns = namespace.replace("{name}", name) or f"s3://{bucket}/{name}"
    client.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=name, storage_namespace=ns, default_branch="main")
    )
    if rules:
        client.repositories_api.set_gc_rules(
            name, lakefs_sdk.GarbageCollectionRules(default_retention_days=7, branches=[])
        )
    for i in range(3):
        client.objects_api.upload_object(name, "main", f"f{i}", content=b"x" * (i + 1))
    client.commits_api.commit(name, "main", lakefs_sdk.CommitCreation(message="three"))
    client.objects_api.upload_object(name, "main", "staged-then-gone", content=b"garbage")
    client.objects_api.delete_object(name, "main", "staged-then-gone")  # its data/ object is garbage now
    config = tmp_path / f"{name}.yaml"
    entry = {"repository": name, "storage_conn_id": "lakefs_gc_test_none", "lakefs_conn_id": "lakefs_gc_test_none"}
    config.write_text(yaml.safe_dump({"repositories": [entry]}))
    return Setup(server, name, bucket, str(config), options)


def versioned_bucket(s3, name: str) -> str:
    s3.create_bucket(Bucket=name)
    s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    s3.put_bucket_lifecycle_configuration(
        Bucket=name,
        LifecycleConfiguration={
            "Rules": [
                {
                    "ID": "old",
                    "Status": "Enabled",
                    "Filter": {"Prefix": ""},
                    "NoncurrentVersionExpiration": {"NoncurrentDays": 30},
                }
            ]
        },
    )
    return name


@pytest.fixture(scope="module")
def on_moto(real_lakefs, moto_server, tmp_path_factory):
    server = real_lakefs("s3")
    s3 = moto_server.client()
    bucket = versioned_bucket(s3, f"doctor-{uuid.uuid4().hex[:8]}")
    return server, s3, bucket, moto_server.s3_options()


def test_a_normal_set_up_passes_and_removes_its_scratch_key(on_moto, tmp_path, capsys, monkeypatch):
    server, s3, bucket, options = on_moto
    setup = make_repo(server, s3, bucket, tmp_path, options)
    rc, out, err = setup.doctor(capsys, monkeypatch)
    assert rc == 0, out + err
    assert not lines(out, "FAIL"), out
    for want in ("lakeFS reachable", "GC rules: default retention 7 days", "s3:DeleteObjectVersion: the restore path",
                 "lakeFS retention:PrepareGarbageCollectionCommits: prepareGarbageCollectionCommitsAsync called (harmless",
                 "lakeFS's GC files: the storage key reads", "bill and undo (s3 versioning)", "until",
                 "pyspark on the task", "Java on the task", "grace period"):  # fmt: skip
        assert want in out, (want, out)
    assert "lakeFS 1.84" in out
    # nothing of the scratch key is left, not even a version or a delete marker
    left = s3.list_object_versions(Bucket=bucket, Prefix=f"{setup.repo}/_lakefs_gc/doctor/")
    assert not left.get("Versions"), left
    assert not left.get("DeleteMarkers"), left
    assert "scratch key: s3://" in out
    assert "removed" in out


def test_a_wrong_lakefs_key_fails_with_its_line(on_moto, tmp_path, capsys, monkeypatch):
    server, s3, bucket, options = on_moto
    setup = make_repo(server, s3, bucket, tmp_path, options)
    rc, out, _ = setup.doctor(capsys, monkeypatch, lakefs_secret="not-the-secret")
    assert rc == 1
    (fail,) = lines(out, "FAIL")
    assert fail.startswith("FAIL  lakeFS key: lakeFS at ")
    assert "HTTP 401" in fail
    assert "fix: give the access key" in fail


def test_no_gc_rules_fails_with_its_line(on_moto, tmp_path, capsys, monkeypatch):
    server, s3, bucket, options = on_moto
    setup = make_repo(server, s3, bucket, tmp_path, options, rules=False)
    rc, out, _ = setup.doctor(capsys, monkeypatch, "--no-prepare")
    assert rc == 1
    (fail,) = lines(out, "FAIL")
    assert fail.startswith("FAIL  GC rules: repository")
    assert "fix: lakectl gc set-config" in fail


def test_a_pyspark_client_skew_fails_with_its_line(on_moto, tmp_path, capsys, monkeypatch):
    from importlib.metadata import version

    server, s3, bucket, options = on_moto
    setup = make_repo(server, s3, bucket, tmp_path, options)
    fake = tmp_path / "site"
    meta = fake / "pyspark_client-4.1.1.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: pyspark-client\nVersion: 4.1.1\n")
    monkeypatch.syspath_prepend(str(fake))
    rc, out, _ = setup.doctor(capsys, monkeypatch, "--no-prepare")
    assert rc == 1
    (fail,) = lines(out, "FAIL")
    spark = version("pyspark")
    assert fail == (
        f"FAIL  pyspark on the task: pyspark {spark}, pyspark-client 4.1.1: unequal, they corrupt each other's "
        f"pyspark/ folder; fix: pip install pyspark=={spark} pyspark-client=={spark} (both write the pyspark/ folder)"
    )


def test_an_inventory_listing_with_no_inventory_fails_with_its_line(on_moto, tmp_path, capsys, monkeypatch):
    server, s3, bucket, options = on_moto
    setup = make_repo(server, s3, bucket, tmp_path, options)
    listing = {"source": "inventory", "inventory": {"location": f"s3://{bucket}/inventory/none", "source_prefix": ""}}
    entry = {"repository": setup.repo, "storage_conn_id": "lakefs_gc_test_none", "listing": listing}
    (tmp_path / f"{setup.repo}.yaml").write_text(yaml.safe_dump({"repositories": [entry]}))
    rc, out, _ = setup.doctor(capsys, monkeypatch, "--no-prepare")
    assert rc == 1
    (fail,) = lines(out, "FAIL")
    assert fail.startswith(f"FAIL  inventory: {setup.repo}: no usable inventory: ")
    assert "a clean run is refused" in fail


@pytest.mark.parametrize("kind", ["local", "azure"])
def test_other_stores_are_tried_through_their_adapter(kind, real_lakefs, tmp_path, capsys, monkeypatch):
    server = real_lakefs(kind)
    options = server.store.options() if kind == "azure" else None
    setup = make_repo(server, None, "", tmp_path, options, namespace=server.namespace("{name}", "doctor"))
    rc, out, err = setup.doctor(capsys, monkeypatch, *(["--local-root", server.local_root] if kind == "local" else []))
    assert rc == 0, out + err
    for what in ("write", "read", "list", "delete"):
        assert f"PASS  storage {what}: {what} " in out, out
    assert "WARN  storage restore path: not tried" in out
    assert not list(setup_storage(server, setup).list("_lakefs_gc/"))  # the scratch key is gone


def setup_storage(server, setup: Setup):
    from lakefs_gc.storage import open_storage

    ns = server.client().repositories_api.get_repository(setup.repo).storage_namespace
    return open_storage(ns, setup.options, server.local_root)


# ---------------------------------------------------------------------------------------------
# IAM enforced: a moto server of its own


@pytest.fixture(scope="module")
def iam_moto(tmp_path_factory):
    """A moto server whose first three requests make an admin user; every later one is authorized."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("moto-iam") / "moto.log"
    proc = start_server(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        log,
        f"{url}/moto-api/",
        env={"INITIAL_NO_AUTH_ACTION_COUNT": "3"},
        timeout=60,
    )
    try:
        import boto3

        def iam(key: str = "x", secret: str = "x"):
            return boto3.client("iam", endpoint_url=url, region_name="us-east-1", aws_access_key_id=key,
                                aws_secret_access_key=secret)  # fmt: skip

        root = iam()
        root.create_user(UserName="admin")
        root.put_user_policy(
            UserName="admin",
            PolicyName="all",
            PolicyDocument=json.dumps(
                {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
            ),
        )
        ak = root.create_access_key(UserName="admin")["AccessKey"]
        admin = iam(ak["AccessKeyId"], ak["SecretAccessKey"])
        admin.create_user(UserName="gc")
        gk = admin.create_access_key(UserName="gc")["AccessKey"]
        yield url, ak, gk, admin
    finally:
        stop_group(proc)


@dataclass
class Store:  # what lakefs_sandbox.real_lakefs.config reads of an S3 store
    endpoint_url: str
    access_key: str
    secret_key: str
    region: str = "us-east-1"


def test_the_printed_policy_is_enough_for_a_whole_run_and_each_action_is_needed(
    iam_moto, tmp_path_factory, tmp_path, capsys, monkeypatch
):
    url, ak, gk, admin = iam_moto
    store = Store(url, ak["AccessKeyId"], ak["SecretAccessKey"])
    server = start_real_lakefs(tmp_path_factory.mktemp("lakefs-iam"), "s3", store)
    try:
        s3_admin = make_s3_client(S3Options(endpoint_url=url, access_key_id=store.access_key,
                                            secret_access_key=store.secret_key))  # fmt: skip
        bucket = versioned_bucket(s3_admin, f"iam-{uuid.uuid4().hex[:8]}")
        gc_options = S3Options(
            endpoint_url=url, access_key_id=gk["AccessKeyId"], secret_access_key=gk["SecretAccessKey"]
        )
        setup = make_repo(server, s3_admin, bucket, tmp_path, gc_options)

        def allow(policy: dict) -> None:
            admin.put_user_policy(UserName="gc", PolicyName="lakefs-gc", PolicyDocument=json.dumps(policy))

        # no policy: denied everywhere
        rc, out, _ = setup.doctor(capsys, monkeypatch, "--no-prepare")
        assert rc == 1
        assert "FAIL  s3:PutObject: PutObject" in out, out
        rc, out, err = setup.doctor(capsys, monkeypatch, "--policy")
        assert rc == 0, err
        policy, _ = json.JSONDecoder().raw_decode(out[out.index("{") :])
        allow(policy)
        rc, out, err = setup.doctor(capsys, monkeypatch)
        assert rc == 0, out + err
        # a whole run with the GC user's key: marks, sweeps, reports
        with LakeFSClient(server.url, server.access_key, server.secret_key) as client:
            # with the doctor's checks first, as the operator runs it
            ctx = prepare_run(client, setup.repo, SETTINGS, now=datetime.now(UTC), airflow_run_id="iam",
                              work_dir=str(tmp_path / "work"), storage_options=gc_options, parallelism=1,
                              preflight=True)  # fmt: skip
            secrets = {ENV_LAKEFS_ACCESS_KEY: server.access_key, ENV_LAKEFS_SECRET_KEY: server.secret_key}
            results = run_steps(None, ctx, client, {**secrets, **gc_options.to_env()})
        assert results["delete"].counts.deleted >= 1, results["delete"]
        assert results["save_report"].summary_uri, results["save_report"]
        # each action dropped: the doctor fails on its line
        for action in S3_ACTIONS:
            without = json.loads(json.dumps(policy))
            for statement in without["Statement"]:
                statement["Action"] = [a for a in statement["Action"] if a != action.name]
            without["Statement"] = [s for s in without["Statement"] if s["Action"]]
            allow(without)
            rc, out, _ = setup.doctor(capsys, monkeypatch, "--no-prepare")
            failed = lines(out, "FAIL")
            assert rc == 1, (action.name, out)
            assert any(f.startswith(f"FAIL  {action.name}: ") for f in failed), (action.name, out)
        # and a run fails closed at its start, before any mark (the sweep's right taken away)
        without = json.loads(json.dumps(policy))
        for statement in without["Statement"]:
            statement["Action"] = [a for a in statement["Action"] if a != "s3:DeleteObject"]
        allow({**without, "Statement": [s for s in without["Statement"] if s["Action"]]})
        marks = s3_admin.list_objects_v2(Bucket=bucket, Prefix=f"{setup.repo}/_lakefs/retention/gc/unified/")
        with LakeFSClient(server.url, server.access_key, server.secret_key) as client:
            with pytest.raises(
                PreflightFailed, match=r"nothing was marked or deleted: .*FAIL  s3:DeleteObject: Delete"
            ):
                prepare_run(client, setup.repo, SETTINGS, now=datetime.now(UTC), airflow_run_id="iam-2",
                            work_dir=str(tmp_path / "work"), storage_options=gc_options, preflight=True)  # fmt: skip
        after = s3_admin.list_objects_v2(Bucket=bucket, Prefix=f"{setup.repo}/_lakefs/retention/gc/unified/")
        assert [o["Key"] for o in after.get("Contents", [])] == [o["Key"] for o in marks.get("Contents", [])]
    finally:
        server.stop()
