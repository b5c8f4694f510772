"""Diffs: a branch's uncommitted changes, two refs compared, and their merge base."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lakefs_sandbox.emulator.catalog.staging import Staging
from lakefs_sandbox.emulator.errors import APIError
from lakefs_sandbox.graveler_writer import entry_identity

if TYPE_CHECKING:
    from lakefs_gc.lakefs.graveler import Entry


class Diffs(Staging):
    """``diffBranch``, ``diffRefs`` and ``findMergeBase``."""

    def diff_branch(
        self, repo: str, branch: str, prefix: str, after: str, amount: int, delimiter: str = ""
    ) -> tuple[list[tuple[str, str, int | None]], bool]:
        """
        Diff a branch's uncommitted changes against its HEAD, as lakeFS's ``diffBranch`` (``Catalog.DiffUncommitted``).

        By path: ``added`` (no committed entry), ``changed`` (another identity), ``removed`` (a
        tombstone over a committed entry: the tombstone's size, 0); paged as :meth:`_page_diff`
        (``size`` None: a common prefix).
        """
        with self.lock:
            r = self._repo_row(repo)
            head, _ = self._branch(repo, branch)
            ns = r["storage_namespace"]
            mr = self._commit(repo, head)["meta_range_id"]
            diffs = [
                (path, "removed", 0)
                if e is None
                else (path, "changed" if self._lookup(ns, mr, path) is not None else "added", e.size)
                for path, e in self._diff_uncommitted(ns, mr, self._staged(repo, branch))
            ]
            return _page_diff(diffs, prefix, after, amount, delimiter)

    def diff_refs(
        self, repo: str, left: str, right: str, kind: str, prefix: str, after: str, amount: int, delimiter: str
    ) -> tuple[list[tuple[str, str, int | None]], bool]:
        """
        Diff two refs, as lakeFS's ``diffRefs``; paged as :meth:`_page_diff`.

        ``two_dot`` (``Graveler.Diff``): the left commit against the right one (a right ref
        ``<branch>$``, lakeFS's staging modifier: the branch's staged changes over its HEAD);
        ``removed`` carries the left entry's size.
        ``three_dot``, the default (``Graveler.Compare``, committed only): what merging the right
        ref into the left would change, from their merge base: a key only the right side changed
        is ``added``/``changed``/``removed``, one both changed differently ``conflict``.
        """
        with self.lock:
            r = self._repo_row(repo)
            ns = r["storage_namespace"]
            if kind == "two_dot":
                left_id, _ = self.resolve_ref(repo, left)
                staging = (
                    right.endswith("$")
                    and self.db.execute("SELECT 1 FROM branches WHERE repo=? AND name=?", (repo, right[:-1])).fetchone()
                    is not None
                )
                right_id, _ = self.resolve_ref(repo, right[:-1] if staging else right)
                lt, base = self._tree(repo, ns, left_id), None
                rt = self._tree(repo, ns, right_id, right[:-1] if staging else None)
            else:
                right_id, _ = self.resolve_ref(repo, right, f"get commit by ref {right}: not found")
                left_id, _ = self.resolve_ref(repo, left, f"get commit by branch {left}: not found")
                base_id = self._merge_base(repo, right_id, left_id)
                if base_id is None:
                    raise APIError(500, "no merge base")
                lt, rt, base = (self._tree(repo, ns, c) for c in (left_id, right_id, base_id))

            def ident(e: Entry | None) -> bytes | None:
                return None if e is None else entry_identity(e)

            diffs: list[tuple[str, str, int | None]] = []
            for path in sorted(set(lt) | set(rt), key=lambda k: k.encode("utf-8", "surrogateescape")):
                lv, rv = lt.get(path), rt.get(path)
                if lv is not None and rv is not None and ident(lv) == ident(rv):
                    continue
                typ = "added" if lv is None else "removed" if rv is None else "changed"
                size = (rt[path] if rv is not None else lt[path]).size
                if base is not None:  # lakeFS's compareIterator
                    bv = base.get(path)
                    if typ == "added":
                        if bv is not None:
                            if ident(bv) == ident(rv):
                                continue
                            typ = "conflict"
                    elif typ == "changed":
                        if bv is None:
                            typ = "conflict"
                        elif ident(bv) == ident(rv):
                            continue
                        elif ident(bv) != ident(lv):
                            typ = "conflict"
                    else:  # removed
                        if bv is None:
                            continue
                        if ident(bv) != ident(lv):
                            typ = "conflict"
                diffs.append((path, typ, size))
            return _page_diff(diffs, prefix, after, amount, delimiter)

    def find_merge_base(self, repo: str, source: str, destination: str) -> tuple[str, str, str]:
        """
        Return (source_commit_id, destination_commit_id, base_commit_id) as lakeFS 1.84's ``findMergeBase`` answers.

        Its controller passes the destination as the catalog's source, so ``source_commit_id`` is
        the destination's commit and ``destination_commit_id`` the source's.
        """
        with self.lock:
            self._repo_row(repo)
            from_id, _ = self.resolve_ref(repo, destination, f"get commit by ref {destination}: not found")
            to_id, _ = self.resolve_ref(repo, source, f"get commit by branch {source}: not found")
            base = self._merge_base(repo, from_id, to_id)
            if base is None:
                raise APIError(500, "no merge base")
            return from_id, to_id, base


def _page_diff(
    diffs: Sequence[tuple[str, str, int | None]], prefix: str, after: str, amount: int, delimiter: str
) -> tuple[list[tuple[str, str, int | None]], bool]:
    """
    Page diffs as lakeFS's ``listDiffHelper``; return the page and whether more follow.

    Over (path, type, size) in path order: the paths under ``prefix`` past ``after`` (with a
    delimiter: past everything under ``after``), a run of paths under one common prefix folded
    into one ``prefix_changed`` entry (size None; lakeFS reports every common prefix as changed),
    at most ``amount``.
    """

    def started(p: str) -> bool:
        if not after or after < prefix:
            return p >= prefix
        if not delimiter:
            return p >= after
        return p > after and not p.startswith(after)  # SeekGE(UpperBoundForPrefix(after))

    out: list[tuple[str, str, int | None]] = []
    items = [d for d in diffs if started(d[0])]
    i = 0
    while i < len(items) and len(out) <= amount:
        path, typ, size = items[i]
        if path == after:
            i += 1
            continue
        if not path.startswith(prefix):
            break
        rest = path[len(prefix) :]
        if delimiter and delimiter in rest:
            common = prefix + rest.split(delimiter, 1)[0] + delimiter
            out.append((common, "prefix_changed", None))
            while i < len(items) and items[i][0].startswith(common):
                i += 1
            continue
        out.append((path, typ, size))
        i += 1
    return out[:amount], len(out) > amount
