"""The chaos bench's override of the stack (docker/chaos.compose.yaml) and its GC configuration
(config/gc_repositories.chaos.yaml): what the stack's test and ``python -m bench chaos`` bring up.

No Docker engine is needed; the last test has a compose client resolve both files together (skipped,
saying why, without one)."""

from __future__ import annotations

import yaml

from tests.stack.compose_file import AIRFLOW_SERVICES, PROJECT_IN_IMAGE, ROOT, compose_config, env_of, services

CHAOS_COMPOSE = ROOT / "docker" / "chaos.compose.yaml"
COMPOSE_CONFIG = ROOT / "config" / "gc_repositories.compose.yaml"


def _override() -> dict:
    return yaml.safe_load(CHAOS_COMPOSE.read_text())


def test_the_override_only_sets_the_airflow_services_environment():
    over = _override()["services"]
    assert set(over) == set(AIRFLOW_SERVICES), "every Airflow component reads the same GC configuration"
    for name, svc in over.items():
        assert name in services(), name
        assert set(svc) == {"environment"}, (name, svc)
    env = env_of(over["airflow-scheduler"])
    assert int(env["AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT"]) <= 60
    # a killed scheduler's tasks: the new scheduler resets them only when it looks for orphans
    assert int(env["AIRFLOW__SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL"]) <= 60
    assert env["LAKEFS_GC_CONFIG"].startswith(PROJECT_IN_IMAGE + "/config/")  # in the image (config/ is copied)


def test_the_chaos_config_is_the_stacks_own_plus_chaos_repo():
    from lakefs_gc.config import load_config

    path = env_of(_override()["services"]["airflow-scheduler"])["LAKEFS_GC_CONFIG"]
    chaos_file = ROOT / path[len(PROJECT_IN_IMAGE) + 1 :]
    chaos, base = yaml.safe_load(chaos_file.read_text()), yaml.safe_load(COMPOSE_CONFIG.read_text())
    assert chaos["pools"] == base["pools"]
    assert chaos["defaults"] == base["defaults"]
    others = [r for r in chaos["repositories"] if r["repository"] != "chaos-repo"]
    assert others == base["repositories"], "the stack's own repositories, as the stack's config has them"
    cfg = {r.repository: r for r in load_config(chaos_file).repositories}
    repo = cfg["chaos-repo"]
    assert repo.tasks.retries >= 2  # a task killed with its process resumes on a retry
    assert repo.spark.in_process_max_keys == 0  # every step on the stack's Spark: its faults hit a run
    assert repo.keep.tags_days >= 365  # the checker requires tagged objects


def test_compose_resolves_the_stack_with_the_override():
    resolved = compose_config(CHAOS_COMPOSE)
    assert set(resolved) == set(services())
    sched = env_of(resolved["airflow-scheduler"])
    assert sched["LAKEFS_GC_CONFIG"].endswith("/gc_repositories.chaos.yaml")
    assert (
        sched["AIRFLOW_CONN_LAKEFS_DEFAULT"] == env_of(services()["airflow-scheduler"])["AIRFLOW_CONN_LAKEFS_DEFAULT"]
    )
