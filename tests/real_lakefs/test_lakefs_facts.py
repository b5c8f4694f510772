"""Facts about lakeFS 1.84 that the next design (issue 28: a staged-entry check whose cost follows
the candidates) rests on, established on lakeFS itself and kept true here: a lakeFS or emulator
upgrade that changes one fails this file first.

1. The checksum lakeFS records for an entry, against what each store says of the object (issue 28
   matches candidates to HEAD entries by size and checksum):

   ==========  ===============================  =============================================
   blockstore  uploadObject / copyObject         what the store says of the object
   ==========  ===============================  =============================================
   local       MD5 of the content, hex           nothing in a listing: the file must be read
   S3          MD5 of the content, hex           ETag = that MD5 for a single-part object; a
                                                 multipart upload (lakeFS uploads 12 MiB in
                                                 5 MiB parts) has ``<md5 of part md5s>-<parts>``
   Azure Blob  MD5 of the content, hex           Content-MD5 = that MD5 only when uploaded in
                                                 one shot (1 KiB here); none for a block upload
                                                 (12 MiB); the ETag is opaque
   GCS         MD5 of the content, hex           md5Hash = that MD5 (fake-gcs-server; real GCS
                                                 has no md5Hash for composite objects)
   ==========  ===============================  =============================================

   A copy (``copyObject``) keeps the source's checksum; on moto and fake-gcs-server its object's
   ETag/md5Hash is the content's MD5 even for a multipart source (the stand-ins' server-side copy).
   An entry staged through the link flow carries whatever checksum the client gave
   (``linkPhysicalAddress``): nothing ties it to the bytes.
2. A merge, a revert or a cherry-pick into a branch that holds a re-staged entry with HEAD's
   identity is accepted (its dirty check is the uncommitted diff, which skips that entry:
   ``pkg/graveler/uncommitted_diff_iterator.go``), and the branch's staging is dropped with it:
   afterwards the branch reads the new HEAD's entry and the re-staged object is referenced by
   nothing (garbage for the next run).
"""

from __future__ import annotations

import base64
import hashlib
import os
import uuid

import lakefs_sdk
import pytest

from lakefs_gc.storage import parse_namespace, relative_to

SMALL, LARGE = 1024, 12 * 1024 * 1024


def _store_sum(kind: str, server, ns: str, key: str) -> str | None:
    """What the store says of ``key``'s content, as hex MD5 when it says one (S3: the ETag as is)."""
    store = server.store
    if kind == "local":
        return None
    bucket, prefix = parse_namespace(ns).bucket, parse_namespace(ns).prefix.strip("/")
    name = f"{prefix}/{key}" if prefix else key
    if kind == "s3":
        return store.client().head_object(Bucket=bucket, Key=name)["ETag"].strip('"')
    if kind == "azure":
        from lakefs_gc.storage.azure import make_service_client

        props = (
            make_service_client(store.options())
            .get_container_client(bucket)
            .get_blob_client(name)
            .get_blob_properties()
        )
        md5 = props.content_settings.content_md5
        return bytes(md5).hex() if md5 else None
    from lakefs_gc.storage.gcs import make_gcs_client

    blob = make_gcs_client(store.options()).bucket(bucket).get_blob(name)
    return base64.b64decode(blob.md5_hash).hex() if blob.md5_hash else None


@pytest.mark.parametrize("kind", ["local", "s3", "azure", "gs"])
def test_the_checksum_lakefs_records_against_what_the_store_says(kind, real_lakefs, moto_server):
    server = real_lakefs(kind)
    bucket = moto_server.create_bucket(f"facts-{uuid.uuid4().hex[:8]}") if kind == "s3" else "facts"
    name = f"facts-{kind}-{uuid.uuid4().hex[:6]}"
    ns = server.namespace(name, bucket)
    roots = parse_namespace(ns, server.local_root).roots()
    client = server.client()
    client.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=name, storage_namespace=ns, default_branch="main")
    )
    seen = {}
    for label, size in (("small", SMALL), ("large", LARGE)):
        data = os.urandom(size)
        st = client.objects_api.upload_object(name, "main", f"up/{label}", content=data)
        assert st.checksum == hashlib.md5(data).hexdigest(), (label, st.checksum)  # lakeFS: the content's MD5
        key = relative_to(roots, st.physical_address)
        if kind == "local":  # nothing in a listing; the file is the content
            assert hashlib.md5((server.root / "ns" / name / key).read_bytes()).hexdigest() == st.checksum
        seen[label] = (st.checksum, _store_sum(kind, server, ns, key))
        copy = client.objects_api.copy_object(
            name, "main", f"copy/{label}", lakefs_sdk.ObjectCopyCreation(src_path=f"up/{label}", src_ref="main")
        )
        assert copy.checksum == st.checksum
        assert copy.physical_address != st.physical_address
        seen[f"copy {label}"] = (copy.checksum, _store_sum(kind, server, ns, relative_to(roots, copy.physical_address)))
    loc = client.staging_api.get_physical_address(name, "main", "linked")
    data = b"linked bytes"
    if kind == "local":
        path = loc.physical_address[len("local://") :]
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    else:
        from tests.conftest import ns_storage

        ns_storage(ns, server.store).put(relative_to(roots, loc.physical_address), data)
    linked = client.staging_api.link_physical_address(
        name,
        "main",
        "linked",
        lakefs_sdk.StagingMetadata(staging=loc, checksum="any-client-value", size_bytes=len(data)),
    )
    assert linked.checksum == "any-client-value"  # the client's word, never checked against the bytes
    print(f"\n{kind}: " + "; ".join(f"{k}: lakeFS {v[0][:8]}.. store {v[1]}" for k, v in seen.items()))
    if kind == "local":
        return
    small, large = seen["small"], seen["large"]
    assert small[1] == small[0], small  # single-shot uploads: the store's MD5 is lakeFS's checksum
    if kind == "s3":
        assert large[1] != large[0], large
        assert large[1].endswith("-3"), large  # multipart: 5 MiB parts
    elif kind == "azure":
        assert large[1] is None, large  # a block upload has no Content-MD5
    else:
        assert large[1] == large[0], large
    assert seen["copy small"][1] == small[0]


def _local_repo(real_lakefs, what: str):
    """A new repository on the local lakeFS: (client, name)."""
    server = real_lakefs("local")
    client = server.client()
    repo = f"facts-{what}-{uuid.uuid4().hex[:6]}"
    client.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=server.namespace(repo), default_branch="main")
    )
    return client, repo


def test_merge_revert_and_cherry_pick_onto_a_same_identity_restaging_are_accepted_and_drop_it(real_lakefs):
    client, repo = _local_repo(real_lakefs, "restage")
    o, b, c = client.objects_api, client.branches_api, client.commits_api
    o.upload_object(repo, "main", "a", content=b"A1")
    o.upload_object(repo, "main", "b", content=b"B1")
    c.commit(repo, "main", lakefs_sdk.CommitCreation(message="c1"))
    b.create_branch(repo, lakefs_sdk.BranchCreation(name="feat", source="main"))
    o.upload_object(repo, "feat", "a", content=b"A2")
    f1 = c.commit(repo, "feat", lakefs_sdk.CommitCreation(message="f1")).id
    o.upload_object(repo, "main", "b", content=b"B2")
    c2 = c.commit(repo, "main", lakefs_sdk.CommitCreation(message="c2")).id
    ops = {
        "merge": lambda: client.refs_api.merge_into_branch(repo, "feat", "main"),
        "revert": lambda: b.revert_branch(repo, "main", lakefs_sdk.RevertCreation(ref=c2, parent_number=0)),
        "cherry-pick": lambda: b.cherry_pick(repo, "main", lakefs_sdk.CherryPickCreation(ref=f1)),
    }
    for op, call in ops.items():
        committed = o.stat_object(repo, "main", "a").physical_address
        restaged = o.upload_object(repo, "main", "a", content=bytes(o.get_object(repo, "main", "a"))).physical_address
        assert restaged != committed
        assert o.stat_object(repo, "main", "a").physical_address == restaged
        assert not b.diff_branch(repo, "main").results  # the uncommitted diff skips it: not dirty
        call()  # accepted
        after = o.stat_object(repo, "main", "a").physical_address
        assert after != restaged, f"{op}: the branch still reads the re-staged object"
        head = b.get_branch(repo, "main").commit_id
        assert after == o.stat_object(repo, head, "a").physical_address, f"{op}: main reads other than its HEAD"


def test_a_hard_reset_of_a_branch_holding_a_same_identity_restaging_is_accepted_and_keeps_it(real_lakefs):
    """lakeFS 1.84's ResetHard refuses a dirty branch only on its sealed staging tokens
    (``pkg/graveler/graveler.go`` ``ResetHard``, ``isSealedEmpty``): the entry re-staged with HEAD's
    identity stays, the branch still reads it, and against the new HEAD it is a change. lakeFS's
    mark taken before the reset lacks it; the staged check finds it through the HEAD recorded at the
    mark (lakefs_gc.listing.staged; tests/real_lakefs/test_interleavings.py runs it between tasks)."""
    client, repo = _local_repo(real_lakefs, "hard")
    o, b, c = client.objects_api, client.branches_api, client.commits_api
    o.upload_object(repo, "main", "a", content=b"v1")
    first = c.commit(repo, "main", lakefs_sdk.CommitCreation(message="c1")).id
    o.upload_object(repo, "main", "a", content=b"v2")
    c.commit(repo, "main", lakefs_sdk.CommitCreation(message="c2"))
    restaged = o.upload_object(repo, "main", "a", content=b"v2").physical_address
    assert not b.diff_branch(repo, "main").results  # same identity: not a change
    lakefs_sdk.ExperimentalApi(client.branches_api.api_client).hard_reset_branch(repo, "main", first)  # accepted
    assert b.get_branch(repo, "main").commit_id == first
    assert o.stat_object(repo, "main", "a").physical_address == restaged  # kept, still read
    assert [(d.path, d.type) for d in b.diff_branch(repo, "main").results] == [("a", "changed")]
