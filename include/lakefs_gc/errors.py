"""The GC's exceptions, importable anywhere (Spark executors included) without lakefs-sdk.

Every one of them means "stop, delete nothing more": the message says what is wrong and how to
fix it.
"""

from __future__ import annotations


class LakeFSGCError(RuntimeError):
    """GC cannot go on safely; the message says why and how to fix it."""


class NoGCRulesError(LakeFSGCError):
    """The repository has no GC rules: GC deletes nothing without them."""


class SweepRefused(LakeFSGCError):
    """A sweep must not start (the message says why and which Param changes it); nothing was deleted."""


class SettingsError(LakeFSGCError, ValueError):
    """A run setting (a Param) is invalid or unsafe; the message names the Param to change."""


class ContractError(LakeFSGCError):
    """A task received run data of the wrong shape (an upgrade mid-run, or a bug): nothing is guessed."""
