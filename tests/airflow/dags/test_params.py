"""The run form (``lakefs_gc_airflow.params``): what Airflow's trigger form makes of each Param.

Airflow 3's form clamps a number input to the schema's top-level ``minimum``/``maximum`` when the
field loses focus, and keeps the Trigger button disabled while a required field is empty. So: no
Param has a top-level bound (a typed value reaches Airflow as typed), Airflow's own validation
refuses every out-of-range value naming the Param, and the defaults validate as they are.
The same in a real browser: ``test_forms.py``.
"""

from __future__ import annotations

import pytest

from lakefs_gc.contract import AUTO, BOUNDS, PARAM_NAMES, settings_from_params
from tests.airflow.helpers import dag_module, repo_config, validate_params

NUMERIC = ("integer", "number")


@pytest.fixture(scope="module")
def dag():
    return dag_module().build_gc_dag(repo_config())


def _schema(dag, name):
    return dag.params.get_param(name).schema


def _bounds(name):
    lo, hi = BOUNDS[name]
    return (AUTO if name == "confirm_after_seconds" else lo), hi


def test_every_numeric_param_is_bounded_but_never_clamped_by_the_form(dag):
    numeric = [n for n in PARAM_NAMES if _schema(dag, n).get("type") in NUMERIC]
    assert set(numeric) == set(BOUNDS)
    for name in numeric:
        schema, (lo, hi) = _schema(dag, name), _bounds(name)
        assert "minimum" not in schema, f"{name}: the form would clamp to it"
        assert "maximum" not in schema, f"{name}: the form would clamp to it"
        assert schema["allOf"] == [{"minimum": lo} if hi is None else {"minimum": lo, "maximum": hi}], name
        assert f"Allowed: {'at least' if hi is None else 'from'} {lo}" in dag.params.get_param(name).description, name


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_airflow_refuses_out_of_range_values_naming_the_param(dag, name):
    """What the API does before it creates a run: the run is refused, nothing weaker is created."""
    from airflow.sdk.exceptions import ParamValidationError

    lo, hi = _bounds(name)
    below = lo - 1 if isinstance(lo, int) else lo - 0.5
    with pytest.raises(
        ParamValidationError,
        match=rf"Invalid input for param {name}: {below} is less than the "
        rf"minimum of {lo}",
    ):
        validate_params(dag, {name: below})
    if hi is not None:
        above = 5 if name == "max_delete_share" else hi + 1
        with pytest.raises(
            ParamValidationError,
            match=rf"Invalid input for param {name}: {above} is greater "
            rf"than the maximum of {hi}",
        ):
            validate_params(dag, {name: above})
        assert validate_params(dag, {name: hi})[name] == hi
    assert validate_params(dag, {name: lo})[name] == lo


def test_the_default_form_validates_and_makes_valid_settings(dag):
    """Nothing required is left empty by default: the Trigger button is enabled as the form opens."""
    values = validate_params(dag, {})
    assert values["mark_id"] is None
    for name in PARAM_NAMES:
        schema = _schema(dag, name)
        nullable = isinstance(schema.get("type"), list) and "null" in schema["type"]
        assert values[name] is not None or nullable, f"{name}: required, but its default is empty"
    settings = settings_from_params(values)
    assert (settings.mode, settings.mark_id, settings.max_delete_share) == ("mark_and_sweep", "", 0.5)


def test_mark_id_is_optional_in_the_form_and_read_by_sweep_only(dag):
    assert _schema(dag, "mark_id")["type"] == ["null", "string"]
    assert "Required by mode sweep_only" in dag.params.get_param("mark_id").description
    values = validate_params(dag, {"mode": "sweep_only", "mark_id": "gcrun01"})
    assert settings_from_params(values).mark_id == "gcrun01"
    # sweep_only without mark_id passes the form; prepare_run refuses it (tests/airflow/operators/test_operators.py)
    assert settings_from_params(validate_params(dag, {"mode": "sweep_only"})).mark_id == ""
