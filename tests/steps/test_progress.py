"""lakefs_gc.progress: steady, bounded progress lines for the long steps."""

from __future__ import annotations

import logging
import time

import pytest

from lakefs_gc.progress import Progress, counted, watch


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "lakefs_gc.progress"]


@pytest.mark.parametrize("total", [100_000, None])
def test_a_listing_of_100000_objects_logs_progress_in_fewer_than_100_lines(caplog, total):
    """100,000 objects listed at 500 a second (200 s): a line every 10 s, then the last one."""
    clock = Clock()
    progress = Progress("list_slices", "objects listed", total=total, clock=clock)

    def objects():
        for i in range(100_000):
            clock.now += 0.002
            yield i

    with caplog.at_level(logging.INFO, logger="lakefs_gc.progress"):
        assert sum(1 for _ in counted(objects(), progress)) == 100_000
    out = lines(caplog)
    assert 10 <= len(out) < 100
    assert out[0].startswith("list_slices: 5,00")
    assert "objects listed so far, 500/s" in out[0]
    if total:
        assert "% done, about " in out[0]
        assert " left" in out[0]
        assert out[9].startswith("list_slices: 50,0")
        assert "50% done, about 1m40s left" in out[9]
    assert out[-1] == "list_slices: 100,000 objects listed in 3m20s (500/s)"


def test_a_step_of_a_day_logs_fewer_than_100_lines(caplog):
    clock = Clock()
    progress = Progress("delete", "keys swept", clock=clock)
    with caplog.at_level(logging.INFO, logger="lakefs_gc.progress"):
        for _ in range(86_400):
            clock.now += 1.0
            progress.add(10)
        progress.finish()
    assert 20 < len(lines(caplog)) < 100


@pytest.mark.spark
def test_watch_logs_the_share_of_spark_tasks_done_and_the_count(spark, caplog):
    def slow(items, acc):
        n = 0
        for i in items:
            time.sleep(0.15)
            n += 1
            yield i
        acc.add(n)

    with caplog.at_level(logging.INFO, logger="lakefs_gc.progress"):
        with watch(spark, "list_slices", "objects listed", every=0.3, poll=0.05) as acc:
            got = spark.sparkContext.parallelize(range(16), 8).mapPartitions(lambda it: slow(it, acc)).collect()
    assert sorted(got) == list(range(16))
    out = lines(caplog)
    assert any("% done" in line for line in out[:-1]), out
    assert out[-1].startswith("list_slices: 16 objects listed in ")
