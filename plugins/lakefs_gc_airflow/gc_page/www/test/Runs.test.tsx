// The runs: an empty table is a sentence; a failed run's outcome cell and the latest-report box say
// why it failed, in the one line its task left (a refusal, or an error) and which task; a failed run
// whose task left nothing keeps the old words.
import { screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { Latest, RunsTable } from "../src/components/Runs";
import type { DagRun, FailureReason, Run } from "../src/types";
import { renderPage } from "./render";

const DAG = "lakefs_gc__sample-repo";
const REFUSAL = "min_age_seconds=60 is below lakeFS's grace period of 86400s: objects uploaded but not yet linked could be "
  + "deleted. Use min_age_seconds >= 86400, or set the Param unsafe_min_age_override. Nothing was deleted";

const dagRun = (runId: string, state: string, failed: string[] = [], reason: FailureReason | null = null): DagRun => ({
  run_id: runId, state, run_type: "manual", logical_date: null, start_date: "2026-01-02T03:00:00+00:00",
  end_date: "2026-01-02T03:01:00+00:00", failed_tasks: failed, reason });
const noReport = (d: DagRun): Run => ({ mark_id: null, sweep: null, airflow_run_id: d.run_id, start_time: d.start_date, report: null,
  problem: null, rows: [], seconds: {}, dag_run: d });
const swept: Run = { mark_id: "m1", sweep: null, airflow_run_id: "manual__swept", start_time: "2026-01-01T00:00:00+00:00",
  report: "s3://b/r/_lakefs/retention/gc/unified/m1/summary.json", problem: null, success: true, rows: [["deleted", "4"]],
  seconds: {}, deleted: 4, candidates: 4, dag_run: dagRun("manual__swept", "success") };

const refused = noReport(dagRun("manual__refused", "failed", ["prepare_run"], { task_id: "prepare_run", refused: true, reason: REFUSAL }));
const errored = noReport(dagRun("manual__error", "failed", ["list_slices"],
  { task_id: "list_slices", refused: false, reason: "list_slices failed: StorageError: s3://b/r/data/: 503 SlowDown" }));
const silent = noReport(dagRun("manual__silent", "failed", ["prepare_run"]));

const outcomeCell = (runId: string) =>
  screen.getByTestId("gc-runs").querySelector(`tr[data-run="${runId}"] td[data-col="outcome"]`) as HTMLElement;

describe("RunsTable", () => {
  it("says there is no run yet instead of an empty table", () => {
    renderPage(<RunsTable runs={[]} dagId={DAG} />);
    const empty = screen.getByTestId("gc-runs");
    expect(empty.textContent).toBe("No GC run yet: trigger one with the Run GC form above.");
    expect(empty.querySelector("table, th")).toBeNull();
  });

  it("shows a refused run's reason and task, an error's first line, and the old words when the task left none", () => {
    renderPage(<RunsTable runs={[refused, errored, silent, swept]} dagId={DAG} />);
    expect(within(outcomeCell("manual__refused")).getByText("refused by prepare_run")).toBeTruthy();
    expect(within(outcomeCell("manual__refused")).getByTestId("gc-run-reason").textContent).toBe(REFUSAL);
    expect(within(outcomeCell("manual__error")).getByText("failed in list_slices")).toBeTruthy();
    expect(within(outcomeCell("manual__error")).getByTestId("gc-run-reason").textContent)
      .toBe("list_slices failed: StorageError: s3://b/r/data/: 503 SlowDown");
    expect(outcomeCell("manual__silent").textContent).toBe("refused or failed: no report");
    expect(outcomeCell("manual__swept").textContent).toBe("swept");
  });
});

describe("Latest", () => {
  it("names the newest run that was refused, why and which task, above the latest report", () => {
    renderPage(<Latest run={swept} newest={refused} dagId={DAG} />);
    const newest = screen.getByTestId("gc-newest");
    expect(newest.textContent).toBe(`The newest run, manual__refused, was refused by prepare_run: ${REFUSAL} (see prepare_run log)`);
    expect(within(newest).getByText("prepare_run log").getAttribute("href")).toBe(`/dags/${DAG}/runs/manual__refused/tasks/prepare_run`);
    expect(screen.getByTestId("gc-summary").textContent).toBe("deleted: 4");
  });

  it("names an error the same way, keeps the old words without a reason, and says when there is no report yet", () => {
    const { unmount } = renderPage(<Latest newest={errored} dagId={DAG} />);
    expect(screen.getByTestId("gc-newest").textContent).toBe("The newest run, manual__error, failed in list_slices: "
      + "list_slices failed: StorageError: s3://b/r/data/: 503 SlowDown (see list_slices log)");
    expect(screen.getByTestId("gc-latest").textContent).toContain("No report yet");
    unmount();
    renderPage(<Latest run={swept} newest={silent} dagId={DAG} />);
    expect(screen.getByTestId("gc-newest").textContent)
      .toBe("The newest run, manual__silent, has no report (refused or failed: no report) (see prepare_run log)");
  });

  it("says nothing of the newest run when it is the latest report's", () => {
    renderPage(<Latest run={swept} newest={swept} dagId={DAG} />);
    expect(screen.queryByTestId("gc-newest")).toBeNull();
  });
});

describe("the bill beside reclaimed", () => {
  const billed = (id: string, extra: Partial<Run>): Run => ({ ...swept, airflow_run_id: id, reclaimed_bytes: 4096, ...extra });
  const freedCell = (runId: string) =>
    screen.getByTestId("gc-runs").querySelector(`tr[data-run="${runId}"] td[data-col="freed"]`) as HTMLElement;

  it("splits the reclaimed bytes into freed now, later by date and still billed, and flags a store that frees nothing", () => {
    const later = billed("manual__later", { freeing: { when: "later", on: "2026-12-08T00:00:00.000000Z", how: "s3 versioning",
      detail: "rule ns" }, freed_now_bytes: 0, freed_later: [{ on: "2026-12-08T00:00:00.000000Z", bytes: 4096 }], still_billed_bytes: 0 });
    const never = billed("manual__never", { freeing: { when: "never", on: null, how: "s3 versioning", detail: "no rule" },
      freed_now_bytes: 0, freed_later: [], still_billed_bytes: 4096 });
    const older = billed("manual__older", {});
    renderPage(<RunsTable runs={[later, never, older]} dagId={DAG} />);
    const headers = [...screen.getByTestId("gc-runs").querySelectorAll("th")].map((h) => h.textContent);
    expect(headers.slice(11, 13)).toEqual(["reclaimed", "freed (bill)"]);
    expect(freedCell("manual__later").textContent).toBe("now 0 B, later 4.0 KiB on 2026-12-08, still billed 0 B");
    expect(freedCell("manual__later").getAttribute("title")).toBe("s3 versioning: rule ns");
    expect(freedCell("manual__never").textContent).toBe("now 0 B, still billed 4.0 KiB" + "still billed");
    expect(within(freedCell("manual__never")).getByText("still billed")).toBeTruthy();
    expect(freedCell("manual__older").textContent).toBe("");
  });
});
