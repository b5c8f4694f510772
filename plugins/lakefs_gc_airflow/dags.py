"""
Every DAG of the provider, for a two-line DAG file in your ``dags_folder``.

The two lines::

    from lakefs_gc_airflow.dags import all_dags
    globals().update(all_dags())

(``dags/gc_dags.py`` of this repository) give one ``lakefs_gc__<repository>`` DAG per good entry
of the repositories file (and per repository a ``discover`` source matched at its last refresh; the
refresh is the DAG ``lakefs_gc_discover``) (``$LAKEFS_GC_CONFIG``, else ``config/gc_repositories.yaml`` under
``$LAKEFS_GC_HOME`` or the working directory), the restore DAG ``lakefs_gc_restore`` (whatever the
entries: with none good, it restores a repository named by hand), and, while
the file has bad entries, the DAG ``lakefs_gc_config_errors``: its description names every problem
of every bad entry (its line, the entry, the field), and its one task fails with them, so the
mistakes show in the DAG list without hiding the good repositories' DAGs.
A file that cannot be read or is bad as a whole raises here: an import error of the DAG file, no
GC DAG until it is fixed (``lakefs-gc config check`` says the same without Airflow).

Reading that file is the only work done at parse time (no connection, Variable or network access).
For the import error Airflow shows in its banner as well, add ``dags/gc_config_errors.py`` of this
repository (``from lakefs_gc.config import raise_entry_errors; raise_entry_errors()``) as a second
file: it fails to import while an entry is bad.
"""

from __future__ import annotations

from lakefs_gc.config import load_config
from lakefs_gc_airflow.factory import build_config_errors_dag, build_discover_dag, build_gc_dag, build_restore_dag

GC_DOC = """
### lakeFS garbage collection

One DAG per repository listed in the repositories file (`$LAKEFS_GC_CONFIG`). A run marks and
(unless `mode` is `mark_only`) sweeps objects that no retained commit and no staged entry
references and that are older than the cutoff:

| task | what it does |
|---|---|
| `prepare_run` | resolves the repository, its namespace and blockstore type, lakeFS's grace period; runs `lakefs-gc doctor`'s checks (the key's lakeFS reads, the store's rights on a scratch key, pyspark), failing closed; fixes start time and cutoff = start - max(min age, grace period) |
| `mark_uncommitted` | pages lakeFS's uncommitted preparation to the end (before `list_committed`) |
| `list_committed` | Spark: addresses of every retained commit (metaranges, ranges) |
| `list_slices` | Spark: objects under `data/` (and legacy root objects) older than the cutoff |
| `compute_candidates` | Spark: listed - committed - uncommitted; writes lakeFS's report layout |
| `delete` | Spark: deletes the candidates, then aborts the old incomplete multipart uploads (a no-op reporting 0 in `mark_only`) |
| `save_report` | expires the GC's own old marks and work folders (never one still needed), then writes `_lakefs/retention/gc/unified/<run_id>/summary.json`, last |

**Params** (a form in the UI): `mode` (`mark_and_sweep`, `mark_only`, or `sweep_only` with
`mark_id`: delete what an earlier successful mark listed), `dry_run`, `min_age_seconds` (below
lakeFS's grace period it is refused unless `unsafe_min_age_override`, which the report records),
`confirm_after_seconds`, `max_delete_share` / `max_delete_count` (the blast-radius guard),
`mark_max_age_seconds`, and the deleter's knobs `delete_rate`, `delete_concurrency`,
`delete_batch_size`, `delete_max_attempts`; `quarantine_days` (`local://` only);
`abort_uploads_after_days` (the sweep aborts older incomplete multipart uploads; 0: never);
`expire_leftovers`, `keep_marks_days`, `keep_marks_runs`, `keep_work_days` (how long the GC's own
files stay). Pausing the DAG stops new runs.
"""

RESTORE_DOC = """
### Undo a lakeFS GC run

Brings back what one GC run deleted, where the store still keeps it: S3 with bucket versioning,
Azure Blob with soft delete, GCS with soft delete, or `local://` with the sweep's quarantine
(`quarantine_days`). A key written again since the run is never replaced.

Trigger it with the repository and the run's id (its mark id or the GC DAG's run id; the GC page
and `lakefs-gc report NAMESPACE` list them), optionally only some keys, or as a dry run. A
repository without a good entry in the GC config (a bad entry, or none) is restored by hand:
give its `lakefs_conn_id` (and `storage_conn_id`); without them the task fails, saying what is
wrong with the config. Every key's outcome goes in the restore's report, beside the run's
(`_lakefs/retention/gc/unified/<mark>/restores/<this run>/`; a dry run writes none); a key an
earlier restore brought back is "already restored by <its id>". The task fails when a key could
not be restored, and says why. The same as `lakefs-gc restore NAMESPACE --run RUN_ID`.
"""


DISCOVER_DOC = """
### Discover lakeFS repositories for GC

While the repositories file has a `discover` section: lists each source's lakeFS (its connection),
and records every repository in `discover.state_file`, with the size of each matched repository's
newest GC run (the Spark steps' priority in their pool). The DAG files read that record, never
lakeFS: a repository created in lakeFS gets its `lakefs_gc__<repository>` DAG at the first parse
after a run of this DAG; one deleted in lakeFS loses its DAG, and the GC page names it. A lakeFS
that cannot be listed fails the task and leaves the record as it was. For the entries that list
from a storage inventory, it also records per inventory location the newest inventory there and
for which repositories it verifies, for the GC page (each run verifies its own again). And each
repository's storage namespace: one whose repository is gone from lakeFS is reported as orphaned,
with its size, in the log, the return value and the GC page (`lakefs-gc reclaim-namespace` removes
it after the grace period; docs/fleet.md, "Orphaned namespaces").
"""


def all_dags(path: str | None = None) -> dict[str, object]:
    """
    Return the provider's DAGs by a Python name each, built from the repositories file as it is now.

    The names: ``lakefs_gc__my_repo``, ``lakefs_gc_restore``, ``lakefs_gc_config_errors``. Call it
    from the DAG file so that every parse reads the file afresh. ``path``: default
    ``$LAKEFS_GC_CONFIG``.
    """
    config = load_config(path, strict=False)
    dags: dict[str, object] = {}
    for cfg in config.repositories:
        dags[cfg.dag_id.replace("-", "_")] = build_gc_dag(cfg, doc_md=GC_DOC)
    for name, dag in (
        ("lakefs_gc_restore", build_restore_dag(list(config.repositories), doc_md=RESTORE_DOC, config=config)),
        ("lakefs_gc_config_errors", build_config_errors_dag(config)),
        ("lakefs_gc_discover", build_discover_dag(config, doc_md=DISCOVER_DOC)),
    ):
        if dag is not None:
            dags[name] = dag
    return dags
