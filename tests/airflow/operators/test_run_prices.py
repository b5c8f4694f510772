"""The config's price table reaches the run (issue 54): the DAG's prepare_run task records the
entry's ``prices`` in the run's context, where the report's cost is figured from."""

from __future__ import annotations

from dataclasses import replace

from lakefs_gc import contract
from lakefs_gc.contract.cost import S3_STANDARD
from tests.airflow.helpers import context, dag_module, repo_config


def test_the_entrys_prices_are_the_runs(fake_client):
    prices = replace(contract.Prices(), s3=replace(S3_STANDARD, list=0.01), as_of="config")
    op = dag_module().build_gc_dag(repo_config(prices=prices)).get_task("prepare_run")
    ctx = contract.from_wire(contract.RunContext, op.execute(context({}, params={"flow": "clean"})))
    assert ctx.prices == prices
    op = dag_module().build_gc_dag(repo_config()).get_task("prepare_run")  # none given: the list prices
    ctx = contract.from_wire(contract.RunContext, op.execute(context({}, params={"flow": "clean"})))
    assert ctx.prices == contract.Prices()
