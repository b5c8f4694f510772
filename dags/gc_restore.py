"""
### Undo a lakeFS GC run

Brings back what one GC run deleted, where the store still keeps it: S3 with bucket versioning,
Azure Blob with soft delete, GCS with soft delete, or `local://` with the sweep's quarantine
(`quarantine_days`). A key written again since the run is never replaced.

Trigger it with the repository and the run's id (its mark id or the GC DAG's run id; the GC page
and `lakefs-gc report NAMESPACE` list them), optionally only some keys, or as a dry run. Every
key's outcome goes in the restore's report, beside the run's
(`_lakefs/retention/gc/unified/<mark>/restores/<this run>/`); the task fails when a key could not
be restored, and says why. The same as `lakefs-gc restore NAMESPACE --run RUN_ID`.
"""

from lakefs_gc_airflow.factory import restore_dag_from_config

# one DAG for every configured repository (none, or a config file bad as a whole, which gc_dags.py
# reports: no DAG); a bad entry is left out, as in gc_dags.py
lakefs_gc_restore = restore_dag_from_config(doc_md=__doc__)
