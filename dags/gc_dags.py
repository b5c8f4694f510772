"""
### lakeFS garbage collection

One DAG per repository listed in `config/gc_repositories.yaml` (path: `$LAKEFS_GC_CONFIG`).
A run marks and (unless `mode` is `mark_only`) sweeps objects that no retained commit and no
staged entry references and that are older than the cutoff:

| task | what it does |
|---|---|
| `prepare_run` | resolves the repository, its namespace and blockstore type, lakeFS's grace period; fixes start time and cutoff = start - max(min age, grace period) |
| `mark_uncommitted` | pages lakeFS's uncommitted preparation to the end (before `list_committed`) |
| `list_committed` | Spark: addresses of every retained commit (metaranges, ranges) |
| `list_slices` | Spark: objects under `data/` (and legacy root objects) older than the cutoff |
| `compute_candidates` | Spark: listed - committed - uncommitted; writes lakeFS's report layout |
| `delete` | Spark: deletes the candidates (a no-op reporting 0 in `mark_only`) |
| `save_report` | writes `_lakefs/retention/gc/unified/<run_id>/summary.json`, last |

**Params** (a form in the UI): `mode` (`mark_and_sweep`, `mark_only`, or `sweep_only` with
`mark_id`: delete what an earlier successful mark listed), `dry_run`, `min_age_seconds` (below
lakeFS's grace period it is refused unless `unsafe_min_age_override`, which the report records),
`confirm_after_seconds` (delayed confirmation: only what an earlier mark at least this old also
found is deleted; -1 = one schedule interval for scheduled runs, 0 for manual ones),
`max_delete_share` / `max_delete_count` (the blast-radius guard), `mark_max_age_seconds`, and the
deleter's knobs `delete_rate` (deletes/s in total), `delete_concurrency`, `delete_batch_size`.
`delete_max_attempts` and `prepare_commits_timeout_seconds` tune retries and
waits; `quarantine_days` (`local://` only) keeps what the sweep deletes restorable
(`lakefs-gc restore`, the DAG `lakefs_gc_restore`). Pausing the DAG stops new runs. Connections: `lakefs` (type lakeFS), `aws` (S3 keys, extra
`endpoint_url`), `spark`.
"""

# This file must not be named like a package it imports: Airflow puts the dags folder on sys.path,
# and `airflow dags test` failed with "'lakefs_gc' is not a package" when it was dags/lakefs_gc.py.
from lakefs_gc.config import load_config
from lakefs_gc_airflow.factory import build_gc_dag

# strict=False: a bad entry is left out here and reported by gc_config_errors.py (its import error),
# so it does not take the other repositories' DAGs with it; a file that is bad as a whole raises here.
for _cfg in load_config(strict=False).repositories:
    globals()[_cfg.dag_id.replace("-", "_")] = build_gc_dag(_cfg, doc_md=__doc__)
