"""lakefs_gc_airflow.task_io: a failure's reason in the task log, readable without scrolling sideways."""

from __future__ import annotations

import logging

from lakefs_gc_airflow.task_io import REASON_WIDTH, log_reason, reason_lines

LONG = (
    "repository 'sample-repo' has namespace 's3://a-bucket/sample-repo', but the storage connection "
    "'aws_default' is not defined: define it (an aws connection: keys, role or profile, extra endpoint_url "
    "for S3-compatible stores) or fix storage_conn_id in the GC config. Nothing was deleted"
)


def test_a_long_reason_becomes_short_lines_and_keeps_every_word():
    lines = reason_lines(LONG)
    assert len(lines) > 2
    assert all(len(ln) <= REASON_WIDTH for ln in lines)
    assert " ".join(lines) == LONG


def test_a_uri_longer_than_a_line_stays_whole():
    uri = "s3://bucket/" + "x" * 150
    assert reason_lines(f"cannot read {uri} now") == ["cannot read", uri, "now"]


def test_the_log_gets_the_headline_then_the_indented_lines(caplog):
    log = logging.getLogger("lakefs_gc_airflow.test")
    with caplog.at_level(logging.ERROR, logger=log.name):
        log_reason(log, "prepare_run refused (no retry)", LONG + "\nsecond paragraph")
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0] == "prepare_run refused (no retry):"
    assert all(m.startswith("    ") and len(m) <= REASON_WIDTH + 4 for m in messages[1:])
    assert messages[-1] == "    second paragraph"
