"""
A real lakeFS to test against, given by the environment (conformance mode).

By default the end-to-end tests and ``make demo`` start the lakeFS API emulator. When
``LAKEFS_GC_TARGET_ENDPOINT`` is set they use that lakeFS instead (a user's server, or the
``treeverse/lakefs`` image in quickstart mode); tests that need the emulator's private clock are
skipped there. Variables:

======================================  =====================================================
``LAKEFS_GC_TARGET_ENDPOINT``           lakeFS URL, e.g. ``http://127.0.0.1:8000``
``LAKEFS_GC_TARGET_ACCESS_KEY_ID``      lakeFS access key id
``LAKEFS_GC_TARGET_SECRET_ACCESS_KEY``  lakeFS secret access key
``LAKEFS_GC_TARGET_NAMESPACE_ROOT``     where test repositories go: ``s3://bucket/prefix`` or
                                        ``local://prefix`` (each repository gets its own folder)
``LAKEFS_GC_TARGET_LOCAL_ROOT``         the server's ``blockstore.local.path`` (local:// only)
``LAKEFS_GC_TARGET_S3_ENDPOINT``        the S3 endpoint of the server's bucket (s3:// only;
                                        unset means AWS); ``..._S3_ACCESS_KEY_ID``,
                                        ``..._S3_SECRET_ACCESS_KEY``, ``..._S3_REGION``
======================================  =====================================================
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

PREFIX = "LAKEFS_GC_TARGET_"


class TargetConfigError(ValueError):
    """The ``LAKEFS_GC_TARGET_*`` variables are incomplete or wrong; the message names the variable."""


@dataclass(frozen=True)
class LakeFSTarget:
    """A real lakeFS to test against: its URL and keys, where test repositories go, their store."""

    url: str
    access_key: str
    secret_key: str
    namespace_root: str
    local_root: str | None = None
    s3_endpoint: str | None = None
    s3_access_key: str | None = None
    s3_secret_key: str | None = None
    s3_region: str = "us-east-1"

    def __repr__(self) -> str:  # never print keys
        return f"LakeFSTarget({self.url!r}, namespace_root={self.namespace_root!r})"

    @property
    def blockstore_type(self) -> str:
        return "local" if self.namespace_root.startswith("local://") else "s3"

    def namespace(self, name: str) -> str:
        return f"{self.namespace_root.rstrip('/')}/{name}"

    def s3_options(self):
        from lakefs_gc.storage import S3Options

        return S3Options(
            endpoint_url=self.s3_endpoint,
            access_key_id=self.s3_access_key,
            secret_access_key=self.s3_secret_key,
            region=self.s3_region,
        )

    def storage(self, ns: str):
        from lakefs_gc.storage import open_storage

        return open_storage(ns, self.s3_options() if ns.startswith("s3://") else None, self.local_root)

    def client(self):
        from lakefs_sandbox.seed import sdk_client

        return sdk_client(self.url, self.access_key, self.secret_key)

    def lakefs_conn(self) -> dict:
        """Return the Airflow ``lakefs`` connection (JSON form) for this server."""
        extra = {"local_blockstore_root": self.local_root} if self.local_root else {}
        return {
            "conn_type": "lakefs_gc",
            "host": self.url,
            "login": self.access_key,
            "password": self.secret_key,
            "extra": extra,
        }

    def aws_conn(self) -> dict | None:
        """Return the Airflow ``aws`` connection (JSON form) for an s3:// namespace root, else None."""
        if self.blockstore_type != "s3":
            return None
        extra = {"region_name": self.s3_region}
        if self.s3_endpoint:
            extra["endpoint_url"] = self.s3_endpoint
        return {"conn_type": "aws", "login": self.s3_access_key, "password": self.s3_secret_key, "extra": extra}


def target_from_env(env: Mapping[str, str] | None = None) -> LakeFSTarget | None:
    """
    Return the target lakeFS from ``LAKEFS_GC_TARGET_*``, or None when no endpoint is set.

    An incomplete set is an error naming the missing variable.
    """
    values: Mapping[str, str] = os.environ if env is None else env
    url = values.get(PREFIX + "ENDPOINT")
    if not url:
        return None

    def need(name: str) -> str:
        v = values.get(PREFIX + name)
        if not v:
            raise TargetConfigError(
                f"{PREFIX}ENDPOINT is set, so {PREFIX}{name} is needed too (see include/lakefs_sandbox/target.py)"
            )
        return v

    ak, sk, root = need("ACCESS_KEY_ID"), need("SECRET_ACCESS_KEY"), need("NAMESPACE_ROOT")
    if root.startswith("local://"):
        return LakeFSTarget(url, ak, sk, root, local_root=need("LOCAL_ROOT"))
    if not root.startswith("s3://"):
        raise TargetConfigError(f"{PREFIX}NAMESPACE_ROOT must be s3://bucket/prefix or local://prefix, got {root!r}")
    return LakeFSTarget(
        url,
        ak,
        sk,
        root,
        s3_endpoint=values.get(PREFIX + "S3_ENDPOINT") or None,
        s3_access_key=values.get(PREFIX + "S3_ACCESS_KEY_ID") or None,
        s3_secret_key=values.get(PREFIX + "S3_SECRET_ACCESS_KEY") or None,
        s3_region=values.get(PREFIX + "S3_REGION") or "us-east-1",
    )
