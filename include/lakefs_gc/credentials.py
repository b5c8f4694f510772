"""
Where the ``lakefs-gc`` commands find lakeFS and the storage namespace: flags, Airflow's connections, the environment.

Highest first, setting by setting:

1. flags: ``--lakefs-endpoint``, ``--local-root``, ``--s3-endpoint``, ``--s3-region`` (never keys: a
   secret never goes into argv);
2. an Airflow connection, where Airflow is installed: ``--conn-id`` (lakeFS) and ``--storage-conn-id``
   (the namespace's storage), by default the ids of the GC config (the ``--repository`` entry's, else
   the one every entry uses), else ``lakefs_default`` and the storage kind's Airflow default
   (``aws_default``, ``wasb_default``, ``google_cloud_default``), read as the DAGs read them: through
   Airflow (its ``AIRFLOW_CONN_*`` variables, its metadata database, a secrets backend) and the
   provider's hooks. A default id Airflow does not know is passed over; an id given with a flag
   must exist;
3. the environment: ``LAKEFS_GC_LAKEFS_ENDPOINT`` / ``LAKEFS_GC_LAKEFS_ACCESS_KEY_ID`` /
   ``LAKEFS_GC_LAKEFS_SECRET_ACCESS_KEY``, else the names of ``make airflow``'s settings file and the
   seeder (``LAKEFS_ENDPOINT``, ``LAKEFS_ACCESS_KEY_ID``, ``LAKEFS_SECRET_ACCESS_KEY``);
   ``LAKEFS_GC_LOCAL_ROOT``, else ``LAKEFS_LOCAL_BLOCKSTORE_ROOT``; ``LAKEFS_GC_S3_*``, else ``S3_*``
   (``S3_ENDPOINT_URL``, ``S3_ACCESS_KEY_ID``, ``S3_SECRET_ACCESS_KEY``, ``S3_REGION``);
   ``LAKEFS_GC_AZURE_*``; ``LAKEFS_GC_GCS_*``; no keys at all: the SDK's default chain.

:class:`Resolver` looks each up once, at first need (Airflow is imported only then: never at this
module's import), and keeps where each came from (:meth:`Resolver.sources`: printed with
``--verbose`` and after a refused key); secrets are never part of it.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lakefs_gc.storage.kinds import NamespaceKind
    from lakefs_gc.storage.namespace import NamespaceURI
    from lakefs_gc.storage.settings import StorageOptions

DEFAULT_LAKEFS_CONN_ID = "lakefs_default"
# a storage kind's connection when neither --storage-conn-id nor the config names one: the id its
# Airflow provider uses by default
DEFAULT_STORAGE_CONN_IDS = {"s3": "aws_default", "azure": "wasb_default", "gs": "google_cloud_default"}
# lakeFS in the environment: the first family with both keys wins (ours, then make airflow's and the seeder's)
LAKEFS_ENV = (
    ("LAKEFS_GC_LAKEFS_ENDPOINT", "LAKEFS_GC_LAKEFS_ACCESS_KEY_ID", "LAKEFS_GC_LAKEFS_SECRET_ACCESS_KEY"),
    ("LAKEFS_ENDPOINT", "LAKEFS_ACCESS_KEY_ID", "LAKEFS_SECRET_ACCESS_KEY"),
)
LOCAL_ROOT_ENV = ("LAKEFS_GC_LOCAL_ROOT", "LAKEFS_LOCAL_BLOCKSTORE_ROOT")
S3_ALIASES = {  # ours -> make airflow's (config/airflow.env)
    "LAKEFS_GC_S3_ENDPOINT_URL": "S3_ENDPOINT_URL",
    "LAKEFS_GC_S3_ACCESS_KEY_ID": "S3_ACCESS_KEY_ID",
    "LAKEFS_GC_S3_SECRET_ACCESS_KEY": "S3_SECRET_ACCESS_KEY",
    "LAKEFS_GC_S3_REGION": "S3_REGION",
}
PRECEDENCE = "flags, then the Airflow connection (--conn-id, --storage-conn-id), then environment variables"


class CredentialsError(ValueError):
    """A connection named cannot serve: the message names it and how to fix it."""


def airflow_installed() -> bool:
    """Whether Airflow and this provider's hooks are importable here (nothing is imported)."""
    try:
        return all(importlib.util.find_spec(m) is not None for m in ("airflow", "lakefs_gc_airflow"))
    except (ImportError, ValueError):
        return False


def masked(key: str | None) -> str:
    """Return an access key id as printed: its first four characters."""
    return "none" if not key else key[:4] + "****"


@contextmanager
def _airflow_lookups() -> Iterator[None]:
    """
    Look connections up as Airflow's own CLI does: every secrets backend, the metadata database too.

    Outside a task Airflow's SDK reads only ``AIRFLOW_CONN_*`` and external backends unless the
    process says it is a server (this block's only: the environment is as it was after it). What
    Airflow and the hooks log meanwhile goes nowhere: their INFO lines (a warning for every
    connection type with an underscore, ours ``lakefs_gc``; "credentials retrieved from login and
    password") would land on stdout, in the command's output; and the logging Airflow's first import
    sets up (everything INFO onto stdout, the GC's progress lines too) is put back as it was.
    """
    import contextlib
    import io
    import logging

    saved = os.environ.get("_AIRFLOW_PROCESS_CONTEXT")
    first = "airflow" not in sys.modules
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    os.environ["_AIRFLOW_PROCESS_CONTEXT"] = "server"
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # structlog writes to whatever sys.stdout is then
            if first:
                import airflow.sdk  # noqa: F401  # configures logging

                root.handlers[:] = handlers
                root.setLevel(level)
            yield
    finally:
        if saved is None:
            os.environ.pop("_AIRFLOW_PROCESS_CONTEXT", None)
        else:
            os.environ["_AIRFLOW_PROCESS_CONTEXT"] = saved


@dataclass
class LakeFSAccess:
    """lakeFS's endpoint and keys, the retry extras of its connection, and where they came from."""

    endpoint: str | None
    access_key_id: str | None
    secret_access_key: str | None = field(repr=False)
    source: str
    retries: dict[str, Any] = field(default_factory=dict)
    connection: str | None = None  # "lakeFS connection 'x'", for the client's messages


class Resolver:
    """One command's lakeFS and storage settings, each looked up once (the module's doc: in which order)."""

    def __init__(self, args: argparse.Namespace, environ: Mapping[str, str] | None = None):
        self.args = args
        self.environ = os.environ if environ is None else environ
        self.use_airflow = airflow_installed()
        self.notes: list[str] = []  # where each setting came from, in the order they were needed
        self._lakefs: LakeFSAccess | None = None
        self._hook: Any = None  # the lakeFS connection's hook, None: none (or not looked up yet)
        self._hook_looked = False
        self._ids: tuple[str | None, str | None] | None = None

    # -- connection ids ---------------------------------------------------------------------------
    def _config_ids(self) -> tuple[str | None, str | None]:
        """(lakeFS connection id, storage connection id) of the GC config (``--config`` or the default), where it says one."""
        if self._ids is None:
            self._ids = (None, None)
            try:
                from lakefs_gc.config import load_config

                entries = list(load_config(getattr(self.args, "config", None), strict=False).repositories)
            except Exception:  # no config here, or a bad one (`lakefs-gc config check` says why): the defaults
                entries = []
            repo = getattr(self.args, "repository", None)
            for pick in ([e for e in entries if e.repository == repo] if repo else [], entries):
                lakefs_ids, storage_ids = {e.lakefs_conn_id for e in pick}, {e.storage_conn_id for e in pick}
                if len(lakefs_ids) == 1:  # the entry's, else the one every entry uses
                    self._ids = (lakefs_ids.pop(), storage_ids.pop() if len(storage_ids) == 1 else None)
                    break
        return self._ids

    def lakefs_conn_id(self) -> tuple[str, bool]:
        """Return the lakeFS connection's id, and whether a flag named it."""
        given = getattr(self.args, "conn_id", None)
        if given:
            return given, True
        return self._config_ids()[0] or DEFAULT_LAKEFS_CONN_ID, False

    def storage_conn_id(self, scheme: str) -> tuple[str | None, bool]:
        """Return the storage connection's id (None: none serves this kind), and whether a flag named it."""
        given = getattr(self.args, "storage_conn_id", None)
        if given:
            return given, True
        return self._config_ids()[1] or DEFAULT_STORAGE_CONN_IDS.get(scheme), False

    def _not_airflow(self, conn_id: str, what: str) -> CredentialsError:
        return CredentialsError(
            f"{what} {conn_id!r}: Airflow is not installed here, so its connections cannot be read; "
            f"install lakefs-gc where Airflow is, or drop the flag and give the settings as "
            f"environment variables (lakefs-gc {self.args.command} --help)"
        )

    def _missing(self, conn_id: str, what: str, example: str) -> CredentialsError:
        return CredentialsError(
            f"{what} {conn_id!r} is not defined in Airflow (its AIRFLOW_CONN_{conn_id.upper()} variable, its "
            f"metadata database, its secrets backend): check the id (airflow connections list), add it "
            f"(airflow connections add {conn_id} {example}, or Admin > Connections), or export "
            f"AIRFLOW_CONN_{conn_id.upper()}='{{\"conn_type\": ...}}'"
        )

    def _where(self, conn_id: str) -> str:
        key = "AIRFLOW_CONN_" + conn_id.upper()
        return key if key in os.environ else "Airflow's metadata database or secrets backend"

    # -- lakeFS ------------------------------------------------------------------------------------
    def _lakefs_hook(self) -> Any:
        """Return the lakeFS connection's hook; None when Airflow is not here or a default id is not defined."""
        if self._hook_looked:
            return self._hook
        self._hook_looked = True
        if not self.use_airflow:
            if getattr(self.args, "conn_id", None):
                raise self._not_airflow(self.args.conn_id, "--conn-id")
            return None
        conn_id, named = self.lakefs_conn_id()
        with _airflow_lookups():
            from airflow.sdk.exceptions import AirflowNotFoundException

            from lakefs_gc_airflow.hooks import LakeFSHook

            hook = LakeFSHook(conn_id)
            try:
                hook._settings()  # its type and keys checked at once, whatever is read of it
            except ValueError as e:
                raise CredentialsError(f"{e} (--conn-id; {self._where(conn_id)})") from None
            except AirflowNotFoundException:
                if named:
                    raise self._missing(
                        conn_id,
                        "lakeFS connection",
                        "--conn-type lakefs_gc --conn-host http://lakefs:8000 --conn-login KEY --conn-password SECRET",
                    ) from None
                self.notes.append(f"no Airflow connection {conn_id!r}: lakeFS from the environment")
                return None
        self._hook = hook
        return hook

    def lakefs(self) -> LakeFSAccess:
        """Return lakeFS's endpoint and keys: ``--lakefs-endpoint``, the lakeFS connection, the environment."""
        if self._lakefs is not None:
            return self._lakefs
        flag = getattr(self.args, "lakefs_endpoint", None)
        hook = self._lakefs_hook()
        if hook is not None:
            conn_id = hook.lakefs_conn_id
            with _airflow_lookups():
                endpoint, access, secret, retries = hook._settings()  # checked by _lakefs_hook
            source = f"Airflow connection {conn_id!r} ({self._where(conn_id)})"
            access_obj = LakeFSAccess(
                flag or endpoint, access, secret, source, retries, connection=f"lakeFS connection {conn_id!r}"
            )
        else:
            access_obj = self._lakefs_from_env(flag)
        shown = f"{access_obj.endpoint}" + (" (--lakefs-endpoint)" if flag else "")
        self.notes.append(f"lakeFS {shown}, access key {masked(access_obj.access_key_id)}: {access_obj.source}")
        self._lakefs = access_obj
        return access_obj

    def _lakefs_from_env(self, flag: str | None) -> LakeFSAccess:
        env = self.environ
        endpoint = flag or next((env[e] for e, _, _ in LAKEFS_ENV if env.get(e)), None)
        for _, a, s in LAKEFS_ENV:
            if env.get(a) and env.get(s):
                return LakeFSAccess(endpoint, env[a], env[s], f"environment ({a}, {s})")
        return LakeFSAccess(endpoint, None, None, "none found")

    # -- the namespace's store ---------------------------------------------------------------------
    def local_root(self) -> tuple[str | None, str]:
        """
        Return lakeFS's blockstore.local.path (None: none) and where it came from.

        ``--local-root``, else the lakeFS connection's extra, else the environment.
        """
        if self.args.local_root:
            return self.args.local_root, "--local-root"
        hook = self._lakefs_hook()
        if hook is not None:
            with _airflow_lookups():
                root = hook.local_blockstore_root()
            if root:
                return root, f"Airflow connection {hook.lakefs_conn_id!r}, extra local_blockstore_root"
        ours, theirs = LOCAL_ROOT_ENV
        if self.environ.get(ours):
            return self.environ[ours], ours
        if self.environ.get(theirs):  # relative: from the project root, as make airflow takes it
            from lakefs_gc.config import project_root

            return str(project_root() / self.environ[theirs]), theirs
        return None, "none"

    def storage_options(self, kind: NamespaceKind, ns: NamespaceURI) -> StorageOptions | None:
        """Return the namespace's settings: the storage connection, else the environment; the S3 flags over either."""
        opts: StorageOptions | None = None
        if self.use_airflow:
            conn_id, named = self.storage_conn_id(ns.scheme)
            if conn_id:
                opts = self._storage_from_airflow(conn_id, named, kind)
        elif getattr(self.args, "storage_conn_id", None):
            raise self._not_airflow(self.args.storage_conn_id, "--storage-conn-id")
        if opts is None:
            environ = dict(self.environ)
            for ours, theirs in S3_ALIASES.items():
                if not environ.get(ours) and environ.get(theirs):
                    environ[ours] = environ[theirs]
            opts = kind.env_options(ns, environ)
            self.notes.append(f"storage from the environment ({_env_names(kind, self.environ)})")
        from lakefs_gc.storage.settings import S3Options

        if isinstance(opts, S3Options):  # the S3 flags, over either source
            endpoint, region = getattr(self.args, "s3_endpoint", None), getattr(self.args, "s3_region", None)
            opts = replace(opts, endpoint_url=endpoint or opts.endpoint_url, region=region or opts.region)
        return opts

    def _storage_from_airflow(self, conn_id: str, named: bool, kind: NamespaceKind) -> StorageOptions | None:
        with _airflow_lookups():
            from lakefs_gc_airflow.hooks import storage_options

            try:
                opts = storage_options(conn_id)
            except ValueError as e:
                raise CredentialsError(f"{e} (--storage-conn-id; {self._where(conn_id)})") from None
        if opts is None:
            if named:
                raise self._missing(
                    conn_id, "storage connection", "--conn-type aws --conn-login KEY --conn-password SECRET"
                )
            self.notes.append(f"no Airflow connection {conn_id!r}: storage from the environment")
            return None
        if kind.options_type is not None and not isinstance(opts, kind.options_type):
            if named:
                raise CredentialsError(
                    f"storage connection {conn_id!r} does not serve {kind.scheme}:// namespaces: give "
                    f"--storage-conn-id {kind.connection_help}"
                )
            self.notes.append(
                f"Airflow connection {conn_id!r} is not for {kind.scheme}://: storage from the environment"
            )
            return None
        self.notes.append(f"storage from Airflow connection {conn_id!r} ({self._where(conn_id)}): {opts!r}")
        return opts

    def sources(self) -> str:
        """Where this command's settings came from, one clause each (no secret)."""
        return "; ".join(self.notes) or "no lakeFS or storage settings were needed"


def _env_names(kind: NamespaceKind, environ: Mapping[str, str]) -> str:
    prefix = {"s3": "LAKEFS_GC_S3_", "azure": "LAKEFS_GC_AZURE_", "gs": "LAKEFS_GC_GCS_"}.get(kind.scheme, "")
    names = sorted(k for k in environ if prefix and k.startswith(prefix))
    names += sorted(theirs for theirs in S3_ALIASES.values() if kind.scheme == "s3" and environ.get(theirs))
    return ", ".join(names) or "none set: the SDK's default credentials"


def resolver(args: argparse.Namespace) -> Resolver:
    """Return the command's :class:`Resolver`, made at first need and kept on ``args``."""
    found = getattr(args, "_resolver", None)
    if not isinstance(found, Resolver):
        found = Resolver(args)
        args._resolver = found
    return found
