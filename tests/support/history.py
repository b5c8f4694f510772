"""Model-based random repository histories and an oracle independent of the GC code.

A history is a list of abstract operations drawn from a seed (``ops``), applied through lakefs-sdk
(``apply``): branches from random refs (tags too), back-dated commits, uploads, overwrites, deletes,
resets, branch deletions, objects written through the staging link flow (``getPhysicalAddress``,
the client writes, ``linkPhysicalAddress``; some written and never linked), copies (same branch,
across branches, from a commit or a tag), merges (some squashed, conflicts resolved either way),
reverts and cherry-picks (of merge commits too, with a parent number), tags created and deleted,
committed objects staged again with the same identity (a copy onto itself, the same bytes
uploaded again), staged changes left at the end, random GC rules. Operations name branches and paths by index and
are resolved against the state at the time they run, so any sub-list of a history is a history
too: that is how a failure is shrunk. Merges, reverts and cherry-picks carry lakeFS's own commit
time (the API has no date for them); a dirty branch is committed first, as a user would.

Several histories can share one repository (``prefix``: each works on its own branches, made from
the repository's first commit, and gives each of them an explicit retention): one GC run then
judges them all at once.

The oracle (``oracle``) uses only lakeFS's public API and the generator's own bookkeeping, never
the GC's code:

* must keep: every object visible on a live branch (staged or committed), and every object of the
  commits lakeFS's documentation says to keep: per live branch, its first-parent log from HEAD,
  each commit created within the retention, plus the first one older. A merge commit's first
  parent is the destination's HEAD, so the merged-in side is kept only where it is visible.
  Tags are not kept: lakeFS's retention walk (``pkg/graveler/retention``) starts from branch HEADs
  and ancestry leaves only, so a tagged commit is kept only when a walk keeps it;
* must go: addresses written (uploads, copies, link-flow objects, linked or not) but never
  committed and no longer staged anywhere.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import time
from dataclasses import dataclass, field

import lakefs_sdk

DAY = 86400
PATHS = 12  # distinct object paths: overwrites and deletes hit the same names often
# The staging link flow (getPhysicalAddress, write, linkPhysicalAddress). On the local blockstore
# lakeFS hands out the resolved address, links it FULL and leaves it out of its uncommitted mark
# (issue 16 item 1): such entries left staged past the cutoff are what the GC's own defence must
# keep. ``LAKEFS_GC_HISTORY_LINK_FLOW=0`` leaves the operation out (to judge the rest alone).
LINK_FLOW = os.environ.get("LAKEFS_GC_HISTORY_LINK_FLOW", "1") != "0"
# Re-staging a committed object's identity (lakeFS's entry identity: size, checksum, user metadata,
# content type; not the address): a copy onto a path whose committed entry it equals, or the same
# bytes uploaded again. The staged entry has a new address and is what reads return, yet lakeFS's
# uncommitted diff (pkg/graveler/uncommitted_diff_iterator.go: equal identity is "no change")
# leaves it out of prepareGarbageCollectionUncommitted and of diffBranch.
# ``LAKEFS_GC_HISTORY_SAME_IDENTITY=0`` undoes such re-stagings (a reset of the path).
SAME_IDENTITY = os.environ.get("LAKEFS_GC_HISTORY_SAME_IDENTITY", "1") != "0"
CONFLICT = "conflict"  # what a refused merge, revert or cherry-pick answered (409)


def ops(seed: int, n: int) -> list[tuple]:
    """``n`` abstract operations from ``seed`` (indices are resolved when applied)."""
    rng = random.Random(seed)
    out: list[tuple] = []
    for _ in range(n):
        r = rng.random()
        b, p, x = rng.randrange(8), rng.randrange(PATHS), rng.random()
        if r < 0.25:
            out.append(("upload", b, p))
        elif r < 0.32:
            out.append(("link", b, p, x))  # x < 0.15: written, never linked
        elif r < 0.38:
            out.append(("copy", b, p, rng.randrange(PATHS), x))  # x: same branch, another branch, a commit
        elif r < 0.46:
            out.append(("delete", b, p))
        elif r < 0.62:
            out.append(("commit", b, round(0.05 + 2.5 * x * x, 3)))  # days the history's clock advances
        elif r < 0.67:
            out.append(("branch", b, rng.randrange(64)))  # from a branch head, an earlier commit or a tag
        elif r < 0.71:
            out.append(("fork", rng.randrange(64), p))  # from an earlier commit: drop a path, commit recently
        elif r < 0.79:
            out.append(("merge", b, rng.randrange(64), x))  # x < 0.3 squash; conflicts: x picks the side
        elif r < 0.82:
            out.append(("revert", b, rng.randrange(64)))
        elif r < 0.85:
            out.append(("cherry_pick", b, rng.randrange(64)))
        elif r < 0.89:
            out.append(("tag", rng.randrange(64), x))  # x < 0.3: delete a tag
        elif r < 0.91:
            out.append(("reset", b))
        elif r < 0.93:
            out.append(("import", b, p))  # an object from outside the namespace, committed
        elif r < 0.95:
            out.append(("restage", b, p, x))  # a committed object staged again, same identity
        else:
            out.append(("drop", b))  # delete a branch (never main)
    rules = (rng.randint(1, 10), {f"b{i}": rng.randint(1, 12) for i in range(1, 8) if rng.random() < 0.4})
    out.append(("rules", rules))
    return out


@dataclass
class History:
    repo: str
    namespace: str
    steps: list[tuple]
    uploaded: set[str] = field(default_factory=set)  # every address written through lakeFS
    committed_ever: set[str] = field(default_factory=set)  # addresses some commit has referenced
    rules: tuple[int, dict[str, int]] = (1, {})
    outside: list[str] = field(default_factory=list)  # imported from outside: local paths, s3:// URIs
    linked: dict[str, str] = field(default_factory=dict)  # address lakeFS prints for a linked entry -> key
    done: dict[str, int] = field(default_factory=dict)  # operations that took effect, by kind
    staged_linked: int = 0  # link-flow entries still staged at the end


def _rel(roots: tuple[str, ...], address: str) -> str:
    for root in roots:
        if address.startswith(root):
            return address[len(root) :]
    return address  # relative already


def create(client, repo: str, namespace: str) -> None:
    client.repositories_api.create_repository(
        lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=namespace, default_branch="main")
    )


def _written_key(roots: tuple[str, ...], address: str) -> str:
    """The namespace key of an address ``getPhysicalAddress`` handed out (signature included)."""
    key = _rel(roots, address)
    if "://" in key:
        raise AssertionError(f"address {address!r} is not under the namespace {roots}")
    return key


def apply(
    client,
    repo: str,
    namespace: str,
    roots: tuple[str, ...],
    steps: list[tuple],
    now: float | None = None,
    prefix: str = "",
    outside: str | None = None,
    storage=None,
    outside_storage=None,
    link_flow: bool | None = None,
    same_identity: bool | None = None,
    cherry_pick_any: bool = True,
) -> History:
    """Apply ``steps`` to ``repo`` through lakefs-sdk, on branches named ``<prefix>main``,
    ``<prefix>b1``... (``prefix`` empty: the repository's own main). GC rules are returned in
    ``History.rules``, not set: :func:`set_rules` sets those of every history of a repository.
    ``outside``: where to import objects from, outside the namespace: a local directory, or with
    ``outside_storage`` (a storage of that URI) an ``s3://`` prefix (None: no imports).
    ``storage``: the namespace's storage, where the client writes link-flow objects (None: local
    addresses are written at their path, others skip the link flow). ``link_flow`` and
    ``same_identity``: None follows ``LINK_FLOW`` and ``SAME_IDENTITY``. ``cherry_pick_any``:
    False on lakeFS itself, where a cherry-picked commit that has metadata (a merge, an import)
    answers 404 for its full id until the server restarts (lakeFS 1.84's cherry-pick adds its
    origin to the cached source commit's metadata map, ``pkg/graveler/graveler.go``;
    ``tests/real_lakefs/test_quirks.py`` judges the GC on that alone): cherry-picks then take only
    commits made by ``commit``."""
    now = time.time() if now is None else now
    link_flow = LINK_FLOW if link_flow is None else link_flow
    same_identity = SAME_IDENTITY if same_identity is None else same_identity
    h = History(repo, namespace, steps)
    main = f"{prefix}main"
    if prefix:
        client.branches_api.create_branch(repo, lakefs_sdk.BranchCreation(name=main, source="main"))
    branches = [main]
    commits: list[str] = []
    merges: set[str] = set()  # commits with two parents (revert and cherry-pick need a parent number)
    plain: list[str] = []  # commits of ``commit``: no metadata
    tags: list[str] = []
    staged: dict[str, dict[str, str]] = {main: {}}  # branch -> path -> address, as the model sees it
    linked_keys: set[str] = set()
    clock = now - 10 * DAY
    serial = 0

    def done(kind: str) -> None:
        h.done[kind] = h.done.get(kind, 0) + 1

    def commit(branch: str, days: float) -> str | None:
        nonlocal clock
        clock = min(now - 60, clock + days * DAY)
        try:
            c = client.commits_api.commit(
                repo, branch, lakefs_sdk.CommitCreation(message=f"c{len(commits)}", date=int(clock))
            )
        except lakefs_sdk.exceptions.ApiException as e:
            if e.status != 400:  # "no changes" is fine
                raise
            return None
        commits.append(c.id)
        plain.append(c.id)
        h.committed_ever.update(staged.get(branch, {}).values())
        staged[branch] = {}
        return c.id

    def on_clean(branch: str, call):
        """``call()`` on ``branch``, committing its staged changes first when lakeFS finds it dirty
        (merge, revert and cherry-pick need a clean branch). ``CONFLICT`` on a conflict, None when
        lakeFS refuses otherwise (no changes, no such parent)."""
        for attempt in range(2):
            try:
                return call()
            except lakefs_sdk.exceptions.ApiException as e:
                if e.status == 400 and "dirty" in str(e.body) and attempt == 0:
                    commit(branch, 0.05)
                    continue
                if e.status == 409:
                    return CONFLICT
                if e.status == 400:
                    return None
                raise
        return None

    def staged_again(branch: str, path: str, address: str, stats) -> None:
        """Bookkeeping for an entry just staged at ``address``; a re-staging of the committed
        identity is counted, or undone when ``same_identity`` is off."""
        head = client.branches_api.get_branch(repo, branch).commit_id
        try:
            base = client.objects_api.stat_object(repo, head, path)
        except lakefs_sdk.exceptions.NotFoundException:
            base = None
        if base is not None and (base.checksum, base.size_bytes, base.metadata or {}, base.content_type) == (
            stats.checksum,
            stats.size_bytes,
            stats.metadata or {},
            stats.content_type,
        ):
            if not same_identity:
                client.branches_api.reset_branch(repo, branch, lakefs_sdk.ResetCreation(type="object", path=path))
                staged.setdefault(branch, {}).pop(path, None)
                return
            done("restage_same_identity")
        staged.setdefault(branch, {})[path] = address

    def moved(branch: str, cid: str, two_parents: bool = False) -> None:
        commits.append(cid)
        if two_parents:
            merges.add(cid)
        staged[branch] = {}

    for step in steps:
        kind = step[0]
        if kind == "rules":
            default, per_branch = step[1]
            h.rules = (default, {b: per_branch.get(b[len(prefix) :], default) for b in branches})
            continue
        branch = branches[step[1] % len(branches)]
        if kind == "upload":
            path = f"obj/{step[2]}.bin"
            serial += 1
            stats = client.objects_api.upload_object(repo, branch, path, content=f"{repo}/{prefix}{serial}".encode())
            address = _rel(roots, stats.physical_address)
            h.uploaded.add(address)
            staged.setdefault(branch, {})[path] = address
        elif kind == "link":
            if not link_flow:
                continue
            path = f"obj/{step[2]}.bin"
            loc = client.staging_api.get_physical_address(repo, branch, path)
            key = _written_key(roots, loc.physical_address)
            serial += 1
            data = f"{repo}/{prefix}{serial} linked".encode()
            if storage is not None:  # the client writes the object at the address, signature included
                storage.put(key, data)
            elif loc.physical_address.startswith("local://"):
                target = loc.physical_address[len("local://") :]
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "wb") as f:
                    f.write(data)
            else:
                continue
            h.uploaded.add(key)
            if step[3] < 0.15:  # written, never linked: garbage
                done("link_abandoned")
                continue
            stats = client.staging_api.link_physical_address(
                repo,
                branch,
                path,
                lakefs_sdk.StagingMetadata(staging=loc, checksum=hashlib.md5(data).hexdigest(), size_bytes=len(data)),
            )
            # how lakeFS prints it: the link's answer, and stat and listings (which on the local
            # blockstore join the root to the resolved address once more)
            h.linked[stats.physical_address] = key
            h.linked[client.objects_api.stat_object(repo, branch, path).physical_address] = key
            linked_keys.add(key)
            staged.setdefault(branch, {})[path] = key
            done("link")
        elif kind == "copy":
            dest, x = f"obj/{step[2]}.bin", step[4]
            if x < 0.5:
                src_ref = branch
            elif x < 0.8 or not commits:
                src_ref = branches[(step[1] + 1 + int(x * 97)) % len(branches)]
            else:
                refs = commits + tags
                src_ref = refs[int(x * 997) % len(refs)]
            there = client.objects_api.list_objects(repo, src_ref, amount=1000).results
            if not there:
                continue
            stats = client.objects_api.copy_object(
                repo,
                branch,
                dest,
                lakefs_sdk.ObjectCopyCreation(src_path=there[step[3] % len(there)].path, src_ref=src_ref),
            )
            address = _rel(roots, stats.physical_address)
            h.uploaded.add(address)
            staged_again(branch, dest, address, stats)
            done("copy")
        elif kind == "delete":
            path = f"obj/{step[2]}.bin"
            with contextlib.suppress(lakefs_sdk.exceptions.NotFoundException):
                client.objects_api.delete_object(repo, branch, path)
            staged.setdefault(branch, {}).pop(path, None)
        elif kind == "commit":
            commit(branch, step[2])
        elif kind == "branch":
            name = f"{prefix}b{len(branches) + step[2] % 3}"
            if name in branches:
                continue
            refs = branches + commits + tags
            source = tags[step[2] % len(tags)] if tags and step[2] < 16 else refs[step[2] % len(refs)]
            client.branches_api.create_branch(repo, lakefs_sdk.BranchCreation(name=name, source=source))
            branches.append(name)
            staged[name] = {}
            if source in tags:
                done("branch_from_tag")
        elif kind == "fork":
            if not commits:
                continue
            name = f"{prefix}f{len(branches)}"
            if name in branches:
                continue
            client.branches_api.create_branch(
                repo, lakefs_sdk.BranchCreation(name=name, source=commits[step[1] % len(commits)])
            )
            branches.append(name)
            staged[name] = {}
            with contextlib.suppress(lakefs_sdk.exceptions.NotFoundException):
                client.objects_api.delete_object(repo, name, f"obj/{step[2]}.bin")
            serial += 1
            stats = client.objects_api.upload_object(
                repo, name, f"obj/fork{serial}.bin", content=f"{repo}/{prefix}{serial}".encode()
            )
            h.uploaded.add(_rel(roots, stats.physical_address))
            clock = min(now - 60, max(clock, now - 0.5 * DAY))  # a recent commit
            c = client.commits_api.commit(repo, name, lakefs_sdk.CommitCreation(message="fork", date=int(clock)))
            commits.append(c.id)
            h.committed_ever.add(_rel(roots, stats.physical_address))
        elif kind == "merge":
            refs = [r for r in branches + tags if r != branch]
            if not refs:
                continue
            source, x = refs[step[2] % len(refs)], step[3]
            if staged.get(source):  # a user commits the source before merging it
                commit(source, 0.05)
            squash = x < 0.3
            strategy = "source-wins" if x > 0.65 else "dest-wins" if x > 0.5 else None

            def merge(strategy=None, source=source, squash=squash, branch=branch):
                return client.refs_api.merge_into_branch(
                    repo, source, branch, merge=lakefs_sdk.Merge(squash_merge=squash, strategy=strategy)
                ).reference

            cid = on_clean(branch, merge)
            if cid == CONFLICT and strategy:  # let one side win
                cid = on_clean(branch, lambda strategy=strategy: merge(strategy))
                if cid not in (None, CONFLICT):
                    done("merge_conflict_resolved")
            if cid not in (None, CONFLICT):
                moved(branch, cid, two_parents=not squash)
                done("merge_squash" if squash else "merge")
        elif kind in ("revert", "cherry_pick"):
            if not commits:
                continue
            if kind == "cherry_pick" and not cherry_pick_any:
                if not plain:
                    continue
                target = plain[step[2] % len(plain)]
            elif merges and step[2] < 32:  # merge commits need a parent number: pick them often
                target = sorted(merges)[step[2] % len(merges)]
            else:
                target = commits[step[2] % len(commits)]
            if kind == "revert":
                call = lambda target=target, branch=branch: client.branches_api.revert_branch(
                    repo, branch, lakefs_sdk.RevertCreation(ref=target, parent_number=1 if target in merges else 0)
                )
            else:
                call = lambda target=target, branch=branch: client.branches_api.cherry_pick(
                    repo,
                    branch,
                    lakefs_sdk.CherryPickCreation(ref=target, parent_number=1 if target in merges else None),
                )
            if on_clean(branch, lambda call=call: call() or True) in (None, CONFLICT):
                continue
            moved(branch, client.branches_api.get_branch(repo, branch).commit_id)
            done(kind + ("_of_merge" if target in merges else ""))
        elif kind == "tag":
            x = step[2]
            if x < 0.3:
                if tags:
                    client.tags_api.delete_tag(repo, tags.pop(step[1] % len(tags)))
                    done("tag_deleted")
                continue
            refs = commits + branches
            name = f"{prefix}t{serial}-{len(tags)}"
            serial += 1
            client.tags_api.create_tag(repo, lakefs_sdk.TagCreation(id=name, ref=refs[step[1] % len(refs)]))
            tags.append(name)
            done("tag")
        elif kind == "import":
            if outside is None:
                continue
            serial += 1
            content = f"{repo}/{prefix}{serial} imported".encode()
            if outside_storage is not None:
                # no dot in the name: lakeFS 1.84's Azure import walker refuses a URL whose path has
                # one (pkg/block/azure/adapter.go, endpointRegex: "invalid Azure storage URL")
                src = f"{outside.rstrip('/')}/{prefix}{serial}-bin"
                outside_storage.put(f"{prefix}{serial}-bin", content)
            else:
                path = os.path.join(outside, f"{prefix}{serial}.bin")
                os.makedirs(outside, exist_ok=True)
                with open(path, "wb") as f:
                    f.write(content)
                src = f"local://{path}"
            h.outside.append(src if outside_storage is not None else path)

            def run_import(src=src, branch=branch, dest=f"imported/{step[2]}.bin"):
                task = client.import_api.import_start(
                    repo,
                    branch,
                    lakefs_sdk.ImportCreation(
                        paths=[lakefs_sdk.ImportLocation(type="object", path=src, destination=dest)],
                        # read when called: commit() moves the clock between the two tries
                        commit=lakefs_sdk.CommitCreation(message="import", date=int(min(now - 60, clock))),  # noqa: B023
                    ),
                )
                for _ in range(400):
                    st = client.import_api.import_status(repo, branch, task.id)
                    if st.completed or st.error:
                        return st
                    time.sleep(0.025)
                return st

            st = run_import()
            if st.error and "dirty" in str(st.error):  # lakeFS imports only into a clean branch: commit first
                commit(branch, 0.05)
                st = run_import()
                if st.error and "dirty" in str(st.error):  # only entries a commit ignores are staged
                    continue
            if st.error or not st.completed:
                raise RuntimeError(f"import into {repo}/{branch}: {st.error or 'not completed'}")
            commits.append(st.commit.id)
        elif kind == "restage":
            path, head = f"obj/{step[2]}.bin", client.branches_api.get_branch(repo, branch).commit_id
            try:
                client.objects_api.stat_object(repo, head, path)
            except lakefs_sdk.exceptions.NotFoundException:
                continue
            if step[3] < 0.5:  # copy the committed object onto its own path
                stats = client.objects_api.copy_object(
                    repo, branch, path, lakefs_sdk.ObjectCopyCreation(src_path=path, src_ref=head)
                )
            else:  # upload the same bytes again
                stats = client.objects_api.upload_object(
                    repo, branch, path, content=bytes(client.objects_api.get_object(repo, head, path))
                )
            address = _rel(roots, stats.physical_address)
            h.uploaded.add(address)
            staged_again(branch, path, address, stats)
        elif kind == "reset":
            client.branches_api.reset_branch(repo, branch, lakefs_sdk.ResetCreation(type="reset"))
            staged[branch] = {}
        elif kind == "drop":
            if branch == main:
                continue
            client.branches_api.delete_branch(repo, branch)
            branches.remove(branch)
            staged.pop(branch, None)
    h.staged_linked = sum(1 for on in staged.values() for a in on.values() if a in linked_keys)
    if "rules" not in {s[0] for s in steps}:
        h.rules = (1, {b: 1 for b in branches})
    else:  # branches made after the rules step get the history's default too
        default, per_branch = h.rules
        h.rules = (default, {b: per_branch.get(b, default) for b in branches})
    return h


def set_rules(client, repo: str, histories: list[History], default: int = 1) -> None:
    """One GC rule set for a repository shared by ``histories`` (each branch explicit)."""
    rules = {b: d for h in histories for b, d in h.rules[1].items()}
    client.repositories_api.set_gc_rules(
        repo,
        lakefs_sdk.GarbageCollectionRules(
            default_retention_days=default,
            branches=[
                lakefs_sdk.GarbageCollectionRule(branch_id=b, retention_days=d) for b, d in sorted(rules.items())
            ],
        ),
    )


def _list_addresses(client, repo: str, ref: str, roots: tuple[str, ...], linked: dict[str, str]) -> set[str]:
    """Namespace keys of the objects ``ref`` shows; ``linked``: how lakeFS prints link-flow
    addresses (a FULL local one is printed with the blockstore root twice) -> the key written."""
    out, after = set(), ""
    while True:
        page = client.objects_api.list_objects(repo, ref, after=after, amount=1000)
        out.update(linked.get(o.physical_address) or _rel(roots, o.physical_address) for o in page.results)
        if not page.pagination.has_more:
            return out
        after = page.pagination.next_offset


def oracle(
    client, repo: str, histories: list[History], roots: tuple[str, ...], now: float, default: int = 1
) -> tuple[set[str], set[str]]:
    """(must keep, must go) for the repository, from the public API and the generators'
    bookkeeping only."""
    per_branch = {b: d for h in histories for b, d in h.rules[1].items()}
    linked = {printed: key for h in histories for printed, key in h.linked.items()}
    keep: set[str] = set()
    kept_commits: dict[str, str] = {}  # metarange id -> a commit with that tree
    after = ""
    while True:
        page = client.branches_api.list_branches(repo, after=after, amount=1000)
        for ref in page.results:
            keep |= _list_addresses(client, repo, ref.id, roots, linked)  # staged and committed
            threshold = now - per_branch.get(ref.id, default) * DAY
            log = client.refs_api.log_commits(repo, ref.commit_id, amount=1000, first_parent=True).results
            for c in log:  # HEAD, and the parent of every commit created inside the window
                kept_commits.setdefault(c.meta_range_id, c.id)
                if not c.creation_date > threshold:
                    break
        if not page.pagination.has_more:
            break
        after = page.pagination.next_offset
    for cid in kept_commits.values():
        keep |= _list_addresses(client, repo, cid, roots, linked)
    uploaded = set().union(*(h.uploaded for h in histories))
    untracked = {a for a in keep if "://" in a and "data/" + a.rsplit("/data/", 1)[-1] in uploaded}
    assert not untracked, f"the oracle cannot place these addresses in the namespace: {sorted(untracked)}"
    keep = {a for a in keep if "://" not in a}  # imported from outside: never the GC's to delete
    committed_ever = set().union(*(h.committed_ever for h in histories))
    return keep, uploaded - committed_ever - keep


def _list_entries(
    client, repo: str, ref: str, roots: tuple[str, ...], linked: dict[str, str]
) -> dict[str, tuple[str, int]]:
    """{path: (namespace key, size)} of the objects ``ref`` shows, imported ones left out."""
    out, after = {}, ""
    while True:
        page = client.objects_api.list_objects(repo, ref, after=after, amount=1000)
        for o in page.results:
            key = linked.get(o.physical_address) or _rel(roots, o.physical_address)
            if "://" not in key:
                out[o.path] = (key, o.size_bytes)
        if not page.pagination.has_more:
            return out
        after = page.pagination.next_offset


def space_oracle(
    client,
    repo: str,
    histories: list[History],
    roots: tuple[str, ...],
    now: float,
    listed: dict[str, tuple[int, int]],
    deleted: set[str],
    cutoff_ms: int,
    default: int = 1,
) -> dict:
    """Where the bytes go (issue 43), from lakeFS's public API only: the shape of
    ``lakefs_gc.gc.attribution.Attribution.as_dict`` without its ``sharing`` text.

    Per live branch: its HEAD commit's objects, its staged entries (what the branch shows at an
    address its HEAD commit does not have at that path) and the rest of its documented window's
    commits; every tag's commit. ``listed``: {key: (size, last-modified ms)} of the namespace's
    objects; the sizes of held objects are the API's, of the others the listing's."""
    per_branch = {b: d for h in histories for b, d in h.rules[1].items()}
    linked = {printed: key for h in histories for printed, key in h.linked.items()}
    held: dict[str, set[tuple[str, str]]] = {}  # key -> {(kind, branch or tag)}
    sizes: dict[str, int] = {}

    def hold(entries: dict[str, tuple[str, int]], kind: str, name: str) -> None:
        for key, size in entries.values():
            held.setdefault(key, set()).add((kind, name))
            sizes[key] = size

    after = ""
    while True:
        page = client.branches_api.list_branches(repo, after=after, amount=1000)
        for ref in page.results:
            head = _list_entries(client, repo, ref.commit_id, roots, linked)
            hold(head, "head", ref.id)
            view = _list_entries(client, repo, ref.id, roots, linked)
            hold({p: e for p, e in view.items() if head.get(p, (None,))[0] != e[0]}, "staged", ref.id)
            threshold = now - per_branch.get(ref.id, default) * DAY
            log = client.refs_api.log_commits(repo, ref.commit_id, amount=1000, first_parent=True).results
            for i, c in enumerate(log):
                if i:
                    hold(_list_entries(client, repo, c.id, roots, linked), "retention", ref.id)
                if not c.creation_date > threshold:
                    break
        if not page.pagination.has_more:
            break
        after = page.pagination.next_offset
    for tag in client.tags_api.list_tags(repo, amount=1000).results:
        hold(_list_entries(client, repo, tag.commit_id, roots, linked), "tag", tag.id)

    def space():
        return {"objects": 0, "bytes": 0}

    def add(s: dict, size: int) -> None:
        s["objects"] += 1
        s["bytes"] += size

    classes = ("head", "retention", "staged")
    out: dict = {
        "total": space(),
        "classes": {c: space() for c in (*classes, "deleted", "held_back", "young")},
        "branches": {},
        "tags": {},
    }
    for key, (listed_size, modified) in listed.items():
        holders = held.get(key, set())
        kinds = {k for k, _ in holders}
        cls = next((c for c in classes if c in kinds), None)
        size = sizes[key] if cls else listed_size
        add(out["total"], size)
        if cls is None:
            state = "deleted" if key in deleted else "young" if modified >= cutoff_ms else "held_back"
            add(out["classes"][state], size)
            for kind, name in holders:
                if kind == "tag":
                    add(out["tags"].setdefault(name, space()), size)
            continue
        add(out["classes"][cls], size)
        owners = {n for k, n in holders if k != "tag"}
        for kind, name in holders:
            if kind == cls:
                branch = out["branches"].setdefault(
                    name, {"alone": {c: space() for c in classes}, "shared": {c: space() for c in classes}}
                )
                add(branch["alone" if owners == {name} else "shared"][cls], size)
    out["branches"] = dict(sorted(out["branches"].items()))
    out["tags"] = dict(sorted(out["tags"].items()))
    return out
