"""Where the bytes go, judged by lakeFS 1.84 itself (local blockstore): the attribution equals the
API oracle on random histories built on lakeFS, and ``whatif`` predicts what the next real run
frees after each change, lakeFS's own ``commits.csv`` deciding what stays kept (the same checks as
tests/listing/test_holders.py, on the emulator)."""

from __future__ import annotations

from tests.listing.test_holders import check_attribution, check_whatif

SEED_BASE = 70_000  # other seeds than the emulator's


def test_the_attribution_equals_the_api_oracle_on_lakefs_itself(real_lakefs):
    check_attribution(real_lakefs("local"), list(range(SEED_BASE, SEED_BASE + 12)))


def test_whatif_predicts_what_lakefs_itself_then_lets_the_gc_free(real_lakefs, tmp_path):
    check_whatif(real_lakefs("local"), tmp_path, list(range(SEED_BASE + 100, SEED_BASE + 110)))
