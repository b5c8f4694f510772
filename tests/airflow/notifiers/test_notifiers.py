"""The config's notifiers as Airflow notifiers: the message (the one-line reason), the targets they
hand it to, and a missing provider named when the DAG is parsed. The mail itself reaches a real
SMTP server in tests/airflow/e2e/test_fleet.py."""

from __future__ import annotations

import pytest
from airflow.sdk import BaseNotifier

from lakefs_gc.config import NotifierSpec
from lakefs_gc_airflow.notifiers import GCRunNotifier, one_line


class Recorder(BaseNotifier):
    sent: list = []

    def __init__(self, channel: str = "", **kwargs):
        super().__init__()
        self.channel, self.subject, self.text = channel, None, None

    def notify(self, context):
        Recorder.sent.append((self.channel, self.subject, self.text))


class FakeTI:
    task_id = "prepare_run"

    def xcom_pull(self, task_ids):
        return {"summary": "deleted: 3"}


def _spec(**args):
    return NotifierSpec("class", (("args", args), ("path", f"{__name__}.Recorder")))


def test_a_failure_names_the_repository_the_run_the_task_and_the_reason():
    Recorder.sent = []
    n = GCRunNotifier(_spec(channel="#gc"), "my-repo", "on_failure")
    exc = RuntimeError("min_age_seconds=5 is below lakeFS's grace period of 86400s. Nothing was deleted\n  detail")
    n.notify({"ti": FakeTI(), "run_id": "manual__1", "exception": exc})
    [(channel, subject, text)] = Recorder.sent
    assert channel == "#gc"
    assert subject == (
        "lakeFS GC my-repo: run manual__1 failed at prepare_run: min_age_seconds=5 is below lakeFS's "
        "grace period of 86400s. Nothing was deleted"
    )
    assert "Reason: min_age_seconds=5 is below" in text


def test_a_success_carries_the_runs_summary():
    Recorder.sent = []
    GCRunNotifier(_spec(), "my-repo", "on_success").notify({"ti": FakeTI(), "run_id": "r1"})
    [(_, subject, text)] = Recorder.sent
    assert subject == "lakeFS GC my-repo: run r1 succeeded"
    assert "deleted: 3" in text


def test_a_missing_provider_is_a_bad_entry_naming_the_package():
    from lakefs_gc.config import parse_config

    cfg = parse_config(
        {
            "repositories": [
                {"repository": "abc", "notify": {"on_failure": [{"slack": {"channel": "#x"}}]}},
                {"repository": "def"},
            ]
        },
        "gc.yaml",
        strict=False,
    )
    assert [r.repository for r in cfg.repositories] == ["def"]
    assert cfg.entry_problems == [
        "gc.yaml: repositories[0] (abc): field 'notify.on_failure[0].slack': "
        "airflow.providers.slack.notifications.slack is not installed here: install "
        "apache-airflow-providers-slack into every Airflow component"
    ]
    with pytest.raises(ImportError, match="install apache-airflow-providers-slack into every Airflow component"):
        GCRunNotifier(NotifierSpec("slack", (("channel", "#gc"),)), "my-repo", "on_failure")


def test_the_smtp_provider_is_the_smtp_target():
    from airflow.providers.smtp.notifications.smtp import SmtpNotifier

    n = GCRunNotifier(NotifierSpec("smtp", (("to", ("a@example.com",)),)), "my-repo", "on_failure")
    assert n.target_class is SmtpNotifier


def test_one_line():
    assert one_line(ValueError("first\nsecond")) == "first"
    assert one_line(ValueError("")) == "ValueError"
    assert one_line(None) == ""
