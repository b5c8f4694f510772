"""
The GC's exceptions, importable anywhere (Spark executors included) without lakefs-sdk.

Every one of them means "stop, delete nothing more": the message says what is wrong and how to
fix it.

Two kinds of failure (what a Spark job records for its task, :class:`lakefs_gc.contract.StepFailure`):

- refused: a :class:`Refusal`. Running the same task again gives the same answer until a person
  changes something (a Param, the GC rules, a connection, the mark being swept, the run's inputs),
  so the task fails at once, without Airflow's retries. These are :class:`SettingsError` (and
  ``PlanError``), :class:`NoGCRulesError`, :class:`SweepRefused` (the guards: blast radius, the
  mark to sweep missing, failed or stale), :class:`ContractError` (run data of the wrong shape)
  and a job started without its credentials.
- failed: anything else, including a plain :class:`LakeFSGCError` (lakeFS's async prepare failing
  or timing out, an unreadable ``commits.csv``), storage and lakeFS errors after the client's own
  retries, a killed executor, a bug: a retry may pass, so Airflow retries the task.

A job classifies what its driver raises; an error raised inside a Spark task reaches the driver
wrapped by Spark and counts as failed. When unsure, an error stays "failed": a needless retry
costs minutes, a wrong "refused" fails a run that a retry would have finished.
"""

from __future__ import annotations


class LakeFSGCError(RuntimeError):
    """GC cannot go on safely; the message says why and how to fix it."""


class Refusal(LakeFSGCError):
    """
    Retrying cannot help: the same inputs give the same answer until a person changes something.

    The message says what to change. The task fails at once, without Airflow's retries.
    """


class NoGCRulesError(Refusal):
    """The repository has no GC rules: GC deletes nothing without them."""


class SweepRefused(Refusal):
    """A sweep must not start (the message says why and which Param changes it); nothing was deleted."""


class SettingsError(Refusal, ValueError):
    """A run setting (a Param) is invalid or unsafe; the message names the Param to change."""


class Unreachable(LakeFSGCError):
    """
    A service (lakeFS, the storage endpoint) did not answer within the retry budget of its connection.

    The message names the endpoint, the connection and what to check. It counts as failed (a later
    retry may pass: a restart) and Airflow retries the task, except in prepare_run, the run's first
    call to lakeFS, where it fails at once (a wrong connection is likelier there than a restart).
    """


class ContractError(Refusal):
    """A task received run data of the wrong shape (an upgrade mid-run, or a bug): nothing is guessed."""
