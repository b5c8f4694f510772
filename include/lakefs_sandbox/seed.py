r"""
Seed a sample lakeFS repository whose history exercises every GC rule, through ``lakefs-sdk``.

Works against any lakeFS (the demo's emulator, the docker-compose stack, a real server): it takes an
endpoint and keys. The returned manifest says, per object, what a GC run should do with it *when
the history is old enough*: on the emulator the demo moves the server clock back while seeding
(the ``phase`` hook), so commits are ten days old and the retention window (1 day) has passed.
On a real server everything is new: the same GC run then deletes nothing (objects are younger
than the cutoff and every commit is within retention) until the data ages.

    python -m lakefs_sandbox.seed --endpoint http://localhost:8000 --repository sample-repo \
        --namespace s3://bucket/sample-repo [--manifest out.json]

Keys come from ``LAKEFS_ACCESS_KEY_ID`` / ``LAKEFS_SECRET_ACCESS_KEY`` (never argv).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

KEPT, DELETED = "kept", "deleted"
# Phases, oldest first; ``phase(name)`` is called before each (the emulator demo sets its clock).
PHASE_OLD, PHASE_RECENT, PHASE_FRESH = "old", "recent", "fresh"
STAGED_ON_MAIN = 5  # several staged objects: with a small page size, uncommitted preparation pages
# lakefs_sdk's models are pydantic v1 models, whose optional fields (``Field(None, ...)``) mypy
# takes for required ones: hence ``type: ignore[call-arg]`` where one is built without them.


@dataclass
class SeededObject:
    """One object the seed made, and what a GC run should do with it."""

    label: str  # what the object is, e.g. "overwritten in an expired commit"
    path: str  # path in the repository (branch:path)
    address: str  # physical address relative to the storage namespace (what GC lists and deletes)
    expect: str  # "kept" or "deleted" by a GC run with retention 1 day once the history is old
    phase: str


@dataclass
class Manifest:
    """The seeded repository, its namespace and its objects: what a GC run should do with each."""

    repository: str
    namespace: str
    objects: list[SeededObject] = field(default_factory=list)

    def expected(self, expect: str) -> set[str]:
        return {o.address for o in self.objects if o.expect == expect}

    def to_json(self) -> str:
        return json.dumps(
            {"repository": self.repository, "namespace": self.namespace, "objects": [asdict(o) for o in self.objects]},
            indent=2,
        )


class RepositoryExists(RuntimeError):
    """The repository to seed is already there."""


def _relative(namespace: str | tuple[str, ...], address: str) -> str:
    from lakefs_gc.listing.committed import relative_key

    return relative_key(namespace, address)


def link_object(client, repository: str, branch: str, path: str, data: bytes, storage, roots: tuple[str, ...]) -> str:
    """
    Stage ``path`` the way lakeFS's clients write large objects.

    ``getPhysicalAddress``, the object written by the client at the address handed out
    (``storage``/``roots``: the namespace; the key keeps its ``,<signature>``), then
    ``linkPhysicalAddress``. Returns the address as handed out: on the local blockstore the resolved
    ``local:///<root>/...`` form, which lakeFS's uncommitted mark leaves out.
    """
    import lakefs_sdk

    loc = client.staging_api.get_physical_address(repository, branch, path)
    storage.put(_relative(roots, loc.physical_address), data)
    client.staging_api.link_physical_address(
        repository,
        branch,
        path,
        lakefs_sdk.StagingMetadata(  # type: ignore[call-arg]
            staging=loc, checksum="e", size_bytes=len(data)
        ),
    )
    return loc.physical_address


# How far back ``backdate=True`` dates each phase's commits (CommitCreation.date; real lakeFS accepts it).
PHASE_AGE = {PHASE_OLD: 10 * 86400, PHASE_RECENT: 3600}


def seed(
    client,
    repository: str,
    namespace: str,
    phase: Callable[[str], None] = lambda name: None,
    phases: tuple[str, ...] = (PHASE_OLD, PHASE_RECENT),
    backdate: bool = False,
    local_root: str | None = None,
) -> Manifest:
    """
    Create ``repository`` on ``namespace`` and run the given phases (see module doc).

    ``client`` is a ``lakefs_sdk.client.LakeFSClient``. Raises :class:`RepositoryExists` if the
    repository is already there (seeding twice would not give the documented expectations).
    The ``fresh`` phase (objects newer than any cutoff) is run separately with :func:`seed_fresh`.
    ``backdate``: date every commit back by its phase's age (``PHASE_AGE``) with the commit API's
    ``date``, for a lakeFS whose clock cannot be moved (a real server). ``local_root``: the server's
    ``blockstore.local.path`` for a ``local://`` namespace (lakeFS returns resolved addresses).
    """
    import time

    from lakefs_gc.storage import parse_namespace

    roots = parse_namespace(namespace, local_root).roots()
    current = {"phase": PHASE_OLD}
    import lakefs_sdk
    from lakefs_sdk.exceptions import NotFoundException

    try:
        client.repositories_api.get_repository(repository)
        raise RepositoryExists(
            f"repository {repository!r} already exists at {client.repositories_api.api_client.configuration.host}"
        )
    except NotFoundException:
        pass
    m = Manifest(repository, namespace)

    def up(branch: str, path: str, data: bytes, label: str, expect: str, ph: str) -> str:
        stats = client.objects_api.upload_object(repository, branch, path, content=data)
        address = _relative(roots, stats.physical_address)
        m.objects.append(SeededObject(label, f"{branch}:{path}", address, expect, ph))
        return address

    def commit(branch: str, message: str) -> None:
        date = int(time.time()) - PHASE_AGE[current["phase"]] if backdate else None
        client.commits_api.commit(repository, branch, lakefs_sdk.CommitCreation(message=message, date=date))  # type: ignore[call-arg]

    if PHASE_OLD in phases:
        phase(PHASE_OLD)
        current["phase"] = PHASE_OLD
        client.repositories_api.create_repository(
            lakefs_sdk.RepositoryCreation(  # type: ignore[call-arg]
                name=repository, storage_namespace=namespace, default_branch="main"
            )
        )
        up("main", "tables/keep.csv", b"id,v\n1,a\n", "committed, in main's HEAD", KEPT, PHASE_OLD)
        commit("main", "add keep.csv")
        up("main", "tables/over.csv", b"id,v\n1,old\n", "overwritten; only in expired commits", DELETED, PHASE_OLD)
        commit("main", "add over.csv")
        up("main", "tables/over.csv", b"id,v\n1,new\n", "the overwrite, in main's HEAD", KEPT, PHASE_OLD)
        commit("main", "overwrite over.csv")
        up("main", "tables/gone.csv", b"id\n9\n", "deleted from main; only in expired commits", DELETED, PHASE_OLD)
        commit("main", "add gone.csv")
        client.objects_api.delete_object(repository, "main", "tables/gone.csv")
        commit("main", "delete gone.csv")
        # a branch with staged work, then deleted
        client.branches_api.create_branch(repository, lakefs_sdk.BranchCreation(name="dev", source="main"))  # type: ignore[call-arg]
        up("dev", "wip/dev.txt", b"dev work", "staged on a branch that was deleted", DELETED, PHASE_OLD)
        client.branches_api.delete_branch(repository, "dev")
        # a branch with staged work, then reset
        client.branches_api.create_branch(repository, lakefs_sdk.BranchCreation(name="reset-me", source="main"))  # type: ignore[call-arg]
        up("reset-me", "wip/reset.txt", b"reset work", "staged on a branch that was reset", DELETED, PHASE_OLD)
        client.branches_api.reset_branch(repository, "reset-me", lakefs_sdk.ResetCreation(type="reset"))
        # staged (uncommitted) objects on main: live data
        for i in range(STAGED_ON_MAIN):
            up("main", f"staging/s{i}.json", b'{"i": %d}' % i, "staged (uncommitted) on main", KEPT, PHASE_OLD)
        up("main", "staging/tmp.json", b"{}", "staged, then deleted before any commit", DELETED, PHASE_OLD)
        client.objects_api.delete_object(repository, "main", "staging/tmp.json")
        client.repositories_api.set_gc_rules(
            repository, lakefs_sdk.GarbageCollectionRules(default_retention_days=1, branches=[])
        )
    if PHASE_RECENT in phases:
        phase(PHASE_RECENT)
        current["phase"] = PHASE_RECENT
        client.branches_api.create_branch(repository, lakefs_sdk.BranchCreation(name="recent", source="main"))  # type: ignore[call-arg]
        up(
            "recent",
            "tables/recent.csv",
            b"id\n1\n",
            "overwritten, but in a commit within retention",
            KEPT,
            PHASE_RECENT,
        )
        commit("recent", "add recent.csv")
        up("recent", "tables/recent.csv", b"id\n2\n", "the overwrite, in recent's HEAD", KEPT, PHASE_RECENT)
        commit("recent", "overwrite recent.csv")
    return m


def seed_fresh(
    client, manifest: Manifest, phase: Callable[[str], None] = lambda name: None, local_root: str | None = None
) -> None:
    """Garbage newer than any cutoff (staged, then deleted): a GC run right after must keep it."""
    from lakefs_gc.storage import parse_namespace

    phase(PHASE_FRESH)
    stats = client.objects_api.upload_object(manifest.repository, "main", "staging/fresh.json", content=b"{}")
    roots = parse_namespace(manifest.namespace, local_root).roots()
    manifest.objects.append(
        SeededObject(
            "garbage, but newer than the cutoff",
            "main:staging/fresh.json",
            _relative(roots, stats.physical_address),
            KEPT,
            PHASE_FRESH,
        )
    )
    client.objects_api.delete_object(manifest.repository, "main", "staging/fresh.json")


def run_import(client, repository: str, branch: str, paths: list, message: str, timeout: float = 600.0) -> None:
    """
    Import ``paths`` (``lakefs_sdk.ImportLocation``) into ``branch`` as one commit with lakeFS.

    Waited for (bounded by ``timeout`` seconds).
    """
    import time

    import lakefs_sdk

    task = client.import_api.import_start(
        repository,
        branch,
        lakefs_sdk.ImportCreation(paths=paths, commit=lakefs_sdk.CommitCreation(message=message)),  # type: ignore[call-arg]
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = client.import_api.import_status(repository, branch, task.id)
        if st.error:  # lakeFS reports a failed import with completed: false
            raise RuntimeError(f"import into {repository}/{branch} failed: {st.error}")
        if st.completed:
            return
        time.sleep(0.05)
    raise TimeoutError(f"import into {repository}/{branch} did not complete within {timeout:.0f}s")


def sdk_client(endpoint: str, access_key: str, secret_key: str):
    import lakefs_sdk
    from lakefs_sdk.client import LakeFSClient

    host = endpoint.rstrip("/")
    if not host.endswith("/api/v1"):
        host += "/api/v1"
    return LakeFSClient(lakefs_sdk.Configuration(host=host, username=access_key, password=secret_key))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lakefs_sandbox.seed", description=__doc__.split("\n\n")[0])
    p.add_argument("--endpoint", required=True, help="lakeFS URL, e.g. http://localhost:8000")
    p.add_argument("--repository", default="sample-repo")
    p.add_argument("--namespace", required=True, help="storage namespace, e.g. s3://bucket/sample-repo")
    p.add_argument("--manifest", help="write the manifest (objects and expected GC outcome) here as JSON")
    p.add_argument(
        "--backdate",
        action="store_true",
        help="date the commits back (10 days, 1 hour) with the commit API, so a GC run soon after "
        "finds expired commits on a real server",
    )
    p.add_argument("--local-root", help="the server's blockstore.local.path, for a local:// namespace")
    a = p.parse_args(argv)
    if a.namespace.startswith("local://") and not a.local_root:
        p.error(
            f"--namespace {a.namespace} is a local:// namespace: give --local-root, the lakeFS server's "
            "blockstore.local.path (where it keeps local://<repo> as <root>/<repo>)"
        )
    access, secret = os.environ.get("LAKEFS_ACCESS_KEY_ID"), os.environ.get("LAKEFS_SECRET_ACCESS_KEY")
    if not access or not secret:
        print("error: set LAKEFS_ACCESS_KEY_ID and LAKEFS_SECRET_ACCESS_KEY to the lakeFS keys", file=sys.stderr)
        return 2
    try:
        m = seed(
            sdk_client(a.endpoint, access, secret),
            a.repository,
            a.namespace,
            backdate=a.backdate,
            local_root=a.local_root,
        )
    except RepositoryExists as e:
        print(f"{e}; not seeding again", file=sys.stderr)
        return 0
    except Exception as e:
        reason = getattr(e, "reason", None) or getattr(e, "body", None) or e
        print(
            f"error: seeding {a.repository} at {a.endpoint} failed: {type(e).__name__}: "
            f"{str(reason).strip().splitlines()[0] if str(reason).strip() else ''}",
            file=sys.stderr,
        )
        return 1
    if a.manifest:
        with open(a.manifest, "w") as f:
            f.write(m.to_json())
    print(
        f"seeded {a.repository} on {a.namespace}: {len(m.objects)} objects "
        f"({len(m.expected(DELETED))} garbage once older than the retention and the cutoff)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
