"""Shared test helpers: the DAG factory loaded from dags/, a fake task context, a fake spark-submit."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from functools import cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


@cache
def dag_module():
    """dags/gc_dags.py as a module (for its ``build_gc_dag`` factory)."""
    spec = importlib.util.spec_from_file_location("lakefs_gc_dag_under_test", REPO / "dags" / "gc_dags.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def repo_config(**overrides: Any):
    from lakefs_gc.config import RepoConfig, SparkSettings

    spark = overrides.pop("spark", SparkSettings(driver_memory="1g", executor_memory="1g", parallelism=2,
                                                 conf={"spark.ui.enabled": "false"}))
    fields = dict(repository="sample-repo", lakefs_conn_id="lakefs_default", storage_conn_id="aws_default",
                  spark_conn_id="spark_default", min_age_seconds=86400, mode="mark_and_sweep",
                  schedule=None, spark=spark)
    fields.update(overrides)
    return RepoConfig(**fields)


class FakeTI:
    """Only what the operators use: ``xcom_pull(task_ids=[...])`` -> list in the same order."""

    def __init__(self, xcoms: dict[str, Any]):
        self.xcoms = xcoms
        self.pulled: list[list[str]] = []

    def xcom_pull(self, task_ids, **_: Any):
        self.pulled.append(list(task_ids))
        return [self.xcoms.get(t) for t in task_ids]


def context(xcoms: dict[str, Any], run_id: str = "manual__2024-05-01T00:00:00+00:00") -> dict[str, Any]:
    return {"ti": FakeTI(xcoms), "run_id": run_id, "params": {}}


def fake_spark_submit(tmp_path: Path, exit_code: int = 0, write_result: bool = True) -> Path:
    """An executable standing in for spark-submit: records argv and digests of the secret env vars it saw,
    checks the meta file, and writes a result like a job would."""
    script = tmp_path / "fake-spark-submit"
    script.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import hashlib, json, os, sys
        from lakefs_gc.runmeta import SECRET_ENV
        argv = sys.argv[1:]
        meta_path = argv[argv.index("--meta") + 1]
        result_path = argv[argv.index("--result") + 1]
        meta = json.load(open(meta_path))
        # digests only: a result is an XCom and must never carry a secret
        seen = {{k: hashlib.sha256(os.environ[k].encode()).hexdigest() for k in SECRET_ENV if os.environ.get(k)}}
        print("fake spark-submit running", argv[argv.index("--meta") - 1])
        if {write_result!r}:
            json.dump({{"argv": argv, "secret_env": seen, "pyspark_python": os.environ.get("PYSPARK_PYTHON"),
                       "meta_keys": sorted(meta), "listed_objects": 3}}, open(result_path, "w"))
        sys.exit({exit_code})
    """))
    script.chmod(0o755)
    return script


def digest(value: str) -> str:
    import hashlib

    return hashlib.sha256(value.encode()).hexdigest()
