"""The keep rules can only keep more, on lakeFS 1.84 itself: the same histories, rules and judgement
as ``tests/runs/test_keep_rules.py`` (the emulator's), on a ``local://`` blockstore."""

from __future__ import annotations

import pytest

from tests.runs.test_keep_rules import HISTORIES, RULE_SETS, SEED_BASE, rules_only_keep_more
from tests.runs.test_random_histories import Place

pytestmark = pytest.mark.spark


def test_keep_rules_only_keep_more_on_lakefs_itself(real_lakefs, spark, tmp_path):
    server = real_lakefs("local")
    totals = rules_only_keep_more(
        Place(server, server.store, ""), spark, tmp_path / "work", SEED_BASE + 1000, HISTORIES, RULE_SETS
    )
    print(f"\nkeep rules on lakeFS itself: {totals}")
    assert totals["spared"], "no random rule set spared a candidate: the rules were never exercised"
