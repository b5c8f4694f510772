"""
A repository's notifiers from the config (``notify: {on_failure, on_success}``).

:class:`GCRunNotifier` is an Airflow notifier (``BaseNotifier``): it words the message (the
repository, the run, the task and the one-line reason of a refusal or failure; on success the
run's summary) and hands it to the notifier the config names: Airflow's ``SmtpNotifier`` (the SMTP
provider), the Slack provider's ``SlackNotifier``, or any ``BaseNotifier`` by its dotted path.
A missing provider is a bad entry of the repositories file (``lakefs_gc.config``), naming the
package to install: that repository's DAG is not built, the others' are.

The GC DAG sets them as task callbacks: ``on_failure_callback`` on every task (a refused run's
``prepare_run`` fails with its reason; the tasks after it are ``upstream_failed`` and call
nothing, so one mail per failure) and ``on_success_callback`` on ``save_report``, the run's last task.
"""

from __future__ import annotations

import html
import importlib
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseNotifier

from lakefs_gc.config.parse import NOTIFIER_TARGETS

if TYPE_CHECKING:
    from airflow.sdk import Context

    from lakefs_gc.config import NotifierSpec


def _target_class(spec: NotifierSpec) -> type:
    """Return the notifier class ``spec`` names; ImportError naming the package when its provider is not installed."""
    if spec.kind == "class":
        module, _, name = str(spec.option("path")).rpartition(".")
        package = module
    else:
        module, name, package = NOTIFIER_TARGETS[spec.kind]
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise ImportError(
            f"lakeFS GC notify: {spec.kind} notifier {module}.{name} cannot be imported ({e}); "
            f"install {package} into every Airflow component"
        ) from e
    if not (isinstance(cls, type) and issubclass(cls, BaseNotifier)) and not callable(cls):
        raise ImportError(f"lakeFS GC notify: {module}.{name} is not a notifier")
    return cls


def one_line(exc: BaseException | str | None) -> str:
    """Return the reason in one line: the exception's first non-empty line (a refusal's message is one line)."""
    text = str(exc or "").strip()
    return next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__ if exc else "")


class GCRunNotifier(BaseNotifier):
    """
    Tell a person about one GC run of ``repository``: ``when`` is ``on_failure`` or ``on_success``.

    Built from the config's :class:`~lakefs_gc.config.NotifierSpec` at parse time (no network);
    the target notifier is made when a message is sent.

    :param spec: the entry's notifier (``smtp``, ``slack`` or a notifier class, and its target).
    :param repository: the repository whose runs it tells of.
    :param when: ``on_failure`` or ``on_success``.
    """

    template_fields = ()

    def __init__(self, spec: NotifierSpec, repository: str, when: str) -> None:
        super().__init__()
        self.spec = spec
        self.repository = repository
        self.when = when
        self.target_class = _target_class(spec)  # fails the parse when the provider is missing

    def message(self, context: Context) -> tuple[str, str]:
        """(subject, text) for this run."""
        ti = context.get("ti")
        task = getattr(ti, "task_id", "?")
        run_id = context.get("run_id", "?")
        if self.when == "on_failure":
            reason = one_line(context.get("exception")) or "the task failed (its log says why)"
            subject = f"lakeFS GC {self.repository}: run {run_id} failed at {task}: {reason}"[:250]
            text = f"lakeFS GC of repository {self.repository}, run {run_id}: task {task} failed.\nReason: {reason}\n"
        else:
            xcom = ti.xcom_pull(task_ids=task) if ti is not None else None
            summary = (xcom or {}).get("summary", "") if isinstance(xcom, dict) else ""
            subject = f"lakeFS GC {self.repository}: run {run_id} succeeded"
            text = f"lakeFS GC of repository {self.repository}, run {run_id}: done.\n{summary}\n"
        return subject, text

    def notify(self, context: Context) -> None:
        subject, text = self.message(context)
        options: dict[str, Any] = dict(self.spec.options)
        if self.spec.kind == "smtp":
            target = self.target_class(
                to=list(options["to"]),
                from_email=options.get("from_email"),
                smtp_conn_id=options.get("smtp_conn_id"),
                subject=options.get("subject") or subject,
                html_content="<pre>" + html.escape(text) + "</pre>",
            )
        elif self.spec.kind == "slack":
            target = self.target_class(
                text=f"*{subject}*\n{text}",
                channel=options["channel"],
                **({"slack_conn_id": options["slack_conn_id"]} if options.get("slack_conn_id") else {}),
                **({"username": options["username"]} if options.get("username") else {}),
            )
        else:
            target = self.target_class(**dict(options.get("args") or {}))
            for name, value in (("subject", subject), ("text", text), ("message", text)):
                if hasattr(target, name) and getattr(target, name) in (None, ""):
                    setattr(target, name, value)
        target.notify(context)


def run_notifiers(specs: tuple[NotifierSpec, ...], repository: str, when: str) -> list[GCRunNotifier]:
    """Return the callbacks of ``when`` for a repository's tasks (empty: none configured)."""
    return [GCRunNotifier(s, repository, when) for s in specs]
