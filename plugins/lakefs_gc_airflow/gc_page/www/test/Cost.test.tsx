// A run's cost on the page (issue 54): the runs table's cost cell gives the price of the run's storage
// requests and what the bytes it freed now save a month, the requests by kind in its title; a run whose
// steps did not count their requests (an older report) has an empty cell.
import { screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { requestsText, usd } from "../src/components/Cost";
import { RunsTable } from "../src/components/Runs";
import type { Run, RunCost } from "../src/types";
import { renderPage } from "./render";

const DAG = "lakefs_gc__sample-repo";
const run = (id: string, cost: RunCost | null): Run => ({ mark_id: id, sweep: null, airflow_run_id: `manual__${id}`,
  start_time: "2026-11-29T09:00:00+00:00", report: `s3://b/r/_lakefs/retention/gc/unified/${id}/summary.json`, problem: null,
  success: true, rows: [], seconds: {}, deleted: 2000, reclaimed_bytes: 40 * 2 ** 30, cost, dag_run: null });
const cell = (id: string) =>
  screen.getByTestId("gc-runs").querySelector(`tr[data-run="manual__${id}"] td[data-col="cost"]`) as HTMLElement;

describe("the runs table's cost cell", () => {
  it("prices the run's requests and the month's saving of what it freed now; empty where none were counted", () => {
    renderPage(<RunsTable dagId={DAG} runs={[
      run("swept", { requests: { LIST: 4002, HEAD: 1000, GET: 4, PUT: 10, DELETE: 2, INVENTORY: 100 }, request_cost_usd: 0.0205016,
        saving_bytes: 40 * 2 ** 30, monthly_saving_usd: 0.92, prices_as_of: "2026-11-29" }),
      run("versioned", { requests: { LIST: 1 }, request_cost_usd: 0.000005, saving_bytes: 0, monthly_saving_usd: 0,
        prices_as_of: "config" }),
      run("older", null),
    ]} />);
    expect(cell("swept").textContent).toBe("$0.021 for 5,118 requestssaves $0.92 a month (40.0 GiB freed now)");
    expect(cell("swept").querySelector("[data-testid=gc-run-cost]")?.getAttribute("title"))
      .toBe("LIST 4,002, HEAD 1,000, GET 4, PUT 10, DELETE 2, INVENTORY 100; at list prices of 2026-11-29");
    expect(cell("versioned").textContent).toBe("$0.000005 for 1 request");
    expect(cell("versioned").querySelector("[data-testid=gc-run-cost]")?.getAttribute("title")).toBe("LIST 1; at the config's prices");
    expect(cell("older").textContent).toBe("");
    const headers = [...screen.getByTestId("gc-runs").querySelectorAll("th")].map((h) => h.textContent);
    expect(headers.slice(11, 14)).toEqual(["reclaimed", "freed (bill)", "cost"]);
  });

  it("says dollars as the report does", () => {
    expect([usd(0), usd(1234.5), usd(0.92), usd(0.0205016), usd(0.00025), usd(2e-8)])
      .toEqual(["$0", "$1,234.50", "$0.92", "$0.021", "$0.00025", "less than $0.000001"]);
    expect(requestsText({ GET: 3, LIST: 12, OTHER: 1 })).toBe("LIST 12, GET 3, OTHER 1");
  });
});
