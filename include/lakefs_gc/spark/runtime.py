"""
What every Spark step needs besides the contract.

Secrets from the environment, the namespace's storage on executors, the lakeFS client, partition
counts.

Secrets reach a job's driver in a secrets file (``--secrets``: :func:`write_secrets`, only its owner
may read it; the Airflow task writes it and removes it after the job) or, when a step is run by
hand, in the environment (names below and in :mod:`lakefs_gc.storage.settings`); never in argv or
a Spark property. The driver reads them once and ships them to executors inside
:class:`StorageRef` and :class:`LakeFSRef`, whose ``repr`` hides them.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakefs_gc.contract import LakeFSRetries, RunContext
from lakefs_gc.errors import Refusal
from lakefs_gc.storage import StorageOptions, kind_of, open_storage, parse_namespace, requests
from lakefs_gc.storage.settings import ALL_SECRET_ENV as STORAGE_SECRET_ENV
from lakefs_gc.timestamps import parse_iso

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakefs_gc.lakefs.client import LakeFSClient
    from lakefs_gc.storage.base import Storage

ENV_LAKEFS_ACCESS_KEY = "LAKEFS_GC_LAKEFS_ACCESS_KEY_ID"
ENV_LAKEFS_SECRET_KEY = "LAKEFS_GC_LAKEFS_SECRET_ACCESS_KEY"
SECRET_ENV = (ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY, *STORAGE_SECRET_ENV)


@dataclass(frozen=True)
class StorageRef:
    """Everything an executor needs to open the namespace (picklable; secrets hidden from repr)."""

    namespace: str
    options: StorageOptions | None  # the namespace kind's settings (None for local://)
    local_root: str | None = None  # lakeFS's blockstore.local.path, for local:// namespaces
    # where the storages it opens count their requests (lakefs_gc.storage.requests): a Spark job's
    # accumulator, carried to executors with this ref (None: the process's counter); ``inventory``:
    # its reads are an inventory's
    requests: Any = field(default=None, compare=False)
    inventory: bool = False

    def open(self) -> Storage:
        st = open_storage(self.namespace, self.options, self.local_root)
        return requests.attach(st, self.requests, self.inventory)

    @property
    def roots(self) -> tuple[str, ...]:
        """Every URI naming the namespace root (locations and full addresses are relative to these)."""
        return parse_namespace(self.namespace, self.local_root).roots()

    def __repr__(self) -> str:
        return f"StorageRef({self.namespace!r})"


@dataclass(frozen=True)
class LakeFSRef:
    """How executors reach lakeFS (picklable; secrets hidden from repr)."""

    endpoint: str
    access_key: str
    secret_key: str
    retries: LakeFSRetries = LakeFSRetries()

    def client(self) -> LakeFSClient:
        from lakefs_gc.lakefs.client import LakeFSClient

        r = self.retries
        return LakeFSClient(
            self.endpoint,
            self.access_key,
            self.secret_key,
            max_retries=r.max_retries,
            backoff_base=r.backoff_base,
            backoff_max=r.backoff_max,
            connect_timeout=r.connect_timeout,
        )

    def __repr__(self) -> str:
        return f"LakeFSRef({self.endpoint!r})"


def storage_ref(ctx: RunContext, environ: Mapping[str, str] | None = None) -> StorageRef:
    """
    Return the namespace's storage: the endpoint (and S3 region) recorded in the context, credentials from the environment.

    No credentials there: the cloud library's own chain where the job runs, e.g. an instance role,
    a managed identity, Application Default Credentials.
    """
    loc = ctx.storage
    kind, ns = kind_of(loc.namespace, loc.local_root)
    options = kind.job_options(ns, loc.endpoint_url, loc.s3_region, environ)
    return StorageRef(loc.namespace, options, loc.local_root)


def lakefs_ref(ctx: RunContext, environ: Mapping[str, str] | None = None) -> LakeFSRef:
    env = os.environ if environ is None else environ
    access, secret = env.get(ENV_LAKEFS_ACCESS_KEY), env.get(ENV_LAKEFS_SECRET_KEY)
    if not access or not secret:
        raise Refusal(
            f"lakeFS credentials missing: set {ENV_LAKEFS_ACCESS_KEY} and {ENV_LAKEFS_SECRET_KEY} "
            f"in the job's environment, or pass --secrets FILE (the Airflow task does this from the "
            f"lakeFS connection)"
        )
    return LakeFSRef(ctx.lakefs_endpoint, access, secret, ctx.lakefs_retries)


def write_secrets(values: Mapping[str, str]) -> Path:
    """
    Write a job's secrets (names from :data:`SECRET_ENV`) to a new file only its owner can read.

    Mode 0600 from its creation, in a new 0700 directory under the temporary directory. The caller
    removes it with :func:`remove_secrets` once the job is over.
    """
    unknown = set(values) - set(SECRET_ENV)
    if unknown:
        raise ValueError(f"not secrets of a GC job: {sorted(unknown)}")
    path = Path(tempfile.mkdtemp(prefix="lakefs-gc-secrets-")) / "secrets.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(dict(values), f)
    return path


def remove_secrets(path: str | os.PathLike[str]) -> None:
    """Remove a secrets file and its directory (:func:`write_secrets`); nothing if already gone."""
    p = Path(path)
    p.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        p.parent.rmdir()


def read_secrets(path: str | os.PathLike[str]) -> dict[str, str]:
    """
    Read a secrets file (:func:`write_secrets`).

    Refused when others may read it or it holds anything but the secrets of :data:`SECRET_ENV` as
    strings.
    """
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode & 0o077:
        raise Refusal(
            f"secrets file {path} has mode {mode:o}: others may read it; make it readable by its owner only (chmod 600)"
        )
    doc = json.loads(Path(path).read_text())
    if not isinstance(doc, dict) or set(doc) - set(SECRET_ENV) or not all(isinstance(v, str) for v in doc.values()):
        raise Refusal(f"secrets file {path} must be a JSON object of strings keyed by {', '.join(SECRET_ENV)}")
    return doc


def job_environ(
    secrets_file: str | os.PathLike[str] | None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Return where a job's driver reads its secrets: the environment, overlaid with the secrets file when one is given."""
    env = dict(os.environ if environ is None else environ)
    if secrets_file:
        env.update(read_secrets(secrets_file))
    return env


def parallelism(spark: SparkSession | None, ctx: RunContext) -> int:
    """Return the run's parallelism, else Spark's default (``spark`` None: a step run in its task, 2)."""
    default = spark.sparkContext.defaultParallelism if spark is not None else None
    return int(ctx.parallelism or default or 2)


def cutoff_seconds(ctx: RunContext) -> float:
    return parse_iso(ctx.cutoff_time).timestamp()


def partitions(n_items: int, n: int) -> int:
    """Partitions for ``n_items`` work items: at most ``n``, at least 1."""
    return max(1, min(n_items, n))
