"""``python -m bench list``: both paths on a store, one line each in the issue's form, and the
GC's path lists what the SDK lists (here on moto and local disk, small); the HEADs both ways."""

from __future__ import annotations

import re

from bench import list_bench


def test_the_listing_bench_prints_both_paths_per_store(capsys):
    status = list_bench.main(["--keys", "1500", "--s3", "moto", "--stores", "s3,local", "--stats", "50"])
    out = capsys.readouterr().out.split("\n\n")[-1]
    lines = [ln for ln in out.splitlines() if ln.strip()]
    pattern = r"^{} {}: [\d,]+ keys/s, [\d.]+ us/key"
    for store, path in (
        ("s3 \\(moto\\)", "sdk"),
        ("s3 \\(moto\\)", "gc"),
        ("local", "sdk"),
        ("local", "gc"),
        ("s3 \\(moto\\)", "stat sdk"),
        ("s3 \\(moto\\)", "stat native"),
    ):
        assert any(re.match(pattern.format(store, path), ln) for ln in lines), (store, path, lines)
    us = {
        m.group(1): float(m.group(2))
        for m in (re.match(r"^s3 \(moto\) (\w+): .*, ([\d.]+) us/key", ln) for ln in lines)
        if m
    }
    assert us["gc"] < us["sdk"], us  # the native path costs the client less per key
    assert status in (0, 1)  # 1 only when the S3 path is above the target (a loaded machine)
