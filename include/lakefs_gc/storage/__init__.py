"""A storage namespace behind one small interface (``Storage``): ``local://<path>`` (under lakeFS's
blockstore root) and ``s3://bucket/prefix``.

Keys are always relative to the namespace root and use ``/`` separators (``data/<slice>/<obj>``,
``_lakefs/<id>``). The same interface serves the lakeFS emulator and the GC itself. No Airflow
imports.
"""

from __future__ import annotations

import os

from lakefs_gc.storage.base import ObjectInfo, ObjectNotFound, Storage, StorageError
from lakefs_gc.storage.local import LocalStorage
from lakefs_gc.storage.namespace import LOCAL_ROOT_HELP, NamespaceURI, parse_namespace, relative_to, resolve_local
from lakefs_gc.storage.s3 import S3_MAX_DELETE, S3Storage, make_s3_client
from lakefs_gc.storage.settings import DEFAULT_REGION, S3Options

__all__ = ["DEFAULT_REGION", "LOCAL_ROOT_HELP", "S3_MAX_DELETE", "LocalStorage", "NamespaceURI", "ObjectInfo",
           "ObjectNotFound", "S3Options", "S3Storage", "Storage", "StorageError", "make_s3_client", "open_storage",
           "parse_namespace", "relative_to", "resolve_local"]


def open_storage(uri: str, s3_options: S3Options | None = None,
                 local_root: str | os.PathLike | None = None) -> LocalStorage | S3Storage:
    """The storage for a namespace URI (``local_root``: lakeFS's ``blockstore.local.path``, needed
    for ``local://`` namespaces). ``uri`` and ``full_uri`` keep the namespace as lakeFS names it."""
    ns = parse_namespace(uri, local_root)
    if ns.scheme == "local":
        st = LocalStorage(ns.prefix)
        st.uri = str(ns)
        return st
    if ns.scheme == "s3":
        return S3Storage(ns.bucket, ns.prefix, s3_options)
    raise ValueError(f"{uri!r}: no storage adapter for {ns.scheme} namespaces yet (s3:// and local:// only)")
