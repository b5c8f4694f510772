"""Storage namespaces as lakeFS names them: ``s3://bucket/prefix`` and ``local://<path>``
(resolved under lakeFS's ``blockstore.local.path`` exactly as lakeFS does), and keys relative to
their root."""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True, slots=True)
class NamespaceURI:
    scheme: str  # "local" or "s3"
    bucket: str  # "" for local
    prefix: str  # local: absolute directory (resolved under the blockstore root); s3: key prefix without "/" ends
    uri: str = ""  # the namespace as lakeFS reports it, without a trailing "/"

    def __str__(self) -> str:
        if self.uri:
            return self.uri
        if self.scheme == "local":
            return f"local://{self.prefix}"
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    def roots(self) -> tuple[str, ...]:
        """Every URI prefix (ending in ``/``) that names this namespace's root. A real lakeFS on the
        local blockstore reports the namespace as written (``local://repo1``) but writes locations
        and full addresses with the resolved path (``local:///<blockstore root>/repo1/...``)."""
        forms = [str(self)]
        if self.scheme == "local":
            forms.append(f"local://{self.prefix}")
        elif self.scheme == "s3":
            forms.append(f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}")
        return tuple(dict.fromkeys(f.rstrip("/") + "/" for f in forms))


LOCAL_ROOT_HELP = ("a local:// storage namespace is relative to the lakeFS server's blockstore.local.path "
                   "(local://repo1 is <blockstore.local.path>/repo1): set it as \"local_blockstore_root\" in the "
                   "extra of the lakeFS connection (the same directory, as the GC workers see it)")


def blockstore_root(local_root: str | os.PathLike) -> str:
    """lakeFS's ``blockstore.local.path`` as an absolute, cleaned path (how addresses under it read)."""
    return os.path.normpath(os.path.abspath(os.fspath(local_root)))


def resolve_local(path: str, local_root: str | os.PathLike | None, uri: str) -> str:
    """Where lakeFS's local blockstore keeps namespace ``local://<path>``: ``<root>/<path>``, cleaned,
    and strictly under the root (pkg/block/local/adapter.go ``extractParamsFromObj``)."""
    if local_root is None or str(local_root) == "":
        raise ValueError(f"{uri!r}: {LOCAL_ROOT_HELP}")
    root = blockstore_root(local_root)
    resolved = os.path.normpath(os.path.join(root, path.lstrip("/")))
    if not resolved.startswith(root.rstrip("/") + "/"):
        raise ValueError(f"local namespace {uri!r} resolves to {resolved!r}, outside the blockstore root {root!r}")
    return resolved


def parse_namespace(uri: str, local_root: str | os.PathLike | None = None) -> NamespaceURI:
    """Parse ``local://<path>`` (resolved under ``local_root``, lakeFS's ``blockstore.local.path``,
    as lakeFS does) or ``s3://bucket[/prefix]`` (a trailing ``/`` is ignored)."""
    if uri.startswith("local://"):
        path = uri[len("local://"):].rstrip("/")
        if not path.strip("/"):
            raise ValueError(f"local namespace needs a path: {uri!r}")
        return NamespaceURI("local", "", resolve_local(path, local_root, uri), uri.rstrip("/"))
    parts = urlsplit(uri)
    if parts.scheme in ("s3", "s3a"):
        if not parts.netloc:
            raise ValueError(f"s3 namespace needs a bucket: {uri!r}")
        return NamespaceURI("s3", parts.netloc, parts.path.strip("/"), uri.rstrip("/"))
    raise ValueError(f"unsupported storage namespace scheme {parts.scheme!r} in {uri!r} (local:// or s3://)")


def relative_to(roots: str | tuple[str, ...] | list[str], uri: str) -> str | None:
    """``uri`` relative to the namespace (one of its ``roots``), or None when it lies outside."""
    for root in ((roots,) if isinstance(roots, str) else roots):
        root = root.rstrip("/") + "/"
        if uri.startswith(root):
            return uri[len(root):]
    return None


def _check_key(key: str) -> str:
    if key.startswith("/") or any(p in ("..", ".") for p in key.split("/")):
        raise ValueError(f"invalid relative key {key!r}")
    return key
