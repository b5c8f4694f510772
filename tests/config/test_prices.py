"""The ``prices`` of the repositories file (issue 54): the dated public list prices by default, an
entry's prices merged over those of ``defaults`` price by price, a bad price refused naming its field."""

from __future__ import annotations

import textwrap
from dataclasses import replace

import pytest

from lakefs_gc.config import ConfigError, load_config, raise_entry_errors
from lakefs_gc.contract import PRICES_AS_OF, Prices, StorePrices
from lakefs_gc.contract.cost import AZURE_HOT_LRS, GCS_STANDARD, S3_STANDARD


def write(tmp_path, text: str):
    p = tmp_path / "gc.yaml"
    p.write_text(textwrap.dedent(text))
    return p


def test_the_defaults_are_each_providers_standard_list_prices_dated(tmp_path):
    p = write(tmp_path, "repositories:\n  - repository: repo-a\n")
    [repo] = load_config(p).repositories
    assert repo.prices == Prices()
    assert repo.prices.as_of == PRICES_AS_OF == "2026-11-29"
    # per 1,000 requests and per GB-month, US dollars (the sources are beside them in lakefs_gc.contract.cost)
    assert (S3_STANDARD.list, S3_STANDARD.get, S3_STANDARD.head, S3_STANDARD.put, S3_STANDARD.delete) == (
        0.005,
        0.0004,
        0.0004,
        0.005,
        0.0,
    )
    assert S3_STANDARD.storage_gb_month == 0.023
    assert (AZURE_HOT_LRS.put, AZURE_HOT_LRS.get, AZURE_HOT_LRS.storage_gb_month) == (0.0055, 0.00044, 0.018)
    assert (GCS_STANDARD.list, GCS_STANDARD.get, GCS_STANDARD.storage_gb_month) == (0.005, 0.0004, 0.020)
    assert repo.prices.of("local") == StorePrices()
    assert repo.prices.of("nowhere") == StorePrices()
    assert repo.prices.of("s3").per_request("LIST") == pytest.approx(0.000005)


def test_an_entrys_prices_are_merged_over_the_defaults_price_by_price(tmp_path):
    p = write(
        tmp_path,
        """\
        defaults: {prices: {s3: {get: 0.001, storage_gb_month: 0.0125}}}
        repositories:
          - repository: repo-a
          - repository: repo-b
            prices: {s3: {get: 0.002}, gs: {list: 0}}
        """,
    )
    a, b = load_config(p).repositories
    assert a.prices == replace(Prices(), s3=replace(S3_STANDARD, get=0.001, storage_gb_month=0.0125), as_of="config")
    assert b.prices.s3 == replace(S3_STANDARD, get=0.002, storage_gb_month=0.0125)
    assert b.prices.gs == replace(GCS_STANDARD, list=0.0)
    assert b.prices.azure == AZURE_HOT_LRS


def test_a_bad_price_is_refused_naming_its_field_at_its_line(tmp_path):
    p = write(
        tmp_path,
        """\
        repositories:
          - repository: repo-a
            prices:
              s3: {get: -1, gett: 0.1, put: "cheap"}
              aws: {get: 0.1}
              gs: 0.5
          - repository: repo-b
        """,
    )
    cfg = load_config(p, strict=False)
    assert [r.repository for r in cfg.repositories] == ["repo-b"]
    [message] = cfg.entry_errors
    at = f"{p}:{{}}: repositories[0] (repo-a): field "
    assert message.splitlines() == [
        at.format(4) + "'prices.s3.get': must be a number >= 0 (US dollars per 1,000 requests), got -1",
        at.format(4) + "'prices.s3': unknown price 'gett' (did you mean 'get'?)",
        at.format(4) + "'prices.s3.put': must be a number >= 0 (US dollars per 1,000 requests), got 'cheap'",
        at.format(5) + "'prices': unknown store kind 'aws' (allowed: azure, gs, local, s3)",
        at.format(6) + "'prices.gs': must be a mapping of list, head, get, put, delete, inventory, storage_gb_month "
        "to prices, got 0.5",
    ]
    with pytest.raises(ConfigError, match=r"'prices.s3.get': must be a number >= 0"):
        raise_entry_errors(p)
