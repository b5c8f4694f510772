"""lakefs_gc.listing.slices: several listing tasks at once (``interleaved``), and a listing the same
whether its tasks run one at a time or at once."""

from __future__ import annotations

import os
import threading
import time

import pytest

from lakefs_gc.listing.slices import interleaved, list_batches, listing_tasks
from lakefs_gc.storage.local import LocalStorage


def _listing_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("listing-")]


def _no_listing_thread_left(deadline_s: float = 10) -> bool:
    end = time.monotonic() + deadline_s
    while _listing_threads() and time.monotonic() < end:
        time.sleep(0.05)
    return not _listing_threads()


def test_every_item_of_every_source_comes_once():
    sources = [lambda i=i: iter(range(i * 100, i * 100 + i)) for i in range(12)]
    got = list(interleaved(sources, threads=3, depth=2))
    assert sorted(got) == sorted(x for i in range(12) for x in range(i * 100, i * 100 + i))
    assert _no_listing_thread_left()


def test_a_sources_error_is_raised_and_no_thread_is_left():
    def bad():
        yield 1
        raise OSError("the store went away")

    slow = [lambda: (time.sleep(0.01) or x for x in range(200))] * 4
    with pytest.raises(OSError, match="the store went away"):
        list(interleaved([*slow, bad, *slow], threads=3, depth=1))
    assert _no_listing_thread_left()


def test_a_consumer_leaving_early_stops_every_thread():
    endless = [lambda: iter(int, 1)] * 5  # never ends
    gen = interleaved(endless, threads=3, depth=4)
    assert [next(gen) for _ in range(10)] == [0] * 10
    gen.close()
    assert _no_listing_thread_left()


def test_one_thread_or_one_source_runs_in_the_callers_thread():
    seen = []
    sources = [lambda: (seen.append(threading.current_thread().name) or x for x in range(3))]
    assert list(interleaved(sources * 2, threads=1)) == [0, 1, 2, 0, 1, 2]
    assert list(interleaved(sources, threads=4)) == [0, 1, 2]
    assert set(seen) == {threading.current_thread().name}


class Counter:
    def __init__(self):
        self.n = 0

    def add(self, k):
        self.n += k


def test_a_listing_at_once_is_the_listing_one_task_at_a_time(tmp_path):
    now = time.time()
    keys = [f"data/s{i:02d}/o{j:03d}" for i in range(9) for j in range(40)] + ["data/loose", "a0", "f9", "dummy"]
    for k in keys:
        path = tmp_path / k
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(k.encode())
        age = 3600 if not k.endswith("7") else 0  # objects ending in 7: newer than the cutoff
        os.utime(path, (now - age, now - age))
    st = LocalStorage(tmp_path)
    tasks = listing_tasks([f"data/s{i:02d}/" for i in range(9)])
    cutoff = now - 60

    def run(threads):
        counter = Counter()
        rows = sorted(
            r["address"] for b in list_batches(st, cutoff, tasks, counter, threads=threads) for r in b.to_pylist()
        )
        return rows, counter.n

    one, seen_one = run(1)
    at_once, seen_at_once = run(4)
    assert one == at_once == sorted(k for k in keys if not k.endswith("7") and k != "dummy")
    assert seen_one == seen_at_once == len(keys) - 1  # every key seen; the dummy marker is never listed
