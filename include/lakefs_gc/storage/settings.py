"""How the GC reaches an S3-compatible endpoint: one settings type (:class:`S3Options`) for the
Airflow hook, the operators and the Spark jobs. Secrets never appear in ``repr``; they travel to a
Spark job only under the names here, in its secrets file or environment (never argv, never XCom)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_REGION = "us-east-1"
ENV_PREFIX = "LAKEFS_GC_S3_"
ENV_ACCESS_KEY = ENV_PREFIX + "ACCESS_KEY_ID"
ENV_SECRET_KEY = ENV_PREFIX + "SECRET_ACCESS_KEY"
ENV_SESSION_TOKEN = ENV_PREFIX + "SESSION_TOKEN"
ENV_ENDPOINT_URL = ENV_PREFIX + "ENDPOINT_URL"
ENV_REGION = ENV_PREFIX + "REGION"
SECRET_ENV = (ENV_ACCESS_KEY, ENV_SECRET_KEY, ENV_SESSION_TOKEN)


@dataclass(frozen=True, slots=True)
class S3Options:
    """How to reach an S3-compatible endpoint (no keys: boto3's default chain; no endpoint: AWS)."""

    endpoint_url: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None
    region: str = DEFAULT_REGION
    path_style: bool = True

    def __repr__(self) -> str:  # never print secrets
        return (f"S3Options(endpoint_url={self.endpoint_url!r}, region={self.region!r}, "
                f"has_keys={bool(self.access_key_id)})")

    def to_env(self) -> dict[str, str]:
        """The environment a Spark job reads these settings from (:meth:`from_env`)."""
        env = {ENV_REGION: self.region}
        for name, value in ((ENV_ENDPOINT_URL, self.endpoint_url), (ENV_ACCESS_KEY, self.access_key_id),
                            (ENV_SECRET_KEY, self.secret_access_key), (ENV_SESSION_TOKEN, self.session_token)):
            if value:
                env[name] = value
        return env

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> S3Options:
        env = os.environ if environ is None else environ
        return cls(endpoint_url=env.get(ENV_ENDPOINT_URL) or None, access_key_id=env.get(ENV_ACCESS_KEY) or None,
                   secret_access_key=env.get(ENV_SECRET_KEY) or None, session_token=env.get(ENV_SESSION_TOKEN) or None,
                   region=env.get(ENV_REGION) or DEFAULT_REGION)
