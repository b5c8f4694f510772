"""
A storage namespace behind one small interface (``Storage``).

``local://<path>`` (under lakeFS's blockstore root), ``s3://bucket/prefix``, Azure Blob
``https://<account>.<domain>/<container>/<prefix>`` and ``gs://bucket/prefix``.

Keys are always relative to the namespace root and use ``/`` separators (``data/<slice>/<obj>``,
``_lakefs/<id>``). The same interface serves the lakeFS emulator and the GC itself. No Airflow
imports.
"""

from __future__ import annotations

import os

from lakefs_gc.storage.base import ObjectNotFound, Storage, StorageError
from lakefs_gc.storage.info import ObjectInfo
from lakefs_gc.storage.kinds import NAMESPACE_KINDS, NamespaceKind, kind_for_connection, kind_named, kind_of
from lakefs_gc.storage.local import LocalStorage
from lakefs_gc.storage.namespace import (
    AZURE,
    GCS,
    KINDS,
    LOCAL,
    LOCAL_ROOT_HELP,
    S3,
    NamespaceURI,
    parse_namespace,
    relative_to,
    resolve_local,
)
from lakefs_gc.storage.s3 import S3_MAX_DELETE, S3Storage, make_s3_client
from lakefs_gc.storage.settings import DEFAULT_REGION, AzureOptions, GCSOptions, S3Options, StorageOptions

__all__ = [
    "AZURE",
    "GCS",
    "KINDS",
    "LOCAL",
    "NAMESPACE_KINDS",
    "OPTIONS_FOR",
    "NamespaceKind",
    "kind_for_connection",
    "kind_named",
    "kind_of",
    "S3",
    "DEFAULT_REGION",
    "AzureOptions",
    "GCSOptions",
    "StorageOptions",
    "LOCAL_ROOT_HELP",
    "S3_MAX_DELETE",
    "LocalStorage",
    "NamespaceURI",
    "ObjectInfo",
    "ObjectNotFound",
    "S3Options",
    "S3Storage",
    "Storage",
    "StorageError",
    "make_s3_client",
    "open_storage",
    "parse_namespace",
    "relative_to",
    "resolve_local",
]


OPTIONS_FOR = {k.scheme: k.options_type for k in NAMESPACE_KINDS.values() if k.options_type is not None}


def open_storage(
    uri: str, options: StorageOptions | None = None, local_root: str | os.PathLike[str] | None = None
) -> Storage:
    """
    Return the storage for a namespace URI.

    ``options`` are the settings of its kind (:data:`NAMESPACE_KINDS`: :class:`S3Options` for
    ``s3://``, :class:`AzureOptions` for Azure, :class:`GCSOptions` for ``gs://``; ignored for
    ``local://``, which needs ``local_root``, lakeFS's ``blockstore.local.path``). ``uri`` and
    ``full_uri`` keep the namespace as lakeFS names it.
    """
    kind, ns = kind_of(uri, None if local_root is None else str(local_root))
    want = kind.options_type
    if want is not None and options is not None and not isinstance(options, want):
        raise ValueError(
            f"{uri!r} is a {ns.scheme} namespace, but the storage settings given are "
            f"{type(options).__name__} (a {want.__name__} is needed): check the storage connection's type"
        )
    return kind.open(ns, options if want is not None else None)
