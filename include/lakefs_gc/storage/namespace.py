"""
Storage namespaces as lakeFS names them, parsed by lakeFS's rules.

``s3://bucket/prefix``, ``local://<path>`` (resolved under lakeFS's ``blockstore.local.path``
exactly as lakeFS does), Azure Blob ``https://<account>.<domain>/<container>/<prefix>`` and Google
Cloud Storage ``gs://bucket/prefix``; their kinds (:data:`KINDS`); and keys relative to their root.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

# The kinds of namespace, named here once (NamespaceURI.scheme): each has its storage adapter,
# settings type (lakefs_gc.storage.open_storage) and Airflow connection type (lakefs_gc.storage.kinds.NAMESPACE_KINDS)
LOCAL, S3, AZURE, GCS = "local", "s3", "azure", "gs"
KINDS = (LOCAL, S3, AZURE, GCS)
# What each kind's namespaces start with, as lakeFS writes them (scheme_of)
PREFIXES = {LOCAL: ("local://",), S3: ("s3://", "s3a://"), AZURE: ("https://", "http://"), GCS: ("gs://",)}


@dataclass(frozen=True, slots=True)
class NamespaceURI:
    """A storage namespace, parsed: its kind, bucket (or container) and prefix."""

    scheme: str  # one of KINDS
    bucket: str  # "" for local; the container for azure
    prefix: str  # local: absolute directory (resolved under the blockstore root); else key prefix without "/" ends
    uri: str = ""  # the namespace as lakeFS reports it, without a trailing "/"
    host: str = ""  # azure: <account>.<domain>

    def __str__(self) -> str:
        return self.uri or self.canonical()

    def canonical(self) -> str:
        """
        Return the namespace from its parts (no trailing ``/``).

        ``local://<resolved path>``, ``s3://`` or ``gs://`` bucket and prefix,
        ``https://<account>.<domain>/<container>/<prefix>``.
        """
        if self.scheme == LOCAL:
            return f"local://{self.prefix}"
        root = f"https://{self.host}/{self.bucket}" if self.scheme == AZURE else f"{self.scheme}://{self.bucket}"
        return f"{root}/{self.prefix}" if self.prefix else root

    def roots(self) -> tuple[str, ...]:
        """
        Every URI prefix (ending in ``/``) that names this namespace's root.

        As written and from its parts. A real lakeFS on the local blockstore reports the namespace as
        written (``local://repo1``) but writes locations and full addresses with the resolved path
        (``local:///<blockstore root>/repo1/...``).
        """
        return tuple(dict.fromkeys(f.rstrip("/") + "/" for f in (str(self), self.canonical())))


# lakeFS's Azure blockstore domains (pkg/block/azure/adapter.go; azurite.test is its test domain,
# with an endpoint override) and its namespace rule ``^https?://[a-z0-9_-]+\.<domain>``.
AZURE_DOMAINS = ("blob.core.windows.net", "blob.core.chinacloudapi.cn", "blob.core.usgovcloudapi.net", "azurite.test")
_AZURE_ACCOUNT = re.compile(r"[a-z0-9_-]+")

LOCAL_ROOT_HELP = (
    "a local:// storage namespace is relative to the lakeFS server's blockstore.local.path "
    '(local://repo1 is <blockstore.local.path>/repo1): set it as "local_blockstore_root" in the '
    "extra of the lakeFS connection (the same directory, as the GC workers see it)"
)


def blockstore_root(local_root: str | os.PathLike[str]) -> str:
    """LakeFS's ``blockstore.local.path`` as an absolute, cleaned path (how addresses under it read)."""
    return os.path.normpath(os.path.abspath(os.fspath(local_root)))


def resolve_local(path: str, local_root: str | os.PathLike[str] | None, uri: str) -> str:
    """
    Where lakeFS's local blockstore keeps namespace ``local://<path>``.

    ``<root>/<path>``, cleaned, and strictly under the root (pkg/block/local/adapter.go
    ``extractParamsFromObj``).
    """
    if local_root is None or str(local_root) == "":
        raise ValueError(f"{uri!r}: {LOCAL_ROOT_HELP}")
    root = blockstore_root(local_root)
    resolved = os.path.normpath(os.path.join(root, path.lstrip("/")))
    if not resolved.startswith(root.rstrip("/") + "/"):
        raise ValueError(f"local namespace {uri!r} resolves to {resolved!r}, outside the blockstore root {root!r}")
    return resolved


def scheme_of(uri: str) -> str | None:
    """
    Return the kind (one of :data:`KINDS`) whose prefix ``uri`` starts with, without resolving it.

    None: no kind's (:func:`parse_namespace` says why).
    """
    return next((kind for kind, prefixes in PREFIXES.items() if uri.startswith(prefixes)), None)


def parse_namespace(uri: str, local_root: str | os.PathLike[str] | None = None) -> NamespaceURI:
    """
    Parse a storage namespace URI by lakeFS's rules.

    ``local://<path>`` (resolved under ``local_root``, lakeFS's ``blockstore.local.path``, as
    lakeFS does), ``s3://bucket[/prefix]``, ``gs://bucket[/prefix]`` or
    ``https://<account>.<domain>/<container>[/prefix]`` (Azure Blob; a trailing ``/`` is ignored).
    """
    if uri.startswith("local://"):
        path = uri[len("local://") :].rstrip("/")
        if not path.strip("/"):
            raise ValueError(f"local namespace needs a path: {uri!r}")
        return NamespaceURI(LOCAL, "", resolve_local(path, local_root, uri), uri.rstrip("/"))
    parts = urlsplit(uri)
    if parts.scheme in ("s3", "s3a"):
        if not parts.netloc:
            raise ValueError(f"s3 namespace needs a bucket: {uri!r}")
        return NamespaceURI(S3, parts.netloc, parts.path.strip("/"), uri.rstrip("/"))
    if parts.scheme == "gs":
        if not parts.netloc:
            raise ValueError(f"gs namespace needs a bucket: {uri!r}")
        return NamespaceURI(GCS, parts.netloc, parts.path.strip("/"), uri.rstrip("/"))
    if parts.scheme in ("http", "https"):
        return _parse_azure(uri, parts)
    raise ValueError(
        f"unsupported storage namespace scheme {parts.scheme!r} in {uri!r} (local://, s3://, gs:// or "
        f"https://<account>.blob.core.windows.net/<container>)"
    )


def _parse_azure(uri: str, parts: SplitResult) -> NamespaceURI:
    """
    Parse an Azure Blob namespace by lakeFS's rules.

    The host's first label is the storage account (lower case letters, digits, ``_``, ``-``), the
    rest one of lakeFS's domains; the path's first segment is the container.
    """
    account, _, domain = parts.netloc.partition(".")
    if not _AZURE_ACCOUNT.fullmatch(account) or domain not in AZURE_DOMAINS or parts.port is not None:
        raise ValueError(
            f"Azure namespace {uri!r} must read https://<account>.<domain>/<container>[/<path>] with a "
            f"lower-case account and a domain lakeFS accepts ({', '.join(AZURE_DOMAINS)})"
        )
    container, _, prefix = parts.path.strip("/").partition("/")
    if not container:
        raise ValueError(f"Azure namespace {uri!r} needs a container: https://{parts.netloc}/<container>[/<path>]")
    return NamespaceURI(AZURE, container, prefix.strip("/"), uri.rstrip("/"), host=parts.netloc)


def address_forms(physical: str, local_root: str | None) -> list[str]:
    """
    Every form of an address lakeFS printed (statObject, listObjects) that may name its object.

    lakeFS prints a FULL ``local://<host>/<path>`` as ``local://`` + ``path.Join(<root>, host,
    path)`` (``QualifiedKey.Format``), so the resolved form comes back with the blockstore root
    (``local_root``) twice, while the object lives at ``<root>/<ns>/...``: both readings are given.
    Any other address reads only as printed.
    """
    forms = [physical]
    if physical.startswith("local://") and local_root:
        root = blockstore_root(local_root)
        path = physical[len("local://") :]
        if path.startswith(root + "/"):
            forms.append("local://" + path[len(root) :])
    return forms


def relative_to(roots: str | tuple[str, ...] | list[str], uri: str) -> str | None:
    """``uri`` relative to the namespace (one of its ``roots``), or None when it lies outside."""
    for given in (roots,) if isinstance(roots, str) else roots:
        root = given.rstrip("/") + "/"
        if uri.startswith(root):
            return uri[len(root) :]
    return None


def _check_key(key: str) -> str:
    if key.startswith("/") or any(p in ("..", ".") for p in key.split("/")):
        raise ValueError(f"invalid relative key {key!r}")
    return key
