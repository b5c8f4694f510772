"""An entry's ``listing`` section (``lakefs_gc.config.listing``): LIST calls or the store's inventory,
from ``defaults``, an entry and a discovery source, merged key by key; every bad field named at its
line; the DAG's Params take their defaults from it."""

from __future__ import annotations

import textwrap
from pathlib import Path

from lakefs_gc.config import check_config, load_config
from lakefs_gc.config.discovered import refresh
from lakefs_gc.config.model import InventorySettings, ListingSettings

LOCATION = "s3://inventories/reports/lakefs-data/gc-daily"


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "gc.yaml"
    p.write_text(textwrap.dedent(text))
    return p


def test_the_default_is_list_and_defaults_name_the_inventory_an_entry_turns_on(tmp_path):
    p = write(
        tmp_path,
        f"""\
        defaults:
          listing:
            inventory: {{location: {LOCATION}, source_prefix: "", max_age_days: 2}}
        repositories:
          - repository: plain
          - repository: big
            listing: {{source: inventory, inventory: {{fallback: list}}}}
        """,
    )
    plain, big = load_config(p).repositories
    assert plain.listing == ListingSettings(
        source="list", inventory=InventorySettings(location=LOCATION, source_prefix="", max_age_days=2.0)
    )
    assert big.listing == ListingSettings(
        source="inventory",
        inventory=InventorySettings(location=LOCATION, source_prefix="", max_age_days=2.0, fallback="list"),
    )
    assert load_config(write(tmp_path, "repositories: [{repository: other}]")).repositories[0].listing == (
        ListingSettings()
    )


def test_every_bad_listing_field_is_named_at_its_line(tmp_path):
    p = write(
        tmp_path,
        """\
        repositories:
          - repository: repo-a
            listing:
              source: inventry
              inventory:
                location: s3://inventories/reports
                kind: gs
                max_age_days: 0
                fallback: maybe
                prefix: data/
          - repository: repo-b
            listing:
              source: inventory
          - repository: repo-c
            listing:
              source: inventory
              inventory: {location: "https://acct.blob.core.windows.net/inventories"}
          - repository: repo-d
            listing: {source: inventory, inventory: {location: "local://inventories", source_prefix: ""}}
          - repository: repo-e
            listing: inventory
        """,
    )
    at = f"{p}:{{}}: repositories[{{}}] ({{}}): field "
    assert [str(x) for x in check_config(p).problems] == [
        at.format(4, 0, "repo-a") + "'listing.source': must be one of list, inventory, got 'inventry'",
        at.format(5, 0, "repo-a") + "'listing.inventory.source_prefix': missing: an S3 Inventory's manifest does not "
        'say which prefix its configuration filters on; give the configuration\'s Filter Prefix ("" when it has '
        "none)",
        at.format(7, 0, "repo-a") + "'listing.inventory.kind': is 'gs', but the location "
        "'s3://inventories/reports' is on s3 (an S3 Inventory is delivered there): set kind to s3, or leave it out",
        at.format(8, 0, "repo-a") + "'listing.inventory.max_age_days': must be a number of days > 0 (at most 3650), "
        "got 0",
        at.format(9, 0, "repo-a") + "'listing.inventory.fallback': must be one of none, list, got 'maybe'",
        at.format(10, 0, "repo-a") + "'listing.inventory': unknown key 'prefix' (did you mean 'source_prefix'?)",
        at.format(12, 1, "repo-b") + "'listing.inventory.location': missing: source inventory reads the reports "
        "delivered there (e.g. s3://dest-bucket/prefix/source-bucket/config-id)",
        at.format(17, 2, "repo-c") + "'listing.inventory.name': missing: an Azure Blob Inventory is found by its "
        "rule's name",
        at.format(19, 3, "repo-d") + "'listing.inventory.location': must be on S3, Azure Blob or GCS (no store "
        "writes inventories of local://), got 'local://inventories'",
        at.format(21, 4, "repo-e") + "'listing': must be a mapping",
    ]


def test_a_discovery_source_gives_its_repositories_the_inventory(tmp_path):
    p = write(
        tmp_path,
        f"""\
        discover:
          sources:
            - include: ["fleet-*"]
              defaults:
                listing: {{source: inventory, inventory: {{location: {LOCATION}, source_prefix: ""}}}}
              overrides: {{fleet-b: {{listing: {{source: list}}}}}}
        """,
    )
    refresh(load_config(p).discovery, lambda conn: ["fleet-a", "fleet-b"])
    by = {r.repository: r for r in load_config(p).repositories}
    assert by["fleet-a"].listing.source == "inventory"
    assert by["fleet-a"].listing.inventory.location == LOCATION
    assert by["fleet-b"].listing == ListingSettings()  # an override replaces the source's listing


def test_bad_listing_defaults_are_the_files_named_once(tmp_path):
    p = write(
        tmp_path,
        """\
        defaults:
          listing: {source: inventory}
        repositories:
          - repository: repo-a
          - repository: repo-b
        """,
    )
    checked = check_config(p)
    assert [str(x) for x in checked.problems] == [
        f"{p}:2: defaults: field 'listing.inventory.location': missing: source inventory reads the reports "
        "delivered there (e.g. s3://dest-bucket/prefix/source-bucket/config-id)"
    ]
    assert [r.listing for r in checked.config.repositories] == [ListingSettings(), ListingSettings()]
