"""Hooks: the lakeFS connection (type ``lakefs``) and the storage (``aws``) connection settings.

Both only read Airflow connections; the lakeFS client itself (retries, backoff) is
``lakefs_gc.lakefs.client.LakeFSClient``, built lazily by :meth:`LakeFSHook.get_conn`. Every secret
they read (the lakeFS secret key, the S3 secret key and session token) is given to Airflow's
``mask_secret`` at once, so no task log shows it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from airflow.sdk import BaseHook
from airflow.sdk.log import mask_secret
from lakefs_gc.storage.settings import DEFAULT_REGION, S3Options

if TYPE_CHECKING:
    from lakefs_gc.lakefs.client import LakeFSClient

def lakefs_endpoint(host: str | None, port: int | None = None, schema: str | None = None,
                    scheme: str | None = None) -> str:
    """The lakeFS API base URL from a connection's fields, always ending in ``/api/v1``.

    ``host`` may be a full URL (``http://127.0.0.1:8000`` or ``https://lakefs.example.com/api/v1``)
    or a bare host name (then ``scheme`` (default http), ``port`` and ``schema`` (a path) are used).
    """
    if not host:
        raise ValueError("the lakeFS connection has no host: set it to the lakeFS endpoint URL, "
                         "e.g. http://127.0.0.1:8000")
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
    """lakeFS through ``lakefs-sdk``. Connection type ``lakefs``.

    host = endpoint URL (``http://lakefs:8000``; ``/api/v1`` is appended when missing),
    login = access key id, password = secret access key. Optional extra:
    ``{"max_retries": 5, "backoff_base": 0.5, "backoff_max": 20.0}`` (retries on 5xx/429/connection
    errors, none on other 4xx: done by the client), and ``local_blockstore_root``: the server's
    ``blockstore.local.path`` as the GC workers see it, required for ``local://`` namespaces
    (lakeFS keeps ``local://repo1`` at ``<blockstore.local.path>/repo1``). An empty extra field
    (``""`` or null, as the connection form saves one left blank) means not set.

    The connection form's labels, help texts and extra fields are provider metadata
    (``lakefs_gc_airflow.get_provider_info``); :meth:`test_connection` backs its Test button.
    """

    conn_name_attr = "lakefs_conn_id"
    default_conn_name = "lakefs_default"
    conn_type = "lakefs"
    hook_name = "lakeFS"

    _RETRY_EXTRAS = {"max_retries": int, "backoff_base": float, "backoff_max": float, "connect_timeout": float}

    def __init__(self, lakefs_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lakefs_conn_id = lakefs_conn_id
        self._client: LakeFSClient | None = None
        self._endpoint: str | None = None
        self._conn = None

    def _connection(self):
        """The Airflow connection, read once per hook (prepare_run asks it for the client, the
        blockstore root and the retry extras)."""
        if self._conn is None:
            self._conn = self.get_connection(self.lakefs_conn_id)
        return self._conn

    def _settings(self) -> tuple[str, str, str, dict[str, Any]]:
        conn = self._connection()
        if not conn.login or not conn.password:
            raise ValueError(f"lakeFS connection {self.lakefs_conn_id!r} needs login (access key id) "
                             "and password (secret access key)")
        mask_secret(conn.password)
        extra = conn.extra_dejson or {}
        endpoint = lakefs_endpoint(conn.host, conn.port, conn.schema, extra.get("scheme"))
        kwargs: dict[str, Any] = {}
        for key, typ in self._RETRY_EXTRAS.items():
            if extra.get(key) not in (None, ""):
                try:
                    kwargs[key] = typ(extra[key])
                except (TypeError, ValueError):
                    raise ValueError(f"lakeFS connection {self.lakefs_conn_id!r}: extra {key!r} must be "
                                     f"a {typ.__name__}, got {extra[key]!r}") from None
        return endpoint, conn.login, conn.password, kwargs

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
        """The connection's retry extras (``max_retries``, ``backoff_base``, ``backoff_max``,
        ``connect_timeout``) that are set."""
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
            self._client = LakeFSClient(endpoint, access, secret, connection=f"lakeFS connection "
                                        f"{self.lakefs_conn_id!r}", **kwargs)
        return self._client

    def test_connection(self) -> tuple[bool, str]:
        """The connection form's Test button (Airflow's ``[core] test_connection = Enabled``): one
        authenticated call to lakeFS's API (``GET /config``), no retries, a 10 s timeout; the answer
        says what failed (no endpoint or keys, endpoint unreachable, keys refused, not a lakeFS)."""
        from lakefs_gc.lakefs.client import LakeFSClient, LakeFSUnreachable
        from lakefs_sdk.exceptions import ApiException

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
            if isinstance(e, LakeFSUnreachable) and e.__context__ is not None:
                e = e.__context__  # the client's one line is for tasks; the button names the cause itself
            return False, (f"cannot reach lakeFS at {endpoint}: {_reason(e)}. Check the lakeFS endpoint "
                           f"(scheme, host, port) and that lakeFS is running and reachable from Airflow")
        finally:
            client.close()
        version = getattr(cfg.version_config, "version", None) or "(version not given)"
        stores = [s.blockstore_type for s in (cfg.storage_config_list or []) if s is not None] or \
            ([cfg.storage_config.blockstore_type] if cfg.storage_config is not None else [])
        message = f"lakeFS {version} at {endpoint} accepted the keys (blockstore: {', '.join(stores) or 'unknown'})"
        if "local" in stores and not self.local_blockstore_root():
            message += "; set Local blockstore root to collect its local:// repositories"
        return True, message


def _reason(exc: BaseException) -> str:
    """The cause of a failed request in one line (urllib3 wraps it: MaxRetryError(reason=...))."""
    cause = getattr(exc, "reason", None) or exc
    text = str(cause)
    for sep in (">: ", "): "):  # "<...HTTPConnection object at 0x...>: Failed..." / "HTTPConnection(host=..): Failed..."
        if sep in text:
            text = text.split(sep, 1)[1]
            break
    return f"{type(cause).__name__}: {text}"


def _api_failure(endpoint: str, exc) -> str:
    """What lakeFS's answer to ``GET /config`` means for the connection."""
    if exc.status == 401:
        return (f"lakeFS at {endpoint} refused the keys (HTTP 401): check Access key ID and Secret access key")
    if exc.status == 403:
        return (f"lakeFS at {endpoint} accepted the keys but their user may not read the server config "
                f"(HTTP 403): the GC needs fs:ReadConfig among its permissions (see the README)")
    if exc.status in (404, 405, 501):
        return (f"{endpoint}/config answered HTTP {exc.status} {exc.reason or ''}: no lakeFS API at this address? "
                f"Give the lakeFS server's URL, e.g. http://lakefs:8000 (/api/v1 is appended when missing)")
    return f"lakeFS at {endpoint} answered HTTP {exc.status} {exc.reason or ''} to GET /config".rstrip()


def storage_options(aws_conn_id: str | None) -> S3Options | None:
    """The Airflow ``aws`` connection as the GC's S3 settings: static keys (login/password or
    extra), ``endpoint_url`` (extra, or ``service_config.s3.endpoint_url``) and ``region_name``.

    None when no connection id is configured or the connection does not exist: the caller decides
    whether that is an error (it is for an ``s3://`` namespace). Role assumption is not resolved
    here: use static keys for S3-compatible servers, or leave the keys empty and let the Spark side
    use its own credential chain.
    """
    if not aws_conn_id:
        return None
    from airflow.providers.amazon.aws.utils.connection_wrapper import AwsConnectionWrapper
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        conn = BaseHook.get_connection(aws_conn_id)
    except AirflowNotFoundException:
        return None
    w = AwsConnectionWrapper(conn=conn)
    for secret in (w.aws_secret_access_key, w.aws_session_token):
        if secret:
            mask_secret(secret)
    return S3Options(endpoint_url=w.get_service_endpoint_url("s3"), region=w.region_name or DEFAULT_REGION,
                     access_key_id=w.aws_access_key_id, secret_access_key=w.aws_secret_access_key,
                     session_token=w.aws_session_token)
