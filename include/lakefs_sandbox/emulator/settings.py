"""The emulator's settings (``python -m lakefs_sandbox.emulator``'s flags)."""

from __future__ import annotations

from dataclasses import dataclass, field

from lakefs_gc.storage import AzureOptions, GCSOptions, S3Options, parse_namespace


@dataclass
class Settings:
    """Emulator knobs (command-line flags of ``python -m lakefs_sandbox.emulator``)."""

    access_key: str = "AKIAIOSFOLEMULATOR"
    secret_key: str = "emulator-secret"
    state_dir: str | None = None
    blockstore_type: str = "local"  # "local", "s3", "azure" or "gs"
    local_path: str | None = None  # blockstore.local.path: local://<ns> lives at <local_path>/<ns>
    s3: S3Options = field(default_factory=S3Options)
    azure: AzureOptions | None = None  # the account the azure blockstore writes to (Azurite in tests)
    gcs: GCSOptions | None = None  # the endpoint the gs blockstore writes to (fake-gcs-server in tests)

    def options(self, uri: str):
        """Return the storage settings for a namespace or address of this blockstore's kind."""
        scheme = parse_namespace(uri, self.local_path).scheme
        return {"s3": self.s3, "azure": self.azure, "gs": self.gcs}.get(scheme)

    grace_period: int = 86400  # seconds: link-address validity and /config/garbage-collection
    slice_size: int = 50_000  # data partition roll-over by count (DefaultDataPartitionSize)
    slice_interval: int = 3600  # ... and by time, seconds (DefaultDataInterval)
    min_range_size: int = 0
    max_range_size: int = 20 << 20
    range_raggedness: int = 50_000
    uncommitted_page_size: int = 100_000  # rows per prepare_uncommited call
    prepare_commits_delay: float = 0.0  # seconds an async prepare task reports completed=false
    clock_offset: float | None = None  # seconds added to the real clock; None keeps the persisted one
