"""Model-based random repository histories and an oracle independent of the GC code.

A history is a list of abstract operations drawn from a seed (``ops``), applied through lakefs-sdk
(``apply``): branches from random refs, back-dated commits, uploads, overwrites, deletes, resets,
branch deletions, staged changes left at the end, random GC rules. Operations name branches and
paths by index and are resolved against the state at the time they run, so any sub-list of a
history is a history too: that is how a failure is shrunk.

Several histories can share one repository (``prefix``: each works on its own branches, made from
the repository's first commit, and gives each of them an explicit retention): one GC run then
judges them all at once.

The oracle (``oracle``) uses only lakeFS's public API and the generator's own bookkeeping, never
the GC's code:

* must keep: every object visible on a live branch (staged or committed), and every object of the
  commits lakeFS's documentation says to keep: per live branch, its first-parent log from HEAD,
  each commit created within the retention, plus the first one older;
* must go: addresses uploaded but never committed and no longer staged anywhere.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

import lakefs_sdk

DAY = 86400
PATHS = 12  # distinct object paths: overwrites and deletes hit the same names often


def ops(seed: int, n: int) -> list[tuple]:
    """``n`` abstract operations from ``seed`` (indices are resolved when applied)."""
    rng = random.Random(seed)
    out: list[tuple] = []
    for _ in range(n):
        r = rng.random()
        b, p, x = rng.randrange(8), rng.randrange(PATHS), rng.random()
        if r < 0.40:
            out.append(("upload", b, p))
        elif r < 0.50:
            out.append(("delete", b, p))
        elif r < 0.70:
            out.append(("commit", b, round(0.05 + 2.5 * x * x, 3)))  # days the history's clock advances
        elif r < 0.76:
            out.append(("branch", b, rng.randrange(64)))  # from a branch head or an earlier commit
        elif r < 0.82:
            out.append(("fork", rng.randrange(64), p))  # from an earlier commit: drop a path, commit recently
        elif r < 0.85:
            out.append(("reset", b))
        elif r < 0.88:
            out.append(("import", b, p))  # an object from outside the namespace, committed
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
    uploaded: set[str] = field(default_factory=set)        # every address written through lakeFS
    committed_ever: set[str] = field(default_factory=set)  # addresses some commit has referenced
    rules: tuple[int, dict[str, int]] = (1, {})
    outside: list[str] = field(default_factory=list)       # files imported from outside the namespace


def _rel(roots: tuple[str, ...], address: str) -> str:
    for root in roots:
        if address.startswith(root):
            return address[len(root):]
    return address  # relative already


def create(client, repo: str, namespace: str) -> None:
    client.repositories_api.create_repository(lakefs_sdk.RepositoryCreation(
        name=repo, storage_namespace=namespace, default_branch="main"))


def apply(client, repo: str, namespace: str, roots: tuple[str, ...], steps: list[tuple],
          now: float | None = None, prefix: str = "", outside: str | None = None) -> History:
    """Apply ``steps`` to ``repo`` through lakefs-sdk, on branches named ``<prefix>main``,
    ``<prefix>b1``... (``prefix`` empty: the repository's own main). GC rules are returned in
    ``History.rules``, not set: :func:`set_rules` sets those of every history of a repository.
    ``outside``: a local directory outside the namespace to import objects from (None: no imports)."""
    now = time.time() if now is None else now
    h = History(repo, namespace, steps)
    main = f"{prefix}main"
    if prefix:
        client.branches_api.create_branch(repo, lakefs_sdk.BranchCreation(name=main, source="main"))
    branches = [main]
    commits: list[str] = []
    staged: dict[str, dict[str, str]] = {main: {}}  # branch -> path -> address, as the model sees it
    clock = now - 10 * DAY
    serial = 0
    for step in steps:
        kind = step[0]
        if kind == "rules":
            default, per_branch = step[1]
            h.rules = (default, {b: per_branch.get(b[len(prefix):], default) for b in branches})
            continue
        branch = branches[step[1] % len(branches)]
        if kind == "upload":
            path = f"obj/{step[2]}.bin"
            serial += 1
            stats = client.objects_api.upload_object(repo, branch, path, content=f"{repo}/{prefix}{serial}".encode())
            address = _rel(roots, stats.physical_address)
            h.uploaded.add(address)
            staged.setdefault(branch, {})[path] = address
        elif kind == "delete":
            path = f"obj/{step[2]}.bin"
            try:
                client.objects_api.delete_object(repo, branch, path)
            except lakefs_sdk.exceptions.NotFoundException:
                pass
            staged.setdefault(branch, {}).pop(path, None)
        elif kind == "commit":
            clock = min(now - 60, clock + step[2] * DAY)
            try:
                c = client.commits_api.commit(repo, branch, lakefs_sdk.CommitCreation(
                    message=f"c{len(commits)}", date=int(clock)))
            except lakefs_sdk.exceptions.ApiException as e:
                if e.status != 400:  # "no changes" is fine
                    raise
                continue
            commits.append(c.id)
            h.committed_ever.update(staged.get(branch, {}).values())
            staged[branch] = {}
        elif kind == "branch":
            name = f"{prefix}b{len(branches) + step[2] % 3}"
            if name in branches:
                continue
            refs = branches + commits
            source = refs[step[2] % len(refs)]
            client.branches_api.create_branch(repo, lakefs_sdk.BranchCreation(name=name, source=source))
            branches.append(name)
            staged[name] = {}
        elif kind == "fork":
            if not commits:
                continue
            name = f"{prefix}f{len(branches)}"
            if name in branches:
                continue
            client.branches_api.create_branch(repo, lakefs_sdk.BranchCreation(
                name=name, source=commits[step[1] % len(commits)]))
            branches.append(name)
            staged[name] = {}
            try:
                client.objects_api.delete_object(repo, name, f"obj/{step[2]}.bin")
            except lakefs_sdk.exceptions.NotFoundException:
                pass
            serial += 1
            stats = client.objects_api.upload_object(repo, name, f"obj/fork{serial}.bin",
                                                     content=f"{repo}/{prefix}{serial}".encode())
            h.uploaded.add(_rel(roots, stats.physical_address))
            clock = min(now - 60, max(clock, now - 0.5 * DAY))  # a recent commit
            c = client.commits_api.commit(repo, name, lakefs_sdk.CommitCreation(message="fork", date=int(clock)))
            commits.append(c.id)
            h.committed_ever.add(_rel(roots, stats.physical_address))
        elif kind == "import":
            if outside is None:
                continue
            import os

            serial += 1
            src = os.path.join(outside, f"{prefix}{serial}.bin")
            os.makedirs(outside, exist_ok=True)
            with open(src, "wb") as f:
                f.write(f"{repo}/{prefix}{serial} imported".encode())
            h.outside.append(src)
            task = client.import_api.import_start(repo, branch, lakefs_sdk.ImportCreation(
                paths=[lakefs_sdk.ImportLocation(type="object", path=f"local://{src}",
                                                 destination=f"imported/{step[2]}.bin")],
                commit=lakefs_sdk.CommitCreation(message="import", date=int(min(now - 60, clock)))))
            for _ in range(400):
                st = client.import_api.import_status(repo, branch, task.id)
                if st.completed:
                    break
                time.sleep(0.025)
            if st.error or not st.completed:
                raise RuntimeError(f"import into {repo}/{branch}: {st.error or 'not completed'}")
            commits.append(st.commit.id)
        elif kind == "reset":
            client.branches_api.reset_branch(repo, branch, lakefs_sdk.ResetCreation(type="reset"))
            staged[branch] = {}
        elif kind == "drop":
            if branch == main:
                continue
            client.branches_api.delete_branch(repo, branch)
            branches.remove(branch)
            staged.pop(branch, None)
    if "rules" not in {s[0] for s in steps}:
        h.rules = (1, {b: 1 for b in branches})
    else:  # branches made after the rules step get the history's default too
        default, per_branch = h.rules
        h.rules = (default, {b: per_branch.get(b, default) for b in branches})
    return h


def set_rules(client, repo: str, histories: list[History], default: int = 1) -> None:
    """One GC rule set for a repository shared by ``histories`` (each branch explicit)."""
    rules = {b: d for h in histories for b, d in h.rules[1].items()}
    client.repositories_api.set_gc_rules(repo, lakefs_sdk.GarbageCollectionRules(
        default_retention_days=default,
        branches=[lakefs_sdk.GarbageCollectionRule(branch_id=b, retention_days=d) for b, d in sorted(rules.items())]))


def _list_addresses(client, repo: str, ref: str, roots: tuple[str, ...]) -> set[str]:
    out, after = set(), ""
    while True:
        page = client.objects_api.list_objects(repo, ref, after=after, amount=1000)
        out.update(_rel(roots, o.physical_address) for o in page.results)
        if not page.pagination.has_more:
            return out
        after = page.pagination.next_offset


def oracle(client, repo: str, histories: list[History], roots: tuple[str, ...], now: float,
           default: int = 1) -> tuple[set[str], set[str]]:
    """(must keep, must go) for the repository, from the public API and the generators'
    bookkeeping only."""
    per_branch = {b: d for h in histories for b, d in h.rules[1].items()}
    keep: set[str] = set()
    kept_commits: set[str] = set()
    after = ""
    while True:
        page = client.branches_api.list_branches(repo, after=after, amount=1000)
        for ref in page.results:
            keep |= _list_addresses(client, repo, ref.id, roots)  # staged and committed
            threshold = now - per_branch.get(ref.id, default) * DAY
            log = client.refs_api.log_commits(repo, ref.commit_id, amount=1000, first_parent=True).results
            for c in log:  # HEAD, and the parent of every commit created inside the window
                kept_commits.add(c.id)
                if not c.creation_date > threshold:
                    break
        if not page.pagination.has_more:
            break
        after = page.pagination.next_offset
    for cid in kept_commits:
        keep |= _list_addresses(client, repo, cid, roots)
    keep = {a for a in keep if "://" not in a}  # imported from outside: never the GC's to delete
    uploaded = set().union(*(h.uploaded for h in histories))
    committed_ever = set().union(*(h.committed_ever for h in histories))
    return keep, uploaded - committed_ever - keep
