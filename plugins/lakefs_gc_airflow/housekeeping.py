"""
The operators of the DAGs beside the GC runs: the restore DAG's and the discovery refresh's.

Thin shells, as the GC's own operators (:mod:`lakefs_gc_airflow.operators`, which re-exports them):
``__init__`` stores arguments, ``execute`` builds the hooks and calls the package.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from lakefs_gc.words import plural
from lakefs_gc_airflow.hooks import LakeFSHook

if TYPE_CHECKING:
    from airflow.sdk import Context

    from lakefs_gc.config import GCConfig
    from lakefs_gc.config.discovered import InventoryRecord
    from lakefs_gc.config.model import DiscoverySettings, RepoConfig
    from lakefs_gc.listing.orphans import Orphan
    from lakefs_gc.spark.runtime import StorageRef
    from lakefs_gc.storage.base import Storage


class RepositoryConnections(TypedDict):
    """A configured repository's connections, as the restore task reads them."""

    lakefs_conn_id: str
    storage_conn_id: str | None  # None: none set (a local:// namespace needs none)


class RestoreOperator(BaseOperator):
    """
    Bring back what one GC run deleted (``lakefs_gc.sweeping.restore``).

    For a person who triggers the restore DAG with the repository and the run's id (a mark id or
    the GC DAG's run id), optionally only some keys, or as a dry run. A repository the GC config has
    no good entry for is restored with the connections the person names (Params ``lakefs_conn_id``,
    ``storage_conn_id``); without them the task fails saying what is wrong with the config. The
    restore's report (every key's outcome) goes beside the run's; the task fails, after writing it,
    when a key could not be restored (no version kept, retention passed, written again since, ...),
    naming how many and why. A key an earlier restore brought back is not a failure.

    :param repositories: every repository with a good entry, with its connections:
        ``{repository: {"lakefs_conn_id": ..., "storage_conn_id": ...}}``.
    :param config_note: what the GC config holds, for the refusal of a repository it lacks.
    """

    template_fields: Sequence[str] = ("repositories",)
    ui_color = "#fde9c9"

    def __init__(self, *, repositories: dict[str, RepositoryConnections], config_note: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.repositories = repositories  # repository -> {"lakefs_conn_id": ..., "storage_conn_id": ...}
        self.config_note = config_note

    def _connections(self, repository: str, params: Any) -> RepositoryConnections:
        """Return the repository's connections: its entry's, or those the person named (Params)."""
        by_hand = str(params.get("lakefs_conn_id") or "").strip()
        storage = str(params.get("storage_conn_id") or "").strip() or None
        entry = self.repositories.get(repository)
        if by_hand:
            return {
                "lakefs_conn_id": by_hand,
                "storage_conn_id": storage or (entry["storage_conn_id"] if entry else None),
            }
        if entry is None:
            raise AirflowFailException(
                f"repository {repository!r} has no good entry in the GC config"
                + (f" ({self.config_note})" if self.config_note else "")
                + ": fix the file, or give lakefs_conn_id (and storage_conn_id) to restore it by hand"
            )
        return entry

    def execute(self, context: Context) -> dict[str, Any]:
        from lakefs_gc.errors import LakeFSGCError
        from lakefs_gc.sweeping.restore import NOT_DONE, restore_run
        from lakefs_gc_airflow.task_io import repository_storage

        params = context.get("params") or {}
        repository = str(params.get("repository") or "").strip()
        run = str(params.get("run_id") or "").strip()
        if not repository:
            raise AirflowFailException(
                "give repository: the lakeFS repository of the run to undo"
                + (f" ({self.config_note})" if self.config_note else "")
            )
        conns = self._connections(repository, params)
        if not run:
            raise AirflowFailException(
                "give run_id: the mark id or the GC DAG's run id of the run to undo "
                "(the GC page and `lakefs-gc report NAMESPACE` list them)"
            )
        keys = [k for k in (params.get("keys") or []) if str(k).strip()] or None
        try:
            namespace, storage = repository_storage(repository, conns["lakefs_conn_id"], conns["storage_conn_id"])
            report = restore_run(
                storage, run, keys=keys, dry_run=bool(params.get("dry_run")), restore_id=context["run_id"]
            )
        except LakeFSGCError as e:
            raise AirflowFailException(f"{e}; nothing was restored") from e
        for key, outcome, detail in report.rows[:1000]:
            self.log.info("%s  %s: %s", key, outcome, detail)
        if len(report.rows) > 1000:
            self.log.info("(%d more in the report)", len(report.rows) - 1000)
        counts = report.counts_text()
        self.log.info(
            "%srestore of %s (mark %s) on %s: %s; report %s",
            "dry run: " if report.dry_run else "",
            run,
            report.mark_id,
            namespace,
            counts,
            report.report_uri or "none (a dry run writes nothing)",
        )
        not_done = sum(n for o, n in report.counts.items() if o in NOT_DONE)
        if not_done:
            where = (
                f"every key's outcome is in {report.report_uri.rsplit('/', 1)[0]}/outcomes.parquet"
                if report.report_uri
                else "every key's outcome is in this task's log (a dry run writes no report)"
            )
            raise AirflowFailException(
                f"{not_done:,} of {plural(len(report.rows), 'key')} could not be restored ({counts}); {where}"
            )
        return {**report.summary(), "report_uri": report.report_uri, "namespace": namespace}


# ----------------------------------------------------------------------------------------------
# A fleet: the discovery refresh (the DAG lakefs_gc_discover's one task)


class DiscoverRepositoriesOperator(BaseOperator):
    """
    List each ``discover`` source's lakeFS and record its repositories where the DAG files read them.

    ``lakefs_gc.config.discovered.refresh``: every repository id per connection, the matched ones'
    newest GC run sizes (the pool's priorities), and the repositories gone since the last refresh.
    A lakeFS that cannot be listed fails the task (retried) and leaves the record as it was: no
    DAG is dropped because lakeFS did not answer. Then, per inventory location the entries read
    (``listing.source: inventory``), the newest inventory there and for which repositories it
    verifies (``lakefs_gc.listing.fleet``), for the GC page; the runs verify it themselves all the same.
    And each repository's storage namespace: a namespace whose repository is gone from lakeFS is
    orphaned (``lakefs_gc.listing.orphans``), measured by a bounded listing, logged and returned
    (``orphaned_namespaces``) for ``lakefs-gc reclaim-namespace``.

    :param config_path: the repositories file (None: ``$LAKEFS_GC_CONFIG``).
    """

    template_fields: Sequence[str] = ("config_path",)
    ui_color = "#e3f1d4"

    def __init__(self, *, config_path: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config_path = config_path  # None: $LAKEFS_GC_CONFIG

    def execute(self, context: Context) -> dict[str, Any]:
        from lakefs_gc.config import load_config
        from lakefs_gc.config.discovered import record_inventories, record_sizes, refresh
        from lakefs_gc.listing.orphans import Listed
        from lakefs_gc.report.marks import newest_listed
        from lakefs_gc_airflow.task_io import repository_storage

        cfg = load_config(self.config_path, strict=False)
        discovery = cfg.discovery
        if discovery is None:
            raise AirflowFailException(f"{cfg.path} has no 'discover' section: nothing to refresh")

        def list_repositories(conn_id: str) -> Listed:
            client = LakeFSHook(lakefs_conn_id=conn_id).get_conn()
            try:  # every page, or the refresh fails: no namespace is orphaned by a partial listing
                return Listed(client.repository_namespaces(), client.endpoint)
            finally:
                client.close()

        found, changes = refresh(discovery, list_repositories)
        for line in changes:
            self.log.info("%s", line)
        cfg = load_config(self.config_path, strict=False)  # the entries as the DAG files now build them
        sizes: dict[tuple[str, str], int] = {}
        for repo in cfg.repositories:
            if not repo.discovered:
                continue
            try:
                _, storage = repository_storage(repo.repository, repo.lakefs_conn_id, repo.storage_conn_id)
                n = newest_listed(storage)
            except Exception as e:  # a priority is never worth a failed refresh
                self.log.warning(
                    "%s: the newest run's size cannot be read (%s); its priority stays", repo.repository, e
                )
                continue
            if n is not None:
                sizes[(repo.lakefs_conn_id, repo.repository)] = n
        record_sizes(discovery, sizes)
        inventories = _check_inventories(cfg.repositories)
        record_inventories(discovery, inventories)
        for rec in inventories:
            (self.log.info if rec.verified else self.log.warning)("%s", rec.line())
        orphans = _measure_orphans(cfg, discovery)
        for o in orphans:
            self.log.warning("%s", o.line())
        matched = sorted(r.repository for r in cfg.repositories if r.discovered)
        self.log.info(
            "%d repositor%s matched: %s; recorded in %s",
            len(matched),
            "y" if len(matched) == 1 else "ies",
            ", ".join(matched) or "none",
            discovery.state_file,
        )
        for line in cfg.entry_problems:
            self.log.warning("bad entry (its DAG is not built): %s", line)
        return {
            "matched": matched,
            "removed": [r.repository for r in cfg.removed],
            "changes": changes,
            "state_file": str(discovery.state_file),
            "refreshed_at": found.refreshed_at,
            "inventories": {r.location: r.inventory_id if r.verified else None for r in inventories},
            "orphaned_namespaces": [  # what each is and its size (at most 100); the state file has them all
                o.brief() for o in orphans[:100]
            ],
        }


def _measure_orphans(cfg: GCConfig, discovery: DiscoverySettings) -> list[Orphan]:
    """Measure the orphaned namespaces the refresh recorded (bounded listings), record and return them."""
    from datetime import UTC, datetime

    from lakefs_gc.config.discovered import read_discovered, record_orphans
    from lakefs_gc.credentials import DEFAULT_STORAGE_CONN_IDS
    from lakefs_gc.listing.orphans import measure_orphans
    from lakefs_gc.storage import open_storage
    from lakefs_gc_airflow.task_io import storage_settings

    found = read_discovered(discovery.state_file)
    if not found.orphans:
        return []

    def open_namespace(o: Orphan) -> Storage:
        # the storage connection of an entry of the same lakeFS (the repository's own entry is gone), else
        # the Airflow default of the namespace's kind (aws_default, wasb_default, google_cloud_default)
        conn = next((r.storage_conn_id for r in cfg.repositories if r.lakefs_conn_id == o.lakefs_conn_id), None)
        conn = conn or DEFAULT_STORAGE_CONN_IDS.get(o.namespace.partition("://")[0])
        local_root = LakeFSHook(lakefs_conn_id=o.lakefs_conn_id).local_blockstore_root()
        return open_storage(o.namespace, storage_settings(o.namespace, local_root, conn), local_root)

    return record_orphans(discovery, measure_orphans(found.orphans, open_namespace, datetime.now(UTC)))


def _check_inventories(repositories: Sequence[RepoConfig]) -> list[InventoryRecord]:
    """Check, per inventory location the entries read, which inventory is newest there and for whom it verifies."""
    from datetime import UTC, datetime, timedelta

    from lakefs_gc.listing.fleet import FleetReader, check_fleet

    readers = []
    for repo in repositories:
        inv = repo.listing.inventory
        if repo.listing.source != "inventory" or inv.location is None:
            continue
        try:
            namespace, problem = _namespace_ref(repo), None
        except Exception as e:  # this repository's line says why; the others are still checked
            namespace, problem = None, f"{type(e).__name__}: {e}"
        readers.append(
            FleetReader(
                repository=repo.repository,
                location=inv.location,
                name=inv.name or "",
                storage_conn_id=repo.storage_conn_id,
                max_age=timedelta(days=inv.max_age_days),
                source_prefix=inv.source_prefix,
                namespace=namespace,
                problem=problem,
            )
        )
    return check_fleet(readers, datetime.now(UTC))


def _namespace_ref(repo: RepoConfig) -> StorageRef:
    """Return the repository's namespace with its storage connection's settings (the destination is reached with them)."""
    from lakefs_gc.spark.runtime import StorageRef
    from lakefs_gc_airflow.task_io import storage_settings

    hook = LakeFSHook(lakefs_conn_id=repo.lakefs_conn_id)
    client = hook.get_conn()
    try:
        namespace = client.get_repository(repo.repository).storage_namespace
    finally:
        client.close()
    local_root = hook.local_blockstore_root()
    return StorageRef(namespace, storage_settings(namespace, local_root, repo.storage_conn_id), local_root)
