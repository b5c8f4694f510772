"""
How the GC reaches a storage namespace: one settings type per kind.

:class:`S3Options` for S3 and S3-compatible endpoints, :class:`AzureOptions` for Azure Blob,
:class:`GCSOptions` for Google Cloud Storage, for the Airflow hooks, the operators and the Spark
jobs. Secrets never appear in ``repr``; they travel to a Spark job only under the names here, in
its secrets file or environment (never argv, never XCom).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_REGION = "us-east-1"


def env_names(prefix: str, *names: str) -> tuple[str, ...]:
    """Return the environment variables ``prefix + name`` of one kind's settings, in order."""
    return tuple(prefix + name for name in names)


ENV_PREFIX = "LAKEFS_GC_S3_"
ENV_ACCESS_KEY, ENV_SECRET_KEY, ENV_SESSION_TOKEN, ENV_ENDPOINT_URL, ENV_REGION = env_names(
    ENV_PREFIX, "ACCESS_KEY_ID", "SECRET_ACCESS_KEY", "SESSION_TOKEN", "ENDPOINT_URL", "REGION"
)
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
        return (
            f"S3Options(endpoint_url={self.endpoint_url!r}, region={self.region!r}, "
            f"has_keys={bool(self.access_key_id)})"
        )

    def to_env(self) -> dict[str, str]:
        """Return the environment a Spark job reads these settings from (:meth:`from_env`)."""
        env = {ENV_REGION: self.region}
        for name, value in (
            (ENV_ENDPOINT_URL, self.endpoint_url),
            (ENV_ACCESS_KEY, self.access_key_id),
            (ENV_SECRET_KEY, self.secret_access_key),
            (ENV_SESSION_TOKEN, self.session_token),
        ):
            if value:
                env[name] = value
        return env

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> S3Options:
        env = os.environ if environ is None else environ
        return cls(
            endpoint_url=env.get(ENV_ENDPOINT_URL) or None,
            access_key_id=env.get(ENV_ACCESS_KEY) or None,
            secret_access_key=env.get(ENV_SECRET_KEY) or None,
            session_token=env.get(ENV_SESSION_TOKEN) or None,
            region=env.get(ENV_REGION) or DEFAULT_REGION,
        )


# --- Azure Blob ---------------------------------------------------------------------------------
AZURE_ENV_PREFIX = "LAKEFS_GC_AZURE_"
(
    ENV_AZURE_ACCOUNT_KEY,
    ENV_AZURE_SAS_TOKEN,
    ENV_AZURE_TOKEN,
    ENV_AZURE_TOKEN_EXPIRES,
    ENV_AZURE_ACCOUNT_URL,
    ENV_AZURE_ACCOUNT_NAME,
) = env_names(
    AZURE_ENV_PREFIX,
    "ACCOUNT_KEY",
    "SAS_TOKEN",
    "ACCESS_TOKEN",
    "ACCESS_TOKEN_EXPIRES_ON",
    "ACCOUNT_URL",
    "ACCOUNT_NAME",
)
# What a job reads from its secrets file (the token's expiry goes with the token); the account URL
# travels in the run context, the account name in the namespace
AZURE_SECRET_ENV = (ENV_AZURE_ACCOUNT_KEY, ENV_AZURE_SAS_TOKEN, ENV_AZURE_TOKEN, ENV_AZURE_TOKEN_EXPIRES)


@dataclass(frozen=True, slots=True)
class AzureOptions:
    """
    How to reach an Azure Blob storage account: its URL and one credential.

    The URL is ``https://<account>.blob.core.windows.net``, or Azurite's
    ``http://127.0.0.1:10000/<account>``; the credential the account key, a SAS token, or an OAuth
    access token the Airflow side obtained from the connection's token credential (service
    principal, managed identity, workload identity) with its expiry. None of them:
    ``DefaultAzureCredential`` where the storage is opened.
    """

    account_url: str
    account_name: str
    account_key: str | None = None
    sas_token: str | None = None
    access_token: str | None = None
    access_token_expires_on: int = 0  # epoch seconds

    def __repr__(self) -> str:  # never print secrets
        kind = (
            "account key"
            if self.account_key
            else "SAS token"
            if self.sas_token
            else "access token"
            if self.access_token
            else "DefaultAzureCredential"
        )
        return f"AzureOptions(account_url={self.account_url!r}, credential={kind!r})"

    def to_env(self) -> dict[str, str]:
        env = {ENV_AZURE_ACCOUNT_URL: self.account_url, ENV_AZURE_ACCOUNT_NAME: self.account_name}
        for name, value in (
            (ENV_AZURE_ACCOUNT_KEY, self.account_key),
            (ENV_AZURE_SAS_TOKEN, self.sas_token),
            (ENV_AZURE_TOKEN, self.access_token),
        ):
            if value:
                env[name] = value
        if self.access_token:
            env[ENV_AZURE_TOKEN_EXPIRES] = str(int(self.access_token_expires_on))
        return env

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, account_url: str | None = None, account_name: str | None = None
    ) -> AzureOptions:
        env = os.environ if environ is None else environ
        return cls(
            account_url=account_url or env.get(ENV_AZURE_ACCOUNT_URL) or "",
            account_name=account_name or env.get(ENV_AZURE_ACCOUNT_NAME) or "",
            account_key=env.get(ENV_AZURE_ACCOUNT_KEY) or None,
            sas_token=env.get(ENV_AZURE_SAS_TOKEN) or None,
            access_token=env.get(ENV_AZURE_TOKEN) or None,
            access_token_expires_on=int(env.get(ENV_AZURE_TOKEN_EXPIRES) or 0),
        )


# --- Google Cloud Storage -----------------------------------------------------------------------
GCS_ENV_PREFIX = "LAKEFS_GC_GCS_"
ENV_GCS_TOKEN, ENV_GCS_ENDPOINT_URL, ENV_GCS_PROJECT, ENV_GCS_ANONYMOUS = env_names(
    GCS_ENV_PREFIX, "ACCESS_TOKEN", "ENDPOINT_URL", "PROJECT", "ANONYMOUS"
)
# What a job reads from its secrets file: the token, and the project and anonymous choice that go with it
GCS_SECRET_ENV = (ENV_GCS_TOKEN, ENV_GCS_PROJECT, ENV_GCS_ANONYMOUS)


@dataclass(frozen=True, slots=True)
class GCSOptions:
    """
    How to reach Google Cloud Storage: the endpoint, the project and a credential.

    The JSON API endpoint (None: Google's; an emulator's URL otherwise), the project, and an OAuth
    access token the Airflow side obtained from the connection's credentials (key file, key JSON,
    impersonation, ...); ``anonymous`` for an emulator (the connection's ``is_anonymous``). Neither:
    Application Default Credentials where opened.
    """

    endpoint_url: str | None = None
    project: str | None = None
    access_token: str | None = None
    anonymous: bool = False

    def __repr__(self) -> str:  # never print secrets
        kind = "anonymous" if self.anonymous else "access token" if self.access_token else "default credentials"
        return f"GCSOptions(endpoint_url={self.endpoint_url!r}, project={self.project!r}, credential={kind!r})"

    def to_env(self) -> dict[str, str]:
        env = {}
        for name, value in (
            (ENV_GCS_ENDPOINT_URL, self.endpoint_url),
            (ENV_GCS_PROJECT, self.project),
            (ENV_GCS_TOKEN, self.access_token),
        ):
            if value:
                env[name] = value
        if self.anonymous:
            env[ENV_GCS_ANONYMOUS] = "1"
        return env

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, endpoint_url: str | None = None) -> GCSOptions:
        env = os.environ if environ is None else environ
        return cls(
            endpoint_url=endpoint_url or env.get(ENV_GCS_ENDPOINT_URL) or None,
            project=env.get(ENV_GCS_PROJECT) or None,
            access_token=env.get(ENV_GCS_TOKEN) or None,
            anonymous=env.get(ENV_GCS_ANONYMOUS) == "1",
        )


StorageOptions = S3Options | AzureOptions | GCSOptions
ALL_SECRET_ENV = (*SECRET_ENV, *AZURE_SECRET_ENV, *GCS_SECRET_ENV)
