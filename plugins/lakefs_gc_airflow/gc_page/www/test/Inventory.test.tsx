// Storage inventories on the page: a run's listing cell says which inventory it read, how old, what it read and
// left for later, or why it listed by LIST; a run that listed as always has an empty cell. The fleet's
// inventories and one repository's line say what the discovery refresh found.
import { screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { FleetInventories, RepoInventory, ageWords } from "../src/components/Inventory";
import { RunsTable } from "../src/components/Runs";
import type { FleetInventory, Run, RunListing } from "../src/types";
import { renderPage } from "./render";

const DAG = "lakefs_gc__sample-repo";
const MANIFEST = "s3://inv/reports/lakefs-data/gc-daily/2026-11-01T00-00Z/manifest.json";
const LOCATION = "s3://inv/reports/lakefs-data/gc-daily";
const listing = (over: Partial<RunListing>): RunListing => ({
  source: "inventory", inventory_id: MANIFEST, inventory_time: "2026-11-01T00:00:00.000000Z", inventory_age_seconds: 147600,
  inventory_rows: 1500000, inventory_files: 3, slices_topped_up: 1, inventory_deferred: 7, fallback: null, ...over });
const run = (id: string, l: RunListing | null): Run => ({ mark_id: id, sweep: null, airflow_run_id: `manual__${id}`,
  start_time: "2026-11-02T17:00:00+00:00", report: `s3://b/r/_lakefs/retention/gc/unified/${id}/summary.json`, problem: null,
  success: true, rows: [], seconds: {}, listed_objects: 10, listing: l, dag_run: null });
const cell = (id: string) =>
  screen.getByTestId("gc-runs").querySelector(`tr[data-run="manual__${id}"] td[data-col="listing"]`) as HTMLElement;

describe("the runs table's listing cell", () => {
  it("names the inventory, its age, what it read and left for later; the fallback's reason; nothing for LIST", () => {
    const fallback = "no usable S3 Inventory for s3://lakefs-data/repo1 under s3://inv/reports (1 inventory refused)";
    renderPage(<RunsTable dagId={DAG} runs={[
      run("inv", listing({})),
      run("older", listing({ inventory_deferred: null, inventory_age_seconds: 3600, slices_topped_up: 0 })),
      run("fell", listing({ source: "list", inventory_id: null, inventory_time: null, inventory_age_seconds: null,
        inventory_rows: null, inventory_files: null, slices_topped_up: null, inventory_deferred: null, fallback })),
      run("plain", null),
    ]} />);
    const inv = within(cell("inv")).getByTestId("gc-listing-inventory");
    expect(inv.getAttribute("title")).toBe(MANIFEST);
    expect(inv.textContent).toBe("inventory, 1.7 days old" + "taken 2026-11-01 00:00:00Z; 1,500,000 rows read in 3 files; "
      + "1 slice topped up by LIST; 7 not older than the cutoff, left for a later run");
    expect(cell("older").textContent).toBe("inventory, 1.0 hour old"
      + "taken 2026-11-01 00:00:00Z; 1,500,000 rows read in 3 files; 0 slices topped up by LIST");
    expect(cell("fell").textContent).toBe(`LISTthe inventory was not used: ${fallback}`);
    expect(cell("plain").textContent).toBe("");
    const headers = [...screen.getByTestId("gc-runs").querySelectorAll("th")].map((h) => h.textContent);
    expect(headers.slice(4, 7)).toEqual(["listed", "listing", "candidates"]);
  });

  it("says ages as the report does", () => {
    expect([ageWords(30), ageWords(60), ageWords(7200), ageWords(86400), ageWords(90000)])
      .toEqual(["0.5 minutes", "1.0 minute", "2.0 hours", "1.0 day", "1.0 day"]);
  });
});

const record = (over: Partial<FleetInventory>): FleetInventory => ({
  location: LOCATION, name: "", storage_conn_id: "aws_default", checked_at: "2026-11-02T17:00:00.000000Z",
  inventory_id: MANIFEST, inventory_time: "2026-11-01T00:00:00.000000Z", verified: true, reason: null,
  repositories: { "fleet-a": { inventory_id: MANIFEST, inventory_time: "2026-11-01T00:00:00.000000Z", reason: null },
    "fleet-b": { inventory_id: MANIFEST, inventory_time: "2026-11-01T00:00:00.000000Z", reason: null } },
  ...over });

describe("what the discovery refresh found", () => {
  it("lists each location the fleet reads: verified for every reader, for some, or none usable", () => {
    const why = "no usable S3 Inventory for s3://other/fleet-c under s3://inv/reports/lakefs-data/gc-daily";
    renderPage(<FleetInventories inventories={[
      record({}),
      record({ location: "s3://inv/other", verified: false, reason: `fleet-c: ${why}`, repositories: {
        ...record({}).repositories, "fleet-c": { inventory_id: null, inventory_time: null, reason: why } } }),
      record({ location: "s3://inv/stale", inventory_id: null, inventory_time: null, verified: false, reason: "fleet-d: too old",
        repositories: { "fleet-d": { inventory_id: null, inventory_time: null, reason: "too old" } } }),
    ]} />);
    const lines = screen.getAllByTestId("gc-fleet-inventory").map((l) => [l.textContent, l.dataset.verified]);
    expect(lines).toEqual([
      [`${LOCATION}: newest ${MANIFEST} (taken 2026-11-01 00:00:00Z), verified for its 2 repositories (2026-11-02 17:00:00Z)`, "true"],
      [`s3://inv/other: newest ${MANIFEST} (taken 2026-11-01 00:00:00Z); not for all its 3 repositories: fleet-c: ${why} `
        + "(2026-11-02 17:00:00Z)", "false"],
      ["s3://inv/stale: none usable for its 1 repository: fleet-d: too old (2026-11-02 17:00:00Z)", "false"],
    ]);
  });

  it("shows nothing when the refresh recorded no inventory", () => {
    renderPage(<FleetInventories inventories={[]} />);
    expect(screen.queryByTestId("gc-fleet-inventories")).toBeNull();
  });

  it("says for one repository which inventory its runs would read, or why none", () => {
    const { unmount } = renderPage(<RepoInventory record={record({})} repository="fleet-a" />);
    expect(screen.getByTestId("gc-inventory").textContent).toBe(`Lists from the inventory at ${LOCATION}: the discovery refresh `
      + `at 2026-11-02 17:00:00Z found ${MANIFEST}, taken 2026-11-01 00:00:00Z, usable for this repository. Each run checks `
      + "it again at its start.");
    unmount();
    const refused = record({ verified: false, reason: "fleet-c: it lists bucket 'lakefs-data', not the namespace's bucket 'other'",
      repositories: { "fleet-c": { inventory_id: null, inventory_time: null,
        reason: "it lists bucket 'lakefs-data', not the namespace's bucket 'other'" } } });
    renderPage(<RepoInventory record={refused} repository="fleet-c" />);
    expect(screen.getByTestId("gc-inventory").textContent).toContain("found none usable for this repository: it lists bucket "
      + "'lakefs-data', not the namespace's bucket 'other'. Each run");
  });
});
