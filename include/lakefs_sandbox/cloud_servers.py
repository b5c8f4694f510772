"""
Local stand-ins for the clouds the GC talks HTTP to: Azurite, fake-gcs-server and SeaweedFS.

Azurite (Azure Blob) and fake-gcs-server (Google Cloud Storage) are installed by
``scripts/setup.sh`` under ``.tools/``; SeaweedFS (S3, for ``python -m bench reference``: the tests'
S3 is moto) is built by ``scripts/seaweedfs.sh``. Each is started on free 127.0.0.1 ports in its
own session and stopped by PID (:meth:`CloudServer.stop`).

Azurite runs with ``--skipApiVersionCheck``: azure-storage-blob 12.31 sends an API version newer
than Azurite 3.37's, which Azurite otherwise answers with 400; the client is left as users run it.
fake-gcs-server is used rather than the pure-Python gcp-storage-emulator, which serves one
connection at a time with a listen backlog of 5 (parallel deletes time out against it).
SeaweedFS (master, volume server, filer and S3 gateway in one process, no identities configured:
any keys are accepted) lists a prefix by seeking its filer's store: moto and gofakes3 scan every key
of the bucket for each listing, which at 100,000 objects made the S3 server, not the GCs, the
bottleneck (lakeFS's GC lists a prefix for each file it commits).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from lakefs_sandbox.emulator.launcher import ROOT, free_port, start_server, stop_group

TOOLS = ROOT / ".tools"
AZURITE_ACCOUNT = "devstoreaccount1"  # Azurite's well-known development account and key (public)
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def _tool(env: str, path: Path, what: str) -> str:
    found = os.environ.get(env) or (str(path) if path.exists() else shutil.which(path.name))
    if not found:
        raise FileNotFoundError(f"{what} not found at {path} (nor {env}, nor on PATH): run scripts/setup.sh")
    return found


def azurite_binary() -> str:
    return _tool("LAKEFS_GC_AZURITE", TOOLS / "azurite" / "node_modules" / ".bin" / "azurite-blob", "Azurite")


def fake_gcs_binary() -> str:
    return _tool("LAKEFS_GC_FAKE_GCS_SERVER", TOOLS / "bin" / "fake-gcs-server", "fake-gcs-server")


def seaweedfs_binary() -> str:
    """
    Return SeaweedFS's ``weed``: ``$LAKEFS_GC_SEAWEEDFS``, ``.tools/bin/weed``, else built now.

    Built by ``scripts/seaweedfs.sh`` (once per machine, about 10 minutes).
    """
    try:
        return _tool("LAKEFS_GC_SEAWEEDFS", TOOLS / "bin" / "weed", "SeaweedFS (weed)")
    except FileNotFoundError:
        out = subprocess.run(
            ["bash", str(ROOT / "scripts" / "seaweedfs.sh")],
            check=True,
            stdout=subprocess.PIPE,
            text=True,
            timeout=3600,
        )
        return out.stdout.strip().splitlines()[-1]


@dataclass
class CloudServer:
    """A cloud stand-in running on 127.0.0.1 (Azurite, fake-gcs-server or SeaweedFS), stopped by PID."""

    kind: str  # "azure" | "gcs" | "s3"
    endpoint_url: str
    proc: subprocess.Popen
    made: set[str] = field(default_factory=set)

    # --- Azure ---
    @property
    def account_url(self) -> str:
        return f"{self.endpoint_url}/{AZURITE_ACCOUNT}"

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
            f"BlobEndpoint={self.account_url};"
        )

    # --- S3 (SeaweedFS without identities: any keys do; the bench makes its own client and bucket) ---
    access_key = "AKIAIOSFOLSEAWEEDFS"
    secret_key = "seaweedfs/any/key"

    def options(self):
        """Return the GC's storage settings for this server (account key on Azurite, anonymous on GCS)."""
        from lakefs_gc.storage import AzureOptions, GCSOptions

        if self.kind == "azure":
            return AzureOptions(account_url=self.account_url, account_name=AZURITE_ACCOUNT, account_key=AZURITE_KEY)
        return GCSOptions(endpoint_url=self.endpoint_url, project="test", anonymous=True)

    def namespace(self, container: str, path: str) -> str:
        """Return a lakeFS namespace on this server (Azure: lakeFS's test domain ``azurite.test``)."""
        if self.kind == "azure":
            return f"https://{AZURITE_ACCOUNT}.azurite.test/{container}/{path}".rstrip("/")
        return f"gs://{container}/{path}".rstrip("/")

    def create(self, container: str) -> str:
        """Create a container (Azure) or bucket (GCS) once; its name."""
        if container in self.made:
            return container
        if self.kind == "azure":
            from azure.core.exceptions import ResourceExistsError

            from lakefs_gc.storage.azure import make_service_client

            with contextlib.suppress(ResourceExistsError):
                make_service_client(self.options()).create_container(container)
        else:
            from google.api_core.exceptions import Conflict

            from lakefs_gc.storage.gcs import make_gcs_client

            with contextlib.suppress(Conflict):
                make_gcs_client(self.options()).create_bucket(container)
        self.made.add(container)
        return container

    def stop(self, timeout: float = 15) -> None:
        stop_group(self.proc, timeout)


def start_azurite(workdir: Path, timeout: float = 60.0) -> CloudServer:
    """Azurite's blob service in memory on a free port."""
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    cmd = [
        azurite_binary(),
        "--blobHost",
        "127.0.0.1",
        "--blobPort",
        str(port),
        "--inMemoryPersistence",
        "--skipApiVersionCheck",
        "--silent",
        "--disableTelemetry",
    ]
    url = f"http://127.0.0.1:{port}"
    proc = start_server(cmd, workdir / "azurite.log", f"{url}/{AZURITE_ACCOUNT}?comp=list", timeout=timeout)
    return CloudServer("azure", url, proc)


def start_fake_gcs(workdir: Path, timeout: float = 60.0) -> CloudServer:
    """fake-gcs-server in memory on a free port, plain HTTP."""
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    url = f"http://127.0.0.1:{port}"
    cmd = [
        fake_gcs_binary(),
        "-backend",
        "memory",
        "-scheme",
        "http",
        "-host",
        "127.0.0.1",
        "-port",
        str(port),
        "-public-host",
        f"127.0.0.1:{port}",
        "-external-url",
        url,
        "-log-level",
        "warn",
    ]
    proc = start_server(cmd, workdir / "fake-gcs.log", f"{url}/storage/v1/b", timeout=timeout)
    return CloudServer("gcs", url, proc)


def start_seaweedfs(workdir: Path, timeout: float = 120.0) -> CloudServer:
    """
    Start SeaweedFS on free 127.0.0.1 ports, its data under ``workdir``.

    ``weed server -s3``: master, volume server, filer, S3 gateway.
    """
    binary = seaweedfs_binary()
    data = workdir / "seaweedfs"
    data.mkdir(parents=True, exist_ok=True)
    ports = {
        f"-{name}": free_port()
        for name in (
            "master.port",
            "master.port.grpc",
            "volume.port",
            "volume.port.grpc",
            "filer.port",
            "filer.port.grpc",
            "s3.port",
            "s3.port.grpc",
        )
    }
    cmd = [
        binary,
        "server",
        f"-dir={data}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        "-s3",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-master.volumeSizeLimitMB=1024",
        "-volume.max=100",
        *(f"{flag}={port}" for flag, port in ports.items()),
    ]
    url = f"http://127.0.0.1:{ports['-s3.port']}"
    proc = start_server(cmd, workdir / "seaweedfs.log", f"{url}/", timeout=timeout)
    return CloudServer("s3", url, proc)
