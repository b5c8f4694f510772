"""
The namespace kinds, one record each: everything that differs between ``local://``, S3, Azure and GCS.

Every place that once asked "which kind is this namespace?" reads :data:`NAMESPACE_KINDS` instead:
opening the storage (:func:`lakefs_gc.storage.open_storage`), a Spark job's settings from its
environment (:func:`lakefs_gc.spark.runtime.storage_ref`), what ``prepare_run`` records and checks
of the storage connection, and the Airflow side's connection types (``lakefs_gc_airflow``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from lakefs_gc.storage.base import Storage
from lakefs_gc.storage.namespace import AZURE, GCS, LOCAL, S3, NamespaceURI, parse_namespace
from lakefs_gc.storage.settings import DEFAULT_REGION, AzureOptions, GCSOptions, S3Options, StorageOptions

__all__ = ["NAMESPACE_KINDS", "NamespaceKind", "kind_for_connection", "kind_of"]


@dataclass(frozen=True)
class NamespaceKind:
    """
    One kind of storage namespace, as the GC reaches it.

    ``options_type``: its settings (None: ``local://``, which needs only lakeFS's blockstore root);
    ``connection_types``: the Airflow connection types that may serve it; ``extra``: the ``lakefs-gc[extra]`` that installs their provider;
    ``connection_help``: what to put in that connection; ``open``: the storage, from the parsed
    namespace and its settings; ``job_options``: the settings a Spark job rebuilds from what the run
    recorded (endpoint, region) and the secrets in its environment; ``recorded``: what the run records
    of the settings (no secrets): ``endpoint_url`` and ``s3_region``.
    """

    scheme: str
    options_type: type[Any] | None
    connection_types: tuple[str, ...]
    extra: str | None
    connection_help: str
    open: Callable[[NamespaceURI, Any], Storage]
    job_options: Callable[[NamespaceURI, str | None, str | None, Mapping[str, str] | None], StorageOptions | None]
    recorded: Callable[[Any], dict[str, str | None]]


def _open_local(ns: NamespaceURI, options: Any) -> Storage:
    from lakefs_gc.storage.local import LocalStorage

    st = LocalStorage(ns.prefix)
    st.uri = str(ns)
    return st


def _open_s3(ns: NamespaceURI, options: S3Options | None) -> Storage:
    from lakefs_gc.storage.s3 import S3Storage

    return S3Storage(ns.bucket, ns.prefix, options)


def _open_azure(ns: NamespaceURI, options: AzureOptions | None) -> Storage:
    if options is None:
        raise ValueError(f"{str(ns)!r}: an Azure namespace needs the account's URL and credential (AzureOptions)")
    from lakefs_gc.storage.azure import AzureStorage

    return AzureStorage(str(ns), ns.host.partition(".")[0], ns.bucket, ns.prefix, options)


def _open_gcs(ns: NamespaceURI, options: GCSOptions | None) -> Storage:
    from lakefs_gc.storage.gcs import GCSStorage

    return GCSStorage(ns.bucket, ns.prefix, options)


def _s3_job(ns: NamespaceURI, endpoint_url: str | None, region: str | None,
            environ: Mapping[str, str] | None) -> S3Options:
    return replace(S3Options.from_env(environ), endpoint_url=endpoint_url, region=region or DEFAULT_REGION)


def _azure_job(ns: NamespaceURI, endpoint_url: str | None, region: str | None,
               environ: Mapping[str, str] | None) -> AzureOptions:
    return AzureOptions.from_env(environ, account_url=endpoint_url, account_name=ns.host.partition(".")[0])


def _gcs_job(ns: NamespaceURI, endpoint_url: str | None, region: str | None,
             environ: Mapping[str, str] | None) -> GCSOptions:
    return GCSOptions.from_env(environ, endpoint_url=endpoint_url)


NAMESPACE_KINDS: dict[str, NamespaceKind] = {k.scheme: k for k in (
    NamespaceKind(LOCAL, None, (), None, "no connection: lakeFS's blockstore root (the lakeFS connection's "
                  "\"local_blockstore_root\")", _open_local, lambda ns, endpoint, region, environ: None,
                  lambda options: {}),
    NamespaceKind(S3, S3Options, ("aws", "s3"), None,
                  "an 'aws' connection (keys, role or profile; endpoint_url in its extra for S3-compatible storage)",
                  _open_s3, _s3_job,
                  lambda o: {"endpoint_url": o.endpoint_url, "s3_region": o.region or DEFAULT_REGION}),
    NamespaceKind(AZURE, AzureOptions, ("wasb",), "azure",
                  "a 'wasb' connection (connection string, account key, SAS token, service principal or managed "
                  "identity)", _open_azure, _azure_job, lambda o: {"endpoint_url": o.account_url}),
    NamespaceKind(GCS, GCSOptions, ("google_cloud_platform", "gcpcloudstorage", "gcs"), "gcp",
                  "a 'google_cloud_platform' connection (key file, key JSON, or is_anonymous for an emulator)",
                  _open_gcs, _gcs_job, lambda o: {"endpoint_url": o.endpoint_url}),
)}


def kind_of(namespace: str, local_root: str | None = None) -> tuple[NamespaceKind, NamespaceURI]:
    """Return the kind of ``namespace`` and the namespace parsed (ValueError: not a namespace the GC knows)."""
    ns = parse_namespace(namespace, local_root)
    return NAMESPACE_KINDS[ns.scheme], ns


def kind_for_connection(conn_type: str | None) -> NamespaceKind | None:
    """Return the namespace kind an Airflow connection of ``conn_type`` serves (``""``: S3, as boto3's chain)."""
    wanted = (conn_type or "s3").lower()
    return next((k for k in NAMESPACE_KINDS.values() if wanted in k.connection_types), None)
