"""The Spark driver's fast start (lakefs_gc.spark.jvm): the options, and the class archive's cache."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from lakefs_gc.spark import jvm


def test_the_options_go_before_the_users_own_and_once():
    conf = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=4 -Dx=1", "spark.ui.enabled": "false"}
    once = jvm.with_driver_options(conf, "-XX:TieredStopAtLevel=1 -XX:SharedArchiveFile=/a.jsa")
    assert (
        once["spark.driver.extraJavaOptions"]
        == "-XX:TieredStopAtLevel=1 -XX:SharedArchiveFile=/a.jsa -XX:TieredStopAtLevel=4 -Dx=1"
    )  # the user's win
    assert jvm.with_driver_options(once, "-XX:TieredStopAtLevel=1 -XX:SharedArchiveFile=/a.jsa") == once  # a retry
    assert jvm.with_driver_options({}, jvm.C1_ONLY) == {"spark.driver.extraJavaOptions": jvm.C1_ONLY}
    assert conf["spark.driver.extraJavaOptions"] == "-XX:TieredStopAtLevel=4 -Dx=1"  # not changed in place


def test_an_archive_that_cannot_be_made_leaves_c1_only_and_is_not_tried_again_for_a_day(tmp_path, caplog):
    calls = tmp_path / "calls"
    binary = tmp_path / "spark-submit"
    binary.write_text(f"#!/bin/sh\necho started >> {calls}\necho 'no Spark here' >&2\nexit 3\n")
    binary.chmod(0o755)
    cache = tmp_path / "jvm"
    cache.mkdir(mode=0o700)
    assert jvm.driver_java_options(str(binary), sys.executable, cache) == jvm.C1_ONLY
    assert "no class archive for the Spark driver (its Spark job exited 3: no Spark here)" in caplog.text
    assert jvm.driver_java_options(str(binary), sys.executable, cache) == jvm.C1_ONLY
    assert calls.read_text().count("started") == 1  # the failure is remembered
    failed = next(cache.glob("*.failed"))
    os.utime(failed, (0, 0))  # a day later: tried again
    jvm.driver_java_options(str(binary), sys.executable, cache)
    assert calls.read_text().count("started") == 2


def test_the_archive_lives_in_a_private_directory(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv(jvm.ENV_ARCHIVE_DIR, str(shared))
    with pytest.raises(RuntimeError, match="writable by it alone: remove it, or set LAKEFS_GC_JVM_CACHE_DIR"):
        jvm.archive_dir()
    assert jvm.driver_java_options("/opt/spark/bin/spark-submit") == jvm.C1_ONLY  # the task still runs
    monkeypatch.setenv(jvm.ENV_ARCHIVE_DIR, str(tmp_path / "mine"))
    assert stat.S_IMODE(jvm.archive_dir().stat().st_mode) == 0o700
    # named by the Spark binary (another Spark or Java: another archive)
    a, b = jvm.archive_path("/opt/spark-a/bin/spark-submit"), jvm.archive_path("/opt/spark-b/bin/spark-submit")
    assert a != b
    assert a.parent == b.parent == tmp_path / "mine"
    assert a.suffix == ".jsa"


def test_the_suites_archive_is_made_and_used():
    """The suite's Spark drivers (tests/support/jvm.py) use the archive the set-up made."""
    from tests.support.jvm import java_options

    options = java_options()
    assert options.startswith(jvm.C1_ONLY + " -XX:SharedArchiveFile=")
    archive = Path(options.split("=", 2)[-1])
    assert archive.is_file()
    assert archive == jvm.archive_path(str(Path(sys.executable).parent / "spark-submit"))
