"""What the operators' tests share: a run's context, the steps' results as the tasks write them to XCom."""

from __future__ import annotations

from pathlib import Path

from lakefs_gc import contract
from tests.airflow.helpers import fake_results


def base_ctx(tmp_path: Path, namespace: str = "s3://bucket/repos/sample-repo", **settings) -> contract.RunContext:
    from tests.support.contract import make_context

    return make_context(
        namespace,
        repository="sample-repo",
        work_dir=str(tmp_path / "work" / "sample-repo" / "run1"),
        airflow_run_id="manual__1",
        lakefs_endpoint="http://127.0.0.1:8000/api/v1",
        s3_endpoint="http://127.0.0.1:5000",
        local_root="/data/lakefs" if namespace.startswith("local://") else None,
        **settings,
    )


UNCOMMITTED = contract.UncommittedResult(run_id="gc-run-1", locations=("x",), pages=1)
COMMITTED = contract.CommittedResult(
    committed_dir=contract.PartsDir("s/committed/", 2),
    commits_csv="c",
    active_commits=1,
    metaranges=1,
    ranges=1,
    committed_addresses=5,
)
SLICES = contract.SlicesResult(
    listed_dir="/w/listed", first_slice="", slices_listed=1, slices_skipped=0, listed_objects=7, listed_bytes=70
)
CANDIDATES = contract.read_result(
    "compute_candidates", fake_results()["compute_candidates"]
)  # what the fake job writes


def base_inputs(tmp_path: Path, step: str, namespace: str = "s3://bucket/repos/sample-repo") -> contract.StepInputs:
    known = {
        "mark_uncommitted": UNCOMMITTED,
        "list_committed": COMMITTED,
        "list_slices": SLICES,
        "compute_candidates": CANDIDATES,
    }
    return contract.StepInputs(base_ctx(tmp_path, namespace), {k: known.get(k) for k in contract.STEP_INPUTS[step]})


def wire(ctx: contract.RunContext, **results) -> dict:
    """XComs as the tasks write them."""
    return {"prepare_run": contract.to_wire(ctx), **{k: contract.to_wire(v) for k, v in results.items()}}


class StoodInClient:
    """What prepare_run and mark_uncommitted ask lakeFS, answered for sample-repo on s3."""

    def __init__(self, endpoint, *a, **kw):
        self.endpoint = endpoint

    def get_repository(self, repo):
        import lakefs_sdk

        return lakefs_sdk.Repository(
            id=repo, creation_date=0, default_branch="main", storage_namespace="s3://bucket/sample-repo", storage_id=""
        )

    def blockstore_type(self, storage_id=None):
        return "s3"

    def require_gc_rules(self, repo):
        return None

    def grace_period_seconds(self):
        return 86400

    def prepare_uncommitted_all(self, repo):
        return "runid", ["s3://bucket/sample-repo/_lakefs/retention/gc/uncommitted/runid/uncommitted/"], 3
