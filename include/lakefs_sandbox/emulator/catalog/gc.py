"""
What GC asks of lakeFS: retention rules, ``prepare_commits`` (sync and async), ``prepare_uncommited``.

Each writes what lakeFS writes into the storage namespace: the rules protobuf, ``commits.csv``,
the uncommitted GZIP Parquet files.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import secrets
import time

from lakefs_gc.lakefs.graveler import RELATIVE
from lakefs_gc.lakefs.sstable import uvarint_bytes
from lakefs_gc.storage import S3Storage
from lakefs_sandbox.emulator.active_commits import CommitNode, Rules, active_commits
from lakefs_sandbox.emulator.catalog.staging import Staging, entry_mtime
from lakefs_sandbox.emulator.catalog.store import _now_iso
from lakefs_sandbox.emulator.errors import APIError, not_found
from lakefs_sandbox.emulator.xid import new_descending_xid, new_xid

RULES_KEY = "_lakefs/retention/gc/rules/config.json"
NANOID_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-"


class GarbageCollection(Staging):
    """GC's endpoints: rules, commit preparation (and its tasks), uncommitted preparation."""

    def get_gc_rules(self, repo: str) -> dict:
        with self.lock:
            rules = self._repo_row(repo)["gc_rules"]
            if rules is None:
                raise not_found()
            return rules

    def set_gc_rules(self, repo: str, rules: dict | None) -> None:
        with self.lock:
            r = self._repo_row(repo)
            self.storage(r["storage_namespace"]).put(RULES_KEY, _rules_proto(rules) if rules else b"")
            self.db.execute("UPDATE repos SET gc_rules=? WHERE name=?", (json.dumps(rules) if rules else None, repo))

    def prepare_commits(self, repo: str) -> dict:
        with self.lock:
            r = self._repo_row(repo)
            rules = r["gc_rules"]
            if rules is None:
                raise APIError(404, "get gc rules: not found")
            ns = r["storage_namespace"]
            commits = {
                cid: CommitNode(cid, tuple(c["parents"]), c["creation_date"], c["meta_range_id"], c["version"])
                for cid, c in self._all_commits(repo).items()
            }
            branches = {n: c for n, c in self.db.execute("SELECT name, commit_id FROM branches WHERE repo=?", (repo,))}
            rr = Rules(
                int(rules["default_retention_days"]),
                {b["branch_id"]: int(b["retention_days"]) for b in rules.get("branches") or []},
            )
            active = active_commits(commits, branches, rr, self.now())
            run_id = new_descending_xid(self.now())
            buf = io.StringIO()
            w = csv.writer(buf, lineterminator="\n")
            w.writerow(["commit_id", "expired", "metarange_id"])
            for cid, mr in active.items():
                w.writerow([cid, "false", mr])
            key = f"_lakefs/retention/gc/commits/run_id={run_id}/commits.csv"
            st = self.storage(ns)
            st.put(key, buf.getvalue().encode())
            out = {
                "run_id": run_id,
                "gc_commits_location": self.full_uri(ns, key),
                "gc_addresses_location": self.full_uri(ns, "_lakefs/retention/gc/addresses/"),
            }
            url = self._presign_get(ns, key)
            if url:
                out["gc_commits_presigned_url"] = url
            return out

    def _presign_get(self, ns: str, key: str) -> str | None:
        """Return a presigned GET (S3 only: the emulator presigns no Azure or GCS URL; the GC reads the location)."""
        return self.presign(ns, "get_object", key) if isinstance(self.storage(ns), S3Storage) else None

    def presign(self, ns: str, operation: str, key: str, expiry: int = 900) -> str:
        """
        Return a presigned S3 URL for ``key`` of namespace ``ns``, signed as lakeFS signs.

        SigV4, query parameters ``X-Amz-*`` (boto3's default for a custom endpoint being SigV2)
        and, as the Go SDK lakeFS uses, with ``x-id=<operation>`` among the signed parameters.
        """
        st = self.storage(ns)
        presigner = self._presigners.get(ns)
        if presigner is None:
            import boto3
            from botocore.config import Config

            o = st.options
            presigner = boto3.session.Session().client(
                "s3",
                endpoint_url=o.endpoint_url,
                aws_access_key_id=o.access_key_id,
                aws_secret_access_key=o.secret_access_key,
                aws_session_token=o.session_token,
                config=Config(
                    region_name=o.region,
                    signature_version="s3v4",
                    s3={"addressing_style": "path" if o.path_style else "auto"},
                ),
            )
            presigner.meta.events.register("before-sign.s3", _x_id)
            self._presigners[ns] = presigner
        return presigner.generate_presigned_url(
            operation, Params={"Bucket": st.bucket, "Key": st._name(key)}, ExpiresIn=expiry
        )

    def start_prepare_commits_task(self, repo: str) -> str:
        with self.lock:
            self._repo_row(repo)
            task_id = "GCPC" + "".join(secrets.choice(NANOID_ALPHABET) for _ in range(20))  # catalog.NewTaskID
            body: dict = {"created": time.time(), "done_at": time.time() + self.s.prepare_commits_delay}
            try:
                body["result"] = self.prepare_commits(repo)
            except APIError as exc:
                body["error"] = exc.message
            self.db.execute("INSERT INTO tasks VALUES (?,?,?)", (task_id, repo, json.dumps(body)))
            return task_id

    def prepare_commits_status(self, repo: str, task_id: str) -> dict:
        with self.lock:
            self._repo_row(repo)
            row = self.db.execute("SELECT body FROM tasks WHERE id=? AND repo=?", (task_id, repo)).fetchone()
            if row is None or not task_id.startswith("GCPC"):
                raise not_found("task")
            body = json.loads(row[0])
            now = time.time()
            out: dict = {
                "task_id": task_id,
                "completed": now >= body["done_at"],
                "update_time": _now_iso(min(now, body["done_at"]) if now >= body["done_at"] else body["created"]),
            }
            if out["completed"]:
                if "result" in body:
                    out["result"] = body["result"]
                else:
                    out["error"] = {"message": body["error"]}
            return out

    def prepare_uncommitted(self, repo: str, token: str | None) -> dict:
        with self.lock:
            r = self._repo_row(repo)
            ns = r["storage_namespace"]
            if token:
                try:
                    mark = json.loads(base64.b64decode(token, validate=True))
                    run_id, mark_branch, mark_path = mark["run_id"], mark["branch"], mark["path"]
                except Exception:
                    raise APIError(400, "invalid continuation token") from None
            else:
                run_id, mark_branch, mark_path = new_descending_xid(self.now()), "", ""
            prefix = ns.rstrip("/") + "/"
            rows: list[tuple[str, int]] = []
            next_mark = None
            page = self.s.uncommitted_page_size
            for (branch,) in self.db.execute(
                "SELECT name FROM branches WHERE repo=? AND name >= ? ORDER BY name", (repo, mark_branch)
            ).fetchall():
                head, _ = self._branch(repo, branch)
                mr = self._commit(repo, head)["meta_range_id"]
                staged = [
                    (p, e)
                    for p, e in self._staged(repo, branch)
                    if e is not None and (branch != mark_branch or p >= mark_path)
                ]
                for path, e in self._diff_uncommitted(ns, mr, staged):
                    if len(rows) == page:
                        next_mark = {"branch": branch, "path": path, "run_id": run_id, "key": ""}
                        break
                    if e.address_type == RELATIVE:
                        addr = e.address
                    elif e.address.startswith(prefix):
                        addr = e.address[len(prefix) :]
                    else:
                        continue  # external address: not GC's business
                    rows.append((addr, entry_mtime(e)))
                if next_mark:
                    break
            if next_mark is None and len(rows) == page and page > 0:
                # the page is full: lakeFS only learns the listing ended on the next call
                next_mark = {"branch": "\U0010ffff", "path": "", "run_id": run_id, "key": ""}
            location = ""
            if rows:
                import pyarrow as pa
                import pyarrow.parquet as pq

                table = pa.table(
                    {
                        "physical_address": pa.array([a for a, _ in rows], pa.string()),
                        "creation_date": pa.array([t for _, t in rows], pa.int64()),
                    },
                    schema=pa.schema(
                        [
                            pa.field("physical_address", pa.string(), nullable=False),
                            pa.field("creation_date", pa.int64(), nullable=False),
                        ]
                    ),
                )
                buf = io.BytesIO()
                pq.write_table(table, buf, compression="GZIP")
                loc_key = f"_lakefs/retention/gc/uncommitted/{run_id}/uncommitted/"
                self.storage(ns).put(loc_key + new_xid(self.now()), buf.getvalue())
                location = self.full_uri(ns, loc_key)
            out = {"run_id": run_id, "gc_uncommitted_location": location}
            if next_mark:
                out["continuation_token"] = base64.b64encode(json.dumps(next_mark).encode()).decode()
            return out


def _x_id(request, operation_name: str, **_) -> None:
    """Botocore ``before-sign`` hook: the operation as ``x-id`` in the query (signed with it)."""
    request.url += ("&" if "?" in request.url else "?") + f"x-id={operation_name}"


def _pb_varint(v: int) -> bytes:
    """Return ``v`` as a protobuf varint (two's complement on 64 bits, as protobuf writes an int)."""
    return uvarint_bytes(v & 0xFFFFFFFFFFFFFFFF)


def _rules_proto(rules: dict) -> bytes:
    """graveler.GarbageCollectionRules {int32 default_retention_days = 1; map<string,int32> branch_retention_days = 2}."""
    out = bytearray()
    d = int(rules["default_retention_days"])
    if d:
        out += b"\x08" + _pb_varint(d)
    for b in sorted(rules.get("branches") or [], key=lambda x: x["branch_id"]):
        k = b["branch_id"].encode()
        entry = b"\x0a" + _pb_varint(len(k)) + k
        if int(b["retention_days"]):
            entry += b"\x10" + _pb_varint(int(b["retention_days"]))
        out += b"\x12" + _pb_varint(len(entry)) + entry
    return bytes(out)
