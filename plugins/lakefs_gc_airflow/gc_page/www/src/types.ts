// The answers the page reads: our API's (lakefs-gc/api/..., app.py and runs.py; their response models are
// models.py, and tests/airflow/gc_page/test_gc_page_api_types.py checks every field named here against
// the API's OpenAPI: a `?` field is one the API may leave out) and, for the trigger form, Airflow's own
// (api/v2/dags/<dag_id>/details).
export type Props = { dagId?: string; runId?: string; taskId?: string; mapIndex?: string };

export type Repo = { repository: string; dag_id: string; schedule: string | null; lakefs_conn_id: string; storage_conn_id: string | null };
// why a failed run failed: the one line its first failed task left (refused: a setting to change, no retry)
export type FailureReason = { task_id: string; refused: boolean; reason: string };
export type DagRun = {
  run_id: string; state: string; run_type: string; logical_date: string | null; start_date: string | null;
  end_date: string | null; failed_tasks: string[]; reason: FailureReason | null;
};
// what a run asked to list from an inventory listed from (null: it listed by LIST, as always); inventory_deferred
// null in a report written before it was counted
export type RunListing = {
  source: string; inventory_id: string | null; inventory_time: string | null; inventory_age_seconds: number | null;
  inventory_rows: number | null; inventory_files: number | null; slices_topped_up: number | null;
  inventory_deferred: number | null; fallback: string | null;
};
// an inventory location the entries read, as the discovery refresh found it: the newest inventory that verified
// for a repository reading it (null: none), whether for every one (else reason), and each reader's outcome
export type FleetReader = { inventory_id: string | null; inventory_time: string | null; reason: string | null };
export type FleetInventory = {
  location: string; name: string; storage_conn_id: string | null; checked_at: string; inventory_id: string | null;
  inventory_time: string | null; verified: boolean; reason: string | null; repositories: Record<string, FleetReader>;
};
// what a delete does to the bill on a run's store (when: now | later | never, why in detail), and the run's
// reclaimed bytes split by it (null where the bytes are not known; absent from a report written before)
export type Freeing = { when: string; on: string | null; how: string; detail: string };
export type FreedOn = { on: string; bytes: number };
// a run's storage requests by kind, their cost and the monthly saving of the bytes it freed now (US dollars
// at the prices of prices_as_of: a date's list prices, or "config"); absent from a run that did not count them
export type RunCost = {
  requests: Record<string, number>; request_cost_usd: number; saving_bytes: number; monthly_saving_usd: number; prices_as_of: string;
};
export type Run = {
  mark_id: string | null; sweep: string | null; airflow_run_id?: string | null; start_time?: string | null;
  cutoff_time?: string | null; mode?: string | null; flow?: string | null; dry_run?: boolean; success?: boolean;
  unsafe_min_age_override?: boolean; held_back_until?: string | null; held_back_reason?: string | null;
  dead_letters?: string | null; delete_skipped?: string | null;
  guard?: { max_delete_share: number | null; max_delete_count: number | null };
  rules?: Record<string, number | string | null>;
  report: string | null; problem: string | null; rows: [string, string][]; seconds: Record<string, number>;
  listed_objects?: number | null; candidates?: number | null; to_delete?: number | null; deleted?: number | null;
  already_gone?: number | null; held_back?: number | null; delete_failed?: number | null;
  reclaimed_bytes?: number | null; freeing?: Freeing | null; freed_now_bytes?: number | null; freed_later?: FreedOn[] | null;
  still_billed_bytes?: number | null; would_delete?: number | null; listing?: RunListing | null; dag_run: DagRun | null;
  cost?: RunCost | null;
};
export type ExplainAnswer = { target: string; address: string; note: string | null; verdict: string; reason: string; fates: string[]; lines: string[] };
export type Amount = { objects: number; bytes: number };
export type HeldBy = { alone: Record<string, Amount>; shared: Record<string, Amount> };
// a run's space.json (attribute_space), as the API gives the newest one
export type SpaceDoc = {
  mark_id: string; airflow_run_id: string | null; problem: string | null; computed_at?: string; cutoff?: string;
  rules?: { default_days: number; branches: Record<string, number> }; stale_branch_days?: number;
  stale?: { branch: string; head_age_days: number; alone: Amount }[];
  attribution?: { total: Amount; classes: Record<string, Amount>; branches: Record<string, HeldBy>; tags: Record<string, Amount>;
    sharing: string };
};
export type WhatIfAnswer = { change: string; lines: string[] };
// grace_period_seconds: lakeFS's, as lakeFS answers now or the newest report recorded it (grace_period_source says which)
export type RunsAnswer = { repository: string; dag_id: string; namespace: string | null; error: string | null; runs: Run[]; steps: string[];
  version: string; space?: SpaceDoc | null; grace_period_seconds: number | null; grace_period_source: string | null;
  inventory?: FleetInventory };
export type Removed = { repository: string; dag_id: string; lakefs_conn_id: string; removed_at: string };
// a namespace whose repository is gone from lakeFS, as the discovery refresh recorded it; its size by a bounded
// listing (complete false: at least that; objects/bytes null: size_problem says why)
export type OrphanedNamespace = {
  namespace: string; lakefs_conn_id: string; repository: string; first_seen: string; last_seen: string; orphaned_at: string;
  objects: number | null; bytes: number | null; complete: boolean; measured_at: string | null; size_problem: string | null;
  held_by: string | null;
};
// the repositories (GCPage); a config that does not read is its error alone, without config, removed, refreshed_at
export type ReposAnswer = { repositories: Repo[]; errors: string[]; config?: string; removed?: Removed[]; refreshed_at?: string | null;
  inventories?: FleetInventory[]; orphans?: OrphanedNamespace[] };

// a DAG's Param, as api/v2/dags/<dag_id>/details gives it
export type ParamSpec = { value: unknown; schema: Record<string, unknown>; description: string | null };
