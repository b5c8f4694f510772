"""
lakeFS itself, started for tests, benchmarks and the demo on 127.0.0.1, stopped by PID.

lakeFS 1.84.0, built by ``scripts/setup.sh`` from the Go module proxy, with any of its four
blockstores.

Each server gets its own working directory (lakeFS writes state into its cwd): its config file
(``lakefs.yaml``), the local KV store (``metadata/``), the committed cache (``cache/``), the
local blockstore (``block/``, lakeFS's ``blockstore.local.path``), its temporary files (``tmp/``,
its ``TMPDIR``: an import keeps a scratch KV store there) and its log (``lakefs.log``).
Every outbound call lakeFS would make is off or points at a closed port on 127.0.0.1: usage
stats (``stats.enabled: false``), the latest-version check (``security.check_latest_version``),
the audit check (it runs once at start whatever the interval: ``security.audit_check_url`` is a
closed local port), the e-mail subscription. The admin user and its keys are created through
``setup_lakefs``, as lakeFS's own first-run flow does.

Blockstores (where each points, from lakeFS 1.84's ``pkg/config/config.go`` and
``pkg/block/factory/build.go``):

* ``local``: ``blockstore.local.path`` = ``<workdir>/block``, imports allowed from under it;
* ``s3``: ``blockstore.s3.endpoint`` at a moto server, path style, static credentials;
* ``azure``: ``blockstore.azure.test_endpoint_url`` at Azurite's account URL (lakeFS's own
  adapter tests do this), ``domain: azurite.test`` (``BlobEndpointTestDomain``), so namespaces are
  ``https://devstoreaccount1.azurite.test/<container>/<path>``;
* ``gs``: ``STORAGE_EMULATOR_HOST`` at fake-gcs-server (the Go client then sends no credentials).

    python -m lakefs_sandbox.real_lakefs --workdir var/lakefs  # local blockstore, until Ctrl-C
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lakefs_sandbox.emulator.launcher import ROOT, free_port, start_server, stop_group

VERSION = "1.84.0"
BINARY_ENV = "LAKEFS_GC_LAKEFS_BINARY"
ADMIN = "admin"
CLOSED = "http://127.0.0.1:1"  # nothing listens on port 1: an outbound call fails at once, locally


def lakefs_binary() -> str:
    """Return the lakeFS server binary: ``$LAKEFS_GC_LAKEFS_BINARY``, else ``.tools/bin/lakefs`` (setup)."""
    found = os.environ.get(BINARY_ENV) or str(ROOT / ".tools" / "bin" / "lakefs")
    if not os.path.exists(found):
        raise FileNotFoundError(
            f"lakeFS {VERSION} not found at {found} (nor {BINARY_ENV}): run scripts/setup.sh, "
            f"which builds it once per machine"
        )
    return found


def new_keys() -> tuple[str, str]:
    """Return an access key id and secret in lakeFS's own shapes."""
    return "AKIAJ" + secrets.token_hex(8).upper()[:15], secrets.token_urlsafe(30)[:40]


@dataclass
class RealLakeFS:
    """
    A running lakeFS server, with the same attributes as the tests' emulator handle.

    The same scenarios run on both (``namespace``, ``client``, ``local_root``, ``blockstore_type``).
    """

    url: str
    access_key: str
    secret_key: str
    proc: subprocess.Popen
    workdir: Path
    blockstore_type: str  # local | s3 | azure | gs
    # None, or the MotoServer-like or CloudServer the blockstore is on: duck-typed, the attributes read
    # depend on blockstore_type (s3: endpoint_url, keys, region; azure/gs: namespace, create)
    store: Any = None

    def __repr__(self) -> str:  # never print keys
        return f"RealLakeFS({self.url!r}, {self.blockstore_type})"

    @property
    def real(self) -> bool:
        return True

    @property
    def api_url(self) -> str:
        return self.url + "/api/v1"

    @property
    def root(self) -> Path:
        return self.workdir / "block"

    @property
    def local_root(self) -> str | None:
        """blockstore.local.path (the GC's lakeFS connection's ``local_blockstore_root``)."""
        return str(self.root) if self.blockstore_type == "local" else None

    @property
    def cloud(self):
        return self.store if self.blockstore_type in ("azure", "gs") else None

    def namespace(self, name: str, bucket: str = "") -> str:
        """
        Return a fresh storage namespace of this server's blockstore.

        A bucket or container is created on the cloud stand-ins; an S3 bucket must exist.
        """
        if self.blockstore_type == "s3":
            return f"s3://{bucket}/{name}"
        if self.blockstore_type in ("azure", "gs"):
            return self.store.namespace(self.store.create(bucket or "lakefs"), name)
        return f"local://ns/{name}"

    def client(self):
        import lakefs_sdk
        from lakefs_sdk.client import LakeFSClient

        return LakeFSClient(
            lakefs_sdk.Configuration(host=self.api_url, username=self.access_key, password=self.secret_key)
        )

    def target(self, namespace_root: str):
        """Return this server as the conformance target (``lakefs_sandbox.target``)."""
        from lakefs_sandbox.target import LakeFSTarget

        s3 = {}
        if self.blockstore_type == "s3":
            s3 = dict(
                s3_endpoint=self.store.endpoint_url,
                s3_access_key=self.store.access_key,
                s3_secret_key=self.store.secret_key,
                s3_region=self.store.region,
            )
        return LakeFSTarget(
            self.url, self.access_key, self.secret_key, namespace_root, local_root=self.local_root, **s3
        )

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return (self.workdir / "lakefs.log").read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self, timeout: float = 15) -> None:
        stop_group(self.proc, timeout)


def config(workdir: Path, port: int, blockstore: str = "local", store=None) -> dict:
    """LakeFS's configuration for a server in ``workdir`` on 127.0.0.1:``port``."""
    block: dict = {"type": blockstore, "signing": {"secret_key": secrets.token_hex(16)}}
    if blockstore == "local":
        root = workdir / "block"
        block["local"] = {"path": str(root), "import_enabled": True, "allowed_external_prefixes": [str(root)]}
    elif blockstore == "s3":
        block["s3"] = {
            "endpoint": store.endpoint_url,
            "force_path_style": True,
            "region": store.region,
            "discover_bucket_region": False,
            "max_retries": 3,
            "credentials": {"access_key_id": store.access_key, "secret_access_key": store.secret_key},
        }
    elif blockstore == "azure":
        from lakefs_sandbox.cloud_servers import AZURITE_ACCOUNT, AZURITE_KEY

        block["azure"] = {
            "storage_account": AZURITE_ACCOUNT,
            "storage_access_key": AZURITE_KEY,
            "test_endpoint_url": store.account_url,
            "domain": "azurite.test",
        }
    elif blockstore == "gs":
        block["gs"] = {}
    else:
        raise ValueError(f"unknown blockstore {blockstore!r}: local, s3, azure or gs")
    return {
        "listen_address": f"127.0.0.1:{port}",
        "logging": {"format": "text", "level": "WARN", "output": "-"},
        "database": {"type": "local", "local": {"path": str(workdir / "metadata"), "sync_writes": False}},
        "auth": {"encrypt": {"secret_key": secrets.token_hex(16)}},
        "blockstore": block,
        "committed": {"local_cache": {"dir": str(workdir / "cache"), "size_bytes": 256 * 1024 * 1024}},
        "stats": {"enabled": False, "address": CLOSED},
        "email_subscription": {"enabled": False},
        "security": {
            "check_latest_version": False,
            "audit_check_url": CLOSED + "/audit",
            "audit_check_interval": "8760h",
        },
        "gateways": {"s3": {"domain_name": "s3.local.lakefs.io"}},
    }


def _setup_admin(url: str, access_key: str, secret_key: str, timeout: float, existing_ok: bool = False) -> bool:
    """
    Set up the admin user with the given keys: ``POST /setup_lakefs`` (lakeFS's first-run flow).

    True when it set lakeFS up; with ``existing_ok``, a lakeFS already set up (in a working
    directory that was used before: it answers 409 "lakeFS already initialized") is accepted when
    the given keys sign in to it (then False); keys it refuses are an error saying so.
    """
    body = json.dumps(
        {"username": ADMIN, "key": {"access_key_id": access_key, "secret_access_key": secret_key}}
    ).encode()
    req = urllib.request.Request(
        url + "/api/v1/setup_lakefs", data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                r.read()
                return True
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")[:300]
            if e.code >= 500 and time.monotonic() < deadline:  # the KV store still opening
                time.sleep(0.2)
                continue
            if e.code == 409 and existing_ok:
                break
            raise RuntimeError(f"lakeFS setup_lakefs answered {e.code}: {detail}") from None
    import base64

    auth = base64.b64encode(f"{access_key}:{secret_key}".encode()).decode()
    check = urllib.request.Request(url + "/api/v1/user", headers={"Authorization": "Basic " + auth})
    try:
        with urllib.request.urlopen(check, timeout=30) as r:
            r.read()
            return False
    except urllib.error.HTTPError as e:
        raise RuntimeError(
            f"lakeFS is already set up and refuses the given keys (GET /api/v1/user answered "
            f"{e.code}): they are not the keys it was set up with"
        ) from None


def start(
    workdir: Path,
    blockstore: str = "local",
    store=None,
    timeout: float = 60.0,
    access_key: str | None = None,
    secret_key: str | None = None,
    cls: type = RealLakeFS,
    port: int | None = None,
) -> RealLakeFS:
    """
    Start lakeFS on a free 127.0.0.1 port in ``workdir`` (created), its admin set up.

    ``store``: the moto server (``s3``) or the Azurite / fake-gcs-server :class:`CloudServer`
    (``azure``/``gs``); ``cls``: the handle's class (a subclass of :class:`RealLakeFS`). With
    ``access_key`` and ``secret_key`` given, ``workdir`` may hold the state of an earlier start: its
    ``lakefs.yaml``'s secrets are kept (the stored keys are encrypted with them) and the admin set up
    then is reused when those keys sign in; ``port`` (default: a free one) lets a restart keep its
    URL (:func:`restart`).
    """
    # no types-PyYAML in the dev requirements; mypy reports the missing stubs at one import of yaml
    # only, this one or another module's, hence unused-ignore too
    import yaml  # type: ignore[import-untyped, unused-ignore]

    binary = lakefs_binary()
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    cfg = workdir / "lakefs.yaml"
    given = access_key is not None and secret_key is not None
    settings = config(workdir, port, blockstore, store)
    if given and cfg.exists():  # a restart on its state: the keys lakeFS stored are encrypted with its secrets
        before = yaml.safe_load(cfg.read_text()) or {}
        settings["auth"]["encrypt"] = before.get("auth", {}).get("encrypt") or settings["auth"]["encrypt"]
        settings["blockstore"]["signing"] = (
            before.get("blockstore", {}).get("signing") or settings["blockstore"]["signing"]
        )
    fd = os.open(cfg, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # its secrets: never readable by others
    with os.fdopen(fd, "w") as f:
        f.write(yaml.safe_dump(settings, sort_keys=False))
    cfg.chmod(0o600)  # a file of an earlier start keeps its mode through O_TRUNC
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AWS_", "LAKEFS_", "AZURE_", "GOOGLE_", "STORAGE_EMULATOR"))
    }
    (workdir / "tmp").mkdir(exist_ok=True)  # lakeFS's imports keep a scratch KV store in TMPDIR
    env.update(
        HOME=str(workdir),
        TMPDIR=str(workdir / "tmp"),
        AWS_EC2_METADATA_DISABLED="true",
        AWS_REQUEST_CHECKSUM_CALCULATION="when_required",
        AWS_RESPONSE_CHECKSUM_VALIDATION="when_required",
        DO_NOT_TRACK="1",
    )
    if blockstore == "gs":
        env["STORAGE_EMULATOR_HOST"] = store.endpoint_url.split("://", 1)[-1]
    url = f"http://127.0.0.1:{port}"
    proc = start_server(
        [binary, "run", "--config", str(cfg)],
        workdir / "lakefs.log",
        url + "/_health",
        env,
        timeout,
        cwd=workdir,
        inherit_env=False,
    )
    try:
        if access_key is None or secret_key is None:  # not given
            access_key, secret_key = new_keys()
        _setup_admin(url, access_key, secret_key, timeout, existing_ok=given)
    except BaseException:
        stop_group(proc)
        raise
    return cls(url, access_key, secret_key, proc, workdir, blockstore, store)


def restart(server: RealLakeFS, timeout: float = 60.0) -> RealLakeFS:
    """
    Restart the same lakeFS: stopped by its PID, started on its state, keys and port.

    Its URL and every client of it stay valid.
    """
    from urllib.parse import urlsplit

    server.stop()
    return start(
        server.workdir,
        server.blockstore_type,
        server.store,
        timeout,
        server.access_key,
        server.secret_key,
        type(server),
        port=urlsplit(server.url).port,
    )


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m lakefs_sandbox.real_lakefs",
        description=f"lakeFS {VERSION} (local blockstore) on 127.0.0.1 until Ctrl-C",
    )
    p.add_argument("--workdir", default="var/lakefs", help="its working directory (state, block/, log)")
    a = p.parse_args(argv)
    server = start(Path(a.workdir))
    print(
        f"lakeFS {VERSION} at {server.url} (blockstore.local.path {server.local_root}); "
        f"keys in {Path(a.workdir) / 'keys.json'}",
        flush=True,
    )
    fd = os.open(
        Path(a.workdir) / "keys.json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600
    )  # never readable by others
    with os.fdopen(fd, "w") as f:
        json.dump({"access_key_id": server.access_key, "secret_access_key": server.secret_key}, f)
    try:
        server.proc.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
