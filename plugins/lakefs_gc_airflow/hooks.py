"""
Hooks: the lakeFS connection and the storage connection's settings.

The lakeFS connection has type ``lakefs_gc`` (``lakefs`` and ``http`` connections in the shape of
Treeverse's ``airflow-provider-lakefs`` are read too); the storage connection is an ``aws``,
``wasb`` or ``google_cloud_platform`` one, its settings resolved through those providers' own hooks.

Both only read Airflow connections; the lakeFS client itself (retries, backoff) is
``lakefs_gc.lakefs.client.LakeFSClient``, built lazily by :meth:`LakeFSHook.get_conn`. Every secret
they read (the lakeFS secret key, the storage credentials) is given to Airflow's
``mask_secret`` at once, so no task log shows it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from airflow.sdk import BaseHook
from airflow.sdk.log import mask_secret

from lakefs_gc.storage.kinds import NAMESPACE_KINDS, connection_type, kind_for_connection
from lakefs_gc.storage.settings import DEFAULT_REGION, AzureOptions, GCSOptions, S3Options, StorageOptions

if TYPE_CHECKING:
    from airflow.sdk import Connection
    from lakefs_sdk.exceptions import ApiException

    from lakefs_gc.lakefs.client import LakeFSClient


def lakefs_endpoint(
    host: str | None, port: int | None = None, schema: str | None = None, scheme: str | None = None
) -> str:
    """
    Return the lakeFS API base URL from a connection's fields, always ending in ``/api/v1``.

    ``host`` may be a full URL (``http://127.0.0.1:8000`` or ``https://lakefs.example.com/api/v1``)
    or a bare host name (then ``scheme`` (default http), ``port`` and ``schema`` (a path) are used).
    """
    if not host:
        raise ValueError(
            "the lakeFS connection has no host: set it to the lakeFS endpoint URL, e.g. http://127.0.0.1:8000"
        )
    if "://" in host:
        parts = urlsplit(host)
        netloc = parts.netloc
        if port and parts.port is None:
            netloc = f"{netloc}:{port}"
        base = f"{parts.scheme}://{netloc}{parts.path}"
    else:
        base = f"{scheme or 'http'}://{host}" + (f":{port}" if port else "")
        if schema:
            base += "/" + schema.strip("/")
    from lakefs_gc.lakefs.client import api_endpoint

    return api_endpoint(base)


class LakeFSHook(BaseHook):
    """
    lakeFS through ``lakefs-sdk``. Connection type ``lakefs_gc``.

    Our own type name, so that this provider lives beside Treeverse's ``airflow-provider-lakefs``
    (which registers ``lakefs``): the GC reads a connection of any of these types, whatever made it:

    - ``lakefs_gc`` (ours) and ``lakefs`` (theirs, or ours in its first releases): host, login, password;
    - ``http`` in their shape: host, and the keys as extras ``access_key_id`` and
      ``secret_access_key`` (else login and password); the ``schema`` field is the URL scheme, as
      with Airflow's HTTP connections.

    host = endpoint URL (``http://lakefs:8000``; ``/api/v1`` is appended when missing),
    login = access key id, password = secret access key. Optional extra:
    ``{"max_retries": 5, "backoff_base": 0.5, "backoff_max": 20.0}`` (retries on 5xx/429/connection
    errors, none on other 4xx: done by the client), and ``local_blockstore_root``: the server's
    ``blockstore.local.path`` as the GC workers see it, required for ``local://`` namespaces
    (lakeFS keeps ``local://repo1`` at ``<blockstore.local.path>/repo1``). An empty extra field
    (``""`` or null, as the connection form saves one left blank) means not set.

    The connection form's labels, help texts and extra fields are provider metadata
    (``lakefs_gc_airflow.get_provider_info``); :meth:`test_connection` backs its Test button.

    :param lakefs_conn_id: the connection to read (of any type above); default ``lakefs_default``.
    """

    conn_name_attr = "lakefs_conn_id"
    default_conn_name = "lakefs_default"
    conn_type = "lakefs_gc"
    hook_name = "lakeFS (garbage collection)"
    read_conn_types = ("lakefs_gc", "lakefs", "http", "https")  # the types whose connections it reads

    _RETRY_EXTRAS = {"max_retries": int, "backoff_base": float, "backoff_max": float, "connect_timeout": float}

    def __init__(self, lakefs_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lakefs_conn_id = lakefs_conn_id
        self._client: LakeFSClient | None = None
        self._endpoint: str | None = None
        self._conn: Connection | None = None

    def _connection(self) -> Connection:
        """
        Return the Airflow connection, read once per hook.

        prepare_run asks it for the client, the blockstore root and the retry extras.
        """
        if self._conn is None:
            self._conn = self.get_connection(self.lakefs_conn_id)
        return self._conn

    def _settings(self) -> tuple[str, str, str, dict[str, Any]]:
        conn = self._connection()
        kind = (conn.conn_type or "").lower()
        if kind not in self.read_conn_types:
            raise ValueError(
                f"connection {self.lakefs_conn_id!r} has type {conn.conn_type!r}, not a lakeFS "
                f"connection: give it type 'lakefs_gc' (lakeFS (garbage collection) in the form), "
                f"'lakefs' or 'http'"
            )
        extra = conn.extra_dejson or {}
        login, password, schema, scheme = conn.login, conn.password, conn.schema, extra.get("scheme")
        if kind in ("http", "https"):  # airflow-provider-lakefs's other shape; schema is the URL scheme there
            if extra.get("access_key_id") and extra.get("secret_access_key"):
                login, password = extra["access_key_id"], extra["secret_access_key"]
            schema, scheme = None, scheme or conn.schema or kind
        if not login or not password:
            raise ValueError(
                f"lakeFS connection {self.lakefs_conn_id!r} needs login (access key id) "
                "and password (secret access key)"
            )
        mask_secret(password)
        endpoint = lakefs_endpoint(conn.host, conn.port, schema, scheme)
        kwargs: dict[str, Any] = {}
        for key, typ in self._RETRY_EXTRAS.items():
            if extra.get(key) not in (None, ""):
                try:
                    kwargs[key] = typ(extra[key])
                except (TypeError, ValueError):
                    raise ValueError(
                        f"lakeFS connection {self.lakefs_conn_id!r}: extra {key!r} must be "
                        f"a {typ.__name__}, got {extra[key]!r}"
                    ) from None
        return endpoint, login, password, kwargs

    @property
    def endpoint(self) -> str:
        if self._endpoint is None:
            self._endpoint = self._settings()[0]
        return self._endpoint

    def local_blockstore_root(self) -> str | None:
        """Extra ``local_blockstore_root`` (lakeFS's ``blockstore.local.path``), or None."""
        extra = self._connection().extra_dejson or {}
        root = extra.get("local_blockstore_root")
        return str(root) if root else None

    def retries(self) -> dict[str, float]:
        """
        Return the connection's retry extras that are set.

        The retry extras: ``max_retries``, ``backoff_base``, ``backoff_max``, ``connect_timeout``.
        """
        return self._settings()[3]

    def credentials(self) -> tuple[str, str]:
        """(access key id, secret access key): for handing to Spark jobs through the environment."""
        _, access, secret, _ = self._settings()
        return access, secret

    def get_conn(self) -> LakeFSClient:
        if self._client is None:
            from lakefs_gc.lakefs.client import LakeFSClient

            endpoint, access, secret, kwargs = self._settings()
            self._endpoint = endpoint
            self.log.info("lakeFS client for %s (connection %s)", endpoint, self.lakefs_conn_id)
            self._client = LakeFSClient(
                endpoint, access, secret, connection=f"lakeFS connection {self.lakefs_conn_id!r}", **kwargs
            )
        return self._client

    def test_connection(self) -> tuple[bool, str]:
        """
        Answer the connection form's Test button (Airflow's ``[core] test_connection = Enabled``).

        One authenticated call to lakeFS's API (``GET /config``), no retries, a 10 s timeout; the
        answer says what failed (no endpoint or keys, endpoint unreachable, keys refused, not a lakeFS).
        """
        from lakefs_sdk.exceptions import ApiException

        from lakefs_gc.lakefs.client import LakeFSClient, LakeFSUnreachable

        try:
            endpoint, access, secret, _ = self._settings()
        except ValueError as e:
            return False, str(e)
        client = LakeFSClient(endpoint, access, secret, max_retries=0, request_timeout=10.0)
        try:
            cfg = client.call("getConfig", client.config.get_config)
        except ApiException as e:
            return False, _api_failure(endpoint, e)
        except Exception as e:  # connection refused, DNS, TLS, timeout: said in one line, to the UI
            cause: BaseException = e
            if isinstance(e, LakeFSUnreachable) and e.__context__ is not None:
                cause = e.__context__  # the client's one line is for tasks; the button names the cause itself
            return False, (
                f"cannot reach lakeFS at {endpoint}: {_reason(cause)}. Check the lakeFS endpoint "
                f"(scheme, host, port) and that lakeFS is running and reachable from Airflow"
            )
        finally:
            client.close()
        version = getattr(cfg.version_config, "version", None) or "(version not given)"
        stores = [s.blockstore_type for s in (cfg.storage_config_list or []) if s is not None] or (
            [cfg.storage_config.blockstore_type] if cfg.storage_config is not None else []
        )
        message = f"lakeFS {version} at {endpoint} accepted the keys (blockstore: {', '.join(stores) or 'unknown'})"
        if "local" in stores and not self.local_blockstore_root():
            message += "; set Local blockstore root to collect its local:// repositories"
        return True, message


def _reason(exc: BaseException) -> str:
    """Return the cause of a failed request in one line (urllib3 wraps it: MaxRetryError(reason=...))."""
    cause = getattr(exc, "reason", None) or exc
    text = str(cause)
    for sep in (
        ">: ",
        "): ",
    ):  # "<...HTTPConnection object at 0x...>: Failed..." / "HTTPConnection(host=..): Failed..."
        if sep in text:
            text = text.split(sep, 1)[1]
            break
    return f"{type(cause).__name__}: {text}"


def _api_failure(endpoint: str, exc: ApiException) -> str:
    """Return what lakeFS's answer to ``GET /config`` means for the connection."""
    if exc.status == 401:
        return f"lakeFS at {endpoint} refused the keys (HTTP 401): check Access key ID and Secret access key"
    if exc.status == 403:
        return (
            f"lakeFS at {endpoint} accepted the keys but their user may not read the server config "
            f"(HTTP 403): the GC needs fs:ReadConfig among its permissions (see the README)"
        )
    if exc.status in (404, 405, 501):
        return (
            f"{endpoint}/config answered HTTP {exc.status} {exc.reason or ''}: no lakeFS API at this address? "
            f"Give the lakeFS server's URL, e.g. http://lakefs:8000 (/api/v1 is appended when missing)"
        )
    return f"lakeFS at {endpoint} answered HTTP {exc.status} {exc.reason or ''} to GET /config".rstrip()


def storage_options(conn_id: str | None) -> StorageOptions | None:
    """
    Return the storage connection as the GC's settings.

    Its credentials are resolved by the official provider's hook of its type, as Airflow users
    expect of them:

    - ``aws``: :class:`AwsBaseHook`'s ``get_credentials()`` (static keys, role assumption, profiles,
      session tokens, the boto3 chain), ``endpoint_url`` (extra, or ``service_config.s3``) and
      ``region_name``;
    - ``wasb``: :class:`WasbHook`'s client (connection string, account key, SAS token, service
      principal, managed or workload identity): its account URL and its credential; a token
      credential becomes an access token for the storage scope (valid about an hour);
    - ``google_cloud_platform``: :class:`GCSHook`'s credentials (key file, key JSON, impersonation,
      ADC; ``is_anonymous`` for an emulator) as an access token, and the endpoint its client uses
      (``STORAGE_EMULATOR_HOST`` for an emulator, as with the Google provider itself).

    Every secret goes through ``mask_secret``. None when no connection id is configured or the
    connection does not exist: the caller decides whether that is an error (it is for any
    namespace but ``local://``).
    """
    if not conn_id:
        return None
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        conn = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return None
    kind = kind_for_connection(conn.conn_type)
    if kind is None:
        raise ValueError(
            f"storage connection {conn_id!r} has type {conn.conn_type!r}: use an 'aws' connection for "
            f"s3:// namespaces, 'wasb' for Azure Blob, 'google_cloud_platform' for gs://"
        )
    try:
        return HOOK_OPTIONS[connection_type(conn.conn_type)](conn_id)
    except ImportError as e:
        raise ValueError(
            f"storage connection {conn_id!r} has type {conn.conn_type!r}, but its provider is not "
            f"installed ({e}): install lakefs-gc{f'[{kind.extra}]' if kind.extra else ''} on the Airflow workers"
        ) from None


def _aws_options(conn_id: str) -> S3Options:
    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

    hook = AwsBaseHook(aws_conn_id=conn_id, client_type="s3")
    cfg = hook.conn_config
    region = hook.conn_region_name or DEFAULT_REGION
    try:
        creds = hook.get_credentials(region_name=region)
    except Exception as e:
        import logging

        logging.getLogger(__name__).warning(
            "storage connection %r: no AWS credentials resolved (%s); the jobs use "
            "boto3's default chain where they run",
            conn_id,
            type(e).__name__,
        )
        creds = None
    access, secret, token = (creds.access_key, creds.secret_key, creds.token) if creds is not None else (None,) * 3
    for value in (secret, token):
        if value:
            mask_secret(value)
    return S3Options(
        endpoint_url=cfg.get_service_endpoint_url("s3"),
        region=region,
        access_key_id=access,
        secret_access_key=secret,
        session_token=token,
    )


AZURE_STORAGE_SCOPE = "https://storage.azure.com/.default"


def _wasb_options(conn_id: str) -> AzureOptions:
    from urllib.parse import urlsplit as split

    from airflow.providers.microsoft.azure.hooks.wasb import WasbHook

    client = WasbHook(wasb_conn_id=conn_id).get_conn()
    url = split(client.url)
    account_url = f"{url.scheme}://{url.netloc}{url.path}".rstrip("/")
    cred = client.credential
    key = sas = token = None
    expires = 0
    if getattr(cred, "account_key", None):  # connection string or shared access key
        key = cred.account_key
    elif getattr(cred, "signature", None):  # AzureSasCredential
        sas = cred.signature
    elif url.query:  # a SAS URL as the sas_token
        sas = url.query
    elif cred is not None and hasattr(cred, "get_token"):  # service principal, managed or workload identity
        t = cred.get_token(AZURE_STORAGE_SCOPE)
        token, expires = t.token, int(t.expires_on)
    for value in (key, sas, token):
        if value:
            mask_secret(value)
    return AzureOptions(
        account_url=account_url,
        account_name=client.account_name or "",
        account_key=key,
        sas_token=sas,
        access_token=token,
        access_token_expires_on=expires,
    )


def _gcs_options(conn_id: str) -> GCSOptions:
    from airflow.providers.google.cloud.hooks.gcs import GCSHook
    from google.auth.credentials import AnonymousCredentials

    hook = GCSHook(gcp_conn_id=conn_id)
    creds, project = hook.get_credentials_and_project_id()
    endpoint = getattr(hook.get_conn(), "api_endpoint", None)
    endpoint = None if endpoint in (None, "https://storage.googleapis.com") else endpoint
    if isinstance(creds, AnonymousCredentials):
        return GCSOptions(endpoint_url=endpoint, project=project, anonymous=True)
    from google.auth.transport.requests import Request

    creds.refresh(Request())
    mask_secret(creds.token)
    return GCSOptions(endpoint_url=endpoint, project=project, access_token=creds.token)


# The provider's half of each cloud namespace kind: for every connection type its record names
# (lakefs_gc.storage.NAMESPACE_KINDS, the one list of them), how that type's official provider's hook
# becomes the kind's settings. Checked at import against the records: a kind without its functions fails here.
HOOK_OPTIONS: dict[str, Callable[[str], StorageOptions]] = {
    "aws": _aws_options,
    "s3": _aws_options,
    "wasb": _wasb_options,
    "google_cloud_platform": _gcs_options,
    "gcpcloudstorage": _gcs_options,
    "gcs": _gcs_options,
}


def _check_hook_options() -> None:
    """Raise unless :data:`HOOK_OPTIONS` has a function for exactly the connection types the namespace kinds name."""
    named = {t for kind in NAMESPACE_KINDS.values() for t in kind.connection_types}
    if set(HOOK_OPTIONS) != named:
        raise RuntimeError(
            f"lakefs_gc_airflow.hooks.HOOK_OPTIONS serves the connection types {sorted(HOOK_OPTIONS)}, "
            f"the namespace kinds name {sorted(named)}: give each kind's types their function"
        )


_check_hook_options()
