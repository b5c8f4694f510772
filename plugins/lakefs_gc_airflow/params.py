"""The run form: one Airflow ``Param`` per field of ``lakefs_gc.contract.RunSettings``.

Airflow validates them against their JSON schema before a run starts; ``prepare_run`` turns the
validated values into ``RunSettings`` (``lakefs_gc.contract.settings_from_params``). The defaults
shown come from the repository's config entry, falling back to ``RunSettings``'s.
"""

from __future__ import annotations

from airflow.sdk import Param
from lakefs_gc.config import RepoConfig
from lakefs_gc.contract import AUTO, MODES, PARAM_NAMES, RunSettings


def gc_params(cfg: RepoConfig, schedule_interval_seconds: int) -> dict[str, Param]:
    sw, d = cfg.sweep, RunSettings
    params = {
        "mode": Param(cfg.mode, type="string", enum=list(MODES), title="Run mode",
                      description="mark_and_sweep: mark, then delete; mark_only: only write the report; "
                                  "sweep_only: delete what the earlier mark `mark_id` listed."),
        "mark_id": Param("", type="string", title="Mark id (sweep_only)",
                         description="Run id of an earlier successful mark (its folder under "
                                     "_lakefs/retention/gc/unified/)."),
        "dry_run": Param(False, type="boolean", title="Dry run",
                         description="Follow the real code path with a no-op deleter; report what would go."),
        "min_age_seconds": Param(cfg.min_age_seconds, type="integer", minimum=0, title="Minimum object age (s)",
                                 description="Objects younger than max(this, lakeFS grace period) are kept."),
        "unsafe_min_age_override": Param(False, type="boolean", title="Unsafe minimum-age override",
                                         description="Allow a minimum age below lakeFS's grace period "
                                                     "(tests and emergencies only; recorded in the report)."),
        "confirm_after_seconds": Param(sw.confirm_after_seconds if sw.confirm_after_seconds is not None else AUTO,
                                       type="integer", minimum=AUTO, title="Delayed confirmation (s)",
                                       description="Delete only what an earlier successful mark at least this "
                                                   "old also found. -1: one schedule interval "
                                                   f"({schedule_interval_seconds}s) for scheduled and backfill "
                                                   "runs, 0 for manual."),
        "max_delete_share": Param(sw.max_delete_share, type="number", minimum=0, maximum=1,
                                  title="Blast-radius guard: max share",
                                  description="Refuse a sweep deleting more than this share of listed objects."),
        "max_delete_count": Param(sw.max_delete_count, type="integer", minimum=0,
                                  title="Blast-radius guard: max count",
                                  description="Refuse a sweep deleting more than this many objects."),
        "mark_max_age_seconds": Param(sw.mark_max_age_seconds, type="integer", minimum=0,
                                      title="Max mark age for sweep_only (s)"),
        "delete_rate": Param(sw.rate, type="number", minimum=0, title="Deletes per second (0: no limit)",
                             description="Global rate, split across the delete tasks (S3 allows ~3,500/s per "
                                         "prefix)."),
        "delete_concurrency": Param(sw.concurrency or cfg.spark.parallelism or d.delete_concurrency, type="integer",
                                    minimum=1, title="Delete tasks at once"),
        "delete_batch_size": Param(sw.batch_size, type="integer", minimum=1, maximum=1000,
                                   title="Keys per DeleteObjects request"),
        "delete_max_attempts": Param(d.delete_max_attempts, type="integer", minimum=1,
                                     title="Delete attempts per key",
                                     description="Retries of throttled or failed deletes, with backoff; keys "
                                                 "still failing become dead letters."),
        "prepare_commits_timeout_seconds": Param(d.prepare_commits_timeout_seconds, type="integer", minimum=1,
                                                 title="lakeFS commit preparation timeout (s)"),
    }
    assert set(params) == set(PARAM_NAMES), "every RunSettings field is a Param"
    return params
