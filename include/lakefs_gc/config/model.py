"""
The GC configuration's model: one :class:`RepoConfig` per repository entry, and where things are.

Part of :mod:`lakefs_gc.config` (import from there).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path

from lakefs_gc.contract import RunSettings
from lakefs_gc.gc.flow import CleanRunEvery

DEFAULT_CLEAN_DAYS = 7  # clean_run_every: an auto run is clean at least weekly

ENV_CONFIG = "LAKEFS_GC_CONFIG"
ENV_WORK_DIR = "LAKEFS_GC_WORK_DIR"
DEFAULT_WORK_DIR = "/tmp/lakefs-gc-work"
ENV_PROJECT_ROOT = "LAKEFS_GC_HOME"


def project_root() -> Path:
    """
    Return where ``config/`` is, and what relative ``spark.py_files`` / ``spark.jobs_dir`` are taken from.

    ``$LAKEFS_GC_HOME``, else the checkout this package runs from (``include/lakefs_gc/config/``),
    else the working directory (an installed package: set ``LAKEFS_GC_CONFIG``; the jobs and their
    zip come from the package itself).
    """
    env = os.environ.get(ENV_PROJECT_ROOT)
    if env:
        return Path(env)
    package = Path(__file__).resolve().parents[1]  # lakefs_gc/
    if package.parent.name == "include" and (package.parents[1] / "pyproject.toml").is_file():
        return package.parents[1]
    return Path.cwd()


_PRESET_SECONDS = {
    "@hourly": 3600,
    "@daily": 86400,
    "@weekly": 7 * 86400,
    "@monthly": 28 * 86400,
    "@quarterly": 90 * 86400,
    "@yearly": 365 * 86400,
    "@annually": 365 * 86400,
}


class ConfigError(ValueError):
    """The GC configuration file is missing, unreadable or invalid (the message says where)."""


@dataclass(frozen=True)
class SparkSettings:
    """How a run's Spark steps run: Spark properties, memory, parallelism, and where spark-submit and its inputs are."""

    conf: dict[str, str] = field(default_factory=dict)
    driver_memory: str | None = None
    executor_memory: str | None = None
    parallelism: int | None = None
    binary: str | None = None  # spark-submit path; None: the one next to the running Python
    python: str | None = None  # PYSPARK_PYTHON; None: the running Python
    py_files: str | None = None  # None: a zip of the installed package (lakefs_gc.spark.bundle)
    jobs_dir: str | None = None  # None: the jobs inside the package (lakefs_gc/jobs)
    fast_start: bool = True  # the driver JVM's start-up options (lakefs_gc.spark.jvm)
    in_process_max_keys: int = 10_000  # a step of at most this many keys runs in its task, without Spark (0: never)
    pool: str | None = None  # the Airflow pool of the Spark steps; None: Airflow's default_pool

    def spark_conf(self) -> dict[str, str]:
        """``conf`` plus the parallelism as Spark properties (explicit conf keys win)."""
        out: dict[str, str] = {}
        if self.parallelism:
            out["spark.default.parallelism"] = str(self.parallelism)
            out["spark.sql.shuffle.partitions"] = str(self.parallelism)
        out.update(self.conf)
        return out


@dataclass(frozen=True)
class SweepSettings:
    """How a run deletes: the defaults of the run's Params (their own defaults: ``RunSettings``)."""

    confirm_after_seconds: int | None = None  # None: one schedule interval for scheduled runs, 0 for manual
    max_delete_share: float = RunSettings.max_delete_share
    max_delete_count: int = RunSettings.max_delete_count
    mark_max_age_seconds: int = RunSettings.mark_max_age_seconds
    rate: float = RunSettings.delete_rate
    concurrency: int | None = None  # delete tasks at once; None: spark.parallelism
    batch_size: int = RunSettings.delete_batch_size
    quarantine_days: int = RunSettings.quarantine_days  # local:// only


@dataclass(frozen=True)
class SpaceSettings:
    """Where the bytes go (``attribute_space``): the defaults of the run's Params of the same names."""

    enabled: bool = RunSettings.attribute_space
    stale_branch_days: int = RunSettings.stale_branch_days


@dataclass(frozen=True)
class NotifierSpec:
    """
    One notifier of a repository's runs, as the config names it (``lakefs_gc_airflow.notifiers`` builds it).

    ``kind``: ``smtp`` (Airflow's SMTP provider), ``slack`` (the Slack provider), or ``class`` (any
    ``BaseNotifier`` by its dotted path); ``options``: its fields as the file has them.
    """

    kind: str
    options: tuple[tuple[str, object], ...] = ()

    def option(self, name: str, default: object = None) -> object:
        return dict(self.options).get(name, default)


@dataclass(frozen=True)
class NotifySettings:
    """Who hears of a repository's runs: notifiers on a failed task (with its one-line reason) and on a run that succeeded."""

    on_failure: tuple[NotifierSpec, ...] = ()
    on_success: tuple[NotifierSpec, ...] = ()


@dataclass(frozen=True)
class TaskSettings:
    """
    Airflow task behaviour.

    Every GC step is idempotent (outputs overwritten, the sweep resumes from its done markers), so
    failures are retried; refusals (bad settings, missing rules, unsafe input) fail at once without
    retry.
    """

    retries: int = 2
    retry_delay_seconds: int = 120
    execution_timeout_seconds: int = 6 * 3600
    execution_timeouts: dict[str, int] = field(default_factory=dict)  # per task id, overriding the above

    def timeout(self, task_id: str) -> int:
        return self.execution_timeouts.get(task_id, self.execution_timeout_seconds)


def schedule_interval_seconds(schedule: str | None) -> int:
    """Return the shortest gap between two runs of ``schedule`` (0 for manual-only / @once / @continuous)."""
    if not schedule or schedule in ("@once", "@continuous"):
        return 0
    if schedule in _PRESET_SECONDS:
        return _PRESET_SECONDS[schedule]
    from datetime import datetime

    from croniter import croniter  # type: ignore[import-untyped, unused-ignore]

    it = croniter(schedule, datetime(2024, 1, 1, tzinfo=UTC))
    fires = [it.get_next(float) for _ in range(64)]
    return int(min(b - a for a, b in zip(fires, fires[1:])))


@dataclass(frozen=True)
class RepoConfig:
    """One repository entry of the config file, merged over ``defaults``: its connections, schedule and settings."""

    repository: str
    lakefs_conn_id: str
    storage_conn_id: str | None  # None: none set (a local:// namespace needs none)
    spark_conn_id: str
    min_age_seconds: int
    mode: str
    schedule: str | None = None
    work_dir: str | None = None
    tags: tuple[str, ...] = ()
    spark: SparkSettings = field(default_factory=SparkSettings)
    sweep: SweepSettings = field(default_factory=SweepSettings)
    tasks: TaskSettings = field(default_factory=TaskSettings)
    space: SpaceSettings = field(default_factory=SpaceSettings)
    flow: str = "auto"  # the default of the run's Param flow (lakefs_gc.gc.flow)
    clean_run_every: CleanRunEvery = field(default_factory=lambda: CleanRunEvery(days=DEFAULT_CLEAN_DAYS))
    notify: NotifySettings = field(default_factory=NotifySettings)
    discovered: bool = False  # from a ``discover`` source (the refresh's list), not listed by name
    priority_weight: int = 1  # the Spark steps' priority in their pool (discovered: by the last run's size)

    @property
    def dag_id(self) -> str:
        return f"lakefs_gc__{self.repository}"


@dataclass(frozen=True)
class DiscoverySource:
    """
    One ``discover`` source: every repository of a lakeFS (its connection) whose name matches.

    ``include`` / ``exclude``: shell patterns (``fnmatch``) on the repository id, an exclude wins;
    ``defaults``: entry fields for every repository it matches (over the file's ``defaults``);
    ``overrides``: entry fields per repository id (over those).
    """

    lakefs_conn_id: str
    include: tuple[str, ...]
    exclude: tuple[str, ...] = ()
    defaults: tuple[tuple[str, object], ...] = ()
    overrides: tuple[tuple[str, tuple[tuple[str, object], ...]], ...] = ()

    def matches(self, repository: str) -> bool:
        from fnmatch import fnmatchcase

        return any(fnmatchcase(repository, p) for p in self.include) and not any(
            fnmatchcase(repository, p) for p in self.exclude
        )


@dataclass(frozen=True)
class DiscoverySettings:
    """The ``discover`` section: its sources, the refresh DAG's schedule, and where the refresh records the list."""

    sources: tuple[DiscoverySource, ...]
    schedule: str | None = "*/15 * * * *"
    state_file: Path = Path("discovered.json")


@dataclass(frozen=True)
class RemovedRepository:
    """A repository a source matched that lakeFS no longer lists: its DAG is no longer built."""

    repository: str
    lakefs_conn_id: str
    removed_at: str  # when the refresh first found it gone (ISO 8601, UTC)


@dataclass(frozen=True)
class GCConfig:
    """The config file as read: its path, its good entries and (``strict=False``) the bad entries' messages."""

    path: Path
    repositories: tuple[RepoConfig, ...]
    entry_errors: tuple[str, ...] = ()  # the bad entries' messages (``strict=False`` only), in file order
    pools: tuple[tuple[str, int], ...] = ()  # Airflow pools the set-up creates: (name, slots)
    discovery: DiscoverySettings | None = None
    removed: tuple[RemovedRepository, ...] = ()  # discovered repositories gone from lakeFS
    refreshed_at: str | None = None  # the discovery refresh's last run (None: never)

    def pools_import(self) -> dict[str, dict[str, object]]:
        """Return the ``pools`` as ``airflow pools import FILE`` reads them (what the set-up and ``make airflow`` create)."""
        return {
            name: {
                "slots": slots,
                "description": "lakeFS GC: the Spark steps of the repositories whose "
                "spark.pool names it (a few runs at a time)",
                "include_deferred": False,
            }
            for name, slots in self.pools
        }

    @property
    def entry_problems(self) -> list[str]:
        """Every problem of the bad entries, one line each (an entry's message holds all of its own)."""
        return [line for message in self.entry_errors for line in message.splitlines()]


def default_config_path() -> Path:
    """``$LAKEFS_GC_CONFIG`` if set, else the checked-in ``config/gc_repositories.yaml``."""
    env = os.environ.get(ENV_CONFIG)
    return Path(env) if env else project_root() / "config" / "gc_repositories.yaml"


def resolve_work_dir(configured: str | None) -> str:
    """Return the base work location: the entry's ``work_dir``, else ``$LAKEFS_GC_WORK_DIR``, else /tmp."""
    return configured or os.environ.get(ENV_WORK_DIR) or DEFAULT_WORK_DIR
