// One repository's view before any run: one sentence where the table would be, no chart and no latest
// report; the form warns with the grace period the runs' answer gives, and after Run its notice stays
// while the page reloads the runs (the new one queued in the table).
import { fireEvent, screen, waitFor } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { Repository } from "../src/pages/Repository";
import { renderPage, stubFetch } from "./render";

const DAG = "lakefs_gc__sample-repo";
const PARAMS = {
  min_age_seconds: { value: 86400, schema: { type: "integer", title: "Minimum object age (s)", minimum: 0 }, description: null },
  unsafe_min_age_override: { value: false, schema: { type: "boolean", title: "Unsafe minimum-age override" }, description: null },
};
const answer = (runs: unknown[]) => ({ repository: "sample-repo", dag_id: DAG, namespace: "local://sample-repo", error: null,
  version: "1.0", runs, steps: [], space: null, grace_period_seconds: 86400, grace_period_source: "lakeFS" });
const queued = { mark_id: null, sweep: null, airflow_run_id: "manual__1", start_time: null, report: null, problem: null, rows: [],
  seconds: {}, dag_run: { run_id: "manual__1", state: "queued", run_type: "manual", logical_date: null, start_date: null,
    end_date: null, failed_tasks: [], reason: null } };

describe("Repository", () => {
  it("before any run: says so once, warns below the grace period, and keeps the Run notice through the reload", async () => {
    let triggered = false;
    const calls = stubFetch((url, method) => {
      if (url.endsWith("/details")) return { body: { params: PARAMS, is_paused: false } };
      if (method === "POST") {
        triggered = true;
        return { body: { dag_run_id: "manual__1", state: "queued" } };
      }
      return { body: answer(triggered ? [queued] : []) };
    });
    renderPage(<Repository dagId={DAG} />);
    const empty = await screen.findByTestId("gc-runs");
    expect(empty.textContent).toBe("No GC run yet: trigger one with the Run GC form above.");
    expect(screen.getByTestId("gc-repository").textContent).toContain("Repository sample-repo on local://sample-repo: no GC run yet.");
    expect(screen.queryByTestId("gc-charts")).toBeNull();
    expect(screen.queryByTestId("gc-latest")).toBeNull();

    fireEvent.click(screen.getByTestId("gc-trigger-open"));
    const age = (await screen.findByTestId("gc-param-min_age_seconds")).querySelector("input") as HTMLInputElement;
    fireEvent.change(age, { target: { value: "60" } });
    expect(screen.getByTestId("gc-param-warning-min_age_seconds").textContent).toContain("Raise min_age_seconds to at least 86400");
    fireEvent.click(screen.getByTestId("gc-trigger-run"));
    expect((await screen.findByTestId("gc-trigger-message")).textContent).toBe("Run manual__1 queued");
    // the page reloads the runs 1.5 s after Run: the new run is in the table, the notice still above it
    await waitFor(() => expect(document.querySelector('tr[data-run="manual__1"]')).toBeTruthy(), { timeout: 4000 });
    expect(calls.filter((c) => c.url.endsWith("/runs"))).toHaveLength(2);
    expect(screen.getByTestId("gc-trigger-notice").textContent).toContain("Run manual__1 queued");
    expect(screen.getByTestId("gc-repository").textContent).toContain("1 run, newest first.");
    expect(screen.getByTestId("gc-newest").textContent).toBe("The newest run, manual__1, has no report (queued: no report yet)");
  });
});
