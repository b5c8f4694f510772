"""The emulator held to lakeFS: one scripted scenario, run through lakefs-sdk on the lakeFS API
emulator and on lakeFS 1.84 itself (local blockstore; S3 on moto), every answer recorded in a
normalised, JSON-able form and compared operation by operation.

Why: the GC's tests run on the emulator; whatever the emulator answers differently from lakeFS is a
place where a test can pass and the GC still be wrong on lakeFS. This suite makes each such
difference visible, one readable line per differing value (``op: field: lakeFS=... emulator=...``).

What must differ is normalised away, and nothing else:

* commit ids become the scenario's own names (``c1``, ``m1``, ``r1``...), metarange ids ``mr1``,
  ``mr2``... in order of first appearance, xids (slices, object names, run ids) ``<xid>``;
* the server's root (``blockstore.local.path``, or the bucket) becomes ``<ROOT>``/``<bucket>``, so
  the SHAPE of each address stays: scheme, resolved or as written, relative or full,
  ``data/<xid>/<xid>``, ``,<sig ...>`` with the signature's alphabet and length, trailing ``/``;
  each ``data/`` address also gets a label naming where the scenario first saw it
  (``[a/1.txt#1]``), so the same object is recognised across answers (and in the GC's Parquet);
* times near now become ``<now>`` (``<now+15m>`` for an expiry); commit dates the scenario sets
  stay as they are. So a log's commits made on the servers' own clocks (merges, reverts,
  cherry-picks: all ``<now>``) are compared in name order among themselves: lakeFS orders commits
  of one second by id, and the ids differ by nature; everything else about the order stays;
* orders lakeFS does not define are sorted: commits.csv rows, the Parquet rows, branch GC rules
  (a Go map).

A difference that is deliberate, or too large to fix in the emulator for now, is kept out of the
assertion by ``DELIBERATE`` (each with its reason) and listed in the emulator's README ("Where it
differs from lakeFS 1.84"); an entry that no longer matches anything fails the test, so the list
stays true. No Spark; 5 to 15 seconds per blockstore, the servers' start included.

    LAKEFS_GC_AGREE_DUMP=/tmp/agree .venv/bin/python -m pytest -q tests/real_lakefs/test_emulator_agrees.py
    # writes each server's normalised answers (local-lakefs.json, local-emulator.json, ...) there
"""

from __future__ import annotations

import fnmatch
import io
import json
import os
import re
import time
import urllib.parse
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import lakefs_sdk
import pytest
from lakefs_sdk.exceptions import ApiException

from lakefs_gc.storage import open_storage, parse_namespace, relative_to

# fnmatch patterns over "<kind>:<op>:<field>" (kind: local or s3; field: the dotted path of the value
# inside the answer, "" for the whole answer) -> why the emulator may differ there. Each is listed in
# include/lakefs_sandbox/emulator/README.md, "Where it differs from lakeFS 1.84".
DELIBERATE: dict[str, str] = {
    "*:*:*committer": "the emulator has no users: a commit's committer (and a cherry-pick's "
    "cherry-pick-committer) is the access key id that signed the request, where lakeFS "
    "names the user ('admin' here); tests/sandbox/emulator/test_emulator_api.py relies on the key",
    "*:config*:body*.version": "the emulator's version is its own (1.88.0-emulator: the API it follows, and "
    "that it is the emulator)",
    "s3:config*:body*.pre_sign_multipart_upload": "the emulator does not implement presigned multipart uploads, so "
    "does not claim them",
    "*:error repo create invalid name:message": "lakeFS's OpenAPI request validator words a body that breaks the "
    "schema with the schema itself; the emulator checks the same rule "
    "in its own words (the status, 400, agrees)",
    "*:error reset unknown type:message": "as above: a request-schema violation, worded by lakeFS's validator",
    "local:gc prepare commits:status": "lakeFS 1.84's synchronous prepareGarbageCollectionCommits cannot presign "
    "on the local blockstore: it answers 400 'local adapter presigned URL: "
    "operation not supported' and then writes its result as well (two JSON "
    "documents in one body); the emulator answers the 201 it means. The "
    "commits.csv that call wrote is compared all the same, and the async form "
    "(which the GC uses) agrees",
    "local:gc prepare commits:message": "as above (lakeFS's 400)",
    "local:gc prepare commits:body.*": "as above (the emulator's 201 body)",
}

DUMP_ENV = "LAKEFS_GC_AGREE_DUMP"  # a directory: each server's normalised answers written there as JSON
HEX64 = re.compile(r"(?<![0-9a-zA-Z])[0-9a-f]{64}(?![0-9a-zA-Z])")
TASK = re.compile(r"\bGCPC([A-Za-z0-9_-]+)")  # an async prepare task's id: GCPC + a nanoid
XID = re.compile(r"(?<![0-9a-zA-Z])[0-9a-v]{20}(?![0-9a-zA-Z])")
DATA = re.compile(r"data/([0-9a-v]{20})/([0-9a-v]{20})")
SIG = re.compile(r"(data/<xid>/<xid>),([^/\s\]\"'?&,]+)")
SHOWN_QUERY = {"X-Amz-Algorithm", "X-Amz-Expires", "X-Amz-SignedHeaders", "x-id"}  # values kept in a URL
TIME_KEYS = {"creation_date", "mtime", "update_time", "presigned_url_expiry", "physical_address_expiry"}
NOW_WINDOW = 3 * 86400  # seconds: a time this close to now is the server's clock, not a scenario date


def _sig_shape(sig: str) -> str:
    if re.fullmatch(r"[0-9a-f]+", sig):
        alphabet = "hex"
    elif re.fullmatch(r"[A-Za-z0-9_-]+", sig):
        alphabet = "base64url"
    else:
        alphabet = "other"
    return f"<sig {alphabet}:{len(sig)}>"


class Normaliser:
    """One server's names for what must differ (see the module docstring)."""

    def __init__(self, roots: list[tuple[str, str]]):
        self.roots = roots  # (text, token), longest first
        self.commits: dict[str, str] = {}
        self.metaranges: dict[str, str] = {}
        self.unknown: dict[str, str] = {}
        self.labels: dict[str, str] = {}
        self.label_counts: dict[str, int] = {}

    def commit(self, cid: str, name: str) -> None:
        assert HEX64.fullmatch(cid), cid
        self.commits.setdefault(cid, name)

    def metarange(self, mr: str) -> str:
        if not mr:
            return ""
        return self.metaranges.setdefault(mr, f"mr{len(self.metaranges) + 1}")

    def _id(self, h: str) -> str:
        if h in self.commits:
            return self.commits[h]
        if h in self.metaranges:
            return self.metaranges[h]
        return self.unknown.setdefault(h, f"?{len(self.unknown) + 1}")

    def label(self, key: str, hint: str) -> str:
        if key not in self.labels:
            n = self.label_counts[hint] = self.label_counts.get(hint, 0) + 1
            self.labels[key] = f"{hint}#{n}"
        return self.labels[key]

    def text(self, s: str, hint: str = "?") -> str:
        labels = [self.label(f"{a}/{b}", hint) for a, b in DATA.findall(s)]
        if s.startswith(("http://", "https://")) and "?" in s:  # a presigned URL: path and query keys
            url = urllib.parse.urlsplit(s)
            query = dict(urllib.parse.parse_qsl(url.query))
            keys = [k if k not in SHOWN_QUERY else f"{k}={query[k]}" for k in sorted(query)]
            s = f"{url.scheme}://<host>{urllib.parse.unquote(url.path)}?{'&'.join(keys)}"
        for root, token in self.roots:
            s = s.replace(root, token)
        s = HEX64.sub(lambda m: self._id(m.group()), s)
        s = TASK.sub(lambda m: f"GCPC<nanoid:{len(m.group(1))}>", s)
        s = XID.sub("<xid>", s)
        s = SIG.sub(lambda m: f"{m.group(1)},{_sig_shape(m.group(2))}", s)
        return s + (f" [{', '.join(labels)}]" if labels else "")

    def value(self, v, key: str = "", hint: str = "?"):
        if isinstance(v, dict):
            h = v["path"] if isinstance(v.get("path"), str) else hint
            return {k: self.value(x, k, h) for k, x in sorted(v.items())}
        if isinstance(v, list):
            return [self.value(x, key, hint) for x in v]
        if key in ("meta_range_id", "metarange_id") and isinstance(v, str):
            return self.metarange(v)
        if key in TIME_KEYS and isinstance(v, int) and not isinstance(v, bool):
            delta = v - time.time()
            if abs(delta) < NOW_WINDOW:
                return "<now>" if abs(delta) < 60 else f"<now{round(delta / 60):+d}m>"
            return v
        if isinstance(v, str):
            return self.text(v, hint)
        return v


class Obj(dict):
    """A JSON answer with attribute access (``loc.physical_address``), None where a field is absent."""

    def __getattr__(self, name):
        v = self.get(name)
        return Obj(v) if isinstance(v, dict) else v


def _raw(call: Callable, *args, **kwargs) -> tuple[int, object]:
    """Make an SDK call and return (status, the answer's JSON as sent): the ``*_with_http_info``
    form without the SDK's parsing (the GC's own client reads the JSON, and the SDK's models would
    hide an absent field, a null, or an answer they cannot parse: lakeFS's ``"branches": null``)."""
    method = getattr(call.__self__, call.__name__ + "_with_http_info")
    resp = method(*args, _preload_content=False, **kwargs)
    raw = resp.raw_data or b""
    try:
        body = json.loads(raw) if raw.strip() else None
    except ValueError:
        body = raw.decode(errors="replace")
    return resp.status_code, body


class Run:
    """The scenario on one server: ``run(op, call, *args)`` makes the call and records its answer
    (or its error: status and message), normalised, under ``op``."""

    def __init__(self, kind: str, server, repo: str, ns: str, tmp: Path, store=None, bucket: str = ""):
        self.kind, self.server, self.repo, self.ns, self.store, self.tmp = kind, server, repo, ns, store, tmp
        self.client = server.client()
        self.answers: dict[str, object] = {}
        self.last_error = ""  # the body of the last error answer, as sent
        roots: list[tuple[str, str]] = []
        if server.local_root:
            roots.append((str(Path(server.local_root).resolve()), "<ROOT>"))
            roots.append((str(server.local_root), "<ROOT>"))
        if bucket:
            roots.append((bucket, "<bucket>"))
        roots.append((repo, "<repo>"))
        self.norm = Normaliser(sorted(roots, key=lambda r: -len(r[0])))
        self.storage = open_storage(ns, store.options() if store is not None else None, server.local_root)
        self.ns_roots = parse_namespace(ns, server.local_root).roots()

    def __call__(
        self,
        op: str,
        call: Callable,
        *args,
        name: str | None = None,
        hint: str | None = None,
        shape: Callable | None = None,
        **kwargs,
    ):
        n, first = 1, op
        while op in self.answers:  # the same call again later in the script: numbered
            n += 1
            op = f"{first} ({n})"
        try:
            status, res = _raw(call, *args, **kwargs)
        except ApiException as exc:
            self.last_error = exc.body or ""
            try:
                message = json.loads(exc.body or "{}").get("message", exc.body)
            except (ValueError, AttributeError):
                message = exc.body
            self.answers[op] = {"status": exc.status, "message": self.norm.text(str(message).strip())}
            return None
        if name is not None:
            self.norm.commit(res if isinstance(res, str) else res.get("id") or res.get("reference"), name)
        self.answers[op] = {
            "status": status,
            "body": shape(res) if shape is not None else self.norm.value(res, hint=hint or op),
        }
        return Obj(res) if isinstance(res, dict) else res

    def head(self, branch: str, name: str) -> str:
        """Name the branch's HEAD (after an operation that answers no commit id)."""
        cid = self.client.branches_api.get_branch(self.repo, branch).commit_id
        self.norm.commit(cid, name)
        return cid

    def rel(self, uri: str) -> str:
        rel = relative_to(self.ns_roots, uri)
        assert rel is not None, (self.ns, uri)
        return rel


# ---------------------------------------------------------------------------------------------
# the scenario


def scenario(run: Run, base: int) -> None:
    """The scripted operations, the same on every server; ``base``: the epoch the commit dates
    count from (30 days ago, the same for both servers)."""
    c, repo = run.client, run.repo
    objects, branches, commits, refs = c.objects_api, c.branches_api, c.commits_api, c.refs_api
    tags, internal, repos, staging = c.tags_api, c.internal_api, c.repositories_api, c.staging_api

    def commit(branch: str, name: str, msg: str, minutes: int, **kw):
        return run(
            f"commit {name}",
            commits.commit,
            repo,
            branch,
            lakefs_sdk.CommitCreation(message=msg, date=base + 60 * minutes, **kw),
            name=name,
        )

    def upload(branch: str, path: str, content: bytes, **kw):
        return run(f"upload {branch}:{path}", objects.upload_object, repo, branch, path, content=content, **kw)

    def ls(op: str, ref: str, **kw):
        return run(f"list {op}", objects.list_objects, repo, ref, **kw)

    # --- configuration, repository
    run("config gc", internal.get_garbage_collection_config)
    run("config", c.config_api.get_config)
    run("config storage (deprecated)", internal.get_storage_config)
    run("config version (deprecated)", internal.get_lake_fs_version)
    run(
        "repo create",
        repos.create_repository,
        lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=run.ns, default_branch="main"),
    )
    c0 = refs.log_commits(repo, "main").results[-1].id  # the repository's first commit
    run.norm.commit(c0, "c0")
    run("repo get", repos.get_repository, repo)
    run(
        "error repo create existing",
        repos.create_repository,
        lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=run.ns + "-2", default_branch="main"),
    )
    run(
        "error repo create namespace in use",
        repos.create_repository,
        lakefs_sdk.RepositoryCreation(name=repo + "-2", storage_namespace=run.ns, default_branch="main"),
    )
    run(
        "error repo create invalid name",
        repos.create_repository,
        lakefs_sdk.RepositoryCreation.construct(
            name="Bad_Repo", storage_namespace=run.ns + "-3", default_branch="main"
        ),
    )  # construct: past the SDK's own check
    run("error repo get missing", repos.get_repository, "no-such-repo")
    run("error branch get missing repo", branches.get_branch, "no-such-repo", "main")

    # --- GC endpoints before any rules
    run("gc rules get none", repos.get_gc_rules, repo)
    run("gc internal rules get none", internal.internal_get_garbage_collection_rules, repo)
    run("gc prepare commits without rules", internal.prepare_garbage_collection_commits, repo)
    task = run("gc prepare commits async without rules", internal.prepare_garbage_collection_commits_async, repo)
    if task is not None:
        _wait_task(run, "gc prepare commits async without rules: status", task.id)

    # --- objects on main
    upload("main", "a/1.txt", b"one")
    upload("main", "a/2.txt", b"two two")
    upload("main", "a/b/3.txt", b"three")
    upload("main", "top.txt", b"top", _headers={"X-Lakefs-Meta-Color": "red"})
    csv = run.tmp / "sample.csv"
    csv.write_bytes(b"x,y\n1,2\n")
    run("upload main:typed.csv (a named file)", objects.upload_object, repo, "main", "typed.csv", content=str(csv))
    run(
        "upload if-none-match over existing",
        objects.upload_object,
        repo,
        "main",
        "a/1.txt",
        content=b"x",
        if_none_match="*",
    )
    run("stat main:a/1.txt", objects.stat_object, repo, "main", "a/1.txt")
    run("stat main:top.txt no user metadata", objects.stat_object, repo, "main", "top.txt", user_metadata=False)
    run("error stat missing object", objects.stat_object, repo, "main", "nope.txt")
    ls("main staged", "main")
    run("diff main staged", branches.diff_branch, repo, "main")
    commit("main", "c1", "first", 1, metadata={"k": "v"})
    run("error commit no changes", commits.commit, repo, "main", lakefs_sdk.CommitCreation(message="nothing"))
    run(
        "commit allow_empty",
        commits.commit,
        repo,
        "main",
        lakefs_sdk.CommitCreation(message="empty", date=base + 90, allow_empty=True),
        name="c-empty",
    )
    run("get commit c1", commits.get_commit, repo, _id(run, "c1"))
    run("get commit by prefix", commits.get_commit, repo, _id(run, "c1")[:12])
    run("error get commit missing", commits.get_commit, repo, "a" * 64)
    run("error get commit short missing", commits.get_commit, repo, "deadbeef")

    # --- listings on a commit and a branch
    for ref_name, ref in (("c1", _id(run, "c1")), ("main", "main")):
        ls(f"{ref_name} all", ref)
        ls(f"{ref_name} prefix a/", ref, prefix="a/")
        ls(f"{ref_name} delimiter /", ref, delimiter="/")
        ls(f"{ref_name} prefix a/ delimiter /", ref, prefix="a/", delimiter="/")
        ls(f"{ref_name} after a/2.txt", ref, after="a/2.txt")
        ls(f"{ref_name} after a/ delimiter /", ref, after="a/", delimiter="/")
        ls(f"{ref_name} amount 2", ref, amount=2)
        ls(f"{ref_name} amount 1 delimiter /", ref, amount=1, delimiter="/")
        ls(f"{ref_name} prefix missing", ref, prefix="zzz/")
        ls(f"{ref_name} no user metadata", ref, user_metadata=False, prefix="top")
    run("error list missing ref", objects.list_objects, repo, "no-such-ref")

    # --- branches
    run("branch create dev", branches.create_branch, repo, lakefs_sdk.BranchCreation(name="dev", source="main"))
    run(
        "branch create feature from c1",
        branches.create_branch,
        repo,
        lakefs_sdk.BranchCreation(name="feature", source=_id(run, "c1")),
    )
    run(
        "error branch create existing",
        branches.create_branch,
        repo,
        lakefs_sdk.BranchCreation(name="dev", source="main"),
    )
    run(
        "error branch create invalid name",
        branches.create_branch,
        repo,
        lakefs_sdk.BranchCreation(name="bad name!", source="main"),
    )
    run(
        "error branch create missing source",
        branches.create_branch,
        repo,
        lakefs_sdk.BranchCreation(name="orphan", source="no-such-ref"),
    )
    run("error branch get missing", branches.get_branch, repo, "nope")
    run("branch get dev", branches.get_branch, repo, "dev")

    # --- work on dev: change, delete (staged delete of a committed object), add
    upload("dev", "a/1.txt", b"one on dev")
    run("delete dev:a/2.txt", objects.delete_object, repo, "dev", "a/2.txt")
    run("stat deleted dev:a/2.txt", objects.stat_object, repo, "dev", "a/2.txt")
    upload("dev", "d/new.txt", b"new")
    upload("dev", "d/gone.txt", b"gone soon")
    run("delete staged-only dev:d/gone.txt", objects.delete_object, repo, "dev", "d/gone.txt")
    run("delete missing object (nothing there)", objects.delete_object, repo, "dev", "never/was.txt")
    run("delete deleted dev:a/2.txt again", objects.delete_object, repo, "dev", "a/2.txt")
    run("error delete on missing branch", objects.delete_object, repo, "no-such-branch", "a/1.txt")
    upload("dev", "d/bulk.txt", b"deleted in bulk")
    run(
        "delete objects (bulk: staged, missing, deleted already)",
        objects.delete_objects,
        repo,
        "dev",
        lakefs_sdk.PathList(paths=["d/bulk.txt", "never/was.txt", "a/2.txt"]),
    )
    run(
        "delete objects on missing branch",
        objects.delete_objects,
        repo,
        "no-such-branch",
        lakefs_sdk.PathList(paths=["a/1.txt"]),
    )
    run(
        "delete objects in missing repo",
        objects.delete_objects,
        "no-such-repo",
        "main",
        lakefs_sdk.PathList(paths=["a/1.txt"]),
    )
    ls("dev staged", "dev")
    run("diff dev staged", branches.diff_branch, repo, "dev")
    run("diff dev staged prefix a/", branches.diff_branch, repo, "dev", prefix="a/")
    run("diff dev staged amount 1", branches.diff_branch, repo, "dev", amount=1)
    run("diff dev staged after a/1.txt", branches.diff_branch, repo, "dev", after="a/1.txt")
    run("diff dev staged delimiter /", branches.diff_branch, repo, "dev", delimiter="/")
    commit("dev", "c2", "dev work", 2)
    upload("main", "m/main-only.txt", b"main only")
    commit("main", "c3", "main work", 3)
    run("diff refs main..dev (three dot)", refs.diff_refs, repo, "main", "dev")
    run("diff refs main..dev two dot", refs.diff_refs, repo, "main", "dev", type="two_dot")
    run("diff refs prefix a/", refs.diff_refs, repo, "main", "dev", prefix="a/")
    run("diff refs delimiter /", refs.diff_refs, repo, "main", "dev", delimiter="/")
    run("diff refs amount 1", refs.diff_refs, repo, "main", "dev", amount=1)
    run("diff refs after a/1.txt", refs.diff_refs, repo, "main", "dev", after="a/1.txt")
    run("diff refs c1..c2", refs.diff_refs, repo, _id(run, "c1"), _id(run, "c2"))
    run("error diff refs missing", refs.diff_refs, repo, "main", "no-such-ref")

    # --- merges
    run("merge dev->main", refs.merge_into_branch, repo, "dev", "main", name="m1")
    run("error merge no changes", refs.merge_into_branch, repo, "dev", "main")
    upload("dev", "a/1.txt", b"conflict dev side")
    commit("dev", "c4", "dev side", 4)
    upload("main", "a/1.txt", b"conflict main side")
    commit("main", "c5", "main side", 5)
    run("error merge conflict", refs.merge_into_branch, repo, "dev", "main")
    upload("main", "dirty.txt", b"dirty")
    run(
        "error merge into dirty branch",
        refs.merge_into_branch,
        repo,
        "dev",
        "main",
        lakefs_sdk.Merge(strategy="source-wins"),
    )
    run(
        "reset main:dirty.txt (object)",
        branches.reset_branch,
        repo,
        "main",
        lakefs_sdk.ResetCreation(type="object", path="dirty.txt"),
    )
    run(
        "error merge invalid strategy",
        refs.merge_into_branch,
        repo,
        "dev",
        "main",
        lakefs_sdk.Merge.construct(strategy="mine"),
    )
    run(
        "merge dev->main source-wins",
        refs.merge_into_branch,
        repo,
        "dev",
        "main",
        lakefs_sdk.Merge(strategy="source-wins", message="take dev", metadata={"why": "test"}),
        name="m2",
    )
    run("stat main:a/1.txt after source-wins", objects.stat_object, repo, "main", "a/1.txt")
    upload("dev", "a/1.txt", b"conflict again, dev")
    commit("dev", "c6", "dev again", 6)
    upload("main", "a/1.txt", b"conflict again, main")
    commit("main", "c7", "main again", 7)
    run(
        "merge dev->main dest-wins",
        refs.merge_into_branch,
        repo,
        "dev",
        "main",
        lakefs_sdk.Merge(strategy="dest-wins"),
        name="m3",
    )
    run("stat main:a/1.txt after dest-wins", objects.stat_object, repo, "main", "a/1.txt")
    upload("feature", "f/1.txt", b"feature")
    commit("feature", "c8", "feature work", 8)
    run(
        "merge feature->main squash",
        refs.merge_into_branch,
        repo,
        "feature",
        "main",
        lakefs_sdk.Merge(squash_merge=True),
        name="m4-squash",
    )
    run("get commit m4-squash", commits.get_commit, repo, _id(run, "m4-squash"))
    run("get commit m1", commits.get_commit, repo, _id(run, "m1"))
    run("find merge base dev main", refs.find_merge_base, repo, "dev", "main")

    # --- logs
    run("log main", refs.log_commits, repo, "main", shape=_log_shape(run))
    run("log main first_parent", refs.log_commits, repo, "main", first_parent=True, shape=_log_shape(run))
    run("log main amount 3", refs.log_commits, repo, "main", amount=3, shape=_log_shape(run))
    run("log main after c5", refs.log_commits, repo, "main", after=_id(run, "c5"), shape=_log_shape(run))
    run("log dev", refs.log_commits, repo, "dev", shape=_log_shape(run))
    run("log c2", refs.log_commits, repo, _id(run, "c2"), shape=_log_shape(run))
    run("error log missing ref", refs.log_commits, repo, "no-such-ref")

    # --- a history whose dates disagree with its generations: lakeFS's log goes by date
    for b in ("x", "y"):
        run(f"branch create {b}", branches.create_branch, repo, lakefs_sdk.BranchCreation(name=b, source=c0))
    for i in (1, 2, 3):
        upload("x", f"x/{i}.txt", b"x")
        commit("x", f"x{i}", f"x{i}", 100 + i)
    upload("y", "y/1.txt", b"y")
    commit("y", "y1", "y1", 200)
    run("merge x->y", refs.merge_into_branch, repo, "x", "y", name="m-xy")
    run("log y", refs.log_commits, repo, "y", shape=_log_shape(run))
    run("log y first_parent", refs.log_commits, repo, "y", first_parent=True, shape=_log_shape(run))
    run("log y amount 2", refs.log_commits, repo, "y", amount=2, shape=_log_shape(run))
    run("log y after y1", refs.log_commits, repo, "y", after=_id(run, "y1"), shape=_log_shape(run))
    run("error log after missing ref", refs.log_commits, repo, "y", after="no-such-ref")
    run("diff refs x..y (three dot, nothing to merge)", refs.diff_refs, repo, "x", "y")
    run("diff refs y..x two dot", refs.diff_refs, repo, "y", "x", type="two_dot")
    upload("x", "x/staged.txt", b"staged on x")
    run("delete x:x/1.txt", objects.delete_object, repo, "x", "x/1.txt")
    run("diff refs y..x two dot (x's HEAD)", refs.diff_refs, repo, "y", "x", type="two_dot")
    run("diff refs y..x$ two dot (x's staging)", refs.diff_refs, repo, "y", "x$", type="two_dot")
    run("diff refs y..x three dot ignores staging", refs.diff_refs, repo, "y", "x")
    upload("y", "x/2.txt", b"y changed x2")
    commit("y", "y2", "y2", 201)
    upload("x", "x/2.txt", b"x changed x2")
    commit("x", "x4", "x4", 202)
    run("diff refs y..x three dot with a conflict", refs.diff_refs, repo, "y", "x")

    # --- revert and cherry-pick (incl. of merge commits)
    run("branch create side", branches.create_branch, repo, lakefs_sdk.BranchCreation(name="side", source="main"))
    upload("side", "side/1.txt", b"side")
    commit("side", "s1", "side work", 9)
    run("merge side->main", refs.merge_into_branch, repo, "side", "main", name="m5")
    run(
        "revert the squash m4 (parent_number 0)",
        branches.revert_branch,
        repo,
        "main",
        lakefs_sdk.RevertCreation(ref=_id(run, "m4-squash"), parent_number=0),
    )
    run.head("main", "r1")
    run("get commit r1", commits.get_commit, repo, _id(run, "r1"))
    run(
        "revert merge m5 parent 1",
        branches.revert_branch,
        repo,
        "main",
        lakefs_sdk.RevertCreation(
            ref=_id(run, "m5"), parent_number=1, commit_overrides=lakefs_sdk.CommitOverrides(metadata={"undo": "m5"})
        ),
    )
    run.head("main", "r2")
    run("get commit r2", commits.get_commit, repo, _id(run, "r2"))
    run(
        "error revert no changes",
        branches.revert_branch,
        repo,
        "main",
        lakefs_sdk.RevertCreation(ref=_id(run, "m5"), parent_number=1),
    )
    run(
        "error revert conflict",
        branches.revert_branch,
        repo,
        "main",
        lakefs_sdk.RevertCreation(ref=_id(run, "m1"), parent_number=1),
    )
    run(
        "error revert merge without parent",
        branches.revert_branch,
        repo,
        "main",
        lakefs_sdk.RevertCreation(ref=_id(run, "m1"), parent_number=0),
    )
    run(
        "error revert parent out of range",
        branches.revert_branch,
        repo,
        "main",
        lakefs_sdk.RevertCreation(ref=_id(run, "c5"), parent_number=2),
    )
    upload("main", "dirty.txt", b"dirty")
    run(
        "error revert on a dirty branch",
        branches.revert_branch,
        repo,
        "main",
        lakefs_sdk.RevertCreation(ref=_id(run, "c5"), parent_number=0),
    )
    run(
        "error cherry-pick on a dirty branch",
        branches.cherry_pick,
        repo,
        "main",
        lakefs_sdk.CherryPickCreation(ref=_id(run, "c3")),
    )
    run("reset main (all) after dirty", branches.reset_branch, repo, "main", lakefs_sdk.ResetCreation(type="reset"))
    run("list main after reverts", objects.list_objects, repo, "main")
    run("branch create pick", branches.create_branch, repo, lakefs_sdk.BranchCreation(name="pick", source=c0))
    run(
        "cherry-pick c3 onto pick",
        branches.cherry_pick,
        repo,
        "pick",
        lakefs_sdk.CherryPickCreation(ref=_id(run, "c3")),
        name="p1",
    )
    run(
        "cherry-pick c3 again (nothing new: still a commit)",
        branches.cherry_pick,
        repo,
        "pick",
        lakefs_sdk.CherryPickCreation(ref=_id(run, "c3")),
        name="p1-again",
    )
    run(
        "error cherry-pick merge without parent",
        branches.cherry_pick,
        repo,
        "pick",
        lakefs_sdk.CherryPickCreation(ref=_id(run, "m5")),
    )
    run(
        "cherry-pick merge m5 parent 1 onto pick",
        branches.cherry_pick,
        repo,
        "pick",
        lakefs_sdk.CherryPickCreation(
            ref=_id(run, "m5"), parent_number=1, commit_overrides=lakefs_sdk.CommitOverrides(message="picked m5")
        ),
        name="p2",
    )
    run(
        "error cherry-pick conflict",
        branches.cherry_pick,
        repo,
        "pick",
        lakefs_sdk.CherryPickCreation(ref=_id(run, "c7")),
    )
    run(
        "error cherry-pick parent out of range",
        branches.cherry_pick,
        repo,
        "pick",
        lakefs_sdk.CherryPickCreation(ref=_id(run, "c3"), parent_number=2),
    )
    run("list pick", objects.list_objects, repo, "pick")
    run("log pick", refs.log_commits, repo, "pick", shape=_log_shape(run))

    # --- tags
    run("tag create v1 on c1", tags.create_tag, repo, lakefs_sdk.TagCreation(id="v1", ref=_id(run, "c1")))
    run("tag create v2 on main", tags.create_tag, repo, lakefs_sdk.TagCreation(id="v2", ref="main"))
    run("error tag create existing", tags.create_tag, repo, lakefs_sdk.TagCreation(id="v1", ref="main"))
    run("error tag create invalid", tags.create_tag, repo, lakefs_sdk.TagCreation(id="bad..tag", ref="main"))
    run("error tag create over branch name", tags.create_tag, repo, lakefs_sdk.TagCreation(id="dev", ref="main"))
    run("error tag create missing ref", tags.create_tag, repo, lakefs_sdk.TagCreation(id="v9", ref="no-such-ref"))
    run("tag get v1", tags.get_tag, repo, "v1")
    run("tags list", tags.list_tags, repo)
    run("tags list amount 1", tags.list_tags, repo, amount=1)
    run("list on tag v1", objects.list_objects, repo, "v1")
    run("tag delete v2", tags.delete_tag, repo, "v2")
    run("error tag delete missing", tags.delete_tag, repo, "v2")
    run("error tag get missing", tags.get_tag, repo, "v2")
    run("tags list after delete", tags.list_tags, repo)

    # --- copyObject
    run(
        "copy same branch",
        objects.copy_object,
        repo,
        "main",
        "copies/top.txt",
        lakefs_sdk.ObjectCopyCreation(src_path="top.txt"),
    )
    run(
        "copy across branches (from dev)",
        objects.copy_object,
        repo,
        "main",
        "copies/new.txt",
        lakefs_sdk.ObjectCopyCreation(src_path="d/new.txt", src_ref="dev"),
    )
    run(
        "copy from a commit",
        objects.copy_object,
        repo,
        "main",
        "copies/old1.txt",
        lakefs_sdk.ObjectCopyCreation(src_path="a/1.txt", src_ref=_id(run, "c1")),
    )
    run(
        "copy onto itself",
        objects.copy_object,
        repo,
        "main",
        "top.txt",
        lakefs_sdk.ObjectCopyCreation(src_path="top.txt"),
    )
    run(
        "copy of a staged object",
        objects.copy_object,
        repo,
        "main",
        "copies/again.txt",
        lakefs_sdk.ObjectCopyCreation(src_path="copies/top.txt"),
    )
    run(
        "error copy missing source",
        objects.copy_object,
        repo,
        "main",
        "copies/x.txt",
        lakefs_sdk.ObjectCopyCreation(src_path="no/such.txt"),
    )
    run(
        "error copy to missing branch",
        objects.copy_object,
        repo,
        "no-such-branch",
        "copies/x.txt",
        lakefs_sdk.ObjectCopyCreation(src_path="top.txt", src_ref="main"),
    )
    run("stat main:top.txt after copy onto itself", objects.stat_object, repo, "main", "top.txt")
    run("diff main after copies", branches.diff_branch, repo, "main")

    # --- the link flow: getPhysicalAddress, write, linkPhysicalAddress
    loc = run(
        "get physical address main:l/1.bin", staging.get_physical_address, repo, "main", "l/1.bin", hint="l/1.bin"
    )
    body = b"linked bytes"
    if loc is not None:
        addr = loc.physical_address
        run.storage.put(run.rel(addr), body)  # the client writes at the address, signature included
        run(
            "link main:l/1.bin",
            staging.link_physical_address,
            repo,
            "main",
            "l/1.bin",
            lakefs_sdk.StagingMetadata(
                staging=lakefs_sdk.StagingLocation(physical_address=addr),
                checksum="abc123",
                size_bytes=len(body),
                content_type="application/x-test",
                user_metadata={"origin": "link"},
            ),
        )
        run(
            "error link to another path",
            staging.link_physical_address,
            repo,
            "main",
            "l/other.bin",
            lakefs_sdk.StagingMetadata(
                staging=lakefs_sdk.StagingLocation(physical_address=addr), checksum="abc", size_bytes=1
            ),
        )
        # on the local blockstore the address handed out is the resolved form, linked FULL and
        # unverified (so linked there, on both): dropped again
        run(
            "reset main:l/other.bin (object)",
            branches.reset_branch,
            repo,
            "main",
            lakefs_sdk.ResetCreation(type="object", path="l/other.bin"),
        )
        bad = re.sub(r",[^,/]*$", ",AAAA", addr)
        run(
            "error link bad signature",
            staging.link_physical_address,
            repo,
            "main",
            "l/2.bin",
            lakefs_sdk.StagingMetadata(
                staging=lakefs_sdk.StagingLocation(physical_address=bad), checksum="abc", size_bytes=1
            ),
        )
        malformed = re.sub(r",[^,/]*$", ",not+base64", addr)
        run(
            "error link malformed signature",
            staging.link_physical_address,
            repo,
            "main",
            "l/4.bin",
            lakefs_sdk.StagingMetadata(
                staging=lakefs_sdk.StagingLocation(physical_address=malformed), checksum="abc", size_bytes=1
            ),
        )
        run(
            "reset main:l/4.bin (object)",
            branches.reset_branch,
            repo,
            "main",  # linked FULL on the local one
            lakefs_sdk.ResetCreation(type="object", path="l/4.bin"),
        )
        unsigned = addr.rpartition(",")[0]
        run(
            "link unsigned address",
            staging.link_physical_address,
            repo,
            "main",
            "l/3.bin",
            lakefs_sdk.StagingMetadata(
                staging=lakefs_sdk.StagingLocation(physical_address=unsigned), checksum="abc", size_bytes=len(body)
            ),
        )
    run(
        "get physical address presign",
        staging.get_physical_address,
        repo,
        "main",
        "l/p.bin",
        presign=True,
        hint="l/p.bin",
    )
    loc = run(
        "get physical address on missing branch",
        staging.get_physical_address,
        repo,
        "no-such-branch",
        "x",
        hint="no-such-branch:x",
    )
    if loc is not None:  # lakeFS hands it out (it looks up the repository only); linking it finds no branch
        meta = lakefs_sdk.StagingMetadata(
            staging=lakefs_sdk.StagingLocation(physical_address=loc.physical_address), checksum="abc", size_bytes=1
        )
        run("error link on missing branch", staging.link_physical_address, repo, "no-such-branch", "x", meta)
        run("error link another branch's address", staging.link_physical_address, repo, "main", "x", meta)
        run(
            "reset main:x (object)",
            branches.reset_branch,
            repo,
            "main",
            lakefs_sdk.ResetCreation(type="object", path="x"),
        )
    run("error get physical address missing repo", staging.get_physical_address, "no-such-repo", "main", "x")
    run("stat main:l/1.bin", objects.stat_object, repo, "main", "l/1.bin")
    ls("main l/", "main", prefix="l/")
    run("diff main with link", branches.diff_branch, repo, "main")

    # --- import from outside the namespace: lakeFS refuses a dirty branch (a staged object, a
    # staged delete of a committed one) in the import's status, after its 202; a clean one imports
    src = _outside_object(run, b"imported bytes")
    creation = lakefs_sdk.ImportCreation(
        paths=[lakefs_sdk.ImportLocation(type="object", path=src, destination="imported/1.bin")],
        commit=lakefs_sdk.CommitCreation(message="import", metadata={"via": "import"}),
    )
    run("branch create imp", branches.create_branch, repo, lakefs_sdk.BranchCreation(name="imp", source="main"))
    upload("imp", "imp/staged.txt", b"makes imp dirty")
    _import(run, "import into a dirty branch (staged object)", "imp", creation)
    run(
        "reset imp (all) after dirty import", branches.reset_branch, repo, "imp", lakefs_sdk.ResetCreation(type="reset")
    )
    run("delete imp:top.txt", objects.delete_object, repo, "imp", "top.txt")
    _import(run, "import into a dirty branch (staged delete)", "imp", creation)
    run(
        "reset imp (all) after second dirty import",
        branches.reset_branch,
        repo,
        "imp",
        lakefs_sdk.ResetCreation(type="reset"),
    )
    _import(run, "import into a clean branch", "imp", creation, name="i1")
    run("log imp amount 2", refs.log_commits, repo, "imp", amount=2, shape=_log_shape(run))
    run("error import into missing branch", c.import_api.import_start, repo, "no-such-branch", creation)

    # --- resets and branch deletion
    run("branch create resets", branches.create_branch, repo, lakefs_sdk.BranchCreation(name="resets", source="main"))
    for p in ("r/1.txt", "r/2.txt", "r/sub/3.txt", "s/4.txt"):
        upload("resets", p, p.encode())
    run(
        "reset resets:r/1.txt (object)",
        branches.reset_branch,
        repo,
        "resets",
        lakefs_sdk.ResetCreation(type="object", path="r/1.txt"),
    )
    ls("resets after object reset", "resets", prefix="r")
    run(
        "reset resets:r/sub/ (common_prefix)",
        branches.reset_branch,
        repo,
        "resets",
        lakefs_sdk.ResetCreation(type="common_prefix", path="r/sub/"),
    )
    ls("resets after prefix reset", "resets", prefix="r")
    run("reset resets (all)", branches.reset_branch, repo, "resets", lakefs_sdk.ResetCreation(type="reset"))
    run("diff resets after reset", branches.diff_branch, repo, "resets")
    run(
        "error reset unknown type",
        branches.reset_branch,
        repo,
        "resets",
        lakefs_sdk.ResetCreation.construct(type="all"),
    )
    run(
        "error reset missing branch",
        branches.reset_branch,
        repo,
        "no-such-branch",
        lakefs_sdk.ResetCreation(type="reset"),
    )
    upload("resets", "kept/uncommitted.txt", b"staged on a branch that stays")
    run("branch create doomed", branches.create_branch, repo, lakefs_sdk.BranchCreation(name="doomed", source="main"))
    upload("doomed", "doomed/staged.txt", b"staged on a deleted branch")
    run("branch delete doomed", branches.delete_branch, repo, "doomed")
    run("error branch delete missing", branches.delete_branch, repo, "doomed")
    run("error branch delete default", branches.delete_branch, repo, "main")
    run("branches list", branches.list_branches, repo)
    run("branches list prefix d", branches.list_branches, repo, prefix="d")
    run("branches list after feature amount 2", branches.list_branches, repo, after="feature", amount=2)

    # --- GC: rules, prepare commits (sync and async), prepare uncommitted
    # 60 days by default (all the history, 30 days): every walk keeps what it reaches, so which
    # branch lakeFS walks first (in commit-id order, random) cannot decide; dev and x keep one day:
    # their own old commits expire
    rules = lakefs_sdk.GarbageCollectionRules(
        default_retention_days=60,
        branches=[
            lakefs_sdk.GarbageCollectionRule(branch_id="dev", retention_days=1),
            lakefs_sdk.GarbageCollectionRule(branch_id="x", retention_days=1),
        ],
    )
    run("gc rules set", repos.set_gc_rules, repo, rules)
    run("gc rules get", repos.get_gc_rules, repo, shape=_rules_shape(run))
    run("gc rules delete", repos.delete_gc_rules, repo)
    run("gc rules get after delete", repos.get_gc_rules, repo)
    run(
        "gc rules set without branches",
        internal.internal_set_garbage_collection_rules,
        repo,
        lakefs_sdk.GarbageCollectionRules(default_retention_days=3, branches=[]),
    )
    run("gc internal rules get", internal.internal_get_garbage_collection_rules, repo)
    run("gc internal rules delete", internal.internal_delete_garbage_collection_rules, repo)
    run("gc rules set again", repos.set_gc_rules, repo, rules)
    run("gc rules set preflight", internal.set_garbage_collection_rules_preflight, repo)
    prep = run("gc prepare commits", internal.prepare_garbage_collection_commits, repo)
    if prep is None:  # lakeFS 1.84 on the local blockstore: a 400 and then the result (DELIBERATE)
        prep = _trailing_result(run.last_error)
    if prep is not None:
        run.answers["gc prepare commits: commits.csv"] = _commits_csv(run, prep.gc_commits_location)
    task = run("gc prepare commits async", internal.prepare_garbage_collection_commits_async, repo)
    if task is not None:
        status = _wait_task(run, "gc prepare commits async: status", task.id)
        if status is not None and status.result is not None:
            run.answers["gc prepare commits async: commits.csv"] = _commits_csv(run, status.result.gc_commits_location)
    run("error gc prepare commits missing repo", internal.prepare_garbage_collection_commits, "no-such-repo")
    unc = run(
        "gc prepare uncommitted",
        internal.prepare_garbage_collection_uncommitted,
        repo,
        lakefs_sdk.PrepareGCUncommittedRequest(),
    )
    if unc is not None:
        run.answers["gc prepare uncommitted: parquet"] = _uncommitted(run, unc.gc_uncommitted_location)
    run(
        "error gc prepare uncommitted bad token",
        internal.prepare_garbage_collection_uncommitted,
        repo,
        lakefs_sdk.PrepareGCUncommittedRequest(continuation_token="not a token"),
    )


def _id(run: Run, name: str) -> str:
    """The id of the commit the scenario named ``name`` (a ref that resolves to nothing when the
    operation that should have made it failed, so that what follows fails visibly, not the script)."""
    return next((cid for cid, n in run.norm.commits.items() if n == name), f"no-commit-named-{name}")


def _rules_shape(run: Run) -> Callable:
    """GC rules, normalised, the branch rules by branch (lakeFS answers them in Go map order)."""

    def shape(d: dict) -> dict:
        out = run.norm.value(d)
        if isinstance(out.get("branches"), list):
            out["branches"] = sorted(out["branches"], key=lambda b: b["branch_id"])
        return out

    return shape


def _log_shape(run: Run) -> Callable:
    """A commit log, normalised; a run of commits whose dates normalise alike (``<now>``) in name
    order (lakeFS orders commits of one second by id)."""

    def shape(d: dict) -> dict:
        out = run.norm.value(d)
        results = out["results"]
        i = 0
        while i < len(results):
            j = i
            while j + 1 < len(results) and results[j + 1]["creation_date"] == results[i]["creation_date"]:
                j += 1
            results[i : j + 1] = sorted(results[i : j + 1], key=lambda r: r["id"])
            i = j + 1
        return out

    return shape


def _trailing_result(body: str) -> Obj | None:
    """The answer lakeFS 1.84 writes after its error document when the sync prepare fails to
    presign on the local blockstore (two JSON documents in one 400 body), if there is one."""
    docs, dec, i = [], json.JSONDecoder(), 0
    while i < len(body):
        if body[i].isspace():
            i += 1
            continue
        try:
            doc, i = dec.raw_decode(body, i)
        except ValueError:
            return None
        docs.append(doc)
    return Obj(docs[-1]) if len(docs) > 1 and isinstance(docs[-1], dict) and "gc_commits_location" in docs[-1] else None


def _outside_object(run: Run, body: bytes) -> str:
    """Write an object outside the repository's namespace, where each server may import it from:
    on the local blockstore under ``<blockstore.local.path>/outside/<repo>/`` (lakeFS imports only
    from under its allowed prefixes, ``real_lakefs`` allows its root), on S3 beside the namespace in
    its bucket. Returns the import source URI (``local://<absolute path>``, ``s3://...``)."""
    if run.server.local_root:
        path = Path(run.server.local_root).resolve() / "outside" / run.repo / "obj.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
        return f"local://{path}"
    outside = run.ns.rstrip("/").rsplit("/", 1)[0] + f"/outside/{run.repo}"
    open_storage(outside, run.store.options()).put("obj.bin", body)
    return f"{outside}/obj.bin"


def _import(run: Run, op: str, branch: str, creation, name: str | None = None) -> None:
    """Start an import into ``branch`` (recorded under ``op``) and wait for its end (completed or
    an error; 20 s at most); record its last status under ``<op>: status``, the commit it made
    named ``name``."""
    task = run(op, run.client.import_api.import_start, run.repo, branch, creation)
    if task is None:
        return
    deadline = time.monotonic() + 20
    while True:
        try:
            code, status = _raw(run.client.import_api.import_status, run.repo, branch, task.id)
        except ApiException as exc:
            run.answers[f"{op}: status"] = {"status": exc.status, "message": run.norm.text(str(exc.body).strip())}
            return
        if status.get("completed") or status.get("error") or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    if name is not None and isinstance(status.get("commit"), dict):
        run.norm.commit(status["commit"]["id"], name)
    _epoch(status, "update_time")
    run.answers[f"{op}: status"] = {"status": code, "body": run.norm.value(status, hint=op)}


def _epoch(d: dict, key: str) -> None:
    """An RFC 3339 time in ``d[key]`` as epoch seconds, to be normalised like the rest."""
    if isinstance(d.get(key), str):
        stamp = re.sub(r"\.\d+", "", d[key]).replace("Z", "+00:00")
        d[key] = int(datetime.fromisoformat(stamp).timestamp())


def _wait_task(run: Run, op: str, task_id: str) -> Obj | None:
    """Poll an async prepare task until it completes (20 s at most); record its last status."""
    deadline = time.monotonic() + 20
    while True:
        try:
            code, status = _raw(run.client.internal_api.prepare_garbage_collection_commits_status, run.repo, task_id)
        except ApiException as exc:
            run.answers[op] = {"status": exc.status, "message": run.norm.text(str(exc.body).strip())}
            return None
        if status.get("completed") or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    _epoch(status, "update_time")
    run.answers[op] = {"status": code, "body": run.norm.value({**status, "task_id": "<task>"})}
    return Obj(status)


def _commits_csv(run: Run, location: str) -> dict:
    """commits.csv as lakeFS wrote it: the header, then the rows with commit and metarange ids named,
    sorted (the order of the rows is not part of the format)."""
    text = run.storage.get(run.rel(location)).decode()
    lines = text.splitlines()
    rows = sorted(run.norm.text(line) for line in lines[1:])
    return {"header": lines[0] if lines else None, "rows": rows, "ends_with_newline": text.endswith("\n")}


def _uncommitted(run: Run, location: str) -> dict:
    """The uncommitted Parquet files under ``location``: their schema and compression, and their
    rows as a set, each address labelled (which staged object it is) with its creation date."""
    import pyarrow.parquet as pq

    if not location:
        return {"files": 0}
    prefix = run.rel(location).rstrip("/") + "/"
    files = [i.key for i in run.storage.list(prefix, recursive=True)]
    schemas, rows = set(), []
    for key in files:
        pf = pq.ParquetFile(io.BytesIO(run.storage.get(key)))
        table = pf.read()
        codecs = {
            pf.metadata.row_group(g).column(c).compression
            for g in range(pf.metadata.num_row_groups)
            for c in range(pf.metadata.num_columns)
        }
        schemas.add((tuple((f.name, str(f.type), f.nullable) for f in table.schema), tuple(sorted(codecs))))
        for row in table.to_pylist():
            rows.append(
                f"{run.norm.text(row['physical_address'])} "
                f"created {run.norm.value(row['creation_date'], 'creation_date')}"
            )
    return {"files": len(files), "schemas": sorted(schemas), "rows": sorted(rows)}


# ---------------------------------------------------------------------------------------------
# comparison


def _leaves(v, path: str = "") -> dict[str, object]:
    if isinstance(v, dict) and v:
        out: dict[str, object] = {}
        for k, x in v.items():
            out.update(_leaves(x, f"{path}.{k}" if path else str(k)))
        return out
    if isinstance(v, list) and v:
        out = {}
        for i, x in enumerate(v):
            out.update(_leaves(x, f"{path}[{i}]"))
        return out
    return {path: v}


def differences(kind: str, real: dict, emu: dict) -> tuple[list[str], set[str]]:
    """Readable lines for every value that differs and is not DELIBERATE; the DELIBERATE patterns used."""
    lines, used = [], set()
    for op in dict.fromkeys([*real, *emu]):
        a = _leaves(real.get(op, "<not run>"))
        b = _leaves(emu.get(op, "<not run>"))
        for field in dict.fromkeys([*a, *b]):
            va, vb = a.get(field, "<absent>"), b.get(field, "<absent>")
            if va == vb:
                continue
            key = f"{kind}:{op}:{field}"
            hits = [p for p in DELIBERATE if fnmatch.fnmatchcase(key, p)]
            if hits:
                used.update(hits)
                continue
            lines.append(f"{op}: {field or '<answer>'}: lakeFS={json.dumps(va)} emulator={json.dumps(vb)}")
    return lines, used


@pytest.fixture
def servers(request, real_lakefs, lakefs_emulator_factory):
    """``servers(kind)``: (lakeFS 1.84, an emulator, the moto server or None) on blockstore ``kind``;
    lakeFS is the session's (``tests/conftest.py``), the emulator this test's own."""

    def get(kind: str):
        if kind == "s3":
            moto = request.getfixturevalue("moto_server")
            return real_lakefs("s3"), lakefs_emulator_factory(s3=moto), moto
        return real_lakefs("local"), lakefs_emulator_factory(), None

    return get


@pytest.mark.filterwarnings(
    "ignore:.* /repositories/{repository}/gc/rules is deprecated:DeprecationWarning",
    "ignore:GET /config/.* is deprecated:DeprecationWarning",
)
@pytest.mark.parametrize("kind", ["local", "s3"])
def test_the_emulator_answers_as_lakefs_does(kind, servers, tmp_path):
    """The scenario on lakeFS and on the emulator: every recorded answer equal after
    normalisation, but for the DELIBERATE differences."""
    real, emu, moto = servers(kind)
    repo = f"agree-{kind}-{uuid.uuid4().hex[:8]}"
    base = int(time.time()) - 30 * 86400
    runs = []
    for server in (real, emu):
        bucket = moto.create_bucket(f"agree-{uuid.uuid4().hex[:10]}") if moto is not None else ""
        run = Run(kind, server, repo, server.namespace(repo, bucket), tmp_path, moto, bucket)
        scenario(run, base)
        runs.append(run)
    if os.environ.get(DUMP_ENV):  # both servers' normalised answers, to read a difference in context
        for who, run in zip(("lakefs", "emulator"), runs):
            Path(os.environ[DUMP_ENV], f"{kind}-{who}.json").write_text(json.dumps(run.answers, indent=1))
    lines, used = differences(kind, runs[0].answers, runs[1].answers)
    stale = [p for p in DELIBERATE if fnmatch.fnmatchcase(kind, p.split(":", 1)[0]) and p not in used]

    def report() -> str:
        return (
            f"{len(lines)} difference(s) between lakeFS 1.84 and the emulator ({kind} blockstore, "
            f"{len(runs[0].answers)} operations):\n"
            + "\n".join(lines)
            + ("\nDELIBERATE entries that matched nothing: " + ", ".join(stale) if stale else "")
        )

    assert not lines, report()
    assert not stale, report()
