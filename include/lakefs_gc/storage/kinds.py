"""
The namespace kinds, one record each: everything that differs between ``local://``, S3, Azure and GCS.

Every place that once asked "which kind is this namespace?" reads :data:`NAMESPACE_KINDS` instead:
opening the storage (:func:`lakefs_gc.storage.open_storage`), a Spark job's settings from its
environment (:func:`lakefs_gc.spark.runtime.storage_ref`), the ``lakefs-gc`` commands' settings
from theirs, what ``prepare_run`` records and checks of the storage connection, what the staged
check looks for, a report's browser URL, and the Airflow side's connection types
(``lakefs_gc_airflow``, whose ``hooks.HOOK_OPTIONS`` turns each of them into settings). What
differs in a store's own calls (deleting, restoring, hashing) its adapter answers (the ``Storage``
protocol).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote, urlsplit

from lakefs_gc.storage import multipart
from lakefs_gc.storage.azure import AzureStorage
from lakefs_gc.storage.base import Storage
from lakefs_gc.storage.gcs import GCSStorage
from lakefs_gc.storage.local import LocalStorage
from lakefs_gc.storage.namespace import AZURE, GCS, LOCAL, S3, NamespaceURI, parse_namespace, scheme_of
from lakefs_gc.storage.requests import instrument, instrument_via
from lakefs_gc.storage.s3 import S3Storage
from lakefs_gc.storage.settings import (
    DEFAULT_REGION,
    ENV_AZURE_ACCOUNT_URL,
    AzureOptions,
    GCSOptions,
    S3Options,
    StorageOptions,
)

__all__ = ["NAMESPACE_KINDS", "NamespaceKind", "connection_type", "kind_for_connection", "kind_named", "kind_of"]


@dataclass(frozen=True)
class NamespaceKind:
    """
    One kind of storage namespace, as the GC reaches it.

    ``options_type``: its settings (None: ``local://``, which needs only lakeFS's blockstore root);
    ``connection_types``: the Airflow connection types that may serve it (each turned into settings
    by ``lakefs_gc_airflow.hooks.HOOK_OPTIONS``); ``extra``: the ``lakefs-gc[extra]`` that installs their provider;
    ``connection_help``: what to put in that connection; ``open``: the storage, from the parsed
    namespace and its settings; ``job_options``: the settings a Spark job rebuilds from what the run
    recorded (endpoint, region) and the secrets in its environment; ``recorded``: what the run records
    of the settings (no secrets): ``endpoint_url`` and ``s3_region``; ``adapter``: the class
    ``open`` makes (the ``Storage`` protocol); ``env_options``: the settings from the environment
    alone (``LAKEFS_GC_<KIND>_*``: the ``lakefs-gc`` commands'); ``object_url``: a URL a browser
    opens for an object's URI of this kind, from the endpoint and region the run recorded (None: none,
    or not a URI of this kind); ``links_unmarked``: lakeFS stores an object linked through
    ``getPhysicalAddress`` FULL, so its mark misses it (the resolved ``local:///`` form it hands out
    is not the namespace as written): the staged check looks for such candidates
    (:mod:`lakefs_gc.listing.staged`, step 3).
    """

    scheme: str
    options_type: type[Any] | None
    connection_types: tuple[str, ...]
    extra: str | None
    connection_help: str
    open: Callable[[NamespaceURI, Any], Storage]
    job_options: Callable[[NamespaceURI, str | None, str | None, Mapping[str, str] | None], StorageOptions | None]
    recorded: Callable[[Any], dict[str, str | None]]
    adapter: type[Storage]
    env_options: Callable[[NamespaceURI, Mapping[str, str] | None], StorageOptions | None]
    object_url: Callable[[str, str | None, str | None], str | None]
    links_unmarked: bool = False

    @property
    def needs_local_root(self) -> bool:
        """Its namespaces lie under lakeFS's blockstore root (``local_root``), and no storage connection serves it."""
        return self.options_type is None


def _open_local(ns: NamespaceURI, options: Any) -> Storage:
    st = LocalStorage(ns.prefix)
    st.uri = str(ns)
    return st


def _open_s3(ns: NamespaceURI, options: S3Options | None) -> Storage:
    return S3Storage(ns.bucket, ns.prefix, options)


def _open_azure(ns: NamespaceURI, options: AzureOptions | None) -> Storage:
    if options is None:
        raise ValueError(f"{str(ns)!r}: an Azure namespace needs the account's URL and credential (AzureOptions)")
    return AzureStorage(str(ns), ns.host.partition(".")[0], ns.bucket, ns.prefix, options)


def _open_gcs(ns: NamespaceURI, options: GCSOptions | None) -> Storage:
    return GCSStorage(ns.bucket, ns.prefix, options)


def _s3_job(
    ns: NamespaceURI, endpoint_url: str | None, region: str | None, environ: Mapping[str, str] | None
) -> S3Options:
    return replace(S3Options.from_env(environ), endpoint_url=endpoint_url, region=region or DEFAULT_REGION)


def _azure_job(
    ns: NamespaceURI, endpoint_url: str | None, region: str | None, environ: Mapping[str, str] | None
) -> AzureOptions:
    return AzureOptions.from_env(environ, account_url=endpoint_url, account_name=ns.host.partition(".")[0])


def _gcs_job(
    ns: NamespaceURI, endpoint_url: str | None, region: str | None, environ: Mapping[str, str] | None
) -> GCSOptions:
    return GCSOptions.from_env(environ, endpoint_url=endpoint_url)


def _s3_object_url(uri: str, endpoint_url: str | None, region: str | None) -> str | None:
    """
    On AWS (no endpoint), the S3 console's object page; on an S3-compatible endpoint, its path-style URL there.

    That opens where the bucket can be read without signing (moto, a public bucket; MinIO's console
    is on another port we do not know). No credential is ever part of it.
    """
    parts = urlsplit(uri)
    if parts.scheme not in ("s3", "s3a") or not parts.netloc:
        return None
    bucket, key = parts.netloc, parts.path.lstrip("/")
    if not endpoint_url:
        region = region or "us-east-1"
        return (
            f"https://s3.console.aws.amazon.com/s3/object/{quote(bucket, safe='')}"
            f"?region={quote(region, safe='')}&prefix={quote(key, safe='')}"
        )
    endpoint = urlsplit(endpoint_url)
    if endpoint.scheme not in ("http", "https"):
        return None
    base = f"{endpoint.scheme}://{endpoint.hostname}" + (f":{endpoint.port}" if endpoint.port else "")
    return f"{base}/{quote(bucket, safe='')}/{quote(key)}"


def _no_url(uri: str, endpoint_url: str | None, region: str | None) -> None:
    """None: no page a browser opens (local files from a web page; Azure's and GCS's consoles need the portal)."""
    return None


def _azure_env(ns: NamespaceURI, environ: Mapping[str, str] | None) -> AzureOptions:
    env = os.environ if environ is None else environ
    return AzureOptions.from_env(
        environ,
        account_url=env.get(ENV_AZURE_ACCOUNT_URL) or f"https://{ns.host}",
        account_name=ns.host.partition(".")[0],
    )


NAMESPACE_KINDS: dict[str, NamespaceKind] = {
    k.scheme: k
    for k in (
        NamespaceKind(
            LOCAL,
            None,
            (),
            None,
            "no connection: lakeFS's blockstore root (the lakeFS connection's \"local_blockstore_root\")",
            _open_local,
            lambda ns, endpoint, region, environ: None,
            lambda options: {},
            adapter=LocalStorage,
            env_options=lambda ns, environ: None,
            object_url=_no_url,
            links_unmarked=True,
        ),
        NamespaceKind(
            S3,
            S3Options,
            ("aws", "s3"),
            None,
            "an 'aws' connection (keys, role or profile; endpoint_url in its extra for S3-compatible storage)",
            _open_s3,
            _s3_job,
            lambda o: {"endpoint_url": o.endpoint_url, "s3_region": o.region or DEFAULT_REGION},
            adapter=S3Storage,
            env_options=lambda ns, environ: S3Options.from_env(environ),
            object_url=_s3_object_url,
        ),
        NamespaceKind(
            AZURE,
            AzureOptions,
            ("wasb",),
            "azure",
            "a 'wasb' connection (connection string, account key, SAS token, service principal or managed identity)",
            _open_azure,
            _azure_job,
            lambda o: {"endpoint_url": o.account_url},
            adapter=AzureStorage,
            env_options=_azure_env,
            object_url=_no_url,
        ),
        NamespaceKind(
            GCS,
            GCSOptions,
            ("google_cloud_platform", "gcpcloudstorage", "gcs"),
            "gcp",
            "a 'google_cloud_platform' connection (key file, key JSON, or is_anonymous for an emulator)",
            _open_gcs,
            _gcs_job,
            lambda o: {"endpoint_url": o.endpoint_url},
            adapter=GCSStorage,
            env_options=lambda ns, environ: GCSOptions.from_env(environ),
            object_url=_no_url,
        ),
    )
}


for _kind in NAMESPACE_KINDS.values():  # every adapter's requests counted (lakefs_gc.storage.requests)
    instrument(_kind.adapter, _kind.scheme)
# ... and those of the incomplete uploads' helpers, through their adapter (ListParts: a LIST)
for _helper in (multipart.S3Uploads, multipart.GCSUploads, multipart.AzureUncommitted):
    instrument_via(_helper, "st", {"list": "LIST", "size": "LIST", "abort": "DELETE"})


def kind_of(namespace: str, local_root: str | None = None) -> tuple[NamespaceKind, NamespaceURI]:
    """Return the kind of ``namespace`` and the namespace parsed (ValueError: not a namespace the GC knows)."""
    ns = parse_namespace(namespace, local_root)
    return NAMESPACE_KINDS[ns.scheme], ns


def kind_named(namespace: str) -> NamespaceKind | None:
    """
    Return the kind whose prefix ``namespace`` starts with (``local://``, ``s3://``, ...), without resolving it.

    None: no kind's (:func:`kind_of` says why).
    """
    scheme = scheme_of(namespace)
    return None if scheme is None else NAMESPACE_KINDS[scheme]


def connection_type(conn_type: str | None) -> str:
    """Return an Airflow connection's type as the kinds name it (lower case; ``""``: ``s3``, as boto3's chain)."""
    return (conn_type or "s3").lower()


def kind_for_connection(conn_type: str | None) -> NamespaceKind | None:
    """Return the namespace kind an Airflow connection of ``conn_type`` serves (``""``: S3, as boto3's chain)."""
    wanted = connection_type(conn_type)
    return next((k for k in NAMESPACE_KINDS.values() if wanted in k.connection_types), None)
