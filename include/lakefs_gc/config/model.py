"""
The GC configuration's model: one :class:`RepoConfig` per repository entry, and where things are.

Part of :mod:`lakefs_gc.config` (import from there).
"""

from __future__ import annotations

import os
import re
from dataclasses import MISSING, dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any

from lakefs_gc.contract import ApprovalRule, KeepRules, Prices, RunSettings
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
class Problem:
    """
    One problem of the config file: where it is (the file and its line) and what is wrong.

    Printed the way linters print them: ``gc.yaml:7: repositories[1] (my-repo): field 'mode':
    must be one of ...`` (no line: a document given already parsed).
    """

    path: Path
    line: int | None
    message: str  # the block, the field, what is wrong: "repositories[1] (my-repo): field 'mode': ..."
    whole_file: bool = False  # of the top level, defaults, pools or discover: no DAG is built until it is fixed

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}" if self.line is not None else f"{self.path}: {self.message}"


# The field metadata of a field made by setting: its Rule
RULE = "lakefs_gc.config.rule"


@dataclass(frozen=True)
class Rule:
    """
    What a section's field must be besides its type (``from_wire`` checks that): its bounds or pattern.

    A value of the wrong type or out of bounds gets one message, ``must be <words>, got <value>``;
    the words are ``must_be``, else ``true or false`` (a bool) or ``an integer`` / ``a number`` and
    the bounds (``0..1``, ``>= 1``), then ``note``.
    """

    lo: float | None = None
    hi: float | None = None
    above: float | None = None  # an exclusive lower bound (the words are then must_be's)
    pattern: str | None = None  # re.match on the string
    must_be: str | None = None
    note: str = ""

    def ok(self, v: Any) -> bool:
        """Whether ``v`` (of the field's type) is in bounds and matches."""
        if self.lo is not None and v < self.lo or self.hi is not None and v > self.hi:
            return False
        if self.above is not None and v <= self.above:
            return False
        return self.pattern is None or re.match(self.pattern, v) is not None


def setting(default: Any = MISSING, **rule: Any) -> Any:
    """Return a section's field read from the file: its default, and its :class:`Rule` (bounds, pattern, words)."""
    return field(default=default, metadata={RULE: Rule(**rule)})


_MEMORY = r"^[0-9]+[kKmMgGtT]?[bB]?$"
POOL_PATTERN = r"^[A-Za-z0-9_.\-]{1,256}$"  # an Airflow pool name
_NON_EMPTY = dict(pattern=r"(?s).", must_be="a non-empty string")


@dataclass(frozen=True)
class SparkSettings:
    """How a run's Spark steps run: Spark properties, memory, parallelism, and where spark-submit and its inputs are."""

    conf: dict[str, str] = field(default_factory=dict)  # read by hand: any scalar, as a string
    driver_memory: str | None = setting(None, pattern=_MEMORY, must_be="a Spark memory size such as 1g or 512m")
    executor_memory: str | None = setting(None, pattern=_MEMORY, must_be="a Spark memory size such as 1g or 512m")
    parallelism: int | None = setting(None, lo=1)
    binary: str | None = setting(None, **_NON_EMPTY)  # spark-submit path; None: the one next to the running Python
    python: str | None = setting(None, **_NON_EMPTY)  # PYSPARK_PYTHON; None: the running Python
    py_files: str | None = setting(None, **_NON_EMPTY)  # None: a zip of the installed package (lakefs_gc.spark.bundle)
    jobs_dir: str | None = setting(None, **_NON_EMPTY)  # None: the jobs inside the package (lakefs_gc/jobs)
    fast_start: bool = setting(True)  # the driver JVM's start-up options (lakefs_gc.spark.jvm)
    # a step of at most this many keys runs in its task, without Spark (0: never)
    in_process_max_keys: int = setting(
        10_000, lo=0, must_be="a whole number of keys >= 0 (0: every Spark step is a spark-submit)"
    )
    # the Airflow pool of the Spark steps; None: Airflow's default_pool
    pool: str | None = setting(
        None, pattern=POOL_PATTERN, must_be="an Airflow pool name (letters, digits, _ . -) or null"
    )

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

    # None: one schedule interval for scheduled runs, 0 for manual
    confirm_after_seconds: int | None = setting(None, lo=0)
    max_delete_share: float = setting(RunSettings.max_delete_share, lo=0, hi=1)
    max_delete_count: int = setting(RunSettings.max_delete_count, lo=0)
    mark_max_age_seconds: int = setting(RunSettings.mark_max_age_seconds, lo=0)
    rate: float = setting(RunSettings.delete_rate, lo=0)
    concurrency: int | None = setting(None, lo=1)  # delete tasks at once; None: spark.parallelism
    batch_size: int = setting(RunSettings.delete_batch_size, lo=1, hi=1000)
    quarantine_days: int = setting(RunSettings.quarantine_days, lo=0, hi=3650)  # local:// only
    # incomplete multipart uploads older than this are aborted (0: never; else at least lakeFS's
    # expiry of upload addresses, 1 day: lakefs_gc.config.sections checks that)
    abort_uploads_after_days: float = setting(
        RunSettings.abort_uploads_after_days, lo=0, hi=3650, must_be="a number of days: 0 (never) or 1..3650"
    )
    # a person approves the sweep in Airflow's UI (lakefs_gc.contract.approval): "approval" asks for every
    # sweep; approval_above (read by hand: "guard", a share 0 < x < 1 or a count >= 1) only above it
    confirm: str = setting("automatic", pattern=r"^(automatic|approval)$", must_be="automatic or approval")
    approval_above: str | None = None
    approval_timeout_hours: float = setting(24.0, above=0, hi=720, must_be="a number of hours > 0, at most 720")

    def approval_rule(self) -> ApprovalRule:
        """Return when this repository's sweeps wait for a person (inactive: never)."""
        timeout = max(1, round(self.approval_timeout_hours * 3600))
        above = self.approval_above
        if self.confirm == "approval":
            return ApprovalRule(always=True, timeout_seconds=timeout)
        if above is None:
            return ApprovalRule(timeout_seconds=timeout)
        if above == "guard":
            return ApprovalRule(above_guard=True, timeout_seconds=timeout)
        value = float(above)
        if value < 1:
            return ApprovalRule(above_share=value, timeout_seconds=timeout)
        return ApprovalRule(above_count=int(value), timeout_seconds=timeout)


@dataclass(frozen=True)
class SpaceSettings:
    """Where the bytes go (``attribute_space``): the defaults of the run's Params of the same names."""

    enabled: bool = setting(RunSettings.attribute_space)
    stale_branch_days: int = setting(RunSettings.stale_branch_days, lo=0, hi=36500, note=" (days)")


@dataclass(frozen=True)
class LeftoversSettings:
    """
    ``leftovers``: how long the GC's own files stay (the defaults of the run's Params ``expire_leftovers``, ``keep_*``).

    A mark still needed (an incremental base, a pending sweep, an undo window) stays whatever its age
    (lakefs_gc.report.leftovers).
    """

    enabled: bool = setting(RunSettings.expire_leftovers)
    marks_days: int = setting(
        RunSettings.keep_marks_days,
        lo=1,
        hi=36500,
        must_be="a whole number of days 1..36500 (a mark and its reports older than this go; set enabled: false to keep them all)",
    )
    keep_runs: int = setting(
        RunSettings.keep_marks_runs, lo=1, must_be="a whole number >= 1 (the newest marks kept whatever their age)"
    )
    work_days: int = setting(
        RunSettings.keep_work_days, lo=1, hi=36500, must_be="a whole number of days 1..36500 (a run's work folder)"
    )


@dataclass(frozen=True)
class InventorySettings:
    """
    ``listing.inventory``: where a store's inventory reports are delivered, and how a run takes them.

    The defaults of the run's Params ``inventory_*`` (their own defaults: ``RunSettings``); the
    fields that depend on each other (a location for ``source: inventory``, S3's
    ``source_prefix``, Azure's rule ``name``, ``kind`` agreeing with the location) are checked by
    :mod:`lakefs_gc.config.listing`.
    """

    kind: str | None = setting(None, pattern=r"^(s3|azure|gs)$", must_be="one of s3, azure, gs (null: the location's)")
    location: str | None = setting(None, **_NON_EMPTY)
    name: str | None = setting(None, **_NON_EMPTY)  # Azure: the rule's name; GCS: the report configuration's id
    source_prefix: str | None = setting(None, pattern=r"(?s)", must_be='a string ("" for none)')  # S3 only
    max_age_days: float = setting(
        RunSettings.inventory_max_age_days, above=0, hi=3650, must_be="a number of days > 0 (at most 3650)"
    )
    fallback: str = setting(RunSettings.inventory_fallback, pattern=r"^(none|list)$", must_be="one of none, list")


@dataclass(frozen=True)
class ListingSettings:
    """``listing``: what a clean run lists the namespace from, LIST calls or the store's inventory (docs/inventory.md)."""

    source: str = setting(RunSettings.listing_source, pattern=r"^(list|inventory)$", must_be="one of list, inventory")
    inventory: InventorySettings = field(default_factory=InventorySettings)  # read by hand


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

    retries: int = setting(2, lo=0)
    retry_delay_seconds: int = setting(120, lo=0)
    execution_timeout_seconds: int = setting(6 * 3600, lo=1)
    # per task id, overriding the above (read by hand: its keys are task ids)
    execution_timeouts: dict[str, int] = field(default_factory=dict)
    # list_committed waits for lakeFS's commits preparation in Airflow's triggerer, holding no worker or
    # pool slot (lakefs_gc_airflow.triggers); None: Airflow's [operators] default_deferrable
    deferrable: bool | None = setting(None)

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
    leftovers: LeftoversSettings = field(default_factory=LeftoversSettings)
    flow: str = "auto"  # the default of the run's Param flow (lakefs_gc.gc.flow)
    clean_run_every: CleanRunEvery = field(default_factory=lambda: CleanRunEvery(days=DEFAULT_CLEAN_DAYS))
    notify: NotifySettings = field(default_factory=NotifySettings)
    listing: ListingSettings = field(default_factory=ListingSettings)
    prices: Prices = field(default_factory=Prices)  # the run's cost (lakefs_gc.config.prices)
    keep: KeepRules = field(default_factory=KeepRules)  # retention added to lakeFS's (lakefs_gc.config.keep)
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
    problems: tuple[Problem, ...] = ()  # the bad entries' problems, one each, with their lines
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
