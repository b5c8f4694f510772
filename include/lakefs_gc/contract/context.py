"""
The run context, written once by ``prepare_run``.

Part of :mod:`lakefs_gc.contract` (import from there).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lakefs_gc.contract.approval import ApprovalRule
from lakefs_gc.contract.cost import Prices
from lakefs_gc.contract.keep import KeepRules
from lakefs_gc.contract.settings import RunSettings
from lakefs_gc.errors import ContractError


@dataclass(frozen=True)
class StorageLocation:
    """Where the repository's objects are, without secrets (those come from the connection)."""

    namespace: str  # as lakeFS reports it: s3://bucket/repo, local://repo, gs://, https://
    blockstore_type: str  # s3 | local | azure | gs
    endpoint_url: str | None = None  # S3-compatible endpoint (None: AWS), Azure account URL, GCS API endpoint
    s3_region: str | None = None
    local_root: str | None = None  # lakeFS's blockstore.local.path, for local:// namespaces


@dataclass(frozen=True)
class LakeFSRetries:
    """
    How every task and job retries lakeFS (5xx, 429, dropped connections).

    The lakeFS connection's extras ``max_retries``, ``backoff_base``, ``backoff_max``, ``connect_timeout``.
    """

    max_retries: int = 5
    backoff_base: float = 0.5
    backoff_max: float = 20.0
    connect_timeout: float = 10.0


@dataclass(frozen=True)
class MarkRef:
    """sweep_only: the earlier mark being swept, as its summary.json describes it."""

    mark_id: str
    start_time: str
    cutoff_time: str
    listed_objects: int  # what the blast-radius guard compares against
    to_delete: int


@dataclass(frozen=True)
class PartsDir:
    """
    A folder of address parts a run kept for later runs, and how many parts it wrote there.

    A later run refuses a folder holding another number (a part lost would lose its addresses).
    """

    dir: str
    parts: int


@dataclass(frozen=True)
class IncrementalBase:
    """
    An incremental run: the earlier run it builds on.

    As that run's ``incremental_state`` in its summary.json describes it (lakefs_gc.report.run_summary).
    Keys are namespace-relative.
    """

    mark_id: str
    start_time: str
    mode: str  # the base run's mode; its deleted/ is gone only after a real sweep
    dry_run: bool
    last_slice: str  # the newest slice it listed ("": none)
    uncommitted_dir: PartsDir  # its staged addresses
    committed_dirs: tuple[PartsDir, ...]  # every committed address read since the chain's clean run
    identity_dirs: tuple[PartsDir, ...]  # every committed entry's (size, checksum, path) read since then
    read_file: str  # the commit and range ids read since the chain's clean run
    clean_run_id: str
    clean_start_time: str
    clean_listed_objects: int  # what the chain's clean run listed (the blast-radius guard's base)
    runs_in_chain: int  # the clean run and the incremental runs since


@dataclass(frozen=True)
class RunContext:
    """prepare_run: the repository, where its storage is, the run clock and the validated settings, written once."""

    repository: str
    lakefs_endpoint: str  # http://host:8000/api/v1
    storage: StorageLocation
    grace_period_seconds: int
    start_time: str  # ISO 8601 UTC, fixed once per run
    cutoff_time: str  # objects modified at or after it are never candidates
    effective_min_age_seconds: int
    work_dir: str  # Spark-writable place for intermediate Parquet
    airflow_run_id: str
    settings: RunSettings
    parallelism: int | None = None  # partitions the jobs list and delete with; None: Spark's
    sweep_mark: MarkRef | None = None  # sweep_only
    lakefs_retries: LakeFSRetries = field(default_factory=LakeFSRetries)
    flow: str = "clean"  # clean | incremental: what prepare_run chose (lakefs_gc.gc.flow)
    flow_reason: str = ""
    gc_rules: str = ""  # fingerprint of the repository's GC rules (lakefs_gc.gc.flow)
    base: IncrementalBase | None = None  # incremental: the run it builds on
    prices: Prices = field(default_factory=Prices)  # the run's cost is figured with these (issue 54)
    keep: KeepRules = field(default_factory=KeepRules)  # the config's keep rules (issue 55)
    approval: ApprovalRule = field(default_factory=ApprovalRule)  # when a sweep waits for a person (issue 55)

    @property
    def mode(self) -> str:
        return self.settings.mode

    def incremental_base(self) -> IncrementalBase | None:
        """
        Return the run an incremental run builds on; None for a clean run.

        An incremental run without one is refused (:class:`ContractError`): every step that reads
        its chain fails closed here, in one place.
        """
        if self.flow != "incremental":
            return None
        if self.base is None:
            raise ContractError("an incremental run's context has no base run")
        return self.base
