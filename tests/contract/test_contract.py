"""The run contract: Params -> RunSettings in one pure function, the wire format refuses what it
does not know, and the deletable rule means the same in Spark and in Python."""

from __future__ import annotations

import pytest

from lakefs_gc import contract
from lakefs_gc.errors import ContractError, SettingsError
from tests.support.contract import make_context


def test_settings_from_params_takes_validated_values_and_resolves_auto_confirmation():
    s = contract.settings_from_params(
        {
            "mode": "mark_only",
            "dry_run": True,
            "delete_rate": 10,
            "confirm_after_seconds": -1,
            "unknown_param": "ignored",
        },
        run_type="scheduled",
        schedule_interval_seconds=86400,
    )
    assert (s.mode, s.dry_run, s.delete_rate, s.confirm_after_seconds) == ("mark_only", True, 10.0, 86400)
    assert contract.settings_from_params({"confirm_after_seconds": -1}, run_type="manual").confirm_after_seconds == 0
    assert (
        contract.settings_from_params(
            {"confirm_after_seconds": -1}, run_type="DagRunType.BACKFILL_JOB", schedule_interval_seconds=60
        ).confirm_after_seconds
        == 0
    )
    assert (
        contract.settings_from_params(
            {"confirm_after_seconds": -1}, run_type="backfill", schedule_interval_seconds=60
        ).confirm_after_seconds
        == 60
    )
    assert contract.settings_from_params({}) == contract.RunSettings()
    # an empty optional field (the form sends null) takes the default; mark_id is read by sweep_only only
    assert contract.settings_from_params({"mark_id": None, "mode": "mark_only"}).mark_id == ""
    assert contract.settings_from_params({"mark_id": " gcrun01 ", "mode": "sweep_only"}).mark_id == "gcrun01"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"mode": "sweep"}, "Param 'mode' must be one of"),
        ({"min_age_seconds": "86400"}, "Param 'min_age_seconds' must be a whole number"),
        ({"min_age_seconds": 1.5}, "Param 'min_age_seconds' must be a whole number"),
        ({"dry_run": "False"}, "Param 'dry_run' must be true or false"),
        ({"max_delete_share": 2}, "Param 'max_delete_share' must be between 0.0 and 1.0"),
        ({"delete_concurrency": 0}, "Param 'delete_concurrency' must be >= 1"),
        ({"delete_batch_size": 1001}, "Param 'delete_batch_size' must be between 1 and 1000"),
        ({"max_delete_share": 5}, r"Param 'max_delete_share' must be between 0.0 and 1.0, got 5.0"),  # never clamped
        ({"delete_rate": -1}, r"Param 'delete_rate' must be >= 0.0, got -1.0"),  # never read as 0, no limit
    ],
)
def test_bad_params_are_refused_naming_the_param(params, message):
    with pytest.raises(SettingsError, match=message):
        contract.settings_from_params(params)


def test_the_wire_round_trips_and_refuses_unknown_missing_or_mistyped_fields():
    ctx = make_context("s3://b/repo", s3_endpoint="http://127.0.0.1:1", mode="mark_only")
    wire = contract.to_wire(ctx)
    assert contract.from_wire(contract.RunContext, wire) == ctx
    res = contract.UncommittedResult(run_id="r", locations=("a", "b"), pages=2)
    assert contract.read_result("mark_uncommitted", contract.to_wire(res)) == res
    assert contract.read_result("list_slices", None) is None  # a step that did not run
    with pytest.raises(ContractError, match=r"unknown field\(s\) \['uncommitted_locations'\]"):
        contract.read_result("mark_uncommitted", {**contract.to_wire(res), "uncommitted_locations": []})
    with pytest.raises(ContractError, match="missing field 'pages'"):
        contract.read_result("mark_uncommitted", {"run_id": "r", "locations": []})
    with pytest.raises(ContractError, match=r"pages: expected int, got '2'"):
        contract.read_result("mark_uncommitted", {"run_id": "r", "locations": [], "pages": "2"})
    with pytest.raises(ContractError, match=r"settings.*Param 'mode'"):
        contract.from_wire(contract.RunContext, {**wire, "settings": {**wire["settings"], "mode": "x"}})
    inputs = contract.StepInputs(ctx, {"mark_uncommitted": res})
    assert contract.inputs_from_wire(contract.inputs_to_wire(inputs)) == inputs
    assert set(contract.inputs_to_wire(inputs)) == {"context", "results"}  # the file as before
    # lakeFS's commits preparation, when the task waited for it (in the triggerer): handed to the step
    prepared = contract.StepInputs(ctx, {}, contract.PreparedCommits("run1", "s3://b/repo/_lakefs/c.csv"))
    assert contract.inputs_from_wire(contract.inputs_to_wire(prepared)) == prepared
    with pytest.raises(ContractError, match="at most 'prepared_commits'"):
        contract.inputs_from_wire({**contract.inputs_to_wire(inputs), "prepared": {}})
    with pytest.raises(ContractError, match="prepared_commits: missing field 'gc_commits_location'"):
        contract.inputs_from_wire({**contract.inputs_to_wire(inputs), "prepared_commits": {"run_id": "r"}})


def test_each_step_reads_only_earlier_steps_and_skips_are_defined_once():
    order = list(contract.STEPS)
    for step, needs in contract.STEP_INPUTS.items():
        assert all(order.index(n) < order.index(step) for n in needs), step
    assert contract.skipped("delete", "mark_only")
    assert contract.skipped("mark_uncommitted", "sweep_only")
    assert not any(contract.skipped(s, "mark_and_sweep") for s in contract.STEPS)
    assert contract.required_inputs("delete", "sweep_only") == ()
    assert contract.required_inputs("save_report", "mark_only") == (
        "mark_uncommitted",
        "list_committed",
        "list_slices",
        "compute_candidates",
        "attribute_space",
    )


# keys a listing can return that must never reach a delete, and ordinary ones that may
ADVERSARIAL = [
    "data/s/obj",
    "data/x",
    "legacyhexkey0123",
    "data",
    "_lakefsx",
    "data/a..b",
    "data/é/ü",
    "data/sp ace/x",
    "data/s/%2e%2e",
    "data/s/+plus",
    "data/s/line\nbreak",
    "data/" + "k" * 2000,
    "dummy.txt",
    "ñ",
    "",
    "/",
    "/data/x",
    "data/",
    "data//x",
    "data/./x",
    "data/../x",
    "data/x/..",
    "data/x/.",
    "./data/x",
    "../x",
    "..",
    ".",
    "_lakefs/",
    "_lakefs/dummy",
    "_lakefs/retention/gc/unified/x/summary.json",
    "dummy",
    "dummy\n",
    "a/b",
    "other/prefix/x",
    "data/x/",
    "\n",
    "data\n/x",
    "_lakefs",
    "data/s/\u2028",
    "x/../data/y",
    "data/s/\r",
    "data/s/\u0085",
    "data/s/x\u2029",
    "data/..\u2028",
    "..\r",
    "dummy\r",
]


def test_deletable_rule_is_one_pattern_with_the_same_answer_in_spark_and_python(spark):
    from pyspark.sql import functions as F

    from lakefs_gc.gc.decision import deletable, is_deletable

    df = spark.createDataFrame([(k,) for k in ADVERSARIAL], "address string")
    by_spark = {r["address"]: r["ok"] for r in df.select("address", deletable(F.col("address")).alias("ok")).collect()}
    by_python = {k: is_deletable(k) for k in ADVERSARIAL}
    assert by_spark == by_python
    never = {
        "",
        "/",
        "/data/x",
        "data/",
        "data//x",
        "data/./x",
        "data/../x",
        "data/x/..",
        "data/x/.",
        "./data/x",
        "../x",
        "..",
        ".",
        "_lakefs/",
        "_lakefs/dummy",
        "_lakefs/retention/gc/unified/x/summary.json",
        "dummy",
        "a/b",
        "other/prefix/x",
        "data/x/",
        "x/../data/y",
    }
    assert not any(by_python[k] for k in never), [k for k in never if by_python[k]]
    assert all(by_python[k] for k in ("data/s/obj", "legacyhexkey0123", "data/a..b", "data/é/ü", "data/sp ace/x"))
