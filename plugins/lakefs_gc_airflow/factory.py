"""
The DAG factory: the eight GC tasks of one configured repository, wired.

    prepare_run >> mark_uncommitted >> list_committed
    prepare_run >> list_slices
    [list_committed, list_slices] >> compute_candidates >> attribute_space >> delete >> save_report

``mark_uncommitted`` strictly before ``list_committed``: an object committed between the two is
then seen by one of them.

And ``lakefs_gc_restore``, one DAG for every repository, built whatever the entries: its one task
undoes a GC run (``lakefs-gc restore`` from the UI's trigger form); ``lakefs_gc_discover`` while the config has a
``discover`` section: its one task lists the sources' lakeFS and records what matched.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from airflow.sdk import DAG, Param

from lakefs_gc.config import DiscoverySettings, GCConfig, RepoConfig, schedule_interval_seconds
from lakefs_gc.words import noun, plural, verb
from lakefs_gc_airflow.housekeeping import DiscoverRepositoriesOperator, RepositoryConnections, RestoreOperator
from lakefs_gc_airflow.params import gc_params
from lakefs_gc_airflow.task_group import gc_tasks

START_DATE = datetime(2024, 1, 1, tzinfo=UTC)


def build_gc_dag(cfg: RepoConfig, doc_md: str | None = None) -> DAG:
    """One DAG, ``lakefs_gc__<repository>``, for one config entry: its tasks are :func:`gc_tasks`'s."""
    with DAG(
        dag_id=cfg.dag_id,
        description=f"lakeFS garbage collection for repository {cfg.repository}"
        + (" (discovered)" if cfg.discovered else ""),
        doc_md=doc_md,
        schedule=cfg.schedule,
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,  # two runs of one repository at once would race on its report folder
        tags=["lakefs", "gc", cfg.repository, *cfg.tags, *(["discovered"] if cfg.discovered else [])],
        params=gc_params(cfg, schedule_interval_seconds(cfg.schedule)),
        default_args={"owner": "lakefs-gc"},
    ) as dag:
        gc_tasks(cfg)
    return dag


RESTORE_DAG_ID = "lakefs_gc_restore"
CONFIG_ERRORS_DAG_ID = "lakefs_gc_config_errors"


def _raise_config_errors(path: str, errors: list[str], entries: int | None = None) -> None:
    """Fail with every problem of the bad entries (``entries``: how many entries they are; default one each)."""
    from airflow.sdk.exceptions import AirflowFailException

    n = len(errors) if entries is None else entries
    raise AirflowFailException(
        f"{path}: {plural(n, 'bad repository entry', 'bad repository entries')}, whose GC "
        f"{noun(n, 'DAG')} {verb(n, 'is', 'are')} not built; fix the file (lakefs-gc config check FILE lists "
        "every problem):\n" + "\n".join(errors)
    )


def build_config_errors_dag(cfg: GCConfig) -> DAG | None:
    """
    ``lakefs_gc_config_errors`` while the repositories file has bad entries (None otherwise).

    Its description and docs name every problem of every bad entry (its line, the entry, the
    field), and its one task fails with them.
    """
    if not cfg.entry_errors:
        return None
    from airflow.providers.standard.operators.python import PythonOperator

    lines = cfg.entry_problems
    short = [f"line {x.line}: {x.message}" if x.line is not None else x.message for x in cfg.problems] or lines
    n = len(cfg.entry_errors)
    with DAG(
        dag_id=CONFIG_ERRORS_DAG_ID,
        description=f"{plural(n, 'bad entry', 'bad entries')} in {cfg.path}: " + "; ".join(short)[:400],
        doc_md="### Bad entries in the lakeFS GC repositories file\n\nTheir GC DAGs are not built; every other "
        "entry's DAG is. Fix them in `"
        + str(cfg.path)
        + "` (`lakefs-gc config check` lists the same):\n\n"
        + "\n".join(f"- `{line}`" for line in lines),
        schedule=None,
        start_date=START_DATE,
        catchup=False,
        tags=["lakefs", "gc", "config-error"],
        default_args={"owner": "lakefs-gc"},
    ) as dag:
        PythonOperator(
            task_id="report_config_errors",
            python_callable=_raise_config_errors,
            op_args=[str(cfg.path), lines, n],
            retries=0,
        )
    return dag


def _restore_config_note(config: GCConfig | None, repos: list[str]) -> str:
    """Why a repository may have no good entry: the repositories file as the DAG file read it."""
    if config is None:
        return ""
    if repos:
        return f"the good entries of {config.path} are {', '.join(repos)}"
    if config.entry_errors:
        n = len(config.entry_errors)
        return (
            f"{config.path} has no good repository entry: {plural(n, 'bad entry', 'bad entries')} "
            f"({'; '.join(config.entry_problems)[:600]}); `lakefs-gc config check {config.path}` lists every problem"
        )
    return f"{config.path} lists no repository"


def build_restore_dag(cfgs: list[RepoConfig], doc_md: str | None = None, config: GCConfig | None = None) -> DAG:
    """
    ``lakefs_gc_restore``: bring back what one GC run of a repository deleted.

    Built whatever the repositories file's entries (none good: a restore is still possible by hand,
    and the task says what is wrong with the file when it needs an entry). Manual runs only, one at
    a time; its form names the repository (the configured ones proposed), the run, optionally the
    keys, and for a repository without a good entry its connections. ``config``: the file the
    entries come from, named in the task's refusals.
    """
    repos: dict[str, RepositoryConnections] = {
        c.repository: {"lakefs_conn_id": c.lakefs_conn_id, "storage_conn_id": c.storage_conn_id} for c in cfgs
    }
    names = sorted(repos)
    note = _restore_config_note(config, names)
    proposals: dict[str, Any] = {"examples": names} if names else {}  # the form's list; any other name typed
    by_hand = "" if names else f" ({note.split(':', 1)[0]}: name the repository and its connections by hand)"
    with DAG(
        dag_id=RESTORE_DAG_ID,
        description="Undo a lakeFS GC run: bring back what it deleted, where the store keeps it" + by_hand,
        doc_md=doc_md,
        schedule=None,
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,
        tags=["lakefs", "gc", "restore"],
        params={
            "repository": Param(
                names[0] if names else "",
                type="string",
                minLength=1,
                title="Repository",
                description="The lakeFS repository (the GC config's are proposed); one without a good entry "
                "in the GC config needs lakeFS connection below.",
                **proposals,
            ),
            "run_id": Param(
                "",
                type="string",
                minLength=1,
                title="GC run to undo",
                description="Its mark id, or the GC DAG's run id (the GC page and `lakefs-gc report "
                "NAMESPACE` list them).",
            ),
            "keys": Param(
                None,
                type=["null", "array"],
                items={"type": "string"},
                title="Only these keys",
                description="Namespace-relative keys (data/...) or full URIs, one per line; empty: "
                "everything the run deleted.",
            ),
            "dry_run": Param(
                False, type="boolean", title="Dry run", description="Say what would be restored; change nothing."
            ),
            "lakefs_conn_id": Param(
                None,
                type=["null", "string"],
                title="lakeFS connection (by hand)",
                description="Only for a repository without a good entry in the GC config: the Airflow "
                "connection of its lakeFS (e.g. lakefs_default). Given for a configured one, it replaces the entry's.",
            ),
            "storage_conn_id": Param(
                None,
                type=["null", "string"],
                title="Storage connection (by hand)",
                description="With the lakeFS connection above: the Airflow connection of the repository's "
                "store (e.g. aws_default; none for a local:// namespace).",
            ),
        },
        default_args={"owner": "lakefs-gc"},
    ) as dag:
        RestoreOperator(task_id="restore", repositories=repos, config_note=note, retries=0)
    return dag


DISCOVER_DAG_ID = "lakefs_gc_discover"


def build_discover_dag(cfg: GCConfig, doc_md: str | None = None) -> DAG | None:
    """
    ``lakefs_gc_discover`` while the config has a ``discover`` section (None otherwise).

    On ``discover.schedule``, one task lists each source's lakeFS and records the repositories in
    ``discover.state_file``, which the DAG files read: a new repository has its GC DAG at the next
    parse after a refresh, a removed one loses it (the GC page names it). It also records, per
    inventory location the entries read, the newest inventory there and for whom it verifies (the
    GC page shows it; each run verifies its own).
    """
    discovery: DiscoverySettings | None = cfg.discovery
    if discovery is None:
        return None
    with DAG(
        dag_id=DISCOVER_DAG_ID,
        description=f"Find the lakeFS repositories the GC config's discover section matches ({cfg.path})",
        doc_md=doc_md,
        schedule=discovery.schedule,
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,
        tags=["lakefs", "gc", "discover"],
        default_args={"owner": "lakefs-gc"},
    ) as dag:
        DiscoverRepositoriesOperator(task_id="discover", config_path=str(cfg.path), retries=2)
    return dag
