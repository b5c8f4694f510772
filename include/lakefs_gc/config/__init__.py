"""
The checked-in list of repositories to collect (``config/gc_repositories.yaml``), validated.

Pure Python (no Airflow): the DAG files call :func:`load_config` when they are parsed (the only
parse-time work), and tests call it directly. Every error names the file, its line, the entry and
the field, e.g. ``config/gc_repositories.yaml:4: repositories[0] (sample-repo): field 'mode': must be
one of mark_and_sweep, mark_only, got 'sweep'``; every problem is found, not only the first of each
block (:func:`check_config`: all of them, what ``lakefs-gc config check`` prints).

A bad entry breaks only itself: ``load_config(strict=False)`` (what ``dags/gc_dags.py`` reads)
returns every good entry and the bad entries' messages in ``GCConfig.entry_errors``, and
:func:`raise_entry_errors` (all of ``dags/gc_config_errors.py``) raises them, so Airflow records them
as that file's import error while the DAGs of ``gc_dags.py`` stay. A file that cannot be read, is
not YAML or has a bad top level, ``defaults``, ``pools`` or ``discover`` fails as a whole.

Values resolved at run time, not here: the work location (:func:`resolve_work_dir`), which depends
on the worker's environment.

Each name imported from here: :mod:`~lakefs_gc.config.model` (the entries, their settings, where
the file and the work location are), :mod:`~lakefs_gc.config.parse` (reading and validating the
file: its top level), :mod:`~lakefs_gc.config.entry` (one repository entry) and
:mod:`~lakefs_gc.config.sections` (an entry's sections); :mod:`~lakefs_gc.config.lines` (the line
of each part of the file); :mod:`~lakefs_gc.config.discovered` (the discovery refresh's record).
"""

from __future__ import annotations

from lakefs_gc.config.model import (
    DEFAULT_CLEAN_DAYS,
    DEFAULT_WORK_DIR,
    ENV_CONFIG,
    ENV_PROJECT_ROOT,
    ENV_WORK_DIR,
    ConfigError,
    DiscoverySettings,
    DiscoverySource,
    GCConfig,
    NotifierSpec,
    NotifySettings,
    Problem,
    RemovedRepository,
    RepoConfig,
    SpaceSettings,
    SparkSettings,
    SweepSettings,
    TaskSettings,
    default_config_path,
    project_root,
    resolve_work_dir,
    schedule_interval_seconds,
)
from lakefs_gc.config.parse import (
    ENTRY_DEFAULTS,
    ConfigCheck,
    check_config,
    load_config,
    parse_config,
    parse_entry,
    raise_entry_errors,
)

__all__ = [
    "ConfigCheck",
    "ConfigError",
    "DEFAULT_CLEAN_DAYS",
    "DEFAULT_WORK_DIR",
    "ENTRY_DEFAULTS",
    "ENV_CONFIG",
    "ENV_PROJECT_ROOT",
    "ENV_WORK_DIR",
    "DiscoverySettings",
    "DiscoverySource",
    "GCConfig",
    "NotifierSpec",
    "NotifySettings",
    "Problem",
    "RemovedRepository",
    "RepoConfig",
    "SparkSettings",
    "SpaceSettings",
    "SweepSettings",
    "TaskSettings",
    "check_config",
    "default_config_path",
    "load_config",
    "parse_config",
    "parse_entry",
    "project_root",
    "raise_entry_errors",
    "resolve_work_dir",
    "schedule_interval_seconds",
]
