"""
Trees as lakeFS keeps them: ranges and metaranges, graveler SSTables under ``_lakefs/<id>``.

Read (cached: trees never change), written by applying sorted changes to a base metarange
(untouched ranges shared), and merged three ways.
"""

from __future__ import annotations

import bisect
import io
from collections.abc import Iterator

from lakefs_gc.lakefs.graveler import RANGES_TYPE, Entry, RangeInfo, iter_metarange, iter_range
from lakefs_gc.lakefs.sstable import SSTableReader
from lakefs_sandbox.emulator.catalog.store import Store
from lakefs_sandbox.emulator.errors import APIError, MergeConflict
from lakefs_sandbox.graveler_writer import (
    GravelerTableWriter,
    entry_identity,
    entry_value,
    metarange_to_bytes,
    should_break_at_key,
)


class Trees(Store):
    """Reading, writing and merging graveler trees in a repository's storage namespace."""

    def _metarange(self, ns: str, mr_id: str) -> list[RangeInfo]:
        if not mr_id:
            return []

        def load():
            with self.storage(ns).open_input(f"_lakefs/{mr_id}") as f:
                return [ri for _, ri in iter_metarange(SSTableReader(f, name=mr_id))]

        return self._metaranges.get_or((ns, mr_id), load)

    def _range(self, ns: str, range_id: str) -> tuple[list[bytes], list]:
        def load():
            with self.storage(ns).open_input(f"_lakefs/{range_id}") as f:
                recs = list(iter_range(SSTableReader(f, name=range_id)))
            return [r.key for r in recs], recs

        return self._ranges.get_or((ns, range_id), load)

    def _lookup(self, ns: str, mr_id: str, path: str) -> Entry | None:
        ranges = self._metarange(ns, mr_id)
        key = path.encode()
        i = bisect.bisect_left([r.max_key for r in ranges], key)
        if i == len(ranges) or ranges[i].min_key > key:
            return None
        keys, recs = self._range(ns, ranges[i].id)
        j = bisect.bisect_left(keys, key)
        return recs[j].entry if j < len(keys) and keys[j] == key else None

    def _iter_committed(self, ns: str, mr_id: str, start: bytes = b"") -> Iterator[tuple[str, Entry]]:
        for rng in self._metarange(ns, mr_id):
            if rng.max_key < start:
                continue
            keys, recs = self._range(ns, rng.id)
            for j in range(bisect.bisect_left(keys, start), len(keys)):
                yield recs[j].key.decode("utf-8", "surrogateescape"), recs[j].entry

    def _write_table(self, ns: str, table_id: str, data: bytes) -> None:
        if (ns, table_id) in self._tables_written:
            return
        self.storage(ns).put(f"_lakefs/{table_id}", data)  # content-addressed: writing it again is harmless
        self._tables_written.add((ns, table_id))

    def _apply(self, ns: str, base_mr: str, changes: list[tuple[bytes, Entry | None]]) -> str:
        """
        Apply sorted changes to a base metarange, as lakeFS's committed Apply; return the new metarange id.

        Untouched base ranges are reused as-is when the writer is at a range boundary; touched
        ranges are rewritten, cut by ShouldBreakAtKey.
        """
        out: list[RangeInfo] = []
        state: dict = {"w": None, "buf": None}
        s = self.s

        def add(key: bytes, value: bytes) -> None:
            if state["w"] is None:
                state["buf"] = io.BytesIO()
                state["w"] = GravelerTableWriter(state["buf"], RANGES_TYPE)
            w = state["w"]
            w.add(key, value)
            if should_break_at_key(key, w.estimated_size(), s.min_range_size, s.max_range_size, s.range_raggedness):
                close()

        def close() -> None:
            w = state["w"]
            if w is None:
                return
            info = w.finish()
            self._write_table(ns, info.id, state["buf"].getvalue())
            out.append(info)
            state["w"] = state["buf"] = None

        def add_change(key: bytes, e: Entry | None) -> None:
            if e is not None:  # None deletes: nothing to write
                add(key, entry_value(e))

        ci, n = 0, len(changes)
        for rng in self._metarange(ns, base_mr):
            while ci < n and changes[ci][0] < rng.min_key:
                add_change(*changes[ci])
                ci += 1
            if ci == n or changes[ci][0] > rng.max_key:
                close()
                out.append(rng)  # unchanged range: shared with the base commit
                continue
            _, recs = self._range(ns, rng.id)
            for rec in recs:
                while ci < n and changes[ci][0] < rec.key:
                    add_change(*changes[ci])
                    ci += 1
                if ci < n and changes[ci][0] == rec.key:
                    add_change(*changes[ci])
                    ci += 1
                else:
                    add(rec.key, entry_value(rec.entry))
        while ci < n:
            add_change(*changes[ci])
            ci += 1
        close()
        mr_id, data = metarange_to_bytes(out)
        self._write_table(ns, mr_id, data)
        return mr_id

    def _merge_trees(self, ns: str, dest: str, source: str, base: str, strategy: str, allow_empty: bool = False) -> str:
        """
        Merge three trees key by key, as lakeFS's ``committedManager.Merge``; return the merged metarange id.

        ``pkg/graveler/committed/merge.go``: a side that did not change a key against ``base`` takes
        the other side's; both changed (or one changed and the other deleted) is a conflict unless
        ``strategy`` is ``dest-wins`` or ``source-wins``. Entries compare by identity.
        """
        if source == base and not allow_empty:
            raise APIError(400, "no changes")
        if dest == base:
            return source  # changes on the source only
        d, s, b = (dict(self._iter_committed(ns, mr)) if mr else {} for mr in (dest, source, base))

        def ident(e: Entry | None) -> bytes | None:
            return None if e is None else entry_identity(e)

        def conflict(src_value: Entry | None, dest_value: Entry | None) -> Entry | None:
            if strategy == "dest-wins":
                return dest_value
            if strategy == "source-wins":
                return src_value
            raise MergeConflict()

        changes: list[tuple[bytes, Entry | None]] = []
        out: Entry | None
        for key in sorted(set(d) | set(s), key=lambda k: k.encode("utf-8", "surrogateescape")):
            dv, sv, bv = d.get(key), s.get(key), b.get(key)
            di, si, bi = ident(dv), ident(sv), ident(bv)
            if sv is not None and dv is not None:
                if si == di:
                    out = sv
                elif bv is not None and si == bi:
                    out = dv
                elif bv is not None and di == bi:
                    out = sv
                else:
                    out = conflict(sv, dv)
            else:  # on one side only
                present, present_ident = (sv, si) if sv is not None else (dv, di)
                if bv is None:
                    out = present  # added by that side
                elif present_ident == bi:
                    out = None  # deleted by the other side
                else:
                    out = conflict(sv, dv)  # changed by one side, deleted by the other
            if out != dv:
                changes.append((key.encode("utf-8", "surrogateescape"), out))
        return self._apply(ns, dest, changes) if changes else dest
